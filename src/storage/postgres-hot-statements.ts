import { qualifiedPostgresTables } from './schema/postgres.js'
import { eventInsertStatement } from './postgres-hot-path.js'
import { planOnce } from './postgres-plan-once.js'
import { claimStatement, recordStatement, targetsStatement } from './postgres-queue.js'

/** The statements of every publish and every batch of deliveries, each with its plan-once function (the layouts that use each: postgres-plan-once.ts). */
export type HotStatements = ReturnType<typeof hotStatements>

/** The hot statements of the tables in `schema` (see postgres-plan-once.ts); migrate() makes their functions. */
export function hotStatements(schema: string) {
  const t = qualifiedPostgresTables(schema)
  return {
    publish: planOnce(schema, 'publish', eventInsertStatement(t)),
    results: planOnce(schema, 'results', recordStatement(t, { days: false, fifo: true })),
    claim: planOnce(schema, 'claim', claimStatement(t, false)),
    claimWindow: planOnce(schema, 'claim_window', claimStatement(t, true)),
    targets: planOnce(schema, 'targets', targetsStatement(t)),
  }
}
