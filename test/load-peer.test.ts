import { describe, expect, it } from 'vitest'
import { loadPeer } from '../src/destinations/load-peer.js'
import { OutflowError } from '../src/errors.js'

describe('optional peer SDKs', () => {
  it('names the package to install when it is missing', async () => {
    const err = await loadPeer('@outflow-test/not-installed-sdk').then(
      () => null,
      (e: unknown) => e,
    )
    expect(err).toBeInstanceOf(OutflowError)
    expect((err as OutflowError).message).toBe(
      'the optional package "@outflow-test/not-installed-sdk" is required for this destination type: npm install @outflow-test/not-installed-sdk',
    )
  })

  it('loads an installed one once and reuses it', async () => {
    const a = await loadPeer<typeof import('amqplib')>('amqplib')
    const b = await loadPeer<typeof import('amqplib')>('amqplib')
    expect(typeof a.connect).toBe('function')
    expect(b).toBe(a)
  })
})
