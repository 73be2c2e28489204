/**
 * The engine process of the RSS row: an engine on the scenario's database, running its delivery
 * worker until told to stop over IPC. It does nothing else, so its RSS is the engine's.
 */
import type { ScenarioContext } from '../support/scenario.js'
import { closeOutflow, openOutflow } from '../support/outflow.js'

export type EngineChildMessage = { type: 'ready' } | { type: 'stopped'; heapUsed: number; external: number; arrayBuffers: number }

const ctx = JSON.parse(process.env.BENCH_CONTEXT!) as ScenarioContext
process.on('disconnect', () => process.exit(1))
const outflow = await openOutflow(ctx)
process.send!({ type: 'ready' } satisfies EngineChildMessage)
process.once('message', () => {
  const { heapUsed, external, arrayBuffers } = process.memoryUsage()
  void closeOutflow(outflow).finally(() =>
    process.send!({ type: 'stopped', heapUsed, external, arrayBuffers } satisfies EngineChildMessage, () => process.exit(0)),
  )
})
