import type { Db, Figures } from './scenario.js'
import type { Sizes } from './sizes.js'

/** What one scenario process produced. */
export type Outcome = { ok: true; figures: Figures } | { ok: false; reason: string }

/** Outcomes by `group` or `group:db`. */
export type Outcomes = Map<string, Outcome>

const int = new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 })

function value(outcomes: Outcomes, key: string, field: string): number | undefined {
  const o = outcomes.get(key)
  if (!o?.ok) return undefined
  const v = o.figures.values[field]
  return v === undefined || Number.isNaN(v) ? undefined : v
}

/** A cell for a scenario that did not produce the field: why not. */
function missing(outcomes: Outcomes, key: string): string {
  const o = outcomes.get(key)
  if (!o) return 'not run'
  return o.ok ? 'n/a' : o.reason.startsWith('skipped') ? o.reason : 'error †'
}

const perSec = (v: number) => `${int.format(v)}/s`
const ms = (v: number) => (v >= 100 ? int.format(v) : v.toFixed(1))
const mib = (v: number) => `${int.format(v / 1024 / 1024)} MiB`
const us = (v: number) => `${int.format(v)} µs`

interface Row {
  metric: string
  sqlite: string
  postgres: string
  anchor: string
  ratio: string
  target: string
  met: string
}

function cellOf(outcomes: Outcomes, key: string, field: string, show: (v: number) => string): string {
  const v = value(outcomes, key, field)
  return v === undefined ? missing(outcomes, key) : show(v)
}

function pairOf(outcomes: Outcomes, key: string, p50: string, p99: string): string {
  const a = value(outcomes, key, p50)
  const b = value(outcomes, key, p99)
  return a === undefined || b === undefined ? missing(outcomes, key) : `${ms(a)} / ${ms(b)} ms`
}

/** `rate · CPU µs per item`, or the rate alone when the scenario did not measure its CPU. */
function rateCpuOf(outcomes: Outcomes, key: string, rateField: string, cpuField: string): string {
  const rate = value(outcomes, key, rateField)
  if (rate === undefined) return missing(outcomes, key)
  const cpu = value(outcomes, key, cpuField)
  return cpu === undefined ? perSec(rate) : `${perSec(rate)} · ${us(cpu)}`
}

const dbs: Db[] = ['sqlite', 'postgres']

/** `a / b` of the two databases' values, or `—` where one is missing. */
function perDb(f: (db: Db) => string | undefined): string {
  const parts = dbs.map((db) => f(db) ?? '—')
  return parts.every((p) => p === '—') ? '—' : parts.join(' / ')
}

const mark = (ok: boolean) => (ok ? '✓' : '✗')

/**
 * The markdown table of a run: metric | Outflow SQLite | Outflow Postgres | anchor | ratio | target | met?
 * Ratios and "met?" are given per database as `SQLite / Postgres`.
 */
export function renderTable(outcomes: Outcomes, sizes: Sizes): string {
  const rows: Row[] = []
  const outflowRate = (db: Db) => value(outcomes, `delivery:${db}`, 'deliveriesPerSec')
  const deliveryCells = {
    sqlite: rateCpuOf(outcomes, 'delivery:sqlite', 'deliveriesPerSec', 'cpuUsPerDelivery'),
    postgres: rateCpuOf(outcomes, 'delivery:postgres', 'deliveriesPerSec', 'cpuUsPerDelivery'),
  }
  const c = sizes.concurrency

  const ceiling = value(outcomes, 'ceiling', 'deliveriesPerSec')
  const ceilingCell = `undici ceiling (no storage): ${rateCpuOf(outcomes, 'ceiling', 'deliveriesPerSec', 'cpuUsPerDelivery')}`
  const ceilingTarget: Record<Db, number> = { sqlite: 0.7, postgres: 0.5 }
  rows.push({
    metric: `deliveries/s · engine CPU µs per delivery, ${int.format(sizes.deliveries)} events → 1 webhook, c=${c}, end to end (publishMany ×${sizes.batch}, ${sizes.publishLanes} batches in flight)`,
    ...deliveryCells,
    anchor: ceilingCell,
    ratio: perDb((db) => (ceiling && outflowRate(db) ? `${Math.round((outflowRate(db)! / ceiling) * 100)} %` : undefined)),
    target: '≥ 70 % / ≥ 50 %',
    met: perDb((db) => (ceiling && outflowRate(db) ? mark(outflowRate(db)! >= ceilingTarget[db] * ceiling) : undefined)),
  })

  const drainRate = (db: Db) => value(outcomes, `drain:${db}`, 'deliveriesPerSec')
  const drainTarget: Record<Db, number> = { sqlite: 0.5, postgres: 0.35 }
  rows.push({
    metric: `drain: deliveries/s · engine CPU µs per delivery, ${int.format(sizes.deliveries)} pending deliveries committed before the worker starts → 1 webhook, c=${c}`,
    sqlite: rateCpuOf(outcomes, 'drain:sqlite', 'deliveriesPerSec', 'cpuUsPerDelivery'),
    postgres: rateCpuOf(outcomes, 'drain:postgres', 'deliveriesPerSec', 'cpuUsPerDelivery'),
    anchor: ceilingCell,
    ratio: perDb((db) => (ceiling && drainRate(db) ? `${Math.round((drainRate(db)! / ceiling) * 100)} %` : undefined)),
    target: '≥ 50 % / ≥ 35 %',
    met: perDb((db) => (ceiling && drainRate(db) ? mark(drainRate(db)! >= drainTarget[db] * ceiling) : undefined)),
  })
  rows.push({
    metric: 'drain: engine CPU µs per delivery (row above; SQLite\'s includes the database, Postgres\'s server is another process)',
    sqlite: cellOf(outcomes, 'drain:sqlite', 'cpuUsPerDelivery', us),
    postgres: cellOf(outcomes, 'drain:postgres', 'cpuUsPerDelivery', us),
    anchor: `undici ceiling: ${cellOf(outcomes, 'ceiling', 'cpuUsPerDelivery', us)}`,
    // CPU time per operation grows with the machine's load; the ceiling's, measured in the same run, is the yardstick.
    ratio: perDb((db) => {
      const v = value(outcomes, `drain:${db}`, 'cpuUsPerDelivery')
      const anchor = value(outcomes, 'ceiling', 'cpuUsPerDelivery')
      return v && anchor ? `${(v / anchor).toFixed(1)}×` : undefined
    }),
    target: '≤ 50 µs',
    met: perDb((db) => {
      const v = value(outcomes, `drain:${db}`, 'cpuUsPerDelivery')
      return v === undefined ? undefined : mark(v <= 50)
    }),
  })
  for (const [key, label, target] of [
    ['pgboss', 'pg-boss 10 (Postgres)', 3],
    ['bullmq', 'BullMQ (Redis)', 1.5],
  ] as const) {
    const anchor = value(outcomes, key, 'deliveriesPerSec')
    rows.push({
      metric: `deliveries/s vs ${label.split(' ')[0]}, same sink and c`,
      ...deliveryCells,
      anchor: `${label}: ${rateCpuOf(outcomes, key, 'deliveriesPerSec', 'cpuUsPerDelivery')}`,
      ratio: perDb((db) => (anchor && outflowRate(db) ? `${(outflowRate(db)! / anchor).toFixed(2)}×` : undefined)),
      target: `≥ ${target}×`,
      met: perDb((db) => (anchor && outflowRate(db) ? mark(outflowRate(db)! >= target * anchor) : undefined)),
    })
  }

  const bare = (db: Db) => value(outcomes, `bare-insert:${db}`, 'eventsPerSec')
  const bareAnchor = `bare batched INSERT ×${sizes.batch}: ${perDb((db) => (bare(db) === undefined ? missing(outcomes, `bare-insert:${db}`) : perSec(bare(db)!)))}`
  for (const [field, cpuField, metric] of [
    ['singlePerSec', 'singleCpuUs', `publish() single calls, ${int.format(sizes.publishSingle)} events, ${c} callers (events/s committed · engine CPU µs per event)`],
    ['manyPerSec', 'manyCpuUs', `publishMany() ×${sizes.batch}, ${int.format(sizes.publishMany)} events (events/s committed · engine CPU µs per event)`],
  ] as const) {
    rows.push({
      metric,
      sqlite: rateCpuOf(outcomes, 'publish:sqlite', field, cpuField),
      postgres: rateCpuOf(outcomes, 'publish:postgres', field, cpuField),
      anchor: bareAnchor,
      ratio: perDb((db) => {
        const v = value(outcomes, `publish:${db}`, field)
        return v && bare(db) ? `${Math.round((v / bare(db)!) * 100)} %` : undefined
      }),
      target: '—',
      met: '—',
    })
  }

  const alone = (db: Db) => value(outcomes, `publish:${db}`, 'hostAlonePerSec')
  rows.push({
    metric: `publish inside host transaction (events/s): ${int.format(sizes.publishSingle)} transactions, each the host's row + publish (Postgres: ${c} callers, publish { tx }; SQLite: publishSync in db.transaction) · engine CPU µs per event`,
    sqlite: rateCpuOf(outcomes, 'publish:sqlite', 'inTxPerSec', 'inTxCpuUs'),
    postgres: rateCpuOf(outcomes, 'publish:postgres', 'inTxPerSec', 'inTxCpuUs'),
    anchor: `the same host transactions without the publish: ${perDb((db) => (alone(db) === undefined ? missing(outcomes, `publish:${db}`) : perSec(alone(db)!)))}`,
    ratio: perDb((db) => {
      const v = value(outcomes, `publish:${db}`, 'inTxPerSec')
      return v && alone(db) ? `${Math.round((v / alone(db)!) * 100)} %` : undefined
    }),
    target: '—',
    met: '—',
  })

  rows.push({
    metric: `publishMany() ×${sizes.batch} of a realistic order (2020-12 schema: required fields, enums, bounds, formats) with catalog validation "enforce" (events/s · engine CPU µs per event)`,
    sqlite: rateCpuOf(outcomes, 'catalog:sqlite', 'enforcePerSec', 'enforceCpuUs'),
    postgres: rateCpuOf(outcomes, 'catalog:postgres', 'enforcePerSec', 'enforceCpuUs'),
    anchor: `the same events with validation "off", alternating rounds: ${perDb((db) => {
      const v = value(outcomes, `catalog:${db}`, 'offPerSec')
      return v === undefined ? undefined : perSec(v)
    })}`,
    ratio: perDb((db) => {
      const r = value(outcomes, `catalog:${db}`, 'enforceRatio')
      return r === undefined ? undefined : `${Math.round(r * 100)} %`
    }),
    target: '≥ 85 %',
    met: perDb((db) => {
      const r = value(outcomes, `catalog:${db}`, 'enforceRatio')
      return r === undefined ? undefined : mark(r >= 0.85)
    }),
  })

  const httpCeiling = (db: Db) => value(outcomes, `http-publish:${db}`, 'ceilingRequestsPerSec')
  const httpCell = (db: Db) => {
    const key = `http-publish:${db}`
    const rate = value(outcomes, key, 'requestsPerSec')
    const p99 = value(outcomes, key, 'p99')
    return rate === undefined || p99 === undefined ? missing(outcomes, key) : `${perSec(rate)} · p99 ${ms(p99)} ms`
  }
  rows.push({
    metric: `HTTP API: POST /api/v1/publish via Hono (@hono/node-server), autocannon c=${sizes.httpConnections}, ${sizes.httpSeconds} s, each event matching one webhook, worker off (requests/s · p99)`,
    sqlite: httpCell('sqlite'),
    postgres: httpCell('postgres'),
    anchor: `Hono answering a constant 202 after reading the body: ${perDb((db) => {
      const rate = httpCeiling(db)
      const p99 = value(outcomes, `http-publish:${db}`, 'ceilingP99')
      return rate === undefined || p99 === undefined ? undefined : `${perSec(rate)} · p99 ${ms(p99)} ms`
    })}`,
    ratio: perDb((db) => {
      const rate = value(outcomes, `http-publish:${db}`, 'requestsPerSec')
      return rate && httpCeiling(db) ? `${Math.round((rate / httpCeiling(db)!) * 100)} %` : undefined
    }),
    target: '—',
    met: '—',
  })

  const ceilingLatency = pairOf(outcomes, 'ceiling', 'latencyP50', 'latencyP99')
  rows.push({
    metric: `publish → receive p50 / p99 at ${sizes.latencyRate} events/s (${int.format(sizes.latencyEvents)} events)`,
    sqlite: pairOf(outcomes, 'latency:sqlite', 'p50', 'p99'),
    postgres: pairOf(outcomes, 'latency:postgres', 'p50', 'p99'),
    anchor: `bare undici POST: ${ceilingLatency}`,
    ratio: '—',
    target: 'p99 < 20 ms',
    met: perDb((db) => {
      const p99 = value(outcomes, `latency:${db}`, 'p99')
      const lost = value(outcomes, `latency:${db}`, 'lost') ?? 0
      return p99 === undefined ? undefined : mark(p99 < 20 && lost === 0)
    }),
  })

  for (const [prefix, label] of [
    ['first', 'first page'],
    ['deep', 'deep page by cursor'],
  ] as const) {
    const depth = value(outcomes, 'list:sqlite', `${prefix}Depth`) ?? value(outcomes, 'list:postgres', `${prefix}Depth`)
    rows.push({
      metric: `GET /tenants/t/events?limit=100 p50 / p99 via Hono, ${int.format(sizes.storedEvents)} stored events, ${label}${prefix === 'deep' && depth ? ` (row ${int.format(depth)})` : ''}`,
      sqlite: pairOf(outcomes, 'list:sqlite', `${prefix}P50`, `${prefix}P99`),
      postgres: pairOf(outcomes, 'list:postgres', `${prefix}P50`, `${prefix}P99`),
      anchor: '—',
      ratio: '—',
      target: 'p99 < 10 ms',
      met: perDb((db) => {
        const p99 = value(outcomes, `list:${db}`, `${prefix}P99`)
        return p99 === undefined ? undefined : mark(p99 < 10)
      }),
    })
  }

  const inDay = value(outcomes, 'metrics:sqlite', 'inDay') ?? value(outcomes, 'metrics:postgres', 'inDay')
  for (const [prefix, route] of [
    ['events', 'GET /metrics/events?granularity=1h&measures[]=count (all tenants)'],
    ['attempts', 'GET /metrics/attempts?granularity=1h&measures[]=count&measures[]=error_rate (one tenant)'],
  ] as const) {
    rows.push({
      metric: `${route}, one day, p50 / p99 via Hono, ${int.format(sizes.metricsEvents)} stored events over ${sizes.metricsDays} days${inDay ? ` (${int.format(inDay)} in the day)` : ''}`,
      sqlite: pairOf(outcomes, 'metrics:sqlite', `${prefix}P50`, `${prefix}P99`),
      postgres: pairOf(outcomes, 'metrics:postgres', `${prefix}P50`, `${prefix}P99`),
      anchor: '—',
      ratio: '—',
      target: 'p99 < 100 ms',
      met: perDb((db) => {
        const p99 = value(outcomes, `metrics:${db}`, `${prefix}P99`)
        return p99 === undefined ? undefined : mark(p99 < 100)
      }),
    })
  }

  const pruned = (db: Db) => value(outcomes, `prune:${db}`, 'eventsPerSec')
  const many = (db: Db) => value(outcomes, `publish:${db}`, 'manyPerSec')
  rows.push({
    metric: `pruning: old events deleted/s, each with its delivery and attempt (rows/s ×3), ${int.format(sizes.pruneEvents)} events past a 30-day retention, default batches`,
    sqlite: cellOf(outcomes, 'prune:sqlite', 'eventsPerSec', perSec),
    postgres: cellOf(outcomes, 'prune:postgres', 'eventsPerSec', perSec),
    anchor: `publishMany() ×${sizes.batch} (row above): ${perDb((db) => (many(db) === undefined ? missing(outcomes, `publish:${db}`) : perSec(many(db)!)))}`,
    ratio: perDb((db) => (pruned(db) && many(db) ? `${(pruned(db)! / many(db)!).toFixed(2)}×` : undefined)),
    target: '≥ 1×',
    met: perDb((db) => (pruned(db) && many(db) ? mark(pruned(db)! >= many(db)!) : undefined)),
  })

  rows.push(...pruneDayRows(outcomes, sizes), ...tenantClaimRows(outcomes, sizes))

  rows.push(
    latencyBesideRow(outcomes, sizes, 'latency-prune', `while pruning ${int.format(sizes.pruneEvents)} old events`, 'without pruning (row above)'),
    latencyBesideRow(outcomes, sizes, 'latency-seeded', `with another destination's ${int.format(sizes.replayEvents)} delivered events just stored, no replay`, 'the latency row'),
    latencyBesideRow(outcomes, sizes, 'latency-replay', `while a replay of those ${int.format(sizes.replayEvents)} events runs`, 'without the replay (row above)', 'latency-seeded'),
  )

  rows.push({
    metric: `peak RSS of the engine process, ${int.format(sizes.backlog)} pending deliveries, slow sink`,
    sqlite: cellOf(outcomes, 'backlog:sqlite', 'peakRss', mib),
    postgres: cellOf(outcomes, 'backlog:postgres', 'peakRss', mib),
    anchor: `same engine, empty queue: ${perDb((db) => {
      const v = value(outcomes, `backlog:${db}`, 'idleRss')
      return v === undefined ? undefined : mib(v)
    })}`,
    ratio: '—',
    target: '< 300 MiB',
    met: perDb((db) => {
      const v = value(outcomes, `backlog:${db}`, 'peakRss')
      return v === undefined ? undefined : mark(v < 300 * 1024 * 1024)
    }),
  })

  rows.push(...batchRows(outcomes, sizes), ...growthRows(outcomes, sizes), ...destinationTypeRows(outcomes, sizes), ...soakRows(outcomes, sizes))

  const header = ['metric', 'Outflow SQLite', 'Outflow Postgres', 'anchor', 'ratio', 'target', 'met?']
  const lines = [`| ${header.join(' | ')} |`, `|${header.map((h, i) => (i === 0 || i === 3 ? '---' : ':---:')).join('|')}|`]
  for (const r of rows) lines.push(`| ${[r.metric, r.sqlite, r.postgres, r.anchor, r.ratio, r.target, r.met].join(' | ')} |`)
  return lines.join('\n')
}

/**
 * Batched delivery to a webhook and to SQS (the fake): batch 1 and batch 100 of each measured in one process; the
 * ratio is batch 100's rate over batch 1's.
 */
function batchRows(outcomes: Outcomes, sizes: Sizes): Row[] {
  if (!outcomes.has('batch:sqlite') && !outcomes.has('batch:postgres')) return []
  const receivers = [
    ['batch', '1 webhook', 'one CloudEvents batch POST'],
    ['sqsBatch', '1 cloudx_sqs queue (the wire-level fake)', 'SendMessageBatch calls of 10'],
  ] as const
  return receivers.flatMap(([field, what, how]) =>
    ([1, 100] as const).map((size) => ({
      metric: `batched delivery: deliveries/s · engine CPU µs per delivery, ${int.format(sizes.deliveries)} events → ${what}, batch ${size}${size === 1 ? ' (no batch policy)' : ` (max_wait_ms 20, ${how})`}, end to end (publishMany ×${sizes.batch})`,
      sqlite: rateCpuOf(outcomes, 'batch:sqlite', `${field}${size}PerSec`, `${field}${size}Cpu`),
      postgres: rateCpuOf(outcomes, 'batch:postgres', `${field}${size}PerSec`, `${field}${size}Cpu`),
      anchor: size === 1 ? '—' : 'batch 1 (row above, same run)',
      ratio:
        size === 1
          ? '—'
          : perDb((db) => {
              const one = value(outcomes, `batch:${db}`, `${field}1PerSec`)
              const hundred = value(outcomes, `batch:${db}`, `${field}100PerSec`)
              return one && hundred ? `${(hundred / one).toFixed(2)}×` : undefined
            }),
      target: '—',
      met: '—',
    })),
  )
}

const growthCaseNames = [
  ['d1k1', '1 destination, 1 KB payload', 1],
  ['d10k1', '10 destinations per event, 1 KB', 1],
  ['d100k1', '100 destinations per event, 1 KB', 1],
  ['d1k64', '1 destination, 64 KB payload', 0.25],
] as const

/** Drain cost as fan-out and payload grow; the ratio is CPU per delivery against the 1-destination, 1 KB case. */
function growthRows(outcomes: Outcomes, sizes: Sizes): Row[] {
  return growthCaseNames.map(([key, what, share]) => ({
    metric: `drain with growth: deliveries/s · engine CPU µs per delivery, ${what}, ${int.format(Math.round(sizes.deliveries * share))} deliveries`,
    sqlite: rateCpuOf(outcomes, 'growth:sqlite', `${key}Rate`, `${key}Cpu`),
    postgres: rateCpuOf(outcomes, 'growth:postgres', `${key}Rate`, `${key}Cpu`),
    anchor: key === 'd1k1' ? '—' : 'CPU per delivery vs 1 destination, 1 KB',
    ratio:
      key === 'd1k1'
        ? '—'
        : perDb((db) => {
            const base = value(outcomes, `growth:${db}`, 'd1k1Cpu')
            const v = value(outcomes, `growth:${db}`, `${key}Cpu`)
            return base && v ? `${(v / base).toFixed(2)}×` : undefined
          }),
    target: '—',
    met: '—',
  }))
}

/** The `--soak` row: whole-run rate, slowest/fastest window and peak RSS. */
function soakRows(outcomes: Outcomes, sizes: Sizes): Row[] {
  if (!outcomes.has('soak:sqlite') && !outcomes.has('soak:postgres')) return []
  const cell = (db: Db) => {
    const key = `soak:${db}`
    const rate = value(outcomes, key, 'rate')
    if (rate === undefined) return missing(outcomes, key)
    const [lo, hi, first, last, rss] = ['minWindowRate', 'maxWindowRate', 'firstWindowRate', 'lastWindowRate', 'peakRss'].map((f) => value(outcomes, key, f) ?? Number.NaN)
    return `${perSec(rate)} (windows ${int.format(lo!)}–${int.format(hi!)}/s; first ${int.format(first!)}, last ${int.format(last!)}) · peak RSS ${mib(rss!)}`
  }
  return [
    {
      metric: `soak: ${int.format(sizes.soakDeliveries)} deliveries end to end → 1 webhook, backlog held under ${int.format(sizes.soakBacklog)}, rate per ${sizes.soakSampleMs / 1000} s window`,
      sqlite: cell('sqlite'),
      postgres: cell('postgres'),
      anchor: '—',
      ratio: perDb((db) => {
        const first = value(outcomes, `soak:${db}`, 'firstWindowRate')
        const last = value(outcomes, `soak:${db}`, 'lastWindowRate')
        return first && last ? `last/first ${(last / first).toFixed(2)}` : undefined
      }),
      target: 'flat',
      met: '—',
    },
  ]
}

/** The latency row measured beside other work (`group`), set against the plain latency row. */
function latencyBesideRow(outcomes: Outcomes, sizes: Sizes, group: string, beside: string, anchorLabel: string, anchorGroup = 'latency'): Row {
  return {
    metric: `publish → receive p50 / p99 at ${sizes.latencyRate} events/s (${int.format(sizes.latencyEvents)} events) ${beside}`,
    sqlite: pairOf(outcomes, `${group}:sqlite`, 'p50', 'p99'),
    postgres: pairOf(outcomes, `${group}:postgres`, 'p50', 'p99'),
    anchor: `${anchorLabel}: ${perDb((db) => {
      const p = pairOf(outcomes, `${anchorGroup}:${db}`, 'p50', 'p99')
      return p.endsWith('ms') ? p : undefined
    })}`,
    ratio: '—',
    target: 'p99 < 20 ms',
    met: perDb((db) => {
      const p99 = value(outcomes, `${group}:${db}`, 'p99')
      const lost = value(outcomes, `${group}:${db}`, 'lost') ?? 0
      return p99 === undefined ? undefined : mark(p99 < 20 && lost === 0)
    }),
  }
}

/**
 * One day pruned on Postgres (the prune-day group, a throwaway cluster): the plain tables' DELETE and the
 * partitioned layout's DROP, each pass alone, then live latency while each prunes. Postgres only (SQLite: —).
 */
function pruneDayRows(outcomes: Outcomes, sizes: Sizes): Row[] {
  const key = 'prune-day:postgres'
  if (!outcomes.has(key)) return []
  const v = (field: string) => value(outcomes, key, field)
  const pass = (layout: string) =>
    v(`${layout}Seconds`) === undefined
      ? missing(outcomes, key)
      : `${v(`${layout}Seconds`)!.toFixed(2)} s · ${(v(`${layout}WalBytes`)! / 1e6).toFixed(1)} MB WAL · ${int.format(v(`${layout}DeadTuples`)!)} dead tuples`
  const live = (layout: string) => (v(`${layout}P99`) === undefined ? missing(outcomes, key) : `${ms(v(`${layout}P50`)!)} / ${ms(v(`${layout}P99`)!)} ms`)
  const day = `one day of ${int.format(sizes.pruneDayEvents)} events (each with its delivery and attempt), 40 days old`
  const walRatio = v('plainWalBytes') && v('partitionedWalBytes') ? v('plainWalBytes')! / v('partitionedWalBytes')! : undefined
  return [
    { metric: `pruning ${day}: pass · WAL written · dead tuples left, plain tables (batched DELETE)`, sqlite: '—', postgres: pass('plain'), anchor: '—', ratio: '—', target: '—', met: '—' },
    {
      metric: `pruning ${day}: pass · WAL written · dead tuples left, partitioned history (the day's partitions detached and dropped)`,
      sqlite: '—',
      postgres: pass('partitioned'),
      anchor: 'plain tables (row above)',
      ratio: walRatio && v('partitionedSeconds') ? `${(v('plainSeconds')! / v('partitionedSeconds')!).toFixed(1)}× faster, 1/${Math.round(walRatio)} of the WAL` : '—',
      target: 'no dead tuple',
      met: v('partitionedDeadTuples') === undefined ? '—' : mark(v('partitionedDeadTuples') === 0),
    },
    ...(['plain', 'partitioned'] as const).map((layout) => ({
      metric: `publish → receive p50 / p99 at ${sizes.latencyRate} events/s (${int.format(sizes.pruneDayLive)} events, on a warm engine) while its pass prunes ${day}, ${layout === 'plain' ? 'plain tables (DELETE)' : 'partitioned history (DROP)'}`,
      sqlite: '—',
      postgres: live(layout),
      anchor: `without pruning: ${v(`${layout}QuietP99`) === undefined ? '—' : `p99 ${ms(v(`${layout}QuietP99`)!)} ms`}${v(`${layout}LivePassMs`) === undefined ? '' : `; the pass took ${(v(`${layout}LivePassMs`)! / 1000).toFixed(2)} s`}`,
      ratio: '—',
      target: 'p99 < 20 ms',
      met: v(`${layout}P99`) === undefined ? '—' : mark(v(`${layout}P99`)! < 20 && (v(`${layout}Lost`) ?? 0) === 0),
    })),
  ]
}

const destinationTypeCases = [
  ['streams', 'nats', 'nats_jetstream, to the real nats-server (JetStream) on this machine'],
  ['streams', 'redis', 'redis_streams, to the real Redis on this machine'],
  ['kafka-eventbridge', 'kafka', 'kafka, to a wire-level fake broker in the scenario process (not a Kafka cluster)'],
  ['kafka-eventbridge', 'eventbridge', 'aws_eventbridge, to a wire-level fake PutEvents endpoint in the scenario process (not AWS)'],
] as const

/** End to end to the other destination types, set against the webhook's end-to-end row. */
function destinationTypeRows(outcomes: Outcomes, sizes: Sizes): Row[] {
  if (![...outcomes.keys()].some((k) => k.startsWith('streams:') || k.startsWith('kafka-eventbridge:'))) return []
  return destinationTypeCases.map(([group, key, what]) => ({
    metric: `deliveries/s · engine CPU µs per delivery end to end (publishMany ×${sizes.batch}) to ${what}`,
    sqlite: rateCpuOf(outcomes, `${group}:sqlite`, `${key}DeliveriesPerSec`, `${key}CpuUsPerDelivery`),
    postgres: rateCpuOf(outcomes, `${group}:postgres`, `${key}DeliveriesPerSec`, `${key}CpuUsPerDelivery`),
    anchor: 'the webhook end to end (first row)',
    ratio: perDb((db) => {
      const v = value(outcomes, `${group}:${db}`, `${key}DeliveriesPerSec`)
      const webhook = value(outcomes, `delivery:${db}`, 'deliveriesPerSec')
      return v && webhook ? `${Math.round((v / webhook) * 100)} %` : undefined
    }),
    target: '—',
    met: '—',
  }))
}

/** Drain with claims per tenant against the global claim, same process, 1 tenant and 1,000 (bench/outflow/tenant-claims.ts). */
function tenantClaimRows(outcomes: Outcomes, sizes: Sizes): Row[] {
  const key = 'tenant-claims:postgres'
  if (!outcomes.has(key)) return []
  const v = (field: string) => value(outcomes, key, field)
  const cell = (name: string) => (v(`${name}PerSec`) === undefined ? missing(outcomes, key) : `${perSec(v(`${name}PerSec`)!)} · ${us(v(`${name}CpuUs`)!)}`)
  return [1, 1_000].map((tenants) => {
    const ratio = v(`tenant${tenants}PerSec`) && v(`global${tenants}PerSec`) ? v(`tenant${tenants}PerSec`)! / v(`global${tenants}PerSec`)! : undefined
    return {
      metric: `drain with claims per tenant (tenantClaims, what Citus needs): deliveries/s · engine CPU µs per delivery, ${int.format(sizes.deliveries)} pending deliveries over ${int.format(tenants)} tenant${tenants > 1 ? 's' : ''}, a webhook each`,
      sqlite: '—',
      postgres: cell(`tenant${tenants}`),
      anchor: `the global claim, same process: ${cell(`global${tenants}`)}`,
      ratio: ratio === undefined ? '—' : `${ratio.toFixed(2)}×`,
      target: '≥ 0.9× (one run\'s noise)',
      met: ratio === undefined ? '—' : mark(ratio >= 0.9),
    }
  })
}
