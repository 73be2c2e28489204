// @ts-check
// Mutation testing of one module (see test/mutation/modules.ts); scripts/mutation.ts (`npm run mutation`)
// runs it once per module with --mutate, OUTFLOW_MUTATION_MODULE and OUTFLOW_MUTATION_TESTS set.
const module = process.env.OUTFLOW_MUTATION_MODULE ?? 'adhoc'
const reportDir = `reports/mutation/${module}`

/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default {
  testRunner: 'vitest',
  vitest: { configFile: 'test/mutation/vitest.config.ts', related: false },
  plugins: ['@stryker-mutator/vitest-runner'],
  coverageAnalysis: 'perTest',
  // The machine has 2 cores and is shared; OUTFLOW_MUTATION_CONCURRENCY raises it where there are more.
  concurrency: Number(process.env.OUTFLOW_MUTATION_CONCURRENCY ?? 1),
  timeoutMS: 10_000,
  reporters: ['json', 'html', 'clear-text', 'progress-append-only'],
  jsonReporter: { fileName: `${reportDir}/mutation.json` },
  htmlReporter: { fileName: `${reportDir}/index.html` },
  clearTextReporter: { allowColor: false, logTests: false, reportTests: false, reportMutants: false, reportScoreTable: true },
  tempDirName: '.stryker-tmp',
  cleanTempDir: 'always',
  ignorePatterns: ['reports', 'dist', 'docs', 'bench', 'coverage', '.tmp'],
  disableTypeChecks: 'src/**/*.ts',
  thresholds: { high: 90, low: 85, break: null },
}
