import { type DynamicModule, type FactoryProvider, Inject, Module, type ModuleMetadata, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common'
import { type AbstractHttpAdapter, HttpAdapterHost } from '@nestjs/core'
import type { Express } from 'express'
import type { FastifyInstance } from 'fastify'
import { createOutflow } from '../src/create-outflow.js'
import { Outflow } from '../src/engine.js'
import { OutflowError } from '../src/errors.js'
import { createHttpHandler } from '../src/http/handler.js'
import type { OutflowOptions } from '../src/options.js'
import { outflowPortal, outflowRouter } from './express.js'
import { outflowFastify, outflowPortalFastify } from './fastify.js'

/** An engine the host created itself, given to `OutflowModule` instead of `createOutflow`'s options. */
export interface OutflowModuleEngine {
  /** The engine to provide and mount. It stays yours: the module does not close it. */
  outflow: Outflow
}

/** Where `OutflowModule` serves the API on the Nest app's HTTP server. */
export interface OutflowMountOptions {
  /**
   * The API's path (default `/api/v1`), as is: Nest's global prefix does not apply. The built-in
   * portal is served beside it at `portal.path` unless the engine's `portal.serve` is `false`.
   * `false`: nothing is mounted (a worker, or you serve `outflow.fetch` yourself).
   */
  apiPath?: string | false
}

/** The options of `OutflowModule.forRoot`: `createOutflow`'s options (or an engine of your own) and where the API is mounted. */
export type OutflowModuleOptions = (OutflowOptions | OutflowModuleEngine) & OutflowMountOptions

/** The options of `OutflowModule.forRootAsync`: a factory of the module's options and what it injects. */
export interface OutflowModuleAsyncOptions {
  /** Modules whose exported providers `inject` names (a config module). */
  imports?: ModuleMetadata['imports']
  /** The providers `useFactory` receives, in order. */
  inject?: FactoryProvider['inject']
  /** Returns the module's options, or a promise of them. */
  useFactory: (...providers: any[]) => OutflowModuleOptions | Promise<OutflowModuleOptions>
}

/** The injection token of the module's resolved options. */
const moduleOptions = Symbol('OutflowModuleOptions')

const apiPathPattern = /^(\/[A-Za-z0-9._~-]+)+$/

/** The engine the options describe: the host's own, or a new one (once `apiPath` is known to be valid). */
function openEngine(options: OutflowModuleOptions): Outflow | Promise<Outflow> {
  const { apiPath } = options
  if (apiPath !== undefined && apiPath !== false && !apiPathPattern.test(apiPath))
    throw new OutflowError('validation', `OutflowModule apiPath must be a path like /api/v1, not ${JSON.stringify(apiPath)}`)
  return 'outflow' in options ? options.outflow : createOutflow(options)
}

/**
 * Serve the API at `apiPath` and the portal on the platform's own app (Express or Fastify), ahead of
 * Nest's body parsers and routes: the API reads its raw bodies itself, answers its errors in its own
 * JSON, and the host's controllers, parsers and exception filters stay as they are.
 */
function mountOutflow(adapter: AbstractHttpAdapter, outflow: Outflow, apiPath: string): void {
  const handlerOptions = { basePath: apiPath }
  const { serve: servePortal } = outflow.options.portal
  const platform = adapter.getType()
  if (platform === 'express') {
    const app = adapter.getInstance<Express>()
    app.use(apiPath, outflowRouter(outflow, handlerOptions))
    if (servePortal) app.use(outflowPortal(outflow, handlerOptions))
  } else if (platform === 'fastify') {
    // The plugins create their handlers at ready(): one made now fails the app's init on a missing
    // apiKey, as on Express. Not awaited: Fastify loads plugins in order at ready().
    createHttpHandler(outflow, handlerOptions)
    const app = adapter.getInstance<FastifyInstance>()
    void app.register(outflowFastify, { outflow, prefix: apiPath, ...handlerOptions })
    if (servePortal) void app.register(outflowPortalFastify, { outflow, ...handlerOptions })
  } else {
    throw new OutflowError('validation', `OutflowModule mounts the API on Express or Fastify, not on "${platform}": give apiPath: false and serve outflow.fetch yourself`)
  }
}

/**
 * The engine as a Nest module: `forRoot(options)` or `forRootAsync({ imports, inject, useFactory })`.
 * It is global: any provider gets the engine by its type (`constructor(private outflow: Outflow)`) or
 * with `@InjectOutflow()`. The API is mounted at `apiPath` and the portal beside it, on Express or
 * Fastify; on application shutdown, once the HTTP server has stopped, the engine the module created
 * is closed, which drains the deliveries in flight.
 *
 * @example
 * OutflowModule.forRoot({ storage: sqlite({ path: './outflow.db' }), apiKey: process.env.OUTFLOW_API_KEY })
 */
export class OutflowModule implements OnModuleInit, OnApplicationShutdown {
  readonly #outflow: Outflow
  readonly #owned: boolean
  #mountError: unknown

  constructor(outflow: Outflow, options: OutflowModuleOptions, adapterHost: HttpAdapterHost) {
    this.#outflow = outflow
    this.#owned = !('outflow' in options)
    const { apiPath = '/api/v1' } = options
    if (apiPath === false) return
    // The adapter is set before this runs under NestFactory.create, and by createNestApplication() under
    // @nestjs/testing; either way before Nest registers its body parsers. Without one (an application
    // context) nothing is mounted.
    adapterHost.init$.subscribe(() => {
      try {
        if (adapterHost.httpAdapter) mountOutflow(adapterHost.httpAdapter, outflow, apiPath)
      } catch (error) {
        this.#mountError = error
      }
    })
  }

  /** Fails the application's init when the API could not be mounted (no `apiKey`, an unknown platform). */
  async onModuleInit(): Promise<void> {
    if (this.#mountError === undefined) return
    await this.onApplicationShutdown()
    throw this.#mountError
  }

  /** Closes the engine the module created, draining its deliveries in flight; an engine passed as `outflow` is left to its owner. */
  async onApplicationShutdown(): Promise<void> {
    if (this.#owned) await this.#outflow.close()
  }

  /**
   * The module with its options given now.
   *
   * @example
   * OutflowModule.forRoot({ storage: postgres({ url: process.env.DATABASE_URL! }), apiKey: process.env.OUTFLOW_API_KEY, apiPath: '/api/v1' })
   */
  static forRoot(options: OutflowModuleOptions): DynamicModule {
    return OutflowModule.forRootAsync({ useFactory: () => options })
  }

  /**
   * The module with its options made by a factory that injects the host's providers.
   *
   * @example
   * OutflowModule.forRootAsync({ imports: [ConfigModule], inject: [ConfigService], useFactory: (config: ConfigService) => ({ storage: sqlite({ path: config.get('OUTFLOW_DB') }), apiKey: config.get('OUTFLOW_API_KEY') }) })
   */
  static forRootAsync({ imports = [], inject = [], useFactory }: OutflowModuleAsyncOptions): DynamicModule {
    return {
      module: OutflowModule,
      global: true,
      imports,
      providers: [
        { provide: moduleOptions, useFactory, inject },
        { provide: Outflow, useFactory: openEngine, inject: [moduleOptions] },
      ],
      exports: [Outflow],
    }
  }
}

// Decorators applied as calls: the package compiles without experimentalDecorators.
Module({})(OutflowModule)
Inject(Outflow)(OutflowModule, undefined, 0)
Inject(moduleOptions)(OutflowModule, undefined, 1)
Inject(HttpAdapterHost)(OutflowModule, undefined, 2)

/**
 * Injects the engine into a constructor parameter or property, where its type is not emitted
 * (without `emitDecoratorMetadata`). With it, the parameter's type `Outflow` is enough.
 *
 * @example
 * constructor(@InjectOutflow() private readonly outflow: Outflow) {}
 */
export function InjectOutflow(): PropertyDecorator & ParameterDecorator {
  return Inject(Outflow)
}
