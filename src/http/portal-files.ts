import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { dirname, extname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { gzipSync } from 'node:zlib'

// The built portal (dist/portal: index.html and hashed assets/), read once into memory with a gzip
// copy of each file. Only files found here are ever served, so no request path reaches the disk.

/** One servable file: its bytes, their gzip, and its content type. */
export interface PortalFile {
  body: Uint8Array<ArrayBuffer>
  gzip: Uint8Array<ArrayBuffer>
  type: string
}

export interface PortalFiles {
  /** index.html for a theme (`data-theme` on <html>, so the first paint has the right colours). */
  index(theme: 'light' | 'dark' | undefined): PortalFile
  /** A file of assets/ by its name; undefined for anything else. */
  asset(name: string): PortalFile | undefined
}

const contentTypes: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
  '.map': 'application/json; charset=utf-8',
}

/** The marker the build leaves in index.html where the API prefix goes. */
export const apiBaseMarker = '%OUTFLOW_API_BASE%'

/**
 * The built portal's directory: beside the bundle in the package (dist/portal), or the checkout's
 * dist/portal when running from the sources (`npm run build`, or the portal build of the tests and
 * `npm run example`). Undefined when neither exists.
 */
export function portalDirectory(): string | undefined {
  const here = dirname(fileURLToPath(import.meta.url))
  const candidates = [join(here, 'portal'), join(here, '..', '..', 'dist', 'portal')]
  return candidates.find((dir) => existsSync(join(dir, 'index.html')) && existsSync(join(dir, 'assets')))
}

function file(bytes: Uint8Array, type: string): PortalFile {
  return { body: new Uint8Array(bytes), gzip: new Uint8Array(gzipSync(bytes, { level: 9 })), type }
}

function escapeAttribute(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;')
}

const loaded = new Map<string, PortalFiles>()

/**
 * The portal's files from `dir`, with `apiBase` (the API prefix the page calls) written into
 * index.html. Cached per directory and prefix.
 *
 * @example
 * loadPortalFiles(portalDirectory()!, '/api/v1').asset('main-3F2A1B.js')
 */
export function loadPortalFiles(dir: string, apiBase: string): PortalFiles {
  const key = `${dir}\0${apiBase}`
  const cached = loaded.get(key)
  if (cached) return cached
  const assets = new Map<string, PortalFile>()
  for (const entry of readdirSync(join(dir, 'assets'), { withFileTypes: true })) {
    const type = contentTypes[extname(entry.name)]
    if (entry.isFile() && type) assets.set(entry.name, file(readFileSync(join(dir, 'assets', entry.name)), type))
  }
  const template = readFileSync(join(dir, 'index.html'), 'utf8').replace(apiBaseMarker, escapeAttribute(apiBase))
  const themed = new Map<string, PortalFile>()
  const index = (theme: 'light' | 'dark' | undefined) => {
    const name = theme ?? 'auto'
    let page = themed.get(name)
    if (!page) {
      const html = theme ? template.replace('<html lang="en">', `<html lang="en" data-theme="${theme}">`) : template
      page = file(Buffer.from(html), contentTypes['.html']!)
      themed.set(name, page)
    }
    return page
  }
  const files: PortalFiles = { index, asset: (name) => assets.get(name) }
  loaded.set(key, files)
  return files
}
