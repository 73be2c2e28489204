import type { AddressInfo } from 'node:net'
import 'reflect-metadata'
import { type ArgumentsHost, Body, Catch, Controller, type DynamicModule, type ExceptionFilter, Get, Header, HttpException, HttpStatus, type INestApplication, Module, Post, type Provider, type Type } from '@nestjs/common'
import { HttpAdapterHost, NestFactory } from '@nestjs/core'
import { ExpressAdapter } from '@nestjs/platform-express'
import { FastifyAdapter } from '@nestjs/platform-fastify'

// A Nest host app of the tests: the host's own controller and exception filter beside whatever modules a
// test imports (OutflowModule), on Express or on Fastify, listening on a free port. Decorators are
// applied as calls (the project compiles without experimentalDecorators), as TypeScript would apply them.

export type NestPlatform = 'express' | 'fastify'

export const nestPlatforms: NestPlatform[] = ['express', 'fastify']

/** A route decorator (and the parameter decorators of its arguments) on `controller.prototype[method]`. */
export function decorateRoute(controller: Type, method: string, decorators: MethodDecorator[], parameters: ParameterDecorator[] = []): void {
  const descriptor = Object.getOwnPropertyDescriptor(controller.prototype, method)!
  Reflect.decorate(decorators, controller.prototype, method, descriptor)
  parameters.forEach((parameter, index) => parameter(controller.prototype, method, index))
}

/** The host's own routes: a JSON body echoed, an HttpException thrown, a page of its own. */
class HostController {
  echo(body: unknown) {
    return { echoed: body }
  }
  refuse(): never {
    throw new HttpException('the host refuses', HttpStatus.I_AM_A_TEAPOT)
  }
  page() {
    return 'the host'
  }
}
Controller()(HostController)
decorateRoute(HostController, 'echo', [Post('host/echo')], [Body()])
decorateRoute(HostController, 'refuse', [Get('host/refuse')])
decorateRoute(HostController, 'page', [Get('host-page'), Header('content-type', 'text/plain')])

/** The host's exception filter: every HttpException of its routes in its own shape, `{ host_error, status }`. */
class HostExceptionFilter implements ExceptionFilter {
  constructor(private readonly adapterHost: HttpAdapterHost) {}
  catch(exception: HttpException, host: ArgumentsHost) {
    const status = exception.getStatus()
    this.adapterHost.httpAdapter.reply(host.switchToHttp().getResponse(), { host_error: exception.message, status }, status)
  }
}
Catch(HttpException)(HostExceptionFilter)

/** A running Nest host: its origin (`http://127.0.0.1:PORT`) and the app. */
export interface NestHost {
  origin: string
  app: INestApplication
  close(): Promise<void>
}

/** The host's root module: its controller, `imports` (OutflowModule) and `providers`, with `controllers` of a test's own. */
export function hostModule(imports: (DynamicModule | Type)[], providers: Provider[] = [], controllers: Type[] = []): Type {
  class HostModule {}
  Module({ imports, providers, controllers: [HostController, ...controllers] })(HostModule)
  return HostModule
}

/** Create the Nest app on `platform` (logger off, errors thrown rather than exiting) without listening. */
export function createNestApp(platform: NestPlatform, module: Type): Promise<INestApplication> {
  const adapter = platform === 'express' ? new ExpressAdapter() : new FastifyAdapter()
  return NestFactory.create(module, adapter, { logger: false, abortOnError: false, forceCloseConnections: true })
}

/** Start `app` with the host's exception filter on a free port of 127.0.0.1. */
export async function listenNest(app: INestApplication): Promise<NestHost> {
  app.useGlobalFilters(new HostExceptionFilter(app.get(HttpAdapterHost)))
  await app.listen(0, '127.0.0.1')
  const { port } = app.getHttpServer().address() as AddressInfo
  return { origin: `http://127.0.0.1:${port}`, app, close: () => app.close() }
}

/**
 * A Nest host app with `imports` beside the host's own routes, listening on `platform`.
 *
 * @example
 * const host = await startNestHost('fastify', [OutflowModule.forRoot({ outflow })])
 */
export async function startNestHost(platform: NestPlatform, imports: (DynamicModule | Type)[], providers: Provider[] = [], controllers: Type[] = []): Promise<NestHost> {
  const app = await createNestApp(platform, hostModule(imports, providers, controllers))
  try {
    return await listenNest(app)
  } catch (error) {
    await app.close()
    throw error
  }
}
