import { spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, readdirSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'

const repo = resolve(import.meta.dirname, '../..')

/** A host project whose node_modules lacks some packages, with the repo's `src/`, `test/` and `migrations/` inside it. */
export interface HostWithout {
  dir: string
  /** Run `test/fixtures/<fixture>` in a child process of this host; resolves with its exit code and output. */
  run(fixture: string, args?: string[], env?: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }>
  remove(): void
}

/**
 * A directory laid out like a host that did not install `missing`: its node_modules links every package
 * installed here except those. Code runs in a child process with `--preserve-symlinks`, so every import —
 * Outflow's own and those inside its dependencies (drizzle importing better-sqlite3) — resolves in that
 * node_modules, where the missing packages are really absent. No module system is mocked.
 *
 * @example
 * const host = hostWithout(['amqplib'])
 * const { stdout } = await host.run('missing-peers.ts')
 */
export function hostWithout(missing: string[]): HostWithout {
  const installed = realpathSync(join(repo, 'node_modules'))
  const dir = mkdtempSync(join(tmpdir(), 'outflow-without-'))
  const modules = join(dir, 'node_modules')
  mkdirSync(modules)
  for (const entry of readdirSync(installed)) {
    if (entry.startsWith('.') || missing.includes(entry)) continue
    if (!entry.startsWith('@')) {
      symlinkSync(join(installed, entry), join(modules, entry))
      continue
    }
    mkdirSync(join(modules, entry))
    for (const member of readdirSync(join(installed, entry))) {
      if (!missing.includes(`${entry}/${member}`)) symlinkSync(join(installed, entry, member), join(modules, entry, member))
    }
  }
  for (const part of ['src', 'test', 'migrations']) symlinkSync(join(repo, part), join(dir, part))
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ type: 'module', private: true }))
  return {
    dir,
    run(fixture, args = [], env = {}) {
      // The entry is a real file of the host, so the fixture it imports is found through the host's links.
      const entry = join(dir, `run-${fixture.replace(/\W/g, '-')}.ts`)
      writeFileSync(entry, `await import('./test/fixtures/${fixture}')\n`)
      return new Promise((done, fail) => {
        const child = spawn(process.execPath, ['--preserve-symlinks', '--import', 'tsx', entry, ...args], {
          cwd: dir,
          env: { ...process.env, ...env, NODE_OPTIONS: '' },
          stdio: ['ignore', 'pipe', 'pipe'],
        })
        let stdout = ''
        let stderr = ''
        child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()))
        child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
        child.on('error', fail)
        child.on('close', (code) => done({ code, stdout, stderr }))
      })
    },
    remove() {
      rmSync(dir, { recursive: true, force: true })
    },
  }
}
