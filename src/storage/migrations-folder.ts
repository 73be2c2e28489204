import { existsSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

/**
 * The committed drizzle-kit migrations of a dialect. Searched upwards from this module because the
 * depth differs between the sources (src/storage) and the bundle (dist).
 */
export function migrationsFolder(dialect: 'sqlite' | 'postgres'): string {
  let dir = dirname(fileURLToPath(import.meta.url))
  for (let i = 0; i < 5; i++) {
    const candidate = join(dir, 'migrations', dialect)
    if (existsSync(join(candidate, 'meta', '_journal.json'))) return candidate
    dir = dirname(dir)
  }
  throw new Error(`outflow: migrations for ${dialect} not found near ${fileURLToPath(import.meta.url)}`)
}
