import { hostname } from 'node:os'
import type { Logger } from '../logger.js'

const levels = { debug: 20, info: 30, warn: 40, error: 50 } as const

export type LogLevel = keyof typeof levels | 'silent'

/**
 * A logger writing pino's JSON lines (`{"level":30,"time":…,"pid":…,"hostname":…,…fields,"msg":…}`),
 * one per call, at `level` and above. The CLI uses it instead of pino so that the library keeps no
 * logging dependency; `outflow serve | npx pino-pretty` reads it like pino's own output.
 *
 * @example
 * jsonLogger('info').info({ port: 3000 }, 'listening') // {"level":30,"time":1700000000000,…,"port":3000,"msg":"listening"}
 */
export function jsonLogger(level: LogLevel, write: (line: string) => void = (line) => process.stdout.write(line)): Logger {
  const threshold = level === 'silent' ? Infinity : levels[level]
  const base = { pid: process.pid, hostname: hostname() }
  const at = (name: keyof typeof levels) => {
    const value = levels[name]
    if (value < threshold) return () => {}
    return (fields: Record<string, unknown>, msg: string) => write(`${line(value, base, fields, msg)}\n`)
  }
  return { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') }
}

function line(level: number, base: object, fields: Record<string, unknown>, msg: string): string {
  const time = Date.now()
  try {
    return JSON.stringify({ level, time, ...base, ...fields, msg })
  } catch {
    // A field JSON cannot encode (a BigInt, a cycle): the line still goes out, without the fields.
    return JSON.stringify({ level, time, ...base, msg, fields: 'not serializable' })
  }
}
