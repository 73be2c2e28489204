import { describe, expect, it } from 'vitest'
import { catalog } from '../support/catalog.js'
import { portalBrowser, portalRuns } from '../support/portal-browser.js'
import { startExpressServer, type StorageName } from './servers.js'

// The portal's "Event types" page and the destination form's topic picker, in Chromium, on an Express host
// whose engine has a topic catalog. Every page passes axe in both themes.

const portal = portalBrowser()

for (const storage of ['sqlite', 'postgres'] as StorageName[]) {
  describe.runIf(portalRuns(storage))(`portal event types in Chromium on ${storage}`, { timeout: 60_000 }, () => {
    const session = portal.session(() => startExpressServer(storage, { topics: catalog }), { screenshots: storage === 'sqlite' })
    const { api, noAxeViolations, shot } = session

    it('lists each topic with its description, field tree, example and deprecation', async () => {
      const { page } = session
      await page.getByRole('link', { name: 'Event types' }).click()
      await page.getByRole('heading', { name: 'Event types', level: 1 }).waitFor()
      // The title renders before the catalog is read: wait for the topics (CI met the empty list on Postgres).
      await page.getByRole('heading', { name: Object.keys(catalog).at(-1), level: 2 }).waitFor()
      const headings = await page.getByRole('heading', { level: 2 }).allTextContents()
      expect(headings).toEqual(Object.keys(catalog))

      const created = page.getByRole('article', { name: 'order.created' })
      expect(await created.getByText('An order was placed').count()).toBe(1)
      const fields = created.getByRole('group', { name: 'Fields of order.created' })
      const field = (name: string) => fields.locator('li', { has: page.locator(`code.schema-name:text-is("${name}")`) }).first()
      expect(await field('id').textContent()).toContain('string')
      expect(await field('id').textContent()).toContain('required')
      expect(await field('id').textContent()).toContain('The order id')
      expect(await field('total').textContent()).toContain('number ≥ 0')
      expect(await field('currency').textContent()).toContain('"EUR" | "USD"')
      expect(await field('placed_at').textContent()).toContain('string (date-time)')
      expect(await field('placed_at').textContent()).toContain('optional')
      expect(await field('items').textContent()).toContain('array of object')
      // Fields of array items nest under the array.
      expect(await field('quantity').textContent()).toContain('integer ≥ 1')
      expect(await created.getByRole('group', { name: 'Example payload of order.created' }).textContent()).toContain('"A-1"')

      const signedUp = page.getByRole('article', { name: 'user.signed_up' }).getByRole('group', { name: 'Fields of user.signed_up' })
      expect(await signedUp.textContent()).toContain('"free" | "pro"')
      const placed = page.getByRole('article', { name: 'order.placed' })
      expect(await placed.getByText('Deprecated: use order.created').count()).toBe(1)
      expect(await placed.textContent()).toContain('No payload schema: any JSON object.')
      await noAxeViolations('event types page (light)')
      await shot('portal-event-types.png')
      await page.getByRole('button', { name: 'Switch to the dark theme' }).click()
      await noAxeViolations('event types page (dark)')
      await page.getByRole('button', { name: 'Switch to the light theme' }).click()
    })

    it('the destination form’s topic picker shows descriptions, marks deprecated topics and fills the topics field', async () => {
      const { page } = session
      await page.evaluate(() => (location.hash = '#/destinations/new/webhook'))
      const picker = page.getByRole('group', { name: 'Event types' })
      await picker.waitFor()
      const created = picker.getByRole('checkbox', { name: 'order.created', exact: true })
      expect(await created.getAttribute('aria-describedby')).toBeTruthy()
      expect(await picker.textContent()).toContain('An order was placed')
      expect(await picker.getByRole('checkbox', { name: 'order.placed Deprecated: use order.created', exact: true }).count()).toBe(1)
      await created.check()
      await picker.getByRole('checkbox', { name: 'user.signed_up', exact: true }).check()
      expect(await page.locator('#f-topics').inputValue()).toBe('order.created, user.signed_up')
      await created.uncheck()
      expect(await page.locator('#f-topics').inputValue()).toBe('user.signed_up')
      await noAxeViolations('destination form with the topic picker')
      await shot('portal-topic-picker.png')
      await page.locator('#f-config-url').fill('https://example.com/hooks')
      await picker.getByRole('checkbox', { name: 'order.placed Deprecated: use order.created', exact: true }).check()
      await page.getByRole('button', { name: 'Create destination' }).click()
      await page.waitForFunction(() => /^#\/destinations\/[^/]+$/.test(location.hash) && !location.hash.endsWith('/new'))
      const [destination] = (await api('GET', '/tenants/acme/destinations')).body
      expect(destination.topics).toEqual(['user.signed_up', 'order.placed'])
    })
  })
}
