/**
 * `npm run mutation [-- name…]`: StrykerJS over each module of test/mutation/modules.ts (all, or the named ones),
 * one module at a time, then the score per module. Reports: reports/mutation/<module>/index.html and mutation.json.
 */
import { spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { mutationModules } from '../test/mutation/modules.js'

interface Report {
  files: Record<string, { mutants: { status: string }[] }>
}

const wanted = process.argv.slice(2)
const unknown = wanted.filter((name) => !mutationModules.some((m) => m.name === name))
if (unknown.length) {
  console.error(`unknown module ${unknown.join(', ')}; modules: ${mutationModules.map((m) => m.name).join(', ')}`)
  process.exit(2)
}
const modules = wanted.length ? mutationModules.filter((m) => wanted.includes(m.name)) : mutationModules

const rows: string[][] = []
let failed = false
const started = Date.now()
for (const module of modules) {
  const moduleStarted = Date.now()
  // A file once, with how many ranges of it are mutated when the module names parts of it.
  const files = new Map<string, number>()
  for (const pattern of module.mutate) {
    const file = pattern.replace(/:\d+(:\d+)?-\d+(:\d+)?$/, '')
    files.set(file, (files.get(file) ?? 0) + (file === pattern ? 0 : 1))
  }
  console.log(`\n== ${module.name}: ${[...files].map(([file, ranges]) => (ranges ? `${file} (${ranges} ranges)` : file)).join(', ')}`)
  const args = ['run', 'stryker.config.mjs', '--mutate', module.mutate.join(',')]
  const run = spawnSync('node_modules/.bin/stryker', args, {
    stdio: 'inherit',
    env: { ...process.env, OUTFLOW_MUTATION_MODULE: module.name, OUTFLOW_MUTATION_TESTS: module.tests.join(',') },
  })
  if (run.status !== 0) {
    failed = true
    rows.push([module.name, 'stryker failed', '', '', '', '', ''])
    continue
  }
  const report = JSON.parse(readFileSync(`reports/mutation/${module.name}/mutation.json`, 'utf8')) as Report
  const count: Record<string, number> = {}
  for (const file of Object.values(report.files)) for (const m of file.mutants) count[m.status] = (count[m.status] ?? 0) + 1
  const n = (status: string) => count[status] ?? 0
  // Stryker's mutation score: detected (killed, timeout) over valid mutants (detected, survived, no coverage).
  const detected = n('Killed') + n('Timeout')
  const valid = detected + n('Survived') + n('NoCoverage')
  const score = valid === 0 ? 'n/a' : `${((100 * detected) / valid).toFixed(1)} %`
  rows.push([module.name, score, String(n('Killed')), String(n('Survived')), String(n('NoCoverage')), String(n('Timeout')), `${Math.round((Date.now() - moduleStarted) / 1000)} s`])
}

const header = ['module', 'score', 'killed', 'survived', 'no coverage', 'timeout', 'time']
const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)))
const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i]!)).join('  ')
console.log(`\nMutation scores (${Math.round((Date.now() - started) / 1000)} s in all)\n${line(header)}\n${line(widths.map((w) => '-'.repeat(w)))}`)
for (const row of rows) console.log(line(row))
if (failed) process.exit(1)
