/**
 * Bulk seeding at storage level, for the rows that would take too long to publish and deliver one
 * by one: 1,000,000 delivered events behind the listing rows, 200,000 pending deliveries behind the
 * RSS row. Rows are generated inside the database (a recursive CTE on SQLite, generate_series on
 * Postgres) in the shape of src/storage/schema/{sqlite,postgres}.ts, for a tenant and destination
 * that already exist (created through the engine). The engine must not be running meanwhile.
 *
 * Seeded row i: event `evt_seed<i, 9 digits>` at `startMs + i × stepMs` (one per millisecond by
 * default, so the listing order is the order of i), delivery `dlv_seed<i>`, attempt `att_seed<i>`.
 */
import type BetterSqlite3 from 'better-sqlite3'
import type PostgresJs from 'postgres'

export interface SeedTarget {
  /** SQLite file, or Postgres URL. */
  dialect: 'sqlite' | 'postgres'
  location: string
}

export interface SeedRequest {
  tenantId: string
  destinationId: string
  topic: string
  count: number
  /** Event time of row 0, ms since epoch. */
  startMs: number
  /** Time between consecutive rows, ms (default 1): 2592 spreads 1,000,000 events over 30 days. */
  stepMs?: number
  /** `delivered`: one successful attempt each (listed by the events API). `pending`: due now, never attempted. */
  state: 'delivered' | 'pending'
  onProgress?: (done: number) => void
}

const chunk = 100_000

/** The listing position of seeded row i: [event time ms, event id, destination id]. */
export function seededPosition(request: Pick<SeedRequest, 'startMs' | 'stepMs' | 'destinationId'>, i: number): [number, string, string] {
  return [request.startMs + i * (request.stepMs ?? 1), `evt_seed${String(i).padStart(9, '0')}`, request.destinationId]
}

/**
 * Insert `count` events with their deliveries (and attempts, when delivered).
 *
 * @example
 * await seed({ dialect: 'sqlite', location: file }, { tenantId: 't1', destinationId, topic: 'bench', count: 1e6, startMs, state: 'delivered' })
 */
export async function seed(target: SeedTarget, request: SeedRequest): Promise<void> {
  if (target.dialect === 'sqlite') await seedSqlite(target.location, request)
  else await seedPostgres(target.location, request)
}

async function seedSqlite(file: string, r: SeedRequest): Promise<void> {
  const { default: Database } = (await import('better-sqlite3')) as { default: typeof BetterSqlite3 }
  const db = new Database(file)
  try {
    db.pragma('journal_mode = WAL')
    db.pragma('synchronous = OFF') // seeding is not measured; a crash just means a rerun
    db.pragma('cache_size = -262144')
    const series = 'WITH RECURSIVE s(i) AS (SELECT @from UNION ALL SELECT i + 1 FROM s WHERE i + 1 < @to)'
    const pad = (prefix: string) => `'${prefix}' || printf('%09d', i)`
    const delivered = r.state === 'delivered'
    const statements = [
      db.prepare(`${series}
        INSERT INTO events (tenant_id, id, topic, time, data, metadata, eligible_for_retry, created_at)
        SELECT @tenant, ${pad('evt_seed')}, @topic, @start + i * @step, json_object('n', i, 'seeded', json('true')), '{}', 1, @start + i * @step FROM s`),
      db.prepare(`${series}
        INSERT INTO deliveries (id, tenant_id, event_id, destination_id, topic, event_time, status, attempt_count, manual,
                                next_attempt_at, lease_owner, lease_until, last_attempt_at, successful_at)
        SELECT ${pad('dlv_seed')}, @tenant, ${pad('evt_seed')}, @destination, @topic, @start + i * @step,
               ${delivered ? `'success', 1, 0, NULL, NULL, NULL, @start + i * @step + 5, @start + i * @step + 5` : `'pending', 0, 0, @start + i * @step, NULL, NULL, NULL, NULL`}
        FROM s`),
      ...(delivered
        ? [
            db.prepare(`${series}
              INSERT INTO attempts (id, tenant_id, event_id, destination_id, delivery_id, attempt_number, manual, status,
                                    response_status_code, response_body, response_headers, error, error_kind, duration_ms, delivered_at,
                                    topic, destination_type)
              SELECT ${pad('att_seed')}, @tenant, ${pad('evt_seed')}, @destination, ${pad('dlv_seed')}, 1, 0, 'success',
                     200, 'ok', '{"content-type":"text/plain"}', NULL, NULL, 3, @start + i * @step + 5, @topic, 'webhook'
              FROM s`),
          ]
        : []),
    ]
    const insertChunk = db.transaction((from: number, to: number) => {
      for (const statement of statements)
        statement.run({ from, to, tenant: r.tenantId, destination: r.destinationId, topic: r.topic, start: r.startMs, step: r.stepMs ?? 1 })
    })
    for (let from = 0; from < r.count; from += chunk) {
      const to = Math.min(r.count, from + chunk)
      insertChunk(from, to)
      r.onProgress?.(to)
    }
    db.pragma('wal_checkpoint(TRUNCATE)')
  } finally {
    db.close()
  }
}

async function seedPostgres(url: string, r: SeedRequest): Promise<void> {
  const { default: connect } = (await import('postgres')) as { default: typeof PostgresJs }
  const sql = connect(url, { max: 1, onnotice: () => {} })
  const at = (offsetMs: string) => `timestamptz 'epoch' + (${r.startMs}::bigint + i::bigint * ${r.stepMs ?? 1} ${offsetMs}) * interval '1 millisecond'`
  const pad = (prefix: string) => `'${prefix}' || lpad(i::text, 9, '0')`
  const delivered = r.state === 'delivered'
  try {
    // Trees before the partitioned layout (--compare) have no event_created_at column.
    const [column] = await sql<{ carried: boolean }[]>`
      select exists (select 1 from information_schema.columns where table_schema = current_schema() and table_name = 'deliveries' and column_name = 'event_created_at') as carried`
    const created = column?.carried ? { column: ', event_created_at', value: `, ${at('')}` } : { column: '', value: '' }
    await seedPartitions(sql, r.startMs, r.startMs + r.count * (r.stepMs ?? 1))
    for (let from = 0; from < r.count; from += chunk) {
      const to = Math.min(r.count, from + chunk)
      const series = `FROM generate_series(${from}, ${to - 1}) AS i`
      await sql.begin(async (tx) => {
        await tx.unsafe(
          `INSERT INTO events (tenant_id, id, topic, time, data, metadata, eligible_for_retry, created_at)
           SELECT $1, ${pad('evt_seed')}, $2, ${at('')}, jsonb_build_object('n', i, 'seeded', true), '{}'::jsonb, true, ${at('')} ${series}`,
          [r.tenantId, r.topic],
        )
        await tx.unsafe(
          `INSERT INTO deliveries (id, tenant_id, event_id, destination_id, topic, event_time, status, attempt_count, manual,
                                   next_attempt_at, lease_owner, lease_until, last_attempt_at, successful_at${created.column})
           SELECT ${pad('dlv_seed')}, $1, ${pad('evt_seed')}, $2, $3, ${at('')},
                  ${delivered ? `'success', 1, false, NULL, NULL, NULL, ${at('+ 5')}, ${at('+ 5')}` : `'pending', 0, false, ${at('')}, NULL, NULL, NULL, NULL`}${created.value}
           ${series}`,
          [r.tenantId, r.destinationId, r.topic],
        )
        if (delivered)
          await tx.unsafe(
            `INSERT INTO attempts (id, tenant_id, event_id, destination_id, delivery_id, attempt_number, manual, status,
                                   response_status_code, response_body, response_headers, error, error_kind, duration_ms, delivered_at,
                                   topic, destination_type${created.column})
             SELECT ${pad('att_seed')}, $1, ${pad('evt_seed')}, $2, ${pad('dlv_seed')}, 1, false, 'success',
                    200, 'ok', '{"content-type":"text/plain"}'::jsonb, NULL, NULL, 3, ${at('+ 5')}, $3, 'webhook'${created.value}
             ${series}`,
            [r.tenantId, r.destinationId, r.topic],
          )
      })
      r.onProgress?.(to)
    }
    // Autovacuum would get there soon after such a load; do it now so plans reflect the data.
    await sql.unsafe('VACUUM ANALYZE events, deliveries, attempts')
    // The load's WAL written out now, not by a checkpoint inside the window the scenario measures next.
    await sql.unsafe('CHECKPOINT')
  } finally {
    await sql.end()
  }
}

/**
 * On the partitioned layout (src/storage/postgres-partitions.ts), the day partitions the seeded rows fall in, as the
 * engine names and makes them (the engine makes only today's and the coming days'): otherwise they would all land
 * in the DEFAULT partition, which retention never drops.
 */
async function seedPartitions(sql: PostgresJs.Sql, fromMs: number, toMs: number): Promise<void> {
  const [layout] = await sql<{ partitioned: boolean }[]>`
    select exists (select 1 from pg_partitioned_table where partrelid = to_regclass('events')) as partitioned`
  if (!layout?.partitioned) return
  const day = 86_400_000
  for (let start = Math.floor(fromMs / day) * day; start <= toMs; start += day) {
    const name = new Date(start).toISOString().slice(0, 10).replaceAll('-', '')
    const range = `for values from ('${new Date(start).toISOString()}') to ('${new Date(start + day).toISOString()}')`
    await sql.begin(async (tx) => {
      for (const table of ['events', 'deliveries', 'attempts']) await tx.unsafe(`create table if not exists ${table}_p${name} partition of ${table} ${range}`)
      await tx.unsafe(`create unique index if not exists events_p${name}_key on events_p${name} (tenant_id, id)`)
      await tx.unsafe(`create unique index if not exists deliveries_p${name}_key on deliveries_p${name} (tenant_id, event_id, destination_id)`)
    })
  }
}
