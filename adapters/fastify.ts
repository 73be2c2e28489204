import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify'
import type { Outflow } from '../src/engine.js'
import { type HttpHandlerOptions, createHttpHandler } from '../src/http/handler.js'
import { hostBodyError, toWebRequest } from '../src/http/node.js'
import { errorResponse } from '../src/http/responses.js'

/** Options of the Fastify plugins: the engine to serve, and the handler options (`basePath`, `logger`). */
export interface OutflowFastifyOptions extends HttpHandlerOptions {
  /** The engine whose API (or portal) the plugin serves. */
  outflow: Outflow
}

/**
 * The Outflow API as an encapsulated Fastify plugin honouring `prefix`. Body parsing is scoped to
 * it: the plugin's routes leave the raw body to the API, which applies its own limit and JSON rules,
 * while the host's other routes keep their parsers. The handler is created at registration, so a
 * missing `apiKey` fails `app.ready()`.
 *
 * @example
 * await app.register(outflowFastify, { outflow, prefix: '/api/v1' })
 */
export const outflowFastify: FastifyPluginAsync<OutflowFastifyOptions> = async (fastify, { outflow, basePath, logger }) => {
  const handle = createHttpHandler(outflow, { basePath, logger })
  fastify.removeAllContentTypeParsers()
  // Leave the stream unread; the API reads it with its own size limit.
  fastify.addContentTypeParser('*', (_request, _payload, done) => done(null))
  const serve = async (request: FastifyRequest, reply: FastifyReply) => {
    const path = request.url.slice(fastify.prefix.length)
    return reply.send(await handle(toWebRequest(request.raw, path || '/')))
  }
  fastify.setErrorHandler((error, request, reply) => {
    // Fastify refuses a method whose body needs a type (QUERY) when it has no Content-Type, before the
    // route: the API answers it as any request (405, since no route takes that method).
    if ((error as { code?: unknown }).code === 'FST_ERR_ROUTE_MISSING_CONTENT_TYPE') return serve(request, reply)
    return reply.send(errorResponse(hostBodyError(error) ?? error))
  })
  fastify.all('/', serve)
  fastify.all('/*', serve)
  // `all` covers only Fastify's known methods; the API answers the rest (PROPFIND, …) with its 405.
  fastify.setNotFoundHandler(serve)
}

/**
 * The built-in tenant portal as a Fastify plugin: `portal.path` (default `/portal`) and below. Register it without a prefix; its page calls the API under `basePath` (default `/api/v1`).
 *
 * @example
 * await app.register(outflowFastify, { outflow, prefix: '/api/v1' })
 * await app.register(outflowPortalFastify, { outflow })
 */
export const outflowPortalFastify: FastifyPluginAsync<OutflowFastifyOptions> = async (fastify, { outflow, basePath, logger }) => {
  const handle = createHttpHandler(outflow, { basePath, logger })
  const { path } = outflow.options.portal
  const serve = async (request: FastifyRequest, reply: FastifyReply) => reply.send(await handle(toWebRequest(request.raw, request.raw.url ?? '/')))
  // Every method: the portal answers what it does not serve (405 with Allow: GET, HEAD) itself.
  fastify.all(path, serve)
  fastify.all(`${path}/*`, serve)
}
