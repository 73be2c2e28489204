import Stripe from 'stripe'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createVerifier } from '../../src/verify.js'
import { startReceiver, waitFor } from '../support/receiver.js'
import { portalBrowser, portalRuns } from '../support/portal-browser.js'
import { startExpressServer, type StorageName } from './servers.js'

// A webhook's signatures and authentication in the portal, in Chromium on an Express host (SQLite and Postgres):
// the destination page shows the signing scheme, the compatible signature, the authentication (secrets masked),
// the key set's URL and a verification snippet per scheme; the edit form changes them (an engine's 422 shown at
// its field), and the next delivery carries what was chosen, verified by stripe and by outflow/verify through the
// URL the page shows. Every state passes axe, and the page fits a phone.

const stripe = new Stripe('sk_test_portal_receiver_trust')
const stripeSecret = 'whsec_portalStripeSecret0123456789abcdef'
const bearer = 'bearer-token-from-the-portal-0123'

const portal = portalBrowser()

for (const storage of ['sqlite', 'postgres'] as StorageName[]) {
  describe.runIf(portalRuns(storage))(`portal receiver trust in Chromium on ${storage}`, { timeout: 60_000 }, () => {
    const session = portal.session(() => startExpressServer(storage), { screenshots: storage === 'sqlite' })
    const { api, noAxeViolations, shot } = session
    let receiver: Awaited<ReturnType<typeof startReceiver>>
    let id = ''
    const page = () => session.page
    const panel = () => page().getByRole('region', { name: 'Signatures and authentication' })
    /** The value shown beside a term of the panel. */
    const shown = (term: string) => panel().locator(`dt:text-is("${term}") + dd`)
    const openDestination = async () => {
      await page().evaluate((h) => (location.hash = h), `#/destinations/${id}`)
      await panel().waitFor()
    }

    beforeAll(async () => {
      receiver = await startReceiver()
      const created = await api('POST', '/tenants/acme/destinations', { type: 'webhook', topics: ['trust.*'], config: { url: `${receiver.url}/trust` } })
      id = created.body.id
    })
    afterAll(async () => {
      await receiver?.close()
    })

    it('shows the signing scheme, compatible signature, authentication, key set URL and how to verify', async () => {
      await openDestination()
      expect(await shown('Signing scheme').textContent()).toBe('HMAC-SHA256 (v1, Standard Webhooks)')
      expect(await shown('Compatible signature').textContent()).toBe('None')
      expect(await shown('Authentication').textContent()).toBe('None')
      expect(await panel().locator('.key-set-url').textContent()).toBe(`${session.server.origin}/api/v1/signing-keys`)
      const snippets = panel().locator('figure.snippet')
      expect(await snippets.locator('figcaption').allTextContents()).toEqual(['v1 (HMAC) with a Standard Webhooks library'])
      expect(await snippets.locator('pre').textContent()).toContain("new Webhook(process.env.WEBHOOK_SECRET)")
      await noAxeViolations('destination page with the receiver trust panel')
    })

    it('edits them in the destination form, shows the engine’s 422 at its field, and the next delivery carries them', async () => {
      await page().evaluate((h) => (location.hash = h), `#/destinations/${id}/edit`)
      await page().getByRole('heading', { name: 'Edit Webhook destination' }).waitFor()
      const preset = page().locator('#f-config-compatible_signature')
      expect(await page().locator('#f-config-compatible_signature-choices option').evaluateAll((options) => options.map((o) => (o as HTMLOptionElement).value))).toEqual(['svix', 'github', 'stripe', 'outpost', 'custom'])
      await preset.fill('custom')
      await page().getByRole('button', { name: 'Save changes' }).click()
      const error = page().locator('#f-config-compatible_signature_header-error')
      await error.waitFor()
      expect(await error.textContent()).toBe('required with compatible_signature "custom"')
      await noAxeViolations('edit form with the engine’s 422')

      await preset.fill('stripe')
      await page().locator('#f-config-signature_scheme').fill('both')
      await page().locator('#f-credentials-compatible_signature_secret').fill(stripeSecret)
      await page().locator('#f-credentials-bearer_token').fill(bearer)
      await page().getByRole('button', { name: 'Save changes' }).click()
      await panel().waitFor()
      await shown('Compatible signature').getByText('Stripe-style (Stripe-Signature)', { exact: true }).waitFor()
      expect(await shown('Signing scheme').textContent()).toBe('HMAC and Ed25519 (v1 and v1a), while receivers move')
      expect(await shown('Authentication').textContent()).toBe(`Bearer token ${bearer.slice(0, 4)}****`)
      const captions = await panel().locator('figcaption').allTextContents()
      expect(captions).toEqual(['v1 (HMAC) or v1a (Ed25519) with outflow/verify', 'Stripe-style (Stripe-Signature), compatible'])
      const code = await panel().locator('pre').allTextContents()
      expect(code[0]).toContain(`keySetUrl: '${session.server.origin}/api/v1/signing-keys'`)
      expect(code[1]).toContain('const secret = process.env.OLD_WEBHOOK_SECRET')
      expect(code[1]).toContain('Stripe.webhooks.constructEvent(rawBody, signature, secret)')
      const html = await page().content()
      expect(html).not.toContain(stripeSecret)
      expect(html).not.toContain(bearer)
      await noAxeViolations('destination page with a compatible signature and authentication')
      await shot('portal-receiver-trust.png')

      const stored = (await api('GET', `/tenants/acme/destinations/${id}`)).body
      expect(stored).toMatchObject({ config: { compatible_signature: 'stripe', signature_scheme: 'both' }, credentials: { compatible_signature_secret: 'whse****', bearer_token: 'bear****' } })
      expect((await api('POST', '/publish', { tenant_id: 'acme', topic: 'trust.checked', data: { trusted: true } })).status).toBe(202)
      const [delivered] = await waitFor(() => receiver.on('/trust').length > 0 && receiver.on('/trust'))
      expect(delivered!.headers.authorization).toBe(`Bearer ${bearer}`)
      expect(stripe.webhooks.constructEvent(delivered!.body, delivered!.headers['stripe-signature'] as string, stripeSecret)).toEqual({ trusted: true })
      const keySetUrl = (await panel().locator('.key-set-url').textContent())!
      const { payload } = await createVerifier({ keySetUrl }).verify(delivered!.body, { ...delivered!.headers, 'webhook-signature': String(delivered!.headers['webhook-signature']).split(' ').filter((s) => s.startsWith('v1a,')).join(' ') })
      expect(payload).toEqual({ trusted: true })
    })

    it('fits a phone and passes axe in the dark theme', async () => {
      await page().setViewportSize({ width: 390, height: 844 })
      await openDestination()
      expect(await page().evaluate(() => document.documentElement.scrollWidth <= window.innerWidth)).toBe(true)
      await noAxeViolations('receiver trust on a phone')
      await shot('portal-receiver-trust-phone.png')
      await page().getByRole('button', { name: 'Switch to the dark theme' }).click()
      await noAxeViolations('receiver trust, dark')
      await page().getByRole('button', { name: 'Switch to the light theme' }).click()
      await page().setViewportSize({ width: 1280, height: 860 })
    })

    it('ran without page errors, console errors or CSP violations', () => {
      // The save the engine refused (422) is logged by Chromium as a failed load.
      const expected = /^console error: Failed to load resource: the server responded with a status of 422/
      expect(portal.browser.problems.filter((p) => !expected.test(p))).toEqual([])
    })
  })
}
