import { describe, expect, it } from 'vitest'
import { portalBrowser, portalRuns } from '../support/portal-browser.js'
import { startExpressServer, type StorageName } from './servers.js'

// A destination's payload policy in the portal, in Chromium on an Express host with a publicUrl: the destination
// page shows how it receives an event's data (full, thin, thin above a size, or its type's default;
// docs/delivery.md › Thin payloads), and the destination form sets it (the engine's 422 shown at the field).

const portal = portalBrowser()

for (const storage of ['sqlite', 'postgres'] as StorageName[]) {
  describe.runIf(portalRuns(storage))(`portal payload setting in Chromium on ${storage}`, { timeout: 60_000 }, () => {
    const session = portal.session(() => startExpressServer(storage, { publicUrl: 'https://hooks.example.com/api/v1' }), { screenshots: storage === 'sqlite' })
    const { api, open, submit, createdDestinationId, editDestination, noAxeViolations, shot } = session
    const payloadRow = () => session.page.locator('dl.settings dt', { hasText: /^Payload$/ }).locator('xpath=following-sibling::dd[1]')

    /** The Payload row of a destination's page. */
    const payloadShown = async (payload: unknown) => {
      const created = await api('POST', '/tenants/acme/destinations', { type: 'webhook', topics: ['*'], config: { url: 'https://example.com/hook' }, ...(payload === undefined ? {} : { payload }) })
      expect(created.status).toBe(201)
      await open(`#/destinations/${created.body.id}`)
      await payloadRow().waitFor()
      return (await payloadRow().textContent())?.trim()
    }

    it('shows thin above a size, thin, full and the default', async () => {
      expect(await payloadShown({ thin_above_bytes: 256 * 1024 })).toBe('Thin above 256 KiB, the data itself below')
      expect(await payloadShown('thin')).toBe('Thin: an envelope with a signed link to the data')
      expect(await payloadShown('full')).toBe('Full: the data itself')
      expect(await payloadShown(undefined)).toBe("Default: the data itself (queues go thin above their broker's limit)")
    })

    // The form is the same on both storages: its save is checked through the API on one.
    it.runIf(storage === 'sqlite')('sets thin, thin above 4096 bytes and full in the form, shows the engine’s 422 at the field, and clears it', async () => {
      const { page } = session
      const radio = (name: string) => page.getByRole('radio', { name, exact: true })
      const bytes = page.getByLabel('Thin above (bytes)')
      const stored = async () => (await api('GET', `/tenants/acme/destinations/${id}`)).body.payload

      await open('#/destinations/new/cloudx_sqs')
      await page.getByRole('heading', { name: 'New Amazon SQS destination' }).waitFor()
      expect(await page.locator('#f-payload-desc').textContent()).toContain("the data itself, or a link to it when it would pass the broker's limit of 256 KiB")
      expect(await radio("Type's default (thin above 256 KiB)").isChecked()).toBe(true)

      await open('#/destinations/new/webhook')
      await page.getByRole('heading', { name: 'New Webhook destination' }).waitFor()
      expect(await page.locator('#f-payload-desc').textContent()).toContain('Default for Webhook: full, the data itself.')
      expect(await radio("Type's default (full)").isChecked()).toBe(true)
      await page.getByLabel('URL').fill('https://example.com/from-the-form')
      await radio('Thin above a size, the data itself below').check()
      await bytes.fill('4096')
      await noAxeViolations('destination form with the payload setting')
      await shot('portal-destination-payload.png')
      await page.getByRole('button', { name: 'Switch to the dark theme' }).click()
      await noAxeViolations('destination form with the payload setting, dark')
      await page.getByRole('button', { name: 'Switch to the light theme' }).click()
      await radio('Thin: an envelope with a signed link to the data').check()
      expect(await bytes.count()).toBe(0)
      expect(await submit('Create destination', 'POST')).toMatchObject({ config: { url: 'https://example.com/from-the-form' }, payload: 'thin' })
      const id = await createdDestinationId()
      expect(await stored()).toBe('thin')
      await payloadRow().getByText('Thin: an envelope with a signed link to the data', { exact: true }).waitFor()

      await editDestination(id)
      expect(await radio('Thin: an envelope with a signed link to the data').isChecked()).toBe(true)
      await radio('Thin above a size, the data itself below').check()
      await bytes.fill('4096')
      expect(await submit('Save changes', 'PATCH')).toEqual({ payload: { thin_above_bytes: 4096 } })
      await payloadRow().getByText('Thin above 4 KiB, the data itself below', { exact: true }).waitFor()
      expect(await stored()).toEqual({ thin_above_bytes: 4096 })

      await editDestination(id)
      expect(await bytes.inputValue()).toBe('4096')
      await bytes.fill('2000000000')
      await submit('Save changes', 'PATCH')
      const error = page.locator('#f-payload-thin_above_bytes-error')
      await error.waitFor()
      expect(await error.textContent()).toBe('must be an integer between 0 and 1073741824')
      expect(await bytes.getAttribute('aria-invalid')).toBe('true')
      expect(await bytes.getAttribute('aria-describedby')).toContain('f-payload-thin_above_bytes-error')
      await noAxeViolations('destination form with the engine’s 422 at the payload field')
      expect(await stored()).toEqual({ thin_above_bytes: 4096 })

      await radio('Full: the data itself').check()
      expect(await submit('Save changes', 'PATCH')).toEqual({ payload: 'full' })
      await payloadRow().getByText('Full: the data itself', { exact: true }).waitFor()
      expect(await stored()).toBe('full')

      await editDestination(id)
      await radio("Type's default (full)").check()
      expect(await submit('Save changes', 'PATCH')).toEqual({ payload: null })
      await payloadRow().getByText(/^Default: /).waitFor()
      expect(await stored()).toBeUndefined()
    })
  })
}
