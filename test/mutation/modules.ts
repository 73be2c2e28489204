import { readFileSync } from 'node:fs'

/**
 * The modules under mutation testing (`npm run mutation`): where a wrong line is a silent delivery or
 * security bug. Each is mutated alone and checked only by the test files listed with it, the unit tests
 * that pin its behaviour, so a run stays within a 2-core machine shared with other work.
 */
export interface MutationModule {
  /** Short name: `npm run mutation -- <name>` runs this module only. */
  name: string
  /** Files, or parts of files (`file:line-line`, `file:line:column-line:column`), Stryker mutates. */
  mutate: string[]
  /**
   * The test files that run against each mutant, whole: StrykerJS 9.6's vitest runner sets its own test name
   * filter on every run, so a module checked by a few tests of a large suite needs a file of its own.
   */
  tests: string[]
}

/**
 * The parts of `file` Stryker should mutate: each match of `pattern` (global, within one line) as a
 * `file:line:column-line:column` range. Found when the run starts, so they follow the code as it moves;
 * a pattern that matches nothing is an error rather than a module that quietly measures less.
 *
 * @example
 * spans('src/http/routes.ts', /access: '\w+'/g) // ['src/http/routes.ts:109:106-109:121', …]
 */
function spans(file: string, pattern: RegExp): string[] {
  const found = readFileSync(file, 'utf8')
    .split('\n')
    .flatMap((text, i) => [...text.matchAll(pattern)].map((m) => `${file}:${i + 1}:${m.index}-${i + 1}:${m.index + m[0].length}`))
  if (found.length === 0) throw new Error(`test/mutation/modules.ts: ${pattern} matches nothing in ${file}; point it at the code again`)
  return found
}

/**
 * `file:line-end`: from the first line matching `pattern` to the end of the file, found like `spans`.
 *
 * @example
 * fromFirst('src/net/http-client.ts', /^export function errorKindForStatus\(/) // 'src/net/http-client.ts:270-315'
 */
function fromFirst(file: string, pattern: RegExp): string {
  const lines = readFileSync(file, 'utf8').split('\n')
  const first = lines.findIndex((text) => pattern.test(text))
  if (first < 0) throw new Error(`test/mutation/modules.ts: ${pattern} matches nothing in ${file}; point it at the code again`)
  return `${file}:${first + 1}-${lines.length}`
}

export const mutationModules: MutationModule[] = [
  { name: 'topics', mutate: ['src/delivery/topics.ts', 'src/delivery/match.ts'], tests: ['test/delivery/topics.test.ts', 'test/delivery/match.test.ts'] },
  { name: 'filter', mutate: ['src/delivery/filter.ts'], tests: ['test/delivery/filter.test.ts'] },
  { name: 'retry', mutate: ['src/delivery/retry-schedule.ts'], tests: ['test/delivery/retry-schedule.test.ts', 'test/delivery/attempt.test.ts'] },
  { name: 'signing', mutate: ['src/net/signing.ts'], tests: ['test/net/signing.test.ts'] },
  { name: 'credentials', mutate: ['src/credentials.ts'], tests: ['test/credentials.test.ts'] },
  { name: 'ssrf', mutate: ['src/net/ssrf.ts', 'src/net/endpoint-guard.ts'], tests: ['test/net/ssrf.test.ts', 'test/net/endpoint-guard.test.ts'] },
  { name: 'merge-patch', mutate: ['src/engine/merge-patch.ts'], tests: ['test/engine/merge-patch.test.ts'] },
  { name: 'auth', mutate: ['src/http/auth.ts'], tests: ['test/http/auth.test.ts'] },
  {
    // Where the API applies auth.ts: the handler's principal, route rule and tenant scope, each route's access
    // rule, the metrics' tenant scope and the admin-only health details. Checked over HTTP on one mount.
    name: 'http-auth',
    mutate: [
      ...spans('src/http/handler.ts', /^.*(\bconst settings = |assertAuthConfigured\(settings\)|\bauthenticate\(|\bauthorize\(|\bprincipal\b|\btenantScope\b).*$/gm),
      ...spans('src/http/routes.ts', /access: '\w+'/g),
      ...spans('src/http/routes.ts', /tenantScope \? \{ tenantId: tenantScope \} : undefined/g),
      ...spans('src/http/routes.ts', /^.*\b(query\.details|authorize\('admin'\)).*$/gm),
    ],
    tests: ['test/mutation/http-auth.mutation.ts'],
  },
  { name: 'tokens', mutate: ['src/tokens.ts'], tests: ['test/tokens.test.ts'] },
  {
    name: 'attempt',
    // http-client.ts from errorKindForStatus on: the status and error to attempt-result mapping (the rest is the socket pool).
    mutate: ['src/delivery/attempt.ts', 'src/destinations/failure.ts', 'src/retry-after.ts', fromFirst('src/net/http-client.ts', /^export function errorKindForStatus\(/)],
    tests: ['test/delivery/attempt.test.ts', 'test/destinations/failure.test.ts', 'test/net/http-client.test.ts'],
  },
  { name: 'catalog', mutate: ['src/delivery/catalog.ts'], tests: ['test/delivery/catalog.test.ts'] },
]
