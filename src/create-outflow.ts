import { compileCatalog } from './delivery/catalog.js'
import { Outflow } from './engine.js'
import { createHttpHandler } from './http/handler.js'
import type { TopicsOption } from './model/topic.js'
import { resolveOptions, type OutflowOptions } from './options.js'
import { loadOpenTelemetry, Telemetry } from './telemetry.js'

/**
 * Create an engine: resolves options, compiles the topic catalog, opens storage, migrates, starts the worker.
 * This is the composition root: the one place that hands the engine its HTTP layer (`outflow.fetch`),
 * so src/engine never imports src/http. With a topic catalog, the engine's `publish` is typed by it.
 *
 * @example
 * const outflow = await createOutflow({ storage: sqlite({ path: './outflow.db' }), apiKey: process.env.OUTFLOW_API_KEY })
 */
export async function createOutflow<const T extends TopicsOption | undefined = undefined>(options: OutflowOptions & { topics?: T }): Promise<Outflow<T>> {
  const resolved = resolveOptions(options)
  // Before storage opens: an invalid catalog is refused without touching the database.
  const catalog = await compileCatalog(resolved.catalog)
  const telemetry = new Telemetry(await loadOpenTelemetry(), resolved.telemetry)
  const storage = typeof options.storage === 'function' ? await options.storage({ logger: resolved.logger }) : options.storage
  let outflow: Outflow<T>
  try {
    outflow = new Outflow<T>(storage, resolved, { createHandler: createHttpHandler, telemetry, catalog })
    if (resolved.migrate) await outflow.migrate()
    await outflow.start()
  } catch (err) {
    await storage.close().catch(() => {})
    throw err
  }
  return outflow
}
