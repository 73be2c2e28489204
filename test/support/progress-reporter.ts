import { appendFileSync } from 'node:fs'
import type { Reporter, TestCase, TestModule } from 'vitest/node'

/**
 * A vitest reporter for CI's time bounds (.ci/bounded): it appends to the file named by $OUTFLOW_CI_PROGRESS a line
 * each time a test file is queued, loaded and ended and each time a test starts and ends, so that a run stopped for
 * hanging can say which files and tests were still running and for how long. It does nothing without that variable.
 *
 * Lines: `<epoch ms>\t<queued|collected|ended>\t<file>` and `<epoch ms>\t<test|done>\t<file>\t<full test name>`.
 */
export default class ProgressReporter implements Reporter {
  readonly #path = process.env.OUTFLOW_CI_PROGRESS

  #write(...fields: string[]): void {
    if (this.#path) appendFileSync(this.#path, `${[Date.now(), ...fields].join('\t')}\n`)
  }

  onTestModuleQueued(module: TestModule): void {
    this.#write('queued', module.moduleId)
  }

  onTestModuleCollected(module: TestModule): void {
    this.#write('collected', module.moduleId)
  }

  onTestModuleEnd(module: TestModule): void {
    this.#write('ended', module.moduleId)
  }

  onTestCaseReady(test: TestCase): void {
    this.#write('test', test.module.moduleId, test.fullName)
  }

  onTestCaseResult(test: TestCase): void {
    this.#write('done', test.module.moduleId, test.fullName)
  }
}
