import { OutflowError } from './errors.js'

const loaded = new Map<string, Promise<unknown>>()

/**
 * True in the CommonJS build. There peers are loaded with `require`: `import()` from CommonJS needs
 * an ESM loader that Jest's module sandbox lacks (without --experimental-vm-modules). In the ESM build
 * `module` is undefined (the bundler rewrites `require` there, so it cannot tell them apart).
 */
const commonJs = typeof module === 'object' && typeof require === 'function'

/** `import(name)`, or in the CommonJS build the same namespace shape from `require(name)`. */
function importPeer(name: string): Promise<unknown> {
  if (!commonJs) return import(name)
  return new Promise((resolve) => {
    const exports = require(name) as object
    resolve({ ...exports, default: exports })
  }).catch((error: unknown) => {
    // An ESM-only peer: Node's require(esm) or, without it, import().
    if ((error as { code?: unknown }).code === 'ERR_REQUIRE_ESM') return import(name)
    throw error
  })
}

/**
 * Import an optional peer dependency (a storage driver or a destination SDK) the first time it is
 * needed. A missing package becomes a clear error naming what needs it and how to install it.
 *
 * @example
 * const amqp = await loadPeer<typeof import('amqplib')>('amqplib', 'amqp_broker destinations')
 * // missing: 'the optional package "amqplib" is needed by amqp_broker destinations but is not installed: npm install amqplib'
 */
export function loadPeer<T>(name: string, neededBy: string): Promise<T> {
  let p = loaded.get(name)
  if (!p) {
    p = importPeer(name).catch((cause: unknown) => {
      loaded.delete(name)
      throw new OutflowError('unavailable', `the optional package "${name}" is needed by ${neededBy} but is not installed: npm install ${name}`, { cause })
    })
    loaded.set(name, p)
  }
  return p as Promise<T>
}
