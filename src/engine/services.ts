import type { Catalog } from '../delivery/catalog.js'
import type { Telemetry } from '../telemetry.js'

/** Builds the HTTP handler of an engine `E` (src/http's `createHttpHandler`, passed in by `createOutflow`). */
export type HandlerFactory<E> = (outflow: E) => (request: Request) => Promise<Response>

/** What `createOutflow` hands the engine `E` besides storage and options. */
export interface EngineServices<E> {
  /** Builds the engine's HTTP handler on first use of `fetch`; without it, `fetch` refuses. */
  createHandler?: HandlerFactory<E>
  /** Spans and metrics (see src/telemetry.ts); off when absent. */
  telemetry?: Telemetry
  /** The compiled topic catalog (`compileCatalog` of the `topics` option); none: every topic allowed, nothing validated. */
  catalog?: Catalog
}
