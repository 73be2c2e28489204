import { afterAll, beforeAll, describe } from 'vitest'
import { describeAuth } from '../http/auth-suite.js'
import { describeHealth } from '../http/health-suite.js'
import { describeMatrix } from '../http/matrix-suite.js'
import { bareMount } from '../http/mounts.js'
import { type SuiteContext, startSuite } from '../http/support.js'
import { storageKind } from '../support/storages.js'

// What `npm run mutation -- http-auth` runs against each mutant of the API's auth wiring: the HTTP suite's
// authentication cases (tenant scope of the metrics included), the admin-only health details and the auth
// matrix, on one mount and SQLite. Not a *.test.ts file: `npm test` runs these suites on every mount and
// both storages (test/http/http-*.test.ts).
describe('HTTP auth wiring via the bare fetch handler on SQLite', () => {
  const ctx = {} as SuiteContext
  let stop: (() => Promise<void>) | undefined
  beforeAll(async () => {
    const started = await startSuite(bareMount, storageKind('sqlite :memory:'))
    Object.assign(ctx, started.ctx)
    stop = started.stop
  })
  afterAll(async () => {
    await stop?.()
  })
  describeAuth(ctx)
  describeHealth(ctx)
  describeMatrix(ctx)
})
