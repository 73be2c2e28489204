import { randomBytes } from 'node:crypto'
import os from 'node:os'
import path from 'node:path'
import { Worker } from 'node:worker_threads'
import { percentile } from './stats.js'

// The disk beside a latency measurement. A durable publish waits for its commit's WAL flush, so when the machine's
// disk stalls a flush every publish of those milliseconds waits with it, whatever the engine does: on this project's
// VM a loop of fdatasync calls, alone on an idle machine, saw six flushes over 20 ms in a minute (the longest 113 ms,
// one of 203 ms in another run), and in a 20-second latency row one such stall held 97 publishes for ~120 ms (p99
// 45 ms; 13 ms for the same row with the commit's flush turned off). So each latency row watches the disk with a
// flush of its own every 10 ms and says what stalled, and how its events fared outside those stalls.

/** A flush that took at least this long is a stall. */
const stallMs = 10
/** One 4 kB write and fdatasync this often: about 100 flushes a second beside Postgres's own. */
const everyMs = 10

/** A flush of the watching loop that took `ms` from `start` (wall clock, as wallNow()). */
export interface DiskStall {
  start: number
  ms: number
}

// The loop runs in a worker thread: its synchronous flushes block neither the measured event loop nor libuv's pool.
const loop = `
const { parentPort, workerData } = require('node:worker_threads')
const fs = require('node:fs')
const now = () => performance.timeOrigin + performance.now()
const fd = fs.openSync(workerData.file, 'w')
const block = Buffer.alloc(4096, 7)
const stalls = []
let stopping = false
parentPort.on('message', () => (stopping = true))
const tick = () => {
  if (stopping) {
    fs.closeSync(fd)
    fs.rmSync(workerData.file, { force: true })
    parentPort.postMessage(stalls)
    return
  }
  fs.writeSync(fd, block, 0, block.length, 0)
  const start = now()
  fs.fdatasyncSync(fd)
  const ms = now() - start
  if (ms >= workerData.stallMs) stalls.push({ start, ms })
  setTimeout(tick, workerData.everyMs)
}
tick()
`

/**
 * Watch the disk of the temporary directory (on this machine the one Postgres's WAL is on) until the returned stop()
 * answers the stalls seen.
 *
 * @example
 * const disk = watchDisk(); await measure(); const stalls = await disk.stop()
 */
export function watchDisk(dir = os.tmpdir()): { stop(): Promise<DiskStall[]> } {
  const file = path.join(dir, `outflow-bench-disk-${randomBytes(4).toString('hex')}`)
  const worker = new Worker(loop, { eval: true, workerData: { file, stallMs, everyMs } })
  const stalls = new Promise<DiskStall[]>((resolve, reject) => {
    worker.once('message', resolve)
    worker.once('error', reject)
  })
  return {
    async stop() {
      worker.postMessage('stop')
      const seen = await stalls
      await worker.terminate()
      return seen
    },
  }
}

/** What the disk's stalls did to a latency measurement. */
export interface DiskFigures {
  /** Flushes of 10 ms or more. */
  stalls: number
  /** Stalls of 20 ms or more, the longest, and all stalls' milliseconds together. */
  over20: number
  longestMs: number
  stalledMs: number
  /** Events whose time from due to received overlapped a stall (of 10 ms or more), and the p99 of the others. */
  touched: number
  p99Outside: number
}

/**
 * The stalls against the events: `samples` are [due, latency] pairs (the sink's), an event is touched by a stall
 * when the stall began before it was received and ended after it was due. Linear in events × stalls (a handful).
 */
export function diskFigures(stalls: DiskStall[], samples: [number, number][]): DiskFigures {
  const outside: number[] = []
  for (const [due, latency] of samples) {
    const touched = stalls.some((s) => s.start < due + latency && s.start + s.ms > due)
    if (!touched) outside.push(latency)
  }
  outside.sort((a, b) => a - b)
  return {
    stalls: stalls.length,
    over20: stalls.filter((s) => s.ms >= 20).length,
    longestMs: stalls.reduce((m, s) => Math.max(m, s.ms), 0),
    stalledMs: stalls.reduce((sum, s) => sum + s.ms, 0),
    touched: samples.length - outside.length,
    p99Outside: percentile(outside, 99),
  }
}

/** The row's note: what stalled, and the p99 of the events no stall touched. */
export function diskNote(disk: DiskFigures): string {
  if (disk.stalls === 0) return `disk: no flush of the watching loop (4 kB fdatasync every ${everyMs} ms) took ${stallMs} ms or more during the measurement`
  return (
    `disk: the watching loop's flushes (4 kB fdatasync every ${everyMs} ms) stalled ${disk.stalledMs.toFixed(0)} ms in all ` +
    `(${disk.stalls} flushes of ${stallMs} ms or more, ${disk.over20} over 20 ms, the longest ${disk.longestMs.toFixed(0)} ms); ${disk.touched} events were in flight during a stall, ` +
    `p99 of the others ${disk.p99Outside.toFixed(1)} ms`
  )
}
