import { mkdirSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startReceiver, waitFor } from '../support/receiver.js'
import { postgresAvailable } from '../support/services.js'
import { axeViolations, chromiumAvailable, launchBrowser, type Browser } from './browser.js'
import { startExampleServer, startExpressServer, type PortalServer, type StorageName } from './servers.js'

// The tenant portal in a real browser: opened through its sign-in link, a tenant creates a webhook
// destination to a local sink, sees a published event and its attempt, reads the payload, retries a
// failed delivery, disables and enables, edits, rotates, deletes, and cannot reach another tenant's
// data by editing URLs. Every page passes axe. Run against the example server (Hono) and an Express
// host, on SQLite and on Postgres.

/** Screenshots land in docs/ (docs/portal.md links them) only when asked, so a test run leaves the checkout unchanged. */
const docs = process.env.OUTFLOW_UPDATE_SCREENSHOTS === '1' ? join(import.meta.dirname, '../../docs') : join(tmpdir(), 'outflow-portal-screenshots')

/** Values for the required fields of each type's form (nothing is contacted when a destination is created). */
const aws = { key: 'AKIAPORTALTEST01', secret: 'portal-aws-secret-value' }
const formValues: Record<string, { config?: Record<string, string>; credentials?: Record<string, string>; secret?: string }> = {
  cloudx_sqs: { config: { queue_url: 'https://sqs.us-east-1.amazonaws.com/123456789012/orders' }, credentials: aws, secret: aws.secret },
  amqp_broker: { config: { server_url: 'rabbit.example.com:5672' }, credentials: { username: 'outflow', password: 'broker-password-value' }, secret: 'broker-password-value' },
  relay: { credentials: { token: 'relay-token-value-0123' }, secret: 'relay-token-value-0123' },
  cloudx_kinesis: { config: { stream_name: 'orders', region: 'us-east-1' }, credentials: aws, secret: aws.secret },
  cloudy_servicebus: {
    config: { name: 'orders' },
    credentials: { connection_string: 'Endpoint=sb://acme.servicebus.windows.net/;SharedAccessKeyName=send;SharedAccessKey=c2VjcmV0dmFsdWU=' },
    secret: 'c2VjcmV0dmFsdWU=',
  },
  cloudx_s3: { config: { bucket: 'orders-archive', region: 'eu-west-1' }, credentials: aws, secret: aws.secret },
  cloudz_pubsub: {
    config: { project_id: 'acme-project', topic: 'orders' },
    credentials: { service_account_json: JSON.stringify({ type: 'authorized_user', client_id: 'id.apps.googleusercontent.com', client_secret: 'pubsub-client-secret', refresh_token: '1//refresh' }) },
    secret: 'pubsub-client-secret',
  },
  kafka: { config: { brokers: 'kafka-1.example.com:9092,kafka-2.example.com:9092', topic: 'orders', sasl_mechanism: 'scram-sha-512' }, credentials: { username: 'outflow', password: 'kafka-password-value' }, secret: 'kafka-password-value' },
  aws_eventbridge: { config: { event_bus: 'orders', source: 'com.example.shop' }, credentials: aws, secret: aws.secret },
  nats_jetstream: { config: { servers: 'nats.example.com:4222', subject: 'events.orders' }, credentials: { token: 'nats-token-value-0123' }, secret: 'nats-token-value-0123' },
  redis_streams: { config: { url: 'redis://cache.example.com:6379/0', stream_key: 'events:orders' }, credentials: { password: 'redis-password-value' }, secret: 'redis-password-value' },
}

/** `screenshots`: this run also takes the portal-*.png screenshots (into docs/ with OUTFLOW_UPDATE_SCREENSHOTS=1) and walks the checks that do not depend on the host or storage (every type's form, replay, keyboard). */
const servers: { name: string; start: () => Promise<PortalServer>; storage: StorageName; screenshots: boolean }[] = [
  { name: 'the example server (Hono) on SQLite', start: () => startExampleServer('sqlite'), storage: 'sqlite', screenshots: true },
  { name: 'the example server (Hono) on Postgres', start: () => startExampleServer('postgres'), storage: 'postgres', screenshots: false },
  { name: 'an Express host on SQLite', start: () => startExpressServer('sqlite'), storage: 'sqlite', screenshots: false },
  { name: 'an Express host on Postgres', start: () => startExpressServer('postgres'), storage: 'postgres', screenshots: false },
]

let browser: Browser
beforeAll(async () => {
  if (chromiumAvailable) browser = await launchBrowser()
})
afterAll(async () => {
  await browser?.close()
})

for (const setup of servers) {
  describe.runIf(chromiumAvailable && (setup.storage === 'sqlite' || postgresAvailable))(`tenant portal in Chromium via ${setup.name}`, { timeout: 60_000 }, () => {
    let server: PortalServer
    let page: Page
    let sinkFails = false
    let sink: Awaited<ReturnType<typeof startReceiver>>
    const requested: string[] = []
    const ids = { destination: '', other: '', globexDestination: '', globexEvent: 'globex-secret-event' }

    const api = async (method: string, path: string, body?: unknown) => {
      const response = await fetch(`${server.origin}/api/v1${path}`, {
        method,
        headers: { authorization: `Bearer ${server.apiKey}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      })
      return { status: response.status, body: (await response.json()) as any }
    }
    const signInLink = async (tenant: string, theme?: string) => (await api('GET', `/tenants/${tenant}/portal${theme ? `?theme=${theme}` : ''}`)).body.redirect_url as string
    const publish = (id: string, data: unknown, retry = true, topic = 'order.created') => api('POST', '/publish', { id, tenant_id: 'acme', topic, data, eligible_for_retry: retry })
    /** Open a route and wait for its page: the old page's heading is still there until the hash change has rendered. */
    const go = async (hash: string) => {
      await page.evaluate(
        (h) =>
          new Promise<void>((resolve) => {
            if (location.hash === h) return resolve()
            // The app renders a hash change in a microtask; a task queued after the event runs after it.
            addEventListener('hashchange', () => setTimeout(resolve), { once: true })
            location.hash = h
          }),
        hash,
      )
      await page.getByRole('heading', { level: 1 }).first().waitFor()
    }
    /** Click Refresh until `locator` shows up, or `check` holds (events appear from their first attempt on). */
    const refreshUntil = (locator: ReturnType<Page['locator']> | (() => Promise<boolean>), what: string) =>
      waitFor(
        async () => {
          if (typeof locator === 'function' ? await locator() : (await locator.count()) > 0) return true
          await page.getByRole('button', { name: 'Refresh' }).click()
          await page.waitForTimeout(250)
          return false
        },
        15_000,
        what,
      )
    const noAxeViolations = async (where: string) => {
      const violations = await axeViolations(page)
      expect(violations, `${where}: ${JSON.stringify(violations, null, 1)}`).toEqual([])
    }
    const shot = async (name: string) => {
      if (!setup.screenshots) return
      mkdirSync(docs, { recursive: true })
      // Without the notices of earlier actions, which would cover the page's corner. (Screenshot's `style`
      // option injects a stylesheet, which the page's CSP refuses: set the element's style instead.)
      await page.evaluate(() => document.querySelector<HTMLElement>('.notices')?.style.setProperty('display', 'none'))
      await page.screenshot({ path: join(docs, name), fullPage: true, animations: 'disabled' })
      await page.evaluate(() => document.querySelector<HTMLElement>('.notices')?.style.removeProperty('display'))
    }

    beforeAll(async () => {
      sink = await startReceiver(() => (sinkFails ? { status: 500, body: 'sink is failing: database unavailable' } : { status: 200, body: '{"received":true}' }))
      server = await setup.start()
      for (const tenant of ['acme', 'globex']) expect((await api('PUT', `/tenants/${tenant}`)).status).toBe(201)
      const globex = await api('POST', '/tenants/globex/destinations', { type: 'webhook', topics: ['*'], config: { url: `${sink.url}/globex-private` } })
      ids.globexDestination = globex.body.id
      await api('POST', '/publish', { id: ids.globexEvent, tenant_id: 'globex', topic: 'order.created', data: { globex: 'confidential' } })
      page = await browser.context.newPage()
      page.on('request', (request) => requested.push(new URL(request.url()).pathname))
    })
    afterAll(async () => {
      await page?.close()
      await server?.close()
      await sink?.close()
    })

    it(`opens through the sign-in link (${setup.storage})`, async () => {
      const link = await signInLink('acme', 'light')
      expect(new URL(link).pathname).toBe('/portal/')
      await page.goto(link)
      await page.getByRole('heading', { name: 'Destinations', level: 1 }).waitFor()
      expect(page.url()).not.toContain('code=')
      expect(await page.locator('html').getAttribute('data-theme')).toBe('light')
      await page.getByText('No destinations yet').waitFor()
      await noAxeViolations('empty destinations page')
      // The same link again: its code was used.
      const second = await browser.context.newPage()
      await second.goto(link)
      await second.getByText('This portal link has expired or was already used').waitFor()
      await second.close()
    })

    it('creates a webhook destination to a local sink from the generated form', async () => {
      await page.getByRole('link', { name: 'New destination' }).click()
      await page.getByRole('heading', { name: 'New destination', level: 1 }).waitFor()
      await noAxeViolations('type picker')
      await page.getByRole('link', { name: /^Webhook/ }).click()
      await page.getByRole('heading', { name: 'New Webhook destination' }).waitFor()
      // Required fields are checked before anything is sent.
      await page.getByRole('button', { name: 'Create destination' }).click()
      await page.getByText('URL is required').waitFor()
      expect(await page.getByLabel('URL').evaluate((e) => e === document.activeElement)).toBe(true)
      await noAxeViolations('webhook form with an error')
      await page.getByLabel('Topics').fill('order.*')
      await page.getByLabel('URL').fill(`${sink.url}/acme-hook`)
      await page.getByRole('button', { name: 'Create destination' }).click()
      await page.getByRole('heading', { name: `127.0.0.1:${sink.port}`, level: 1 }).waitFor()
      const [created] = (await api('GET', '/tenants/acme/destinations')).body
      expect(created).toMatchObject({ type: 'webhook', topics: ['order.*'], config: { url: `${sink.url}/acme-hook` }, disabled_at: null })
      ids.destination = created.id
      expect(page.url()).toContain(`#/destinations/${created.id}`)
      // The signing secret: hidden, revealed on request.
      const secret = created.credentials.secret as string
      expect(await page.locator('.secret-value').first().textContent()).not.toContain(secret)
      await page.getByRole('button', { name: 'Reveal' }).first().click()
      expect(await page.locator('.secret-value').first().textContent()).toBe(secret)
      await browser.context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: server.origin })
      await page.getByRole('button', { name: 'Copy' }).first().click()
      await page.getByText('Signing secret copied to the clipboard').waitFor()
      expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(secret)
      await noAxeViolations('destination page')
      // This engine has the replay route (the recovery feature): its OpenAPI document says so, and the button shows.
      await waitFor(() => requested.includes('/api/v1/openapi.json'), 5_000, 'the replay feature check')
      await page.getByRole('button', { name: 'Replay events' }).waitFor()
    })

    it('shows a published event and its successful attempt, and the payload', async () => {
      expect((await publish('order-1001', { order_id: 1001, total: 42.5, items: [{ sku: 'A-1', qty: 2 }] })).status).toBe(202)
      await waitFor(() => sink.on('/acme-hook').length === 1, 15_000, 'the sink to receive order-1001')
      await page.getByRole('navigation', { name: 'Portal' }).getByRole('link', { name: 'Events' }).click()
      await page.getByRole('heading', { name: 'Events', level: 1 }).waitFor()
      const row = page.getByRole('row').filter({ hasText: 'order-1001' })
      await refreshUntil(row, 'order-1001 in the event log')
      expect(await row.getByText('Delivered').count()).toBe(1)
      await noAxeViolations('events page')
      await row.getByRole('link', { name: 'order-1001' }).click()
      await page.getByRole('heading', { name: 'Event order-1001' }).waitFor()
      const payload = page.getByRole('group', { name: 'Event payload' })
      expect(await payload.textContent()).toContain('"order_id": 1001')
      expect(await payload.textContent()).toContain('"sku": "A-1"')
      const attempt = page.locator('table.attempts tbody tr')
      expect(await attempt.count()).toBe(1)
      expect(await attempt.first().textContent()).toMatch(/Delivered.*200.*\{"received":true\}/)
      await noAxeViolations('event page')
      await shot('portal-event.png')
    })

    it('retries a failed delivery from the portal once the sink works again', async () => {
      sinkFails = true
      expect((await publish('order-1002', { order_id: 1002 }, false)).status).toBe(202)
      await waitFor(() => sink.on('/acme-hook').length === 2, 15_000, 'the failed attempt of order-1002')
      await go('#/events')
      await page.getByLabel('Status').selectOption('failed')
      await page.getByRole('button', { name: 'Apply filters' }).click()
      const row = page.getByRole('row').filter({ hasText: 'order-1002' })
      expect(page.url()).toContain('status=failed')
      const delivered = page.getByRole('row').filter({ hasText: 'order-1001' })
      await refreshUntil(async () => (await row.count()) === 1 && (await delivered.count()) === 0, 'order-1002 alone among the failed events')
      await row.getByRole('link', { name: 'order-1002' }).click()
      await page.getByRole('heading', { name: 'Event order-1002' }).waitFor()
      const attempts = page.locator('table.attempts tbody tr')
      expect(await attempts.first().textContent()).toMatch(/Failed.*500.*sink is failing/)
      sinkFails = false
      await page.getByRole('button', { name: 'Retry delivery' }).click()
      await refreshUntil(page.locator('table.attempts tbody tr:nth-child(2)'), 'the manual attempt')
      expect(await attempts.first().textContent()).toMatch(/\(manual\).*Delivered.*200/)
      expect(sink.on('/acme-hook')).toHaveLength(3)
    })

    it('disables and enables the destination, edits it and rotates its secret', async () => {
      await go('#/')
      await page.getByRole('button', { name: `Disable 127.0.0.1:${sink.port}` }).click()
      await page.getByRole('button', { name: `Enable 127.0.0.1:${sink.port}` }).waitFor()
      expect(await page.getByRole('row').filter({ hasText: `127.0.0.1:${sink.port}` }).getByText('Disabled').count()).toBe(1)
      expect((await api('GET', `/tenants/acme/destinations/${ids.destination}`)).body.disabled_at).not.toBeNull()
      await page.getByRole('button', { name: `Enable 127.0.0.1:${sink.port}` }).click()
      await page.getByRole('button', { name: `Disable 127.0.0.1:${sink.port}` }).waitFor()
      expect((await api('GET', `/tenants/acme/destinations/${ids.destination}`)).body.disabled_at).toBeNull()
      expect(await page.getByRole('row').filter({ hasText: `127.0.0.1:${sink.port}` }).textContent()).toMatch(/66\.7%\s*of 3/)
      await noAxeViolations('destinations page')
      await shot('portal-destinations.png')

      await go(`#/destinations/${ids.destination}/edit`)
      await page.getByLabel('Topics').fill('order.*, invoice.paid')
      await page.getByRole('button', { name: 'Save changes' }).click()
      await page.getByRole('heading', { name: `127.0.0.1:${sink.port}`, level: 1 }).waitFor()
      const edited = (await api('GET', `/tenants/acme/destinations/${ids.destination}`)).body
      expect(edited.topics).toEqual(['order.*', 'invoice.paid'])
      expect(edited.config.url).toBe(`${sink.url}/acme-hook`)

      const before = edited.credentials.secret
      await page.getByRole('button', { name: 'Rotate secret' }).click()
      await page.getByRole('dialog', { name: 'Rotate the signing secret?' }).waitFor()
      await noAxeViolations('rotate dialog')
      await page.getByRole('button', { name: 'Rotate secret' }).last().click()
      await waitFor(async () => (await api('GET', `/tenants/acme/destinations/${ids.destination}`)).body.credentials.previous_secret === before, 10_000, 'the rotation')
      await page.getByText('Previous secret', { exact: true }).waitFor()
    })

    it('deletes a destination after a confirmation', async () => {
      const other = await api('POST', '/tenants/acme/destinations', { type: 'webhook', topics: ['invoice.*'], config: { url: `${sink.url}/second` } })
      ids.other = other.body.id
      // Pressed the moment the page appears (in the task that renders it, before a paint), Delete opens a
      // dialog that gives the focus back to Delete: the page's heading takes the focus as it renders, not
      // after the paint, where it once took it from the button the dialog was opened from.
      await go('#/')
      await page.evaluate(() => {
        const observer = new MutationObserver(() => {
          const button = [...document.querySelectorAll('button')].find((b) => b.textContent === 'Delete')
          if (!button) return
          observer.disconnect()
          button.focus()
          button.click()
        })
        observer.observe(document.body, { childList: true, subtree: true })
      })
      await go(`#/destinations/${ids.other}`)
      const early = page.getByRole('dialog', { name: 'Delete this destination?' })
      await early.waitFor()
      await page.keyboard.press('Escape')
      await early.waitFor({ state: 'detached' })
      expect(await page.getByRole('button', { name: 'Delete' }).evaluate((e) => e === document.activeElement)).toBe(true)
      // By keyboard: Enter opens the dialog with the focus inside, Escape closes it and gives the focus back.
      const remove = page.getByRole('button', { name: 'Delete' })
      await remove.focus()
      await page.keyboard.press('Enter')
      const dialog = page.getByRole('dialog', { name: 'Delete this destination?' })
      await dialog.waitFor()
      expect(await dialog.evaluate((d) => d.contains(document.activeElement))).toBe(true)
      await page.keyboard.press('Escape')
      await dialog.waitFor({ state: 'detached' })
      expect(await remove.evaluate((e) => e === document.activeElement)).toBe(true)
      await remove.click()
      await dialog.getByRole('button', { name: 'Cancel' }).click()
      await dialog.waitFor({ state: 'detached' })
      expect((await api('GET', `/tenants/acme/destinations/${ids.other}`)).status).toBe(200)
      await page.getByRole('button', { name: 'Delete' }).click()
      await page.getByRole('dialog', { name: 'Delete this destination?' }).getByRole('button', { name: 'Delete destination' }).click()
      await page.getByRole('heading', { name: 'Destinations', level: 1 }).waitFor()
      expect((await api('GET', `/tenants/acme/destinations/${ids.other}`)).status).toBe(404)
      const rows = page.getByRole('row').filter({ hasText: '127.0.0.1' })
      await rows.first().waitFor()
      expect(await rows.count()).toBe(1)
    })

    it('shows delivery charts from the metrics API', async () => {
      await go('#/metrics')
      const chart = page.getByRole('img', { name: /Deliveries to 127\.0\.0\.1:\d+: 3 deliveries, 1 failed/ })
      await chart.waitFor()
      await noAxeViolations('metrics page')
      await shot('portal-metrics.png')
    })

    it('filters the event log by topic, destination and time, and pages through it', async () => {
      const before = sink.received.length
      for (let i = 1; i <= 24; i++) expect((await publish(`bulk-${String(i).padStart(2, '0')}`, { n: i })).status).toBe(202)
      expect((await publish('invoice-7', { invoice: 7 }, true, 'invoice.paid')).status).toBe(202)
      await waitFor(() => sink.received.length >= before + 25, 20_000, 'the 25 deliveries')
      // An event is in the log once its attempt is written, which follows the receiver's answer: wait for
      // all 27, or the first page can be a full 25 with the oldest new one still missing (then 3 older).
      await waitFor(async () => (await api('GET', '/tenants/acme/events?limit=100')).body.models.length === 27, 20_000, 'the 27 events in the log')
      await go('#/events')
      const rows = page.locator('table.list tbody tr')
      await refreshUntil(page.getByRole('row').filter({ hasText: 'invoice-7' }), 'invoice-7 in the event log')
      // 27 events: a page of 25, then the 2 oldest.
      expect(await rows.count()).toBe(25)
      await page.getByRole('button', { name: 'Older' }).click()
      await page.getByRole('row').filter({ hasText: 'order-1001' }).waitFor()
      expect(await rows.count()).toBe(2)
      expect(await page.getByRole('button', { name: 'Older' }).isDisabled()).toBe(true)
      await page.getByRole('button', { name: 'Newer' }).click()
      await page.getByRole('row').filter({ hasText: 'invoice-7' }).waitFor()
      expect(await rows.count()).toBe(25)

      await page.getByLabel('Topic').fill('invoice.paid')
      await page.getByRole('button', { name: 'Apply filters' }).click()
      await waitFor(async () => (await rows.count()) === 1, 10_000, 'the topic filter')
      expect(await rows.first().textContent()).toContain('invoice-7')
      await page.getByLabel('Topic').fill('')
      await page.getByLabel('Destination').selectOption({ label: `127.0.0.1:${sink.port}` })
      await page.getByLabel('From').fill('2099-01-01T00:00')
      await page.getByRole('button', { name: 'Apply filters' }).click()
      await page.getByText('No events match').waitFor()
      expect(new URL(page.url()).hash).toContain(`destination_id=${ids.destination}`)
      await page.getByLabel('From').fill('2020-01-01T00:00')
      await page.getByRole('button', { name: 'Apply filters' }).click()
      await waitFor(async () => (await rows.count()) === 25, 10_000, 'the time filter')
    })

    it.runIf(setup.screenshots)('creates a destination of each type from its generated form, showing no secret', async () => {
      for (const [type, values] of Object.entries(formValues)) {
        await go(`#/destinations/new/${type}`)
        // Optional fields (kafka's SASL mechanism and login) are folded: unfold them to fill them.
        const folded = page.locator('details.optional-fields:not([open]) > summary')
        while ((await folded.count()) > 0) await folded.first().click()
        for (const [key, value] of Object.entries(values.config ?? {})) await page.locator(`#f-config-${key}`).fill(value)
        for (const [key, value] of Object.entries(values.credentials ?? {})) {
          const input = page.locator(`#f-credentials-${key}`)
          expect(await input.getAttribute('type'), `${type} ${key}`).toBe(key === 'key' || key === 'username' ? 'text' : 'password')
          await input.fill(value)
        }
        await noAxeViolations(`${type} form`)
        // Each form as filled in, to look at (never into docs/).
        mkdirSync(join(tmpdir(), 'outflow-portal-forms'), { recursive: true })
        await page.screenshot({ path: join(tmpdir(), 'outflow-portal-forms', `${type}.png`), fullPage: true, animations: 'disabled' })
        await page.getByRole('button', { name: 'Create destination' }).click()
        await page.getByRole('button', { name: 'Rotate secret' }).or(page.getByRole('button', { name: 'Delete' })).first().waitFor()
        const id = decodeURIComponent(new URL(page.url()).hash.replace('#/destinations/', ''))
        expect((await api('GET', `/tenants/acme/destinations/${id}`)).body.type, type).toBe(type)
        expect(await page.content(), type).not.toContain(values.secret!)
        await api('DELETE', `/tenants/acme/destinations/${id}`)
      }
    })

    it.runIf(setup.screenshots)('offers replay once the engine has the route, and posts the range', async () => {
      // A stand-in answers for the replay route in the browser, so the posted range is checked without running a replay.
      const replay = await browser.context.newPage()
      let posted: unknown
      await replay.route('**/api/v1/openapi.json', async (route) => {
        const response = await route.fetch()
        const doc = await response.json()
        doc.paths['/tenants/{tenant_id}/destinations/{destination_id}/replay'] = { post: { operationId: 'replayDestination' } }
        await route.fulfill({ response, json: doc })
      })
      await replay.route('**/replay', async (route) => {
        posted = route.request().postDataJSON()
        await route.fulfill({ status: 202, json: { id: 'rpl_1', status: 'running', matched: 27, done: 0, failed: 0, created_at: new Date().toISOString() } })
      })
      await replay.goto(await signInLink('acme'))
      await replay.getByRole('heading', { name: 'Destinations', level: 1 }).waitFor()
      await replay.evaluate((h) => (location.hash = h), `#/destinations/${ids.destination}`)
      await replay.getByRole('button', { name: 'Replay events' }).click()
      const dialog = replay.getByRole('dialog', { name: 'Replay events' })
      await dialog.getByLabel('Events').selectOption('failed')
      await dialog.getByRole('button', { name: 'Replay' }).click()
      await dialog.getByText('Replay rpl_1: running, 0 of 27 done.').waitFor()
      expect(posted).toEqual({ since: expect.stringMatching(/^\d{4}-\d\d-\d\dT/), status: 'failed' })
      await replay.close()
    })

    it('erases an event from its page after a confirmation, and shows it erased', async () => {
      await go('#/events/bulk-01')
      await page.getByRole('heading', { name: 'Event bulk-01' }).waitFor()
      expect(await page.getByRole('group', { name: 'Event payload' }).textContent()).toContain('"n": 1')
      await page.getByRole('button', { name: 'Erase payload' }).click()
      await page.getByRole('dialog', { name: "Erase this event's payload?" }).getByRole('button', { name: 'Erase', exact: true }).click()
      await page.getByText(/^Erased .* It is never sent again\.$/).waitFor()
      expect(await page.getByRole('group', { name: 'Event payload' }).count()).toBe(0)
      expect(await page.getByRole('button', { name: /Retry delivery|Send again|Erase payload/ }).count()).toBe(0)
      // The attempt stays in the log with its status code; the receiver's answer is gone.
      const attempt = await page.locator('table.attempts tbody tr').first().textContent()
      expect(attempt).toMatch(/Delivered.*200/)
      expect(attempt).not.toContain('received')
      expect((await api('GET', '/tenants/acme/events/bulk-01')).body).toMatchObject({ data: null, expunged_at: expect.any(String) })
      await noAxeViolations('erased event page')
      await shot('portal-event-erased.png')
    })

    it('cannot reach another tenant’s data by editing URLs', async () => {
      await go(`#/destinations/${ids.globexDestination}`)
      await page.getByText(`No destination ${ids.globexDestination} here.`).waitFor()
      await go(`#/destinations/${ids.globexDestination}/edit`)
      await page.getByRole('alert').filter({ hasText: `No destination ${ids.globexDestination} here.` }).waitFor()
      await go(`#/events/${ids.globexEvent}`)
      await page.getByText(`No event ${ids.globexEvent} here.`).waitFor()
      await go(`#/events?destination_id=${ids.globexDestination}`)
      await page.getByText('No events match').waitFor()
      expect(await page.content()).not.toMatch(/globex-private|confidential/)
      // The tenant comes from the session, never from the page URL: every API call was acme's (or public, or the catalog every tenant shares).
      const apiCalls = requested.filter((path) => path.startsWith('/api/v1/'))
      expect(apiCalls.filter((path) => !/^\/api\/v1\/(tenants\/acme\/|metrics\/|topics$|portal\/sessions$|openapi\.json$)/.test(path))).toEqual([])
      expect(apiCalls.some((path) => path.includes('/tenants/globex'))).toBe(false)
    })

    it('follows ?theme=dark, and lays out for a phone', async () => {
      await page.goto(await signInLink('acme', 'dark'))
      await page.getByRole('heading', { name: 'Destinations', level: 1 }).waitFor()
      expect(await page.locator('html').getAttribute('data-theme')).toBe('dark')
      await noAxeViolations('destinations page, dark')
      await go(`#/events/order-1001?destination_id=${ids.destination}`)
      await noAxeViolations('event page, dark')
      // The payload tree folds from the keyboard; the skip link leads into the page.
      const items = page.getByRole('group', { name: 'Event payload' }).locator('summary').filter({ hasText: '"items"' })
      await items.focus()
      await page.keyboard.press('Enter')
      expect(await items.evaluate((s) => (s.parentElement as HTMLDetailsElement).open)).toBe(false)
      const skip = page.getByRole('link', { name: 'Skip to content' })
      await skip.focus()
      expect((await skip.boundingBox())!.y).toBeGreaterThanOrEqual(0)
      await page.keyboard.press('Enter')
      expect(await page.evaluate(() => document.activeElement?.id)).toBe('main')
      await page.setViewportSize({ width: 390, height: 844 })
      await go('#/')
      expect(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth)).toBe(true)
      const cell = page.getByRole('cell').filter({ hasText: 'order.*' }).first()
      expect(await cell.evaluate((e) => getComputedStyle(e).display)).toBe('block')
      await noAxeViolations('destinations page on a phone')
      await shot('portal-phone.png')
      for (const hash of [`#/events/order-1001?destination_id=${ids.destination}`, `#/destinations/${ids.destination}/edit`, '#/events', '#/metrics']) {
        await go(hash)
        await page.waitForLoadState('networkidle')
        expect(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth), `${hash} fits a phone`).toBe(true)
      }
      await noAxeViolations('metrics page on a phone')
      await page.setViewportSize({ width: 1280, height: 860 })
    })

    it('ran without page errors, console errors or CSP violations', () => {
      // Chromium logs the API's expected refusals (a used code, another tenant's ids) as failed loads.
      const expected = /^console error: Failed to load resource: the server responded with a status of (401|404)/
      expect(browser.problems.filter((p) => !expected.test(p))).toEqual([])
    })
  })
}
