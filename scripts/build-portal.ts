// Builds the tenant portal (portal/) into dist/portal: index.html and content-hashed assets/.
//   npx tsx scripts/build-portal.ts [outDir]      # default dist/portal
// `npm run build` runs it through tsup's onSuccess; `npm run example`, `npm run serve` and the test
// setup run it too, so the sources work without a prior build. Prints nothing unless it fails.
import { createHash } from 'node:crypto'
import { existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { basename, dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { build } from 'esbuild'

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..')
const source = join(root, 'portal')
/** Chromium, Firefox and Safari of the last few years: modern syntax, no polyfills. */
const targets = ['chrome109', 'firefox115', 'safari15.4', 'edge109']

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? sourceFiles(join(dir, entry.name)) : [join(dir, entry.name)],
  )
}

/** A hash of the portal's sources and of this script: the build is current when it matches. */
export function portalSourceHash(): string {
  const hash = createHash('sha256')
  for (const file of [...sourceFiles(source), fileURLToPath(import.meta.url)].sort()) {
    hash.update(relative(root, file)).update('\0').update(readFileSync(file)).update('\0')
  }
  hash.update(JSON.parse(readFileSync(join(root, 'node_modules/preact/package.json'), 'utf8')).version)
  return hash.digest('hex').slice(0, 16)
}

/**
 * Build the portal into `outDir` (replaced as a whole): `index.html` naming `assets/<name>-<hash>.js`
 * and `.css`. Returns the asset names.
 *
 * @example
 * await buildPortal('dist/portal')
 */
export async function buildPortal(outDir: string): Promise<string[]> {
  const target = resolve(outDir)
  const staging = `${target}.building-${process.pid}`
  rmSync(staging, { recursive: true, force: true })
  const result = await build({
    absWorkingDir: root,
    entryPoints: [join(source, 'src/main.tsx')],
    outdir: join(staging, 'assets'),
    entryNames: '[name]-[hash]',
    assetNames: '[name]-[hash]',
    bundle: true,
    minify: true,
    format: 'esm',
    target: targets,
    jsx: 'automatic',
    jsxImportSource: 'preact',
    legalComments: 'none',
    metafile: true,
    logLevel: 'error',
    define: { 'process.env.NODE_ENV': '"production"' },
  })
  const outputs = Object.keys(result.metafile.outputs).map((file) => basename(file))
  const script = outputs.find((name) => name.endsWith('.js'))
  const style = outputs.find((name) => name.endsWith('.css'))
  if (!script || !style) throw new Error(`portal build: expected a .js and a .css output, got ${outputs.join(', ')}`)
  const html = readFileSync(join(source, 'index.html'), 'utf8').replace('%SCRIPT%', `assets/${script}`).replace('%STYLE%', `assets/${style}`)
  writeFileSync(join(staging, 'index.html'), html)
  // Swap the finished build in, so a server reading the old one never sees half a build.
  mkdirSync(dirname(target), { recursive: true })
  const old = `${target}.old-${process.pid}`
  if (existsSync(target)) renameSync(target, old)
  renameSync(staging, target)
  rmSync(old, { recursive: true, force: true })
  return outputs
}

/** Build into `outDir` unless the build there is from the current sources (the stamp is kept in .tmp/). */
export async function ensurePortalBuilt(outDir = join(root, 'dist/portal')): Promise<void> {
  const stamp = join(root, '.tmp', `portal-build-${createHash('sha256').update(resolve(outDir)).digest('hex').slice(0, 8)}`)
  const hash = portalSourceHash()
  const current = existsSync(join(outDir, 'index.html')) && existsSync(stamp) && readFileSync(stamp, 'utf8') === hash
  if (current && statSync(join(outDir, 'assets')).isDirectory()) return
  await buildPortal(outDir)
  mkdirSync(dirname(stamp), { recursive: true })
  writeFileSync(stamp, hash)
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const outDir = process.argv[2] ?? join(root, 'dist/portal')
  await (process.argv[2] ? buildPortal(outDir) : ensurePortalBuilt(outDir))
}
