import { execFile } from 'node:child_process'
import { cpSync, mkdirSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { promisify } from 'node:util'
import { requireServices } from './services.js'

// The package as a consumer installs it: packed from a fresh build, and npm run as a user runs it.

const run = promisify(execFile)
const root = resolve(import.meta.dirname, '../..')

/** npm as a user runs it: without the npm_* variables of the `npm test` a suite may run under. */
export const npmEnv = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.toLowerCase().startsWith('npm_')))

/**
 * Run npm in `cwd` quietly (no audit, no funding notes), as a user would.
 *
 * @example
 * await npm(['install', '--prefer-offline', 'jest@30'], dir)
 */
export function npm(args: string[], cwd: string, timeout = 180_000) {
  return run('npm', [...args, '--no-audit', '--no-fund', '--loglevel=error'], { cwd, env: npmEnv, timeout })
}

/**
 * Whether the npm registry answers (`npm ping`); when it does not the caller skips `what`, unless
 * services are required (CI), where this throws.
 *
 * @example
 * describe.runIf(await registryReachable('the consumer install test'))('…', () => {})
 */
export async function registryReachable(what: string): Promise<boolean> {
  try {
    await run('npm', ['ping'], { env: npmEnv, timeout: 20_000 })
    return true
  } catch (error) {
    if (requireServices) throw new Error(`the npm registry is required (OUTFLOW_REQUIRE_SERVICES=1) but npm ping failed: ${(error as Error).message}`)
    console.warn(`[outflow tests] the npm registry is unreachable: skipping ${what}`)
    return false
  }
}

/** A packed tarball of this checkout and the paths it holds. */
export interface PackedPackage {
  tarball: string
  files: string[]
}

/**
 * The package as `npm publish` would see it (package.json, README, LICENSE, migrations and a fresh build,
 * without .d.ts, which take minutes; the types are checked by tsc on the sources), packed into `dir`.
 *
 * @example
 * const { tarball } = await packPackage(dir)
 * await npm(['install', tarball], consumer)
 */
export async function packPackage(dir: string): Promise<PackedPackage> {
  const staged = join(dir, 'package')
  mkdirSync(staged)
  for (const file of ['package.json', 'README.md', 'LICENSE', 'migrations']) cpSync(join(root, file), join(staged, file), { recursive: true })
  await run(process.execPath, [join(root, 'node_modules/tsup/dist/cli-default.js'), '--out-dir', join(staged, 'dist'), '--no-dts'], { cwd: root, timeout: 180_000 })
  const { stdout } = await npm(['pack', '--json', '--ignore-scripts', '--pack-destination', dir], staged)
  const [packed] = JSON.parse(stdout) as { files: { path: string }[]; filename: string }[]
  return { tarball: join(dir, packed!.filename), files: packed!.files.map((f) => f.path) }
}
