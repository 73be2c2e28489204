import { mkdirSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { postgresAvailable } from '../support/services.js'
import { axeViolations, chromiumAvailable, launchBrowser, type Browser } from './browser.js'
import { adminApi, startExpressServer, type PortalServer, type StorageName } from './servers.js'

// The destination page shows how the destination receives an event's data: full, thin, thin above a size, or
// its type's default (docs/delivery.md › Thin payloads), and its batch policy (› Batched delivery), in Chromium on
// an Express host with a publicUrl.

const shots = process.env.OUTFLOW_UPDATE_SCREENSHOTS === '1' ? join(import.meta.dirname, '../../docs') : join(tmpdir(), 'outflow-portal-screenshots')

let browser: Browser
beforeAll(async () => {
  if (chromiumAvailable) browser = await launchBrowser()
})
afterAll(async () => {
  await browser?.close()
})

for (const storage of ['sqlite', 'postgres'] as StorageName[]) {
  describe.runIf(chromiumAvailable && (storage === 'sqlite' || postgresAvailable))(`portal payload setting in Chromium on ${storage}`, { timeout: 60_000 }, () => {
    let server: PortalServer
    let page: Page
    const api = (method: string, path: string, body?: unknown) => adminApi(server)(method, path, body)

    beforeAll(async () => {
      server = await startExpressServer(storage, { publicUrl: 'https://hooks.example.com/api/v1' })
      expect((await api('PUT', '/tenants/acme')).status).toBe(201)
      page = await browser.context.newPage()
      await page.goto((await api('GET', '/tenants/acme/portal?theme=light')).body.redirect_url)
      await page.getByRole('heading', { name: 'Destinations', level: 1 }).waitFor()
    })
    afterAll(async () => {
      await page?.close()
      await server?.close()
    })

    /** The Payload row of a destination's page. */
    const payloadShown = async (payload: unknown) => {
      const created = await api('POST', '/tenants/acme/destinations', { type: 'webhook', topics: ['*'], config: { url: 'https://example.com/hook' }, ...(payload === undefined ? {} : { payload }) })
      expect(created.status).toBe(201)
      await page.evaluate((hash) => (location.hash = hash), `#/destinations/${created.body.id}`)
      const row = page.locator('dl.settings dt', { hasText: /^Payload$/ }).locator('xpath=following-sibling::dd[1]')
      await row.waitFor()
      return (await row.textContent())?.trim()
    }

    it('shows thin above a size, thin, full and the default', async () => {
      expect(await payloadShown({ thin_above_bytes: 256 * 1024 })).toBe('Thin above 256 KiB, the data itself below')
      if (storage === 'sqlite') {
        mkdirSync(shots, { recursive: true })
        await page.screenshot({ path: join(shots, 'portal-destination-payload.png'), fullPage: true, animations: 'disabled' })
      }
      expect(await axeViolations(page)).toEqual([])
      expect(await payloadShown('thin')).toBe('Thin: an envelope with a signed link to the data')
      expect(await payloadShown('full')).toBe('Full: the data itself')
      expect(await payloadShown(undefined)).toBe("Default: the data itself (queues go thin above their broker's limit)")
    })

    it('shows the batch policy, or that batching is off', async () => {
      const created = await api('POST', '/tenants/acme/destinations', { type: 'webhook', topics: ['*'], config: { url: 'https://example.com/hook' }, batch: { max_events: 100, max_wait_ms: 250, format: 'json' } })
      await page.evaluate((hash) => (location.hash = hash), `#/destinations/${created.body.id}`)
      const row = page.locator('dl.settings dt', { hasText: /^Batching$/ }).locator('xpath=following-sibling::dd[1]')
      await page.getByText('Up to 100 events').waitFor()
      expect((await row.textContent())?.trim()).toBe('Up to 100 events and 1 MiB per request, waiting up to 250 ms (webhooks: a JSON array)')
    })
  })
}
