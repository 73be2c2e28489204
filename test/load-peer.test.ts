import { describe, expect, it } from 'vitest'
import { loadPeer } from '../src/load-peer.js'
import { OutflowError } from '../src/errors.js'

describe('optional peer SDKs', () => {
  it('names the package to install when it is missing', async () => {
    const err = await loadPeer('@outflow-test/not-installed-sdk', 'amqp_broker destinations').then(
      () => null,
      (e: unknown) => e,
    )
    expect(err).toBeInstanceOf(OutflowError)
    expect((err as OutflowError).message).toBe(
      'the optional package "@outflow-test/not-installed-sdk" is needed by amqp_broker destinations but is not installed: npm install @outflow-test/not-installed-sdk',
    )
  })

  it('loads an installed one once and reuses it', async () => {
    const a = await loadPeer<typeof import('amqplib')>('amqplib', 'amqp_broker destinations')
    const b = await loadPeer<typeof import('amqplib')>('amqplib', 'amqp_broker destinations')
    expect(typeof a.connect).toBe('function')
    expect(b).toBe(a)
  })
})
