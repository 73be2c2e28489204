import { mkdirSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Page } from 'playwright-core'
import { afterAll, beforeAll, expect } from 'vitest'
import { axeViolations, chromiumAvailable, launchBrowser, type Browser } from '../portal/browser.js'
import { adminApi, type PortalServer, type StorageName } from '../portal/servers.js'
import { postgresAvailable } from './services.js'

// The set-up the portal's browser suites share: one Chromium per test file, and per describe one server with a
// tenant `acme` and one page signed in to its portal (light theme) on the destinations page.

/** Screenshots land in docs/ (docs/portal.md links them) only with OUTFLOW_UPDATE_SCREENSHOTS=1, so a run leaves the checkout unchanged. */
export const screenshotDir = process.env.OUTFLOW_UPDATE_SCREENSHOTS === '1' ? join(import.meta.dirname, '../../docs') : join(tmpdir(), 'outflow-portal-screenshots')

/** Whether a browser suite on `storage` runs: Chromium is there, and Postgres is for the Postgres suite. */
export function portalRuns(storage: StorageName): boolean {
  return chromiumAvailable && (storage === 'sqlite' || postgresAvailable)
}

/** A describe's server and signed-in page. Read its fields inside tests and hooks (they are set by its beforeAll). */
export interface PortalSession {
  readonly browser: Browser
  readonly server: PortalServer
  readonly page: Page
  /** The server's API as its admin: a call's status and JSON body. */
  api(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }>
  /** Open a route of the portal by its hash (`#/destinations/…`). */
  open(hash: string): Promise<void>
  /** Runs axe on the page as it is and fails with the violations, naming `where`. */
  noAxeViolations(where: string): Promise<void>
  /** Clicks the form's `button` and answers the JSON body of the `method` request it sent. */
  submit(button: string, method: 'POST' | 'PATCH'): Promise<any>
  /** After a create: the new destination's id once its page opens (failing with the form's error if the engine refused). */
  createdDestinationId(): Promise<string>
  /** Opens a destination's edit form. */
  editDestination(id: string): Promise<void>
  /** A full-page screenshot `name` in `screenshotDir` when the session takes screenshots, without the notices of earlier actions. */
  shot(name: string): Promise<void>
}

export interface PortalSessionOptions {
  /** Whether `shot` takes screenshots (one storage's suite takes them). */
  screenshots: boolean
}

/**
 * Call at the top of a browser test file: launches Chromium once for the file. Its `session(start)`, called in a
 * describe, starts the server, creates the tenant `acme` and opens its portal in a page; both close after the
 * describe.
 *
 * @example
 * const portal = portalBrowser()
 * describe.runIf(portalRuns('sqlite'))('…', () => {
 *   const session = portal.session(() => startExpressServer('sqlite'), { screenshots: true })
 *   it('…', async () => void (await session.open('#/destinations')))
 * })
 */
export function portalBrowser() {
  let browser: Browser | undefined
  beforeAll(async () => {
    if (chromiumAvailable) browser = await launchBrowser()
  })
  afterAll(async () => {
    await browser?.close()
  })
  return {
    get browser(): Browser {
      return browser!
    },
    session: (start: () => Promise<PortalServer>, options: PortalSessionOptions): PortalSession => openSession(() => browser!, start, options),
  }
}

function openSession(browser: () => Browser, start: () => Promise<PortalServer>, options: PortalSessionOptions): PortalSession {
  let server: PortalServer | undefined
  let page: Page | undefined
  const session: PortalSession = {
    get browser() {
      return browser()
    },
    get server() {
      return server!
    },
    get page() {
      return page!
    },
    api: (method, path, body) => adminApi(server!)(method, path, body),
    async open(hash) {
      await page!.evaluate((h) => (location.hash = h), hash)
    },
    async submit(button, method) {
      const request = page!.waitForRequest((r) => r.method() === method)
      await page!.getByRole('button', { name: button }).click()
      return (await request).postDataJSON()
    },
    async createdDestinationId() {
      await page!.waitForFunction(() => (/^#\/destinations\/[^/]+$/.test(location.hash) && !location.hash.endsWith('/new')) || document.getElementById('form-failure'))
      expect(await page!.locator('#form-failure, .field-error').allTextContents()).toEqual([])
      return decodeURIComponent(await page!.evaluate(() => location.hash.slice('#/destinations/'.length)))
    },
    async editDestination(id) {
      await session.open(`#/destinations/${encodeURIComponent(id)}/edit`)
      await page!.getByRole('heading', { name: /^Edit .* destination$/ }).waitFor()
    },
    async noAxeViolations(where) {
      const violations = await axeViolations(page!)
      expect(violations, `${where}: ${JSON.stringify(violations, null, 1)}`).toEqual([])
    },
    async shot(name) {
      if (!options.screenshots) return
      mkdirSync(screenshotDir, { recursive: true })
      // The screenshot's `style` option injects a stylesheet, which the page's CSP refuses: set the element's style.
      await page!.evaluate(() => document.querySelector<HTMLElement>('.notices')?.style.setProperty('display', 'none'))
      await page!.screenshot({ path: join(screenshotDir, name), fullPage: true, animations: 'disabled' })
      await page!.evaluate(() => document.querySelector<HTMLElement>('.notices')?.style.removeProperty('display'))
    },
  }
  beforeAll(async () => {
    server = await start()
    expect((await session.api('PUT', '/tenants/acme')).status).toBe(201)
    page = await browser().context.newPage()
    await page.goto((await session.api('GET', '/tenants/acme/portal?theme=light')).body.redirect_url)
    await page.getByRole('heading', { name: 'Destinations', level: 1 }).waitFor()
  })
  afterAll(async () => {
    await page?.close()
    await server?.close()
  })
  return session
}
