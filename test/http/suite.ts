import { afterAll, beforeAll, describe } from 'vitest'
import { describeAuth } from './auth-suite.js'
import { describeDestinations } from './destinations-suite.js'
import { describeErrors } from './errors-suite.js'
import { describeEvents } from './events-suite.js'
import { describeExpunge } from './expunge-suite.js'
import { describeHealth } from './health-suite.js'
import { describeMatrix } from './matrix-suite.js'
import { describeMetrics } from './metrics-suite.js'
import type { Mount } from './mounts.js'
import { describeOpenApi } from './openapi-suite.js'
import type { StorageKind } from '../support/storages.js'
import { type SuiteContext, startSuite } from './support.js'
import { describeTenants } from './tenants-suite.js'

/**
 * The HTTP suite: every route, status code, query parameter and the auth matrix, through one mount
 * on one storage. One engine serves the whole suite; the matrix, which mutates the most, runs last.
 *
 * @example
 * describeHttp(expressMount, storageKind('sqlite :memory:'))
 */
export function describeHttp(mount: Mount, storage: StorageKind): void {
  describe.runIf(storage.available)(`HTTP API via ${mount.name} on ${storage.name}`, () => {
    const ctx = {} as SuiteContext
    let stop: (() => Promise<void>) | undefined
    beforeAll(async () => {
      const started = await startSuite(mount, storage)
      Object.assign(ctx, started.ctx)
      stop = started.stop
    })
    afterAll(async () => {
      await stop?.()
    })
    describeTenants(ctx)
    describeDestinations(ctx)
    describeEvents(ctx)
    describeExpunge(ctx)
    describeMetrics(ctx)
    describeErrors(ctx, mount)
    describeAuth(ctx)
    describeHealth(ctx)
    describeOpenApi(ctx)
    describeMatrix(ctx)
  })
}
