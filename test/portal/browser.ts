import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { chromium, type BrowserContext, type Page } from 'playwright-core'
import { requireServices } from '../support/services.js'

// The machine's Chromium through playwright-core: no browser download. Debian's package puts it at
// /usr/bin/chromium (.ci/run installs it when missing).

export const chromiumPath = '/usr/bin/chromium'

/** Whether the browser suites run: Chromium is there, or it must be (OUTFLOW_REQUIRE_SERVICES=1 fails without it). */
export const chromiumAvailable = (() => {
  if (existsSync(chromiumPath)) return true
  if (requireServices) throw new Error(`Chromium is required (OUTFLOW_REQUIRE_SERVICES=1) but ${chromiumPath} is missing: apt-get install -y chromium`)
  console.warn(`[outflow tests] Chromium not found at ${chromiumPath}: skipping the portal's browser suite (apt-get install -y chromium)`)
  return false
})()

export interface Browser {
  context: BrowserContext
  /** Page errors, console errors (CSP violations among them) and failed requests seen so far. */
  problems: string[]
  close(): Promise<void>
}

/** Headless Chromium with a fresh profile directory, quiet: no network of its own beside the pages'. */
export async function launchBrowser(): Promise<Browser> {
  const profile = mkdtempSync(join(tmpdir(), 'outflow-chromium-'))
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: chromiumPath,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage'],
    viewport: { width: 1280, height: 860 },
    timezoneId: 'UTC',
    locale: 'en-GB',
  })
  const problems: string[] = []
  const watch = (page: Page) => {
    page.on('pageerror', (error) => problems.push(`page error: ${error.message}`))
    page.on('console', (message) => message.type() === 'error' && problems.push(`console error: ${message.text()}`))
  }
  context.pages().forEach(watch)
  context.on('page', watch)
  return {
    context,
    problems,
    async close() {
      await context.close()
      rmSync(profile, { recursive: true, force: true })
    },
  }
}

const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8')

export interface AxeViolation {
  id: string
  impact: string | null
  help: string
  nodes: string[]
}

/**
 * axe-core's WCAG 2.x A/AA and best-practice rules on the page as it is. axe is evaluated through the
 * DevTools protocol, so the page's CSP (no inline scripts) stays on while it runs.
 */
export async function axeViolations(page: Page): Promise<AxeViolation[]> {
  await page.evaluate(axeSource)
  return page.evaluate(async () => {
    const axe = (window as unknown as { axe: { run: (context: Document, options: unknown) => Promise<{ violations: { id: string; impact: string | null; help: string; nodes: { target: unknown[] }[] }[] }> } }).axe
    const result = await axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa', 'best-practice'] }, resultTypes: ['violations'] })
    return result.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map((n) => n.target.join(' ')) }))
  })
}
