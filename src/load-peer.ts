import { OutflowError } from './errors.js'

const loaded = new Map<string, Promise<unknown>>()

/**
 * An optional peer dependency that could not be loaded: not installed (`installed: false`), or installed but
 * failing to load (a missing dependency of its own, a native module built for another Node).
 */
export class PeerLoadError extends OutflowError {
  /** The package, e.g. `amqplib`. */
  readonly package: string
  readonly installed: boolean

  constructor(name: string, neededBy: string, cause: unknown) {
    const installed = !isNotFound(cause, name)
    super(
      'unavailable',
      installed
        ? `the optional package "${name}" is needed by ${neededBy} but could not be loaded (${firstLine(cause)}): reinstall it with npm install ${name}`
        : `the optional package "${name}" is needed by ${neededBy} but is not installed: npm install ${name}`,
      { cause },
    )
    this.name = 'PeerLoadError'
    this.package = name
    this.installed = installed
  }
}

/** Whether `err` says that `name` itself cannot be found (rather than something it imports). */
function isNotFound(err: unknown, name: string): boolean {
  const { code, message } = (err ?? {}) as { code?: unknown; message?: unknown }
  if (code !== 'ERR_MODULE_NOT_FOUND' && code !== 'MODULE_NOT_FOUND') return false
  // "Cannot find package 'amqplib' imported from …" (import) or "Cannot find module 'amqplib'" (require).
  return typeof message === 'string' && (message.includes(`'${name}'`) || message.includes(`"${name}"`))
}

function firstLine(err: unknown): string {
  const message = (err as { message?: unknown } | null)?.message
  return (typeof message === 'string' ? message : String(err)).split('\n')[0]!.slice(0, 300)
}

/**
 * True in the CommonJS build. There peers are loaded with `require`: `import()` from CommonJS needs
 * an ESM loader that Jest's module sandbox lacks (without --experimental-vm-modules). In the ESM build
 * `module` is undefined (the bundler rewrites `require` there, so it cannot tell them apart).
 */
const commonJs = typeof module === 'object' && typeof require === 'function'

/** `import(name)`, or in the CommonJS build the same namespace shape from `require(name)`. */
export function importPeer<T = unknown>(name: string): Promise<T> {
  if (!commonJs) return import(name) as Promise<T>
  return new Promise<unknown>((resolve) => {
    const exports = require(name) as object
    resolve({ ...exports, default: exports })
  }).catch((error: unknown) => {
    // An ESM-only peer: Node's require(esm) or, without it, import().
    if ((error as { code?: unknown }).code === 'ERR_REQUIRE_ESM') return import(name)
    throw error
  }) as Promise<T>
}

/**
 * Import an optional peer dependency (a storage driver or a destination SDK) the first time it is
 * needed. A package that is missing or fails to load becomes a `PeerLoadError` naming what needs it
 * and how to install it.
 *
 * @example
 * const amqp = await loadPeer<typeof import('amqplib')>('amqplib', 'amqp_broker destinations')
 * // missing: 'the optional package "amqplib" is needed by amqp_broker destinations but is not installed: npm install amqplib'
 */
export function loadPeer<T>(name: string, neededBy: string): Promise<T> {
  let p = loaded.get(name)
  if (!p) {
    p = importPeer(name).then(
      (m) => m,
      (cause: unknown) => {
        loaded.delete(name)
        throw new PeerLoadError(name, neededBy, cause)
      },
    )
    loaded.set(name, p)
  }
  return p as Promise<T>
}

/**
 * Optional peers that work together (an SDK and its exporters), loaded at once: their modules in the
 * order named, or one error naming every one that is not installed.
 *
 * @example
 * const [api, sdk] = await loadPeers<[typeof Api, typeof Sdk]>(['@opentelemetry/api', '@opentelemetry/sdk-metrics'], 'Prometheus metrics')
 * // missing: 'the optional packages "@opentelemetry/api", "@opentelemetry/sdk-metrics" are needed by Prometheus metrics but are not installed: npm install @opentelemetry/api @opentelemetry/sdk-metrics'
 */
export async function loadPeers<T extends unknown[]>(names: readonly string[], neededBy: string): Promise<T> {
  const loaded = await Promise.allSettled(names.map((name) => loadPeer(name, neededBy)))
  const failures = loaded.flatMap((result) => (result.status === 'rejected' ? [result.reason as unknown] : []))
  if (failures.length === 0) return loaded.map((result) => (result as PromiseFulfilledResult<unknown>).value) as T
  const missing = failures.filter((failure): failure is PeerLoadError => failure instanceof PeerLoadError && !failure.installed).map((failure) => failure.package)
  if (missing.length < 2 || missing.length < failures.length) throw failures[0]
  const quoted = missing.map((name) => `"${name}"`).join(', ')
  throw new OutflowError('unavailable', `the optional packages ${quoted} are needed by ${neededBy} but are not installed: npm install ${missing.join(' ')}`)
}
