import * as v from 'valibot'
import { RetryOptionsSchema, type RetryOptions } from './delivery/retry-schedule.js'
import { OutflowError } from './errors.js'
import { issuesToData } from './model/common.js'
import type { Logger } from './logger.js'
import type { Storage } from './storage/storage.js'

export type { Logger }

const positiveInt = (name: string) => v.pipe(v.number(), v.integer(`${name} must be an integer`), v.minValue(1, `${name} must be at least 1`))

const durationUnits = { m: 60_000, h: 3_600_000, d: 86_400_000, w: 7 * 86_400_000 } as const

/** A duration like `30d`, `12h`, `90m` or `2w`, as milliseconds. */
const DurationSchema = (name: string) =>
  v.pipe(
    v.string(`${name} must be a duration like 30d, 12h, 90m or 2w`),
    v.regex(/^[1-9]\d{0,5}[mhdw]$/, `${name} must be a duration like 30d, 12h, 90m or 2w`),
    v.transform((text) => Number(text.slice(0, -1)) * durationUnits[text.at(-1) as keyof typeof durationUnits]),
  )

const OptionsSchema = v.object({
  apiKey: v.optional(v.pipe(v.string(), v.minLength(16, 'apiKey must be at least 16 characters'))),
  jwtSecret: v.optional(v.pipe(v.string(), v.minLength(16, 'jwtSecret must be at least 16 characters'))),
  auth: v.optional(v.boolean(), true),
  topics: v.optional(v.array(v.pipe(v.string(), v.minLength(1)))),
  portal: v.optional(v.object({ url: v.pipe(v.string(), v.url('portal.url must be a URL')) })),
  encryptionKey: v.optional(v.pipe(v.string(), v.minLength(16, 'encryptionKey must be at least 16 characters'))),
  allowPrivateNetworks: v.optional(v.boolean(), false),
  relayUrl: v.optional(v.pipe(v.string(), v.url('relayUrl must be a URL'))),
  maxBodyBytes: v.optional(positiveInt('maxBodyBytes'), 1024 * 1024),
  migrate: v.optional(v.boolean(), true),
  delivery: v.optional(
    v.object({
      worker: v.optional(v.boolean(), true),
      concurrency: v.optional(positiveInt('delivery.concurrency'), 50),
      perDestinationConcurrency: v.optional(positiveInt('delivery.perDestinationConcurrency'), 20),
      timeoutMs: v.optional(positiveInt('delivery.timeoutMs'), 10_000),
      leaseMs: v.optional(positiveInt('delivery.leaseMs'), 60_000),
      pollIntervalMs: v.optional(positiveInt('delivery.pollIntervalMs'), 1_000),
      batchSize: v.optional(positiveInt('delivery.batchSize'), 200),
      drainTimeoutMs: v.optional(positiveInt('delivery.drainTimeoutMs'), 10_000),
      retry: v.optional(RetryOptionsSchema, {}),
    }),
    {},
  ),
  retention: v.optional(
    v.object({
      events: DurationSchema('retention.events'),
      batchSize: v.optional(v.pipe(positiveInt('retention.batchSize'), v.maxValue(10_000, 'retention.batchSize must be at most 10000')), 500),
      intervalMs: v.optional(positiveInt('retention.intervalMs'), 60_000),
    }),
  ),
  alerts: v.optional(
    v.object({
      consecutiveFailures: v.optional(positiveInt('alerts.consecutiveFailures'), 20),
      callbackUrl: v.optional(v.pipe(v.string(), v.url('alerts.callbackUrl must be a URL'))),
    }),
    {},
  ),
})

export type OutflowOptions = v.InferInput<typeof OptionsSchema> & {
  /** `sqlite({ path })`, `postgres({ url })`, or any Storage implementation. */
  storage: Storage | (() => Promise<Storage>)
  logger?: Logger
}

export type ResolvedOptions = Omit<v.InferOutput<typeof OptionsSchema>, 'delivery'> & {
  delivery: v.InferOutput<typeof OptionsSchema>['delivery'] & { retry: RetryOptions }
  logger: Logger
}

const quietLogger: Logger = {
  debug: () => {},
  info: () => {},
  warn: (m, f) => console.warn(`[outflow] ${m}`, f ?? ''),
  error: (m, f) => console.error(`[outflow] ${m}`, f ?? ''),
}

/** Validate engine options and fill defaults; a bad option is a clear error at start-up. */
export function resolveOptions(options: OutflowOptions): ResolvedOptions {
  const { storage: _storage, logger, ...rest } = options
  const result = v.safeParse(OptionsSchema, rest)
  if (!result.success) {
    const data = issuesToData(result.issues)
    throw new OutflowError('validation', `invalid Outflow options: ${Object.entries(data).map(([k, m]) => `${k}: ${m}`).join('; ')}`, { data })
  }
  return { ...result.output, logger: logger ?? quietLogger } as ResolvedOptions
}
