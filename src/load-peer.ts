import { OutflowError } from './errors.js'

const loaded = new Map<string, Promise<unknown>>()

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
    p = import(name).then(
      (m: { default?: unknown }) => m,
      (cause: unknown) => {
        loaded.delete(name)
        throw new OutflowError('unavailable', `the optional package "${name}" is needed by ${neededBy} but is not installed: npm install ${name}`, { cause })
      },
    )
    loaded.set(name, p)
  }
  return p as Promise<T>
}
