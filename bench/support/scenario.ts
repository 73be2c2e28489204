import type { Sizes } from './sizes.js'

export type Db = 'sqlite' | 'postgres'

/** What run.ts hands a scenario process (env BENCH_CONTEXT, JSON). */
export interface ScenarioContext {
  name: string
  quick: boolean
  db: Db | null
  /** A fresh database of this scenario's own (Postgres scenarios and the pg-boss anchor). */
  pgUrl: string | null
  redisUrl: string
  /** An empty directory of this scenario's own (SQLite files). */
  tmpDir: string
  /** Unique per run: queue names, Redis key prefixes. */
  prefix: string
  sizes: Sizes
  /** `--cpu-prof` directory: scenarios that time a window also write a profile of just that window there. */
  cpuProf: string | null
}

/** A scenario's figures: plain numbers (NaN when not measured) and free-form notes. */
export interface Figures {
  values: Record<string, number>
  notes: string[]
}

export type ScenarioMessage = { type: 'result'; figures: Figures } | { type: 'error'; message: string }

/** Progress line on stderr, prefixed with the scenario name. */
export function log(ctx: ScenarioContext, message: string): void {
  process.stderr.write(`  [${ctx.name}${ctx.db ? ` ${ctx.db}` : ''}] ${message}\n`)
}

/**
 * The body of a scenario process: read the context, run `main`, send its figures to run.ts and
 * exit (so a handle left open by a library cannot keep the process alive).
 *
 * @example
 * runScenario(async (ctx) => ({ values: { deliveriesPerSec: 1234 }, notes: [] }))
 */
export function runScenario(main: (ctx: ScenarioContext) => Promise<Figures>): void {
  const raw = process.env.BENCH_CONTEXT
  if (!raw || !process.send) {
    console.error('a scenario runs as a child of bench/run.ts: try `npx tsx bench/run.ts --only <name>`')
    process.exit(2)
  }
  const ctx = JSON.parse(raw) as ScenarioContext
  process.on('disconnect', () => process.exit(1))
  const finish = (msg: ScenarioMessage, code: number) => process.send!(msg, () => process.exit(code))
  main(ctx).then(
    (figures) => finish({ type: 'result', figures }, 0),
    (err: unknown) => {
      const message = err instanceof Error ? (err.stack ?? err.message) : String(err)
      finish({ type: 'error', message }, 1)
    },
  )
}
