import { mkdirSync, writeFileSync } from 'node:fs'
import { Session } from 'node:inspector/promises'
import path from 'node:path'
import type { ScenarioContext } from './scenario.js'

/**
 * A V8 CPU profile of one measured window of a scenario (not its set-up and warm-up, which the
 * whole-process `--cpu-prof` profile also holds), written as `<ctx.cpuProf>/window.cpuprofile`.
 * Without `--cpu-prof` it does nothing.
 *
 * @example
 * const stop = await profileWindow(ctx); await measured(); await stop()
 */
export async function profileWindow(ctx: ScenarioContext): Promise<() => Promise<void>> {
  if (!ctx.cpuProf) return async () => {}
  const dir = ctx.cpuProf
  const session = new Session()
  session.connect()
  await session.post('Profiler.enable')
  await session.post('Profiler.start')
  return async () => {
    const { profile } = await session.post('Profiler.stop')
    session.disconnect()
    mkdirSync(dir, { recursive: true })
    writeFileSync(path.join(dir, 'window.cpuprofile'), JSON.stringify(profile))
  }
}
