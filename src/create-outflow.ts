import { Outflow } from './engine.js'
import { createHttpHandler } from './http/handler.js'
import { resolveOptions, type OutflowOptions } from './options.js'
import { loadOpenTelemetry, Telemetry } from './telemetry.js'

/**
 * Create an engine: resolves options, opens storage, migrates, starts the worker.
 * This is the composition root: the one place that hands the engine its HTTP layer (`outflow.fetch`),
 * so src/engine never imports src/http.
 *
 * @example
 * const outflow = await createOutflow({ storage: sqlite({ path: './outflow.db' }), apiKey: process.env.OUTFLOW_API_KEY })
 */
export async function createOutflow(options: OutflowOptions): Promise<Outflow> {
  const resolved = resolveOptions(options)
  const telemetry = new Telemetry(await loadOpenTelemetry(), resolved.telemetry)
  const storage = typeof options.storage === 'function' ? await options.storage() : options.storage
  let outflow: Outflow
  try {
    outflow = new Outflow(storage, resolved, { createHandler: createHttpHandler, telemetry })
    if (resolved.migrate) await outflow.migrate()
    await outflow.start()
  } catch (err) {
    await storage.close().catch(() => {})
    throw err
  }
  return outflow
}
