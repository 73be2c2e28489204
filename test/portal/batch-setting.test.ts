import { describe, expect, it } from 'vitest'
import { portalBrowser, portalRuns } from '../support/portal-browser.js'
import { startExpressServer } from './servers.js'

// A destination's batch policy (src/model/batch-policy.ts) in the portal, in Chromium on an Express host on SQLite:
// the destination form's "Batch deliveries" checkbox reveals max events, max bytes, max wait and (webhooks only)
// the format; the destination page shows it; the engine's 422 is shown at its field. The form is the same on
// both storages, so its saves are checked through the API on one.

const portal = portalBrowser()

describe.runIf(portalRuns('sqlite'))('portal batch setting in Chromium on sqlite', { timeout: 60_000 }, () => {
  const session = portal.session(() => startExpressServer('sqlite'), { screenshots: true })
  const { api, open, submit, createdDestinationId, editDestination, noAxeViolations } = session

  it('sets batching in the form, shows it on the destination page, shows the engine’s 422 at its field, and turns it off', async () => {
    const { page } = session
    const batchRow = page.locator('dl.settings dt', { hasText: /^Batching$/ }).locator('xpath=following-sibling::dd[1]')
    const batching = page.getByRole('checkbox', { name: 'Batch deliveries' })
    const stored = async () => (await api('GET', `/tenants/acme/destinations/${id}`)).body.batch

    await open('#/destinations/new/cloudx_sqs')
    await page.getByRole('heading', { name: 'New Amazon SQS destination' }).waitFor()
    await batching.check()
    await page.getByLabel('Max events').waitFor()
    expect(await page.getByLabel('Format').count()).toBe(0)

    await open('#/destinations/new/webhook')
    await page.getByRole('heading', { name: 'New Webhook destination' }).waitFor()
    expect(await batching.isChecked()).toBe(false)
    expect(await page.getByLabel('Max events').count()).toBe(0)
    await page.getByLabel('URL').fill('https://example.com/batches')
    await batching.check()
    await page.getByLabel('Max events').fill('100')
    await page.getByLabel('Max bytes').fill('65536')
    await page.getByLabel('Max wait (ms)').fill('250')
    await page.getByLabel('Format').selectOption('json')
    await noAxeViolations('destination form with batching')
    expect(await submit('Create destination', 'POST')).toMatchObject({ batch: { max_events: 100, max_bytes: 65536, max_wait_ms: 250, format: 'json' } })
    const id = await createdDestinationId()
    expect(await stored()).toEqual({ max_events: 100, max_bytes: 65536, max_wait_ms: 250, format: 'json' })
    await batchRow.getByText('Up to 100 events and 64 KiB per request, waiting at most 250 ms; as a JSON array', { exact: true }).waitFor()
    await noAxeViolations('destination page with batching')

    await editDestination(id)
    expect(await batching.isChecked()).toBe(true)
    expect(await page.getByLabel('Max events').inputValue()).toBe('100')
    await page.getByLabel('Max events').fill('5000')
    await submit('Save changes', 'PATCH')
    const error = page.locator('#f-batch-max_events-error')
    await error.waitFor()
    expect(await error.textContent()).toBe('must be an integer between 1 and 1000')
    expect(await page.getByLabel('Max events').getAttribute('aria-invalid')).toBe('true')
    expect(await stored()).toMatchObject({ max_events: 100 })

    await page.getByLabel('Max events').fill('20')
    await page.getByLabel('Max bytes').fill('')
    await page.getByLabel('Format').selectOption('')
    // A merge patch: the fields left empty are named null, so the engine's defaults apply again.
    expect(await submit('Save changes', 'PATCH')).toEqual({ batch: { max_events: 20, max_wait_ms: 250, max_bytes: null, format: null } })
    await batchRow.getByText('Up to 20 events and 1 MiB per request, waiting at most 250 ms; as a CloudEvents batch', { exact: true }).waitFor()
    expect(await stored()).toEqual({ max_events: 20, max_wait_ms: 250 })

    await editDestination(id)
    await batching.uncheck()
    expect(await submit('Save changes', 'PATCH')).toEqual({ batch: null })
    await batchRow.getByText('Off: one event per request', { exact: true }).waitFor()
    expect((await stored()) ?? null).toBeNull()
  })
})
