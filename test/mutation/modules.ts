/**
 * The modules under mutation testing (`npm run mutation`): where a wrong line is a silent delivery or
 * security bug. Each is mutated alone and checked only by the test files listed with it, the unit tests
 * that pin its behaviour, so a run stays within a 2-core machine shared with other work.
 */
export interface MutationModule {
  /** Short name: `npm run mutation -- <name>` runs this module only. */
  name: string
  /** Files (or `file:from-to` line ranges) Stryker mutates. */
  mutate: string[]
  /** The test files that run against each mutant. */
  tests: string[]
  /** Only the tests whose full name matches (vitest's testNamePattern), for a module exercised by a few tests of a large file. */
  testNamePattern?: string
  /** Stryker's coverage analysis for this module when not `perTest`. */
  coverageAnalysis?: 'all' | 'perTest'
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
  { name: 'tokens', mutate: ['src/tokens.ts'], tests: ['test/tokens.test.ts'] },
  {
    name: 'attempt',
    // http-client.ts from parseRetryAfter on: the status and error to attempt-result mapping (the rest is the socket pool).
    mutate: ['src/delivery/attempt.ts', 'src/destinations/failure.ts', 'src/net/http-client.ts:256-311'],
    tests: ['test/delivery/attempt.test.ts', 'test/destinations/failure.test.ts', 'test/net/http-client.test.ts'],
  },
  { name: 'catalog', mutate: ['src/delivery/catalog.ts'], tests: ['test/delivery/catalog.test.ts'] },
]
