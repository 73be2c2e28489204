/**
 * Where a scenario spent its CPU: self time of a V8 .cpuprofile (from `run.ts --cpu-prof dir`),
 * by function and by package or source file.
 *
 *   npx tsx bench/profile-summary.ts /tmp/prof/latency-sqlite.cpuprofile [top=25]
 */
import { readFileSync } from 'node:fs'

interface ProfileNode {
  id: number
  callFrame: { functionName: string; url: string; lineNumber: number }
  children?: number[]
}
interface Profile {
  nodes: ProfileNode[]
  samples: number[]
  timeDeltas: number[]
}

const [file, topArg] = process.argv.slice(2)
if (!file) {
  console.error('usage: tsx bench/profile-summary.ts <file.cpuprofile> [top]')
  process.exit(2)
}
const top = Number(topArg ?? 25)
const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile
const byId = new Map(profile.nodes.map((n) => [n.id, n]))
const selfUs = new Map<number, number>()
profile.samples.forEach((id, i) => selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)))
const total = [...selfUs.values()].reduce((a, b) => a + b, 0)

/** `node_modules/<pkg>`, a repo path (`src/...`), `node:...` or a V8 pseudo-frame. */
function owner(url: string, name: string): string {
  if (!url) return `(${name || 'native'})`
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url)
  if (pkg) return pkg[1]!
  const local = url.replace(/^file:\/\//, '')
  // Repo files relative to the repo (run from its root, as npm run bench is), whichever checkout it is.
  if (local.startsWith(`${process.cwd()}/`)) return local.slice(process.cwd().length + 1)
  return url.startsWith('node:') ? url : url.replace(/^file:\/\//, '')
}

const byFunction = new Map<string, number>()
const byOwner = new Map<string, number>()
for (const [id, us] of selfUs) {
  const { functionName, url, lineNumber } = byId.get(id)!.callFrame
  const o = owner(url, functionName)
  const fn = `${functionName || '(anonymous)'} ${o}${url ? `:${lineNumber + 1}` : ''}`
  byFunction.set(fn, (byFunction.get(fn) ?? 0) + us)
  byOwner.set(o, (byOwner.get(o) ?? 0) + us)
}
const print = (title: string, m: Map<string, number>) => {
  console.log(`\n${title}`)
  for (const [k, us] of [...m].sort((a, b) => b[1] - a[1]).slice(0, top))
    console.log(`${((us / total) * 100).toFixed(1).padStart(5)} %  ${(us / 1000).toFixed(0).padStart(6)} ms  ${k}`)
}
// Inclusive time of the repo's own functions (src/, adapters/): self time of the node and everything under it,
// counted once per sample even when the function recurses.
const parent = new Map<number, number>()
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id)
const inclusive = new Map<string, number>()
profile.samples.forEach((id, i) => {
  const seen = new Set<string>()
  for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
    const { functionName, url, lineNumber } = byId.get(at)!.callFrame
    const o = owner(url, functionName)
    if (!/^(src|adapters)\//.test(o)) continue
    const fn = `${functionName || '(anonymous)'} ${o}:${lineNumber + 1}`
    if (seen.has(fn)) continue
    seen.add(fn)
    inclusive.set(fn, (inclusive.get(fn) ?? 0) + (profile.timeDeltas[i] ?? 0))
  }
})

console.log(`${file}: ${(total / 1000).toFixed(0)} ms sampled`)
print('self time by package / file', byOwner)
print('self time by function', byFunction)
print('inclusive time of repo functions (src/, adapters/)', inclusive)
