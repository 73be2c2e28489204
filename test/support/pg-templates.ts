import { createHash } from 'node:crypto'
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import postgresClient from 'postgres'
import { postgres } from '../../src/storage/postgres.js'
import { pgUrl } from './services.js'

/**
 * Migrated Postgres databases for the suites, cloned from a template rather than migrated one by one: a clone
 * (CREATE DATABASE … TEMPLATE) and the storage's own `migrate()` on it (which finds every migration applied and
 * only makes the coming days' partitions) take a fraction of a migration from scratch, and the suites open a few
 * hundred databases. The template is named by a hash of what migrating does (the Postgres migrations and the
 * storage's migrate code), so a changed migration makes a new one; it is made once, under an advisory lock, by the
 * first process of any run that needs it, and nothing connects to it afterwards (a clone needs that).
 */
export type HistoryLayout = 'partitioned' | 'plain'

const root = join(import.meta.dirname, '../..')
/** Files whose content decides what a migrated database holds: the migrations and the Postgres storage's code. */
const migrationInputs = () => [join(root, 'migrations/postgres'), ...readdirSync(join(root, 'src/storage')).filter((f) => f.startsWith('postgres')).map((f) => join(root, 'src/storage', f))]
const templateLockKey = 0x6f75745f74706c // "out_tpl"

function filesUnder(path: string): string[] {
  if (!statSync(path).isDirectory()) return [path]
  return readdirSync(path).sort().flatMap((name) => filesUnder(join(path, name)))
}

let hash: string | undefined
function inputsHash(): string {
  if (hash) return hash
  const h = createHash('sha256')
  for (const file of migrationInputs().flatMap(filesUnder)) h.update(file.slice(root.length)).update(readFileSync(file))
  return (hash = h.digest('hex').slice(0, 12))
}

const urlOf = (name: string) => {
  const u = new URL(pgUrl)
  u.pathname = `/${name}`
  return u.toString()
}

const made = new Map<HistoryLayout, Promise<string>>()

/** The template database of a layout, made when missing. */
function template(layout: HistoryLayout): Promise<string> {
  let name = made.get(layout)
  if (!name) made.set(layout, (name = makeTemplate(`outflow_tpl_${inputsHash()}_${layout}`, layout)))
  return name
}

async function makeTemplate(name: string, layout: HistoryLayout): Promise<string> {
  const admin = postgresClient(pgUrl, { max: 1, onnotice: () => {} })
  try {
    await admin`select pg_advisory_lock(${templateLockKey})`
    const [found] = await admin`select 1 from pg_database where datname = ${name}`
    if (!found) {
      // Made under another name and renamed once migrated: a process that crashed midway leaves no half template.
      const building = `${name}_b${process.pid}`
      await admin.unsafe(`drop database if exists ${building} with (force)`)
      await admin.unsafe(`create database ${building}`)
      const storage = await postgres({ url: urlOf(building), max: 2, partitionHistory: layout === 'partitioned' })()
      try {
        await storage.migrate()
      } finally {
        await storage.close()
      }
      await admin.unsafe(`alter database ${building} rename to ${name}`)
    }
    await admin`select pg_advisory_unlock(${templateLockKey})`
    return name
  } finally {
    await admin.end()
  }
}

/**
 * A fresh database holding Outflow's migrated tables in `layout`; the storage opened on it still runs `migrate()`
 * as a host's would. `drop()` removes it.
 *
 * @example
 * const db = await migratedDatabase('partitioned'); const storage = await postgres({ url: db.url })(); …; await db.drop()
 */
export async function migratedDatabase(layout: HistoryLayout): Promise<{ url: string; drop: () => Promise<void> }> {
  const source = await template(layout)
  const name = `outflow_t_${process.pid}_${Math.random().toString(36).slice(2, 8)}`
  const admin = postgresClient(pgUrl, { max: 1, onnotice: () => {} })
  try {
    await admin.unsafe(`create database ${name} template ${source} strategy wal_log`)
  } finally {
    await admin.end()
  }
  return {
    url: urlOf(name),
    async drop() {
      const a = postgresClient(pgUrl, { max: 1, onnotice: () => {} })
      await a.unsafe(`drop database if exists ${name} with (force)`)
      await a.end()
    },
  }
}
