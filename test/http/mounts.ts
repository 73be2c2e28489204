import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { createAdaptorServer } from '@hono/node-server'
import express from 'express'
import Fastify from 'fastify'
import { Hono } from 'hono'
import { outflowRouter } from '../../adapters/express.js'
import { outflowFastify } from '../../adapters/fastify.js'
import { outflowApp, outflowFetch } from '../../adapters/hono.js'
import { OutflowModule } from '../../adapters/nestjs.js'
import type { Outflow } from '../../src/engine.js'
import { createHttpHandler } from '../../src/http/handler.js'
import { sendWebResponse, toWebRequest } from '../../src/http/node.js'
import { type NestPlatform, startNestHost } from '../support/nest-host.js'

/** A host app serving the API on a real port; `baseUrl` ends in the API prefix. */
export interface MountedApi {
  baseUrl: string
  close: () => Promise<void>
}

export interface Mount {
  name: string
  /** Whether paths without the `/api/v1` prefix reach the API (only a bare fetch server sees them). */
  servesUnprefixed: boolean
  start: (outflow: Outflow) => Promise<MountedApi>
}

const apiPrefix = '/api/v1'

function listen(server: http.Server): Promise<MountedApi> {
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo
      resolve({
        baseUrl: `http://127.0.0.1:${port}${apiPrefix}`,
        close: () => new Promise((done) => (server.closeAllConnections(), server.close(() => done()))),
      })
    })
  })
}

export const bareMount: Mount = {
  name: 'bare fetch handler',
  servesUnprefixed: true,
  start: (outflow) => {
    const handle = createHttpHandler(outflow)
    return listen(http.createServer((req, res) => void handle(toWebRequest(req, req.url ?? '/')).then((r) => sendWebResponse(res, r))))
  },
}

export const expressMount: Mount = {
  name: 'express',
  servesUnprefixed: false,
  start: (outflow) => {
    const app = express()
    app.use(apiPrefix, outflowRouter(outflow))
    return listen(http.createServer(app))
  },
}

export const expressJsonMount: Mount = {
  name: 'express with express.json() first',
  servesUnprefixed: false,
  start: (outflow) => {
    const app = express()
    app.use(express.json())
    app.use(apiPrefix, outflowRouter(outflow))
    return listen(http.createServer(app))
  },
}

export const honoMount: Mount = {
  name: 'hono sub-app (app.route)',
  servesUnprefixed: false,
  start: (outflow) => {
    const app = new Hono()
    app.route(apiPrefix, outflowApp(outflow, new Hono()))
    return listen(createAdaptorServer({ fetch: app.fetch }) as http.Server)
  },
}

export const honoPlainMount: Mount = {
  name: 'hono plain mount (app.mount)',
  servesUnprefixed: false,
  start: (outflow) => {
    const app = new Hono()
    app.mount(apiPrefix, outflowFetch(outflow), { replaceRequest: false })
    return listen(createAdaptorServer({ fetch: app.fetch }) as http.Server)
  },
}

export const fastifyMount: Mount = {
  name: 'fastify plugin',
  servesUnprefixed: false,
  start: async (outflow) => {
    const app = Fastify()
    await app.register(outflowFastify, { outflow, prefix: apiPrefix })
    await app.listen({ port: 0, host: '127.0.0.1' })
    const { port } = app.server.address() as AddressInfo
    return { baseUrl: `http://127.0.0.1:${port}${apiPrefix}`, close: () => app.close() }
  },
}

/** A Nest app on `platform` importing `OutflowModule.forRoot({ outflow })` beside the host's own controller. */
function nestMount(platform: NestPlatform): Mount {
  return {
    name: `nest on ${platform} (OutflowModule)`,
    servesUnprefixed: false,
    start: async (outflow) => {
      const host = await startNestHost(platform, [OutflowModule.forRoot({ outflow })])
      return { baseUrl: `${host.origin}${apiPrefix}`, close: host.close }
    },
  }
}

export const nestExpressMount = nestMount('express')
export const nestFastifyMount = nestMount('fastify')

/** The mounts the shared suite runs through. */
export const mounts: Mount[] = [bareMount, expressMount, expressJsonMount, honoMount, fastifyMount, nestExpressMount, nestFastifyMount]
