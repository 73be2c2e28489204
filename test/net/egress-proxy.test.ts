import { createServer as createHttpServer, type IncomingMessage, type Server } from 'node:http'
import { createServer as createHttpsServer } from 'node:https'
import type { AddressInfo } from 'node:net'
import type { TLSSocket } from 'node:tls'
import { createProxy } from 'proxy'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Outflow } from '../../src/engine.js'
import { engineKinds, rejection } from '../support/engines.js'
import { startReceiver, waitFor } from '../support/receiver.js'
import { selfSignedCertificate } from '../support/tls.js'

/** A real HTTP CONNECT proxy (the `proxy` package), recording the authority of every CONNECT it is asked for. */
async function startProxy() {
  const connects: string[] = []
  const server: Server = createProxy(createHttpServer())
  server.prependListener('connect', (req: IncomingMessage) => connects.push(req.url ?? ''))
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    connects,
    close: () => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r()))),
  }
}

const serverCert = selfSignedCertificate()

for (const kind of engineKinds()) {
  describe.runIf(kind.available)(`egress proxy: ${kind.name}`, () => {
    let proxy: Awaited<ReturnType<typeof startProxy>>
    let other: Awaited<ReturnType<typeof startProxy>>
    let receiver: Awaited<ReturnType<typeof startReceiver>>
    let outflow: Outflow
    const lastAttempt = (engine: Outflow, id: string) => waitFor(async () => (await engine.listDeliveries('acme', id).catch(() => []))[0])
    beforeAll(async () => {
      ;[proxy, other, receiver] = await Promise.all([startProxy(), startProxy(), startReceiver()])
      outflow = await kind.create({ delivery: { proxy: proxy.url } })
      await outflow.upsertTenant('acme', {})
    })
    afterAll(async () => {
      await kind.cleanup()
      await Promise.all([proxy.close(), other.close(), receiver.close()])
    })

    it('sends webhooks through the proxy: it CONNECTs to the resolved address, the receiver sees the Host it was given', async () => {
      await outflow.createDestination('acme', { id: 'via', type: 'webhook', topics: ['via.proxy'], config: { url: `http://localhost:${receiver.port}/via` } })
      const { id } = await outflow.publish({ tenant_id: 'acme', topic: 'via.proxy', data: { n: 1 } })
      expect(await lastAttempt(outflow, id)).toMatchObject({ status: 'success' })
      expect(proxy.connects).toEqual([`127.0.0.1:${receiver.port}`])
      expect(receiver.on('/via')[0]!.headers.host).toBe(`localhost:${receiver.port}`)
    })

    it('speaks TLS through the tunnel with the host name as SNI, so the certificate is checked for that name', async () => {
      const names: (string | false | null)[] = []
      const https = createHttpsServer({ key: serverCert.key, cert: serverCert.cert }, (req, res) => {
        names.push((req.socket as TLSSocket).servername)
        req.resume()
        req.on('end', () => res.end('ok'))
      })
      await new Promise<void>((resolve) => https.listen(0, '127.0.0.1', resolve))
      const port = (https.address() as AddressInfo).port
      try {
        await outflow.createDestination('acme', { id: 'tls', type: 'webhook', topics: ['via.tls'], config: { url: `https://localhost:${port}/tls` }, credentials: { tls_ca: serverCert.cert } })
        const { id } = await outflow.publish({ tenant_id: 'acme', topic: 'via.tls', data: {} })
        expect(await lastAttempt(outflow, id)).toMatchObject({ status: 'success' })
        expect(names).toEqual(['localhost'])
        expect(proxy.connects).toContain(`127.0.0.1:${port}`)
      } finally {
        https.closeAllConnections()
        await new Promise<void>((r) => https.close(() => r()))
      }
    })

    it('sends relay traffic through it too, and a destination may name its own proxy', async () => {
      await outflow.createDestination('acme', { id: 'relay', type: 'relay', topics: ['via.relay'], config: { url: `http://localhost:${receiver.port}/relay` }, credentials: { token: 'relay-token-1' } })
      await outflow.createDestination('acme', { id: 'own', type: 'webhook', topics: ['via.own'], config: { url: `http://localhost:${receiver.port}/own`, proxy_url: other.url } })
      const before = proxy.connects.length
      for (const topic of ['via.relay', 'via.own']) {
        const { id } = await outflow.publish({ tenant_id: 'acme', topic, data: {} })
        expect(await lastAttempt(outflow, id), topic).toMatchObject({ status: 'success' })
      }
      expect(proxy.connects.length).toBe(before + 1)
      expect(other.connects).toEqual([`127.0.0.1:${receiver.port}`])
    })

    it('keeps the SSRF guard: a private target is refused before any CONNECT, by name or by address', async () => {
      const guarded = await kind.create({ allowPrivateNetworks: false, delivery: { proxy: proxy.url, worker: true } })
      await guarded.upsertTenant('acme', {})
      const before = proxy.connects.length
      for (const [i, url] of [`http://localhost:${receiver.port}/guarded`, `http://127.0.0.1:${receiver.port}/guarded`, `http://[::1]:${receiver.port}/guarded`].entries()) {
        await guarded.createDestination('acme', { id: `guarded-${i}`, type: 'webhook', topics: [`guarded.${i}`], config: { url } })
        const { id } = await guarded.publish({ tenant_id: 'acme', topic: `guarded.${i}`, data: {} })
        expect(await lastAttempt(guarded, id), url).toMatchObject({ status: 'failed', error_kind: 'ssrf' })
      }
      expect(proxy.connects.length).toBe(before)
      expect(receiver.on('/guarded')).toEqual([])
    })

    it('refuses a proxy URL that is not http://host:port, as an option and as a destination setting', async () => {
      expect((await rejection(kind.create({ delivery: { proxy: 'socks5://127.0.0.1:1080' } }))).message).toContain('delivery.proxy')
      const error = await rejection(outflow.createDestination('acme', { id: 'bad-proxy', type: 'webhook', topics: ['x'], config: { url: `http://localhost:${receiver.port}/x`, proxy_url: 'http://user:pw@proxy.example:3128' } }))
      expect([error.status, error.data]).toEqual([422, { 'config.proxy_url': 'must be http://host:port, without a user name, password or path' }])
    })
  })
}
