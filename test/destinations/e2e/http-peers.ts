import type { IncomingHttpHeaders } from 'node:http'
import { Webhook } from 'standardwebhooks'
import { expect } from 'vitest'
import { startReceiver } from '../../support/receiver.js'
import type { Peer, Received, Sent } from './peer.js'

/** The Standard Webhooks headers of a request, as the verifier takes them. */
function signatureHeaders(headers: IncomingHttpHeaders): Record<string, string> {
  return {
    'webhook-id': String(headers['webhook-id']),
    'webhook-timestamp': String(headers['webhook-timestamp']),
    'webhook-signature': String(headers['webhook-signature']),
  }
}

/** `x-outflow-<key>` headers, as the metadata they carry. */
function metadataFromHeaders(headers: IncomingHttpHeaders): Record<string, unknown> {
  const prefix = 'x-outflow-'
  return Object.fromEntries(Object.entries(headers).flatMap(([name, value]) => (name.startsWith(prefix) ? [[name.slice(prefix.length), value]] : [])))
}

/**
 * A node:http receiver for webhook destinations. Each copy is verified with `standardwebhooks` and the
 * signing secret the destination's create response revealed.
 */
export async function startWebhookPeer(): Promise<Peer> {
  const receiver = await startReceiver()
  const path = '/hooks/orders'
  return {
    target: { config: { url: `${receiver.url}${path}` } },
    async read(sent: Sent): Promise<Received[]> {
      const secret = String(sent.destination.credentials.secret)
      expect(secret).toMatch(/^whsec_/)
      return receiver
        .on(path)
        .filter((r) => r.headers['webhook-id'] === sent.id)
        .map((r) => {
          expect(r.headers['content-type']).toBe('application/json')
          expect(r.headers['user-agent']).toMatch(/^outflow\//)
          // Throws unless the signature over the raw body verifies with the destination's secret.
          const data = new Webhook(secret).verify(r.body, signatureHeaders(r.headers))
          expect(data).toEqual(JSON.parse(r.body))
          return { data, metadata: metadataFromHeaders(r.headers) }
        })
    },
    close: () => receiver.close(),
  }
}

interface RelayEnvelope {
  id: string
  tenant_id: string
  destination_id: string
  topic: string
  time: string
  metadata: Record<string, unknown>
  data: unknown
}

/**
 * A node:http relay sink for relay destinations. Its `url` is the engine's `relayUrl`, so the destination
 * needs no config. Each copy must carry the bearer token and a signature keyed with the token's bytes.
 */
export async function startRelayPeer(): Promise<Peer & { url: string }> {
  const receiver = await startReceiver(() => ({ status: 202, body: '{"accepted":true}' }))
  const path = '/relay/ingest'
  const token = 'rly_e2e_7c1f9a24d3b8'
  const verifier = new Webhook(new Uint8Array(Buffer.from(token, 'utf8')), { format: 'raw' })
  return {
    url: `${receiver.url}${path}`,
    target: { credentials: { token } },
    async read(sent: Sent): Promise<Received[]> {
      return receiver
        .on(path)
        .filter((r) => r.headers['webhook-id'] === sent.id)
        .map((r) => {
          expect(r.headers.authorization).toBe(`Bearer ${token}`)
          expect(r.headers['content-type']).toBe('application/json')
          const envelope = verifier.verify(r.body, signatureHeaders(r.headers)) as RelayEnvelope
          expect(Object.keys(envelope).sort()).toEqual(['data', 'destination_id', 'id', 'metadata', 'tenant_id', 'time', 'topic'])
          expect(envelope).toMatchObject({ id: sent.id, tenant_id: sent.tenant_id, destination_id: sent.destination.id, topic: sent.topic, time: sent.time })
          return { data: envelope.data, metadata: envelope.metadata }
        })
    },
    close: () => receiver.close(),
  }
}
