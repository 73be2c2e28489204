import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { createAdaptorServer } from '@hono/node-server'
import express from 'express'
import Fastify from 'fastify'
import { Hono } from 'hono'
import { outflowPortal, outflowRouter } from '../../adapters/express.js'
import { outflowFastify, outflowPortalFastify } from '../../adapters/fastify.js'
import { outflowApp, outflowFetch } from '../../adapters/hono.js'
import { OutflowModule } from '../../adapters/nestjs.js'
import type { Outflow } from '../../src/engine.js'
import { createHttpHandler } from '../../src/http/handler.js'
import { sendWebResponse, toWebRequest } from '../../src/http/node.js'
import { nestPlatforms, startNestHost } from './nest-host.js'

/** A host app serving the API under /api/v1 and the portal under /portal, as docs/http-api.md shows for each framework. */
export interface PortalHost {
  /** The server's origin, e.g. http://127.0.0.1:41234 */
  origin: string
  close(): Promise<void>
}

export interface PortalMount {
  name: string
  start(outflow: Outflow): Promise<PortalHost>
}

function listen(server: http.Server): Promise<PortalHost> {
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo
      resolve({ origin: `http://127.0.0.1:${port}`, close: () => new Promise((done) => (server.closeAllConnections(), server.close(() => done()))) })
    })
  })
}

/** A route of the host's own beside Outflow: the portal mounts must leave it alone. */
const hostRoute = '/host-page'

export const portalMounts: PortalMount[] = [
  {
    name: 'bare fetch handler (outflow.fetch at the root)',
    start: (outflow) => {
      const handle = createHttpHandler(outflow)
      return listen(http.createServer((req, res) => void handle(toWebRequest(req, req.url ?? '/')).then((r) => sendWebResponse(res, r))))
    },
  },
  {
    name: 'express (outflowRouter + outflowPortal)',
    start: (outflow) => {
      const app = express()
      app.use('/api/v1', outflowRouter(outflow))
      app.use(outflowPortal(outflow))
      app.get(hostRoute, (_req, res) => void res.type('text/plain').send('the host'))
      return listen(http.createServer(app))
    },
  },
  {
    name: 'hono (outflowApp at /api/v1, outflowFetch mounted at /portal)',
    start: (outflow) => {
      const app = new Hono()
      app.route('/api/v1', outflowApp(outflow, new Hono()))
      app.mount('/portal', outflowFetch(outflow), { replaceRequest: false })
      app.get(hostRoute, (c) => c.text('the host'))
      return listen(createAdaptorServer({ fetch: app.fetch }) as http.Server)
    },
  },
  {
    name: 'fastify (outflowFastify + outflowPortalFastify)',
    start: async (outflow) => {
      const app = Fastify()
      await app.register(outflowFastify, { outflow, prefix: '/api/v1' })
      await app.register(outflowPortalFastify, { outflow })
      app.get(hostRoute, async () => 'the host')
      await app.listen({ port: 0, host: '127.0.0.1' })
      const { port } = app.server.address() as AddressInfo
      return { origin: `http://127.0.0.1:${port}`, close: () => app.close() }
    },
  },
  // The host's own controller serves hostRoute (test/support/nest-host.ts).
  ...nestPlatforms.map((platform) => ({
    name: `nest on ${platform} (OutflowModule.forRoot)`,
    start: (outflow: Outflow) => startNestHost(platform, [OutflowModule.forRoot({ outflow })]),
  })),
]

export const hostPagePath = hostRoute
