import { createHash } from 'node:crypto'
import type { SqlDatabase } from './sql-storages.js'

/** Every row of every table, as text, by table name (rows sorted): what "storage unchanged" compares. */
export type TableDump = Record<string, string[]>

export interface TableDumper {
  /** One digest of every row of every table; equal digests mean byte-for-byte equal tables. */
  fingerprint(): Promise<string>
  /** The rows themselves, to show what changed once fingerprints differ. */
  dump(): Promise<TableDump>
}

const quote = (name: string) => `"${name.replaceAll('"', '""')}"`

/**
 * Reads all tables of a database through its second connection (`SqlDatabase.query`), so a test can
 * assert that a rejected call left storage exactly as it was. Tables are listed from the catalog, so
 * a table added later is covered without changing this. Postgres rows are compared in their text
 * form (`row::text`: jsonb and timestamps as the server prints them), SQLite rows as JSON of their
 * column values; both are hashed per row on the database side or here, and the hashes sorted.
 *
 * @example
 * const tables = tableDumper(db, 'postgres'); const before = await tables.fingerprint()
 */
export function tableDumper(db: Pick<SqlDatabase, 'query'>, dialect: 'sqlite' | 'postgres'): TableDumper {
  let names: string[] | undefined
  const tableNames = async () =>
    (names ??= (
      await db.query<{ name: string }>(
        dialect === 'postgres'
          ? `select tablename as name from pg_tables where schemaname = current_schema() order by tablename`
          : `select name from sqlite_master where type = 'table' and name not like 'sqlite_%' order by name`,
      )
    ).map((r) => r.name))

  async function rowsAsText(): Promise<{ table: string; row: string }[]> {
    const tables = await tableNames()
    if (dialect === 'postgres') {
      const union = tables.map((t) => `select '${t.replaceAll("'", "''")}' as tbl, x::text as row from ${quote(t)} x`).join(' union all ')
      return (await db.query<{ tbl: string; row: string }>(union)).map((r) => ({ table: r.tbl, row: r.row }))
    }
    const out: { table: string; row: string }[] = []
    for (const table of tables) for (const row of await db.query<Record<string, unknown>>(`select * from ${quote(table)}`)) out.push({ table, row: JSON.stringify(row) })
    return out
  }

  return {
    async fingerprint() {
      const hash = createHash('sha256')
      if (dialect === 'postgres') {
        // md5 on the server: only 32 characters a row cross the connection, however large the rows.
        const tables = await tableNames()
        const union = tables.map((t) => `select '${t.replaceAll("'", "''")}' || ':' || md5(x::text) as h from ${quote(t)} x`).join(' union all ')
        const rows = (await db.query<{ h: string }>(`${union} order by 1`)).map((r) => r.h)
        for (const h of rows) hash.update(h).update('\n')
        return hash.digest('hex')
      }
      const rows = (await rowsAsText()).map((r) => `${r.table}:${r.row}`).sort()
      for (const r of rows) hash.update(r).update('\n')
      return hash.digest('hex')
    },
    async dump() {
      const dump: TableDump = {}
      for (const table of await tableNames()) dump[table] = []
      for (const { table, row } of await rowsAsText()) dump[table]!.push(row)
      for (const rows of Object.values(dump)) rows.sort()
      return dump
    },
  }
}

/**
 * What differs between two dumps, table by table: rows only in `before` (-) and only in `after` (+).
 *
 * @example
 * dumpDiff(before, after) // ['tenants: + {"id":"x",…}']
 */
export function dumpDiff(before: TableDump, after: TableDump): string[] {
  const lines: string[] = []
  for (const table of new Set([...Object.keys(before), ...Object.keys(after)])) {
    const was = new Set(before[table] ?? [])
    const now = new Set(after[table] ?? [])
    for (const row of was) if (!now.has(row)) lines.push(`${table}: - ${row.slice(0, 300)}`)
    for (const row of now) if (!was.has(row)) lines.push(`${table}: + ${row.slice(0, 300)}`)
  }
  return lines
}
