import { OutflowError } from '../errors.js'

const loaded = new Map<string, Promise<unknown>>()

/**
 * Import an optional peer dependency the first time a destination needs it.
 * A missing package becomes a clear error naming it (and how to install it).
 *
 * @example
 * const amqp = await loadPeer<typeof import('amqplib')>('amqplib')
 */
export function loadPeer<T>(name: string): Promise<T> {
  let p = loaded.get(name)
  if (!p) {
    p = import(name).then(
      (m: { default?: unknown }) => m,
      (cause: unknown) => {
        loaded.delete(name)
        throw new OutflowError('unavailable', `the optional package "${name}" is required for this destination type: npm install ${name}`, { cause })
      },
    )
    loaded.set(name, p)
  }
  return p as Promise<T>
}
