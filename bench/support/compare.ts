import { execFileSync } from 'node:child_process'
import { cpSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import type { Outcome } from './table.js'

/** A revision checked out beside this tree to be measured by this tree's harness. */
export interface Revision {
  /** The revision as given, and the commit it names. */
  label: string
  commit: string
  dir: string
  /** Set when the revision's package-lock.json differs from this tree's: it runs with this tree's packages. */
  lockDiffers: boolean
  remove(): void
}

const git = (cwd: string, ...args: string[]) => execFileSync('git', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim()

/**
 * Check out `rev` in a temporary worktree and give it this tree's `bench/` (so both sides are measured by the
 * same scenarios) and this tree's `node_modules`. `remove()` deletes the worktree.
 *
 * @example
 * const rev = prepareRevision(repoDir, 'HEAD~1'); try { ... } finally { rev.remove() }
 */
export function prepareRevision(repoDir: string, rev: string): Revision {
  let commit: string
  try {
    commit = git(repoDir, 'rev-parse', '--verify', `${rev}^{commit}`)
  } catch {
    throw new Error(`--compare: ${rev} is not a commit of this repository`)
  }
  const dir = mkdtempSync(path.join(os.tmpdir(), 'outflow-bench-rev-'))
  rmSync(dir, { recursive: true, force: true })
  git(repoDir, 'worktree', 'add', '--detach', dir, commit)
  const remove = () => {
    try {
      git(repoDir, 'worktree', 'remove', '--force', dir)
    } catch {
      rmSync(dir, { recursive: true, force: true })
      git(repoDir, 'worktree', 'prune')
    }
  }
  try {
    rmSync(path.join(dir, 'bench'), { recursive: true, force: true })
    cpSync(path.join(repoDir, 'bench'), path.join(dir, 'bench'), { recursive: true })
    symlinkSync(path.join(repoDir, 'node_modules'), path.join(dir, 'node_modules'), 'dir')
    let lockDiffers = false
    try {
      git(repoDir, 'diff', '--quiet', commit, '--', 'package-lock.json')
    } catch {
      lockDiffers = true
    }
    return { label: rev, commit: commit.slice(0, 7), dir, lockDiffers, remove }
  } catch (err) {
    remove()
    throw err
  }
}

const fmt = (v: number) => (Math.abs(v) >= 100 ? Math.round(v).toLocaleString('en-US') : Math.abs(v) >= 10 ? v.toFixed(1) : v.toFixed(2))

function median(values: number[]): number {
  const s = [...values].sort((a, b) => a - b)
  const m = s.length >> 1
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2
}

/** Which way is better for a figure, by its name: rates up, times and CPU down; undefined when neither. */
function better(field: string): 'higher' | 'lower' | undefined {
  if (/PerSec$|Rate$|^rate$|^replayed$/.test(field)) return 'higher'
  if (/Cpu|cpu|^p\d|P\d\d$|P50$|^max$|seconds|Seconds|Rss$|lost|duplicates/.test(field)) return 'lower'
  return undefined
}

/**
 * The comparison table: for each scenario and figure, every run of this tree and of the revision (in run order),
 * the medians and their ratio (this tree / revision), marked where it is worse by more than 10 %.
 */
export function renderComparison(results: Map<string, { tree: Outcome[]; rev: Outcome[] }>, revLabel: string): string {
  const lines = [`| scenario | figure | this tree (each run) | ${revLabel} (each run) | this / ${revLabel} (medians) |`, '|---|---|---|---|:---:|']
  for (const [key, { tree, rev }] of results) {
    const failed = [...tree, ...rev].filter((o): o is Extract<Outcome, { ok: false }> => !o.ok)
    if (failed.length) lines.push(`| ${key} | † | ${tree.map((o) => (o.ok ? 'ok' : 'failed')).join(' · ')} | ${rev.map((o) => (o.ok ? 'ok' : 'failed')).join(' · ')} | ${failed[0]!.reason.split('\n')[0]} |`)
    const fields = new Set([...tree, ...rev].flatMap((o) => (o.ok ? Object.keys(o.figures.values) : [])))
    for (const field of fields) {
      const of = (runs: Outcome[]) => runs.flatMap((o) => (o.ok && Number.isFinite(o.figures.values[field]) ? [o.figures.values[field]!] : []))
      const a = of(tree)
      const b = of(rev)
      if (!a.length && !b.length) continue
      const ratio = a.length && b.length && median(b) !== 0 ? median(a) / median(b) : undefined
      const way = better(field)
      const worse = ratio !== undefined && way !== undefined && (way === 'higher' ? ratio < 0.9 : ratio > 1.1)
      lines.push(`| ${key} | ${field} | ${a.map(fmt).join(' · ') || '—'} | ${b.map(fmt).join(' · ') || '—'} | ${ratio === undefined ? '—' : `${ratio.toFixed(2)}${worse ? ' ✗' : ''}`} |`)
    }
  }
  return lines.join('\n')
}
