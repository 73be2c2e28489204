import { defineConfig } from 'vitest/config'

// The vitest config of mutation runs (stryker.config.mjs): only the test files of the module under mutation,
// given by scripts/mutation.ts in OUTFLOW_MUTATION_TESTS (comma-separated), and no portal build.
const files = (process.env.OUTFLOW_MUTATION_TESTS ?? '').split(',').filter(Boolean)
if (files.length === 0) throw new Error('OUTFLOW_MUTATION_TESTS names no test file: run mutation tests with npm run mutation')

export default defineConfig({
  test: {
    include: files,
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    fileParallelism: false,
  },
})
