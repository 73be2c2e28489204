import * as v from 'valibot'
import { RetryOptionsSchema, type RetryOptions } from './delivery/retry-schedule.js'
import { OutflowError } from './errors.js'
import { IdSchema, issuesToData, JsonObjectSchema, StringMapSchema } from './model/common.js'
import { alertTopics, OperatorTopicSchema } from './model/operator-event.js'
import { TopicDefinitionSchema, type TopicsOption } from './model/topic.js'
import { stderrLogger, type Logger } from './logger.js'
import { parseSigningSecret } from './net/ed25519.js'
import { parseProxyUrl } from './net/proxy.js'
import type { Storage, StorageContext } from './storage/storage.js'

export type { Logger }

const positiveInt = (name: string) => v.pipe(v.number(), v.integer(`${name} must be an integer`), v.minValue(1, `${name} must be at least 1`))

const durationUnits = { m: 60_000, h: 3_600_000, d: 86_400_000, w: 7 * 86_400_000 } as const

/** A duration like `30d`, `12h`, `90m` or `2w`, checked and kept as text. */
const DurationTextSchema = (name: string) =>
  v.pipe(v.string(`${name} must be a duration like 30d, 12h, 90m or 2w`), v.regex(/^[1-9]\d{0,5}[mhdw]$/, `${name} must be a duration like 30d, 12h, 90m or 2w`))

/**
 * The milliseconds of a duration checked by DurationTextSchema.
 *
 * @example
 * durationMs('12h') // 43_200_000
 */
export function durationMs(text: string): number {
  return Number(text.slice(0, -1)) * durationUnits[text.at(-1) as keyof typeof durationUnits]
}

/** A duration like `30d`, `12h`, `90m` or `2w`, as milliseconds. */
const DurationSchema = (name: string) => v.pipe(DurationTextSchema(name), v.transform(durationMs))

const retentionEntries = {
  batchSize: v.optional(v.pipe(positiveInt('retention.batchSize'), v.maxValue(10_000, 'retention.batchSize must be at most 10000')), 500),
  intervalMs: v.optional(positiveInt('retention.intervalMs'), 60_000),
}

/** `retention` as given (the window stays text): what the CLI validates before it hands the options to `createOutflow`. */
export const RetentionInputSchema = v.optional(v.object({ events: DurationTextSchema('retention.events'), ...retentionEntries }))

const signingKeyEntry = v.pipe(
  v.string('signing.keys must be whsk_ keys'),
  v.rawCheck(({ dataset, addIssue }) => {
    if (!dataset.typed) return
    try {
      parseSigningSecret(dataset.value)
    } catch (err) {
      addIssue({ message: `signing.keys: ${(err as Error).message}` })
    }
  }),
)
const signingEntries = {
  /** Ed25519 keys (`whsk_`), newest first: all of them sign and are published. Absent: a stored keyring, generated and rotated by the engine. */
  keys: v.optional(v.pipe(v.array(signingKeyEntry), v.minLength(1, 'signing.keys must not be empty'))),
}

/** `signing` as given (the overlap stays text): what the CLI validates before it hands the options to `createOutflow`. */
export const SigningInputSchema = v.optional(v.object({ ...signingEntries, overlap: v.optional(DurationTextSchema('signing.overlap')) }), {})

/** The engine options `createOutflow` validates (without `storage` and `logger`); the CLI reads its settings with it too. */
export const OptionsSchema = v.object({
  apiKey: v.optional(v.pipe(v.string(), v.minLength(16, 'apiKey must be at least 16 characters'))),
  jwtSecret: v.optional(v.pipe(v.string(), v.minLength(16, 'jwtSecret must be at least 16 characters'))),
  auth: v.optional(v.boolean(), true),
  /** An allow-list of topic names, or the event catalog: name -> description, schema, validation, deprecation. */
  // Chosen by the input's shape (not a union) so a bad definition is reported at its own path (`topics.a.b.validation`).
  topics: v.optional(
    v.lazy((input) =>
      Array.isArray(input)
        ? v.array(v.pipe(v.string('must be a string'), v.minLength(1, 'must not be empty')))
        : v.record(v.pipe(v.string(), v.minLength(1, 'topic names must not be empty')), TopicDefinitionSchema, 'must be an array of topic names or an object of topic definitions'),
    ),
  ),
  portal: v.optional(
    v.object({
      /** A portal page of the host's own: portal redirects go there instead of the built-in portal. */
      url: v.optional(v.pipe(v.string(), v.url('portal.url must be a URL'))),
      /** Where `outflow.fetch` serves the built-in portal, beside the API prefix. */
      path: v.optional(v.pipe(v.string('portal.path must be a path like /portal'), v.regex(/^(\/[A-Za-z0-9._~-]+)+$/, 'portal.path must be a path like /portal')), '/portal'),
      /** `false`: the built-in portal is not served (its path answers 404). */
      serve: v.optional(v.boolean(), true),
      /** Who may show the portal in a frame (CSP frame-ancestors): `'self'` and/or origins like https://app.example.com. */
      frameAncestors: v.optional(
        v.array(v.pipe(v.string(), v.regex(/^('self'|https?:\/\/[A-Za-z0-9.-]+(:\d{1,5})?)$/, "portal.frameAncestors entries must be 'self' or an origin like https://app.example.com"))),
        ["'self'"],
      ),
    }),
    {},
  ),
  encryptionKey: v.optional(v.pipe(v.string(), v.minLength(16, 'encryptionKey must be at least 16 characters'))),
  previousEncryptionKeys: v.optional(v.array(v.pipe(v.string(), v.minLength(16, 'previousEncryptionKeys must be at least 16 characters each'))), []),
  insecurePlaintextCredentials: v.optional(v.boolean(), false),
  allowPrivateNetworks: v.optional(v.boolean(), false),
  relayUrl: v.optional(v.pipe(v.string(), v.url('relayUrl must be a URL'))),
  /** The Ed25519 (`v1a`) signing keyring: configured keys, or the stored one, and how long a rotated-out key keeps signing. */
  signing: v.optional(v.object({ ...signingEntries, overlap: v.optional(DurationSchema('signing.overlap'), '24h') }), {}),
  maxBodyBytes: v.optional(positiveInt('maxBodyBytes'), 1024 * 1024),
  /** The public URL of this engine's HTTP API (`/api/v1` included): thin deliveries link to `{publicUrl}/payloads/{token}`. */
  publicUrl: v.optional(v.pipe(v.string('publicUrl must be a URL'), v.url('publicUrl must be a URL'), v.regex(/^https?:\/\/[^?#]*$/, 'publicUrl must be an http:// or https:// URL without a query or fragment'))),
  /** How long a thin delivery's payload link answers (kept as text, like `24h`; at most 30d). */
  payloadLinkTtl: v.optional(v.pipe(DurationTextSchema('payloadLinkTtl'), v.check((text) => durationMs(text) <= 30 * 86_400_000, 'payloadLinkTtl must be at most 30d')), '24h'),
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
      /** An HTTP CONNECT proxy (`http://[user:password@]host:port`) that webhook and relay traffic goes through. */
      proxy: v.optional(
        v.pipe(
          v.string('delivery.proxy must be a URL like http://proxy:3128'),
          v.check((text) => {
            try {
              parseProxyUrl(text)
              return true
            } catch {
              return false
            }
          }, 'delivery.proxy must be a URL like http://proxy:3128 (http://, host and port, no path)'),
        ),
      ),
    }),
    {},
  ),
  /** Restarting the engine's loops (claim, leases, results, listen, replay, prune) when they throw. */
  supervisor: v.optional(
    v.object({
      /** Failures in a row after which a loop counts as failed and health answers 503 (it is still restarted). */
      restarts: v.optional(positiveInt('supervisor.restarts'), 5),
      /** The pause before the first restart, doubling with each failure in a row... */
      backoffMs: v.optional(positiveInt('supervisor.backoffMs'), 100),
      /** ...up to this. */
      maxBackoffMs: v.optional(positiveInt('supervisor.maxBackoffMs'), 5_000),
    }),
    {},
  ),
  telemetry: v.optional(
    v.object({
      propagateTraceContext: v.optional(v.boolean(), false),
    }),
    {},
  ),
  retention: v.optional(v.object({ events: DurationSchema('retention.events'), ...retentionEntries })),
  alerts: v.optional(
    v.object({
      consecutiveFailures: v.optional(positiveInt('alerts.consecutiveFailures'), 100),
      /** Disable a destination when its failure streak reaches `consecutiveFailures`. */
      autoDisable: v.optional(v.boolean(), true),
      /** @deprecated Use `operatorEvents`: this becomes a webhook operator sink for the alert topics. */
      callbackUrl: v.optional(v.pipe(v.string(), v.url('alerts.callbackUrl must be a URL'))),
    }),
    {},
  ),
  operatorEvents: v.optional(
    v.object({
      /** The sink: any destination type, as in createDestination (validated when the engine starts). */
      destination: v.strictObject(
        {
          type: v.string('must be a destination type'),
          config: v.optional(JsonObjectSchema),
          credentials: v.optional(JsonObjectSchema),
          delivery_metadata: v.optional(StringMapSchema),
        },
        'unexpected field',
      ),
      /** Topics sent to the sink (every topic is emitted in-process regardless). Default: the alerts. */
      topics: v.optional(v.array(v.union([OperatorTopicSchema, v.literal('*')])), [...alertTopics]),
      /** The tenant that holds the sink and logs its deliveries. */
      tenantId: v.optional(IdSchema, 'outflow-operator'),
    }),
  ),
})

/** The options of `createOutflow`: storage, keys, topics, portal, delivery, alerts, retention, telemetry and logging (see docs/embedding.md › Options). */
export type OutflowOptions = Omit<v.InferInput<typeof OptionsSchema>, 'topics'> & {
  /**
   * Allowed topics: an array of names, or the event catalog, a map of name -> `{ description, schema,
   * validation, deprecated, replaced_by, examples }` whose schemas type `publish` and are checked at publish.
   */
  topics?: TopicsOption
  /** `sqlite({ path })`, `postgres({ url })`, or any Storage implementation. */
  storage: Storage | ((context: StorageContext) => Promise<Storage>)
  /** A pino-compatible logger (`info(fields, message)`); without one, warnings and errors go to stderr. */
  logger?: Logger
}

export type ResolvedOptions = Omit<v.InferOutput<typeof OptionsSchema>, 'delivery' | 'topics'> & {
  delivery: v.InferOutput<typeof OptionsSchema>['delivery'] & { retry: RetryOptions }
  /** The names of the catalog's topics (the allow-list), whichever form `topics` had. */
  topics?: string[]
  /** The `topics` option as given (compiled into the engine's catalog by createOutflow). */
  catalog?: TopicsOption
  logger: Logger
}

/** Validate engine options and fill defaults; a bad option is a clear error at start-up. */
export function resolveOptions(options: OutflowOptions): ResolvedOptions {
  const { storage: _storage, logger, ...rest } = options
  const result = v.safeParse(OptionsSchema, rest)
  if (!result.success) {
    const data = issuesToData(result.issues)
    throw new OutflowError('validation', `invalid Outflow options: ${Object.entries(data).map(([k, m]) => `${k}: ${m}`).join('; ')}`, { data })
  }
  const { insecurePlaintextCredentials, encryptionKey, previousEncryptionKeys } = result.output
  if (insecurePlaintextCredentials && (encryptionKey || previousEncryptionKeys.length))
    throw new OutflowError('validation', 'invalid Outflow options: insecurePlaintextCredentials cannot be combined with encryption keys', {
      data: { insecurePlaintextCredentials: 'cannot be combined with encryptionKey or previousEncryptionKeys' },
    })
  const { topics, ...output } = result.output
  const resolved = { ...output, logger: logger ?? stderrLogger } as ResolvedOptions
  if (topics) {
    // The caller's own schema values, not valibot's copies of them.
    resolved.catalog = options.topics as TopicsOption
    resolved.topics = Array.isArray(topics) ? topics : Object.keys(topics)
  }
  const { callbackUrl } = resolved.alerts
  if (callbackUrl) {
    resolved.logger.warn({}, 'alerts.callbackUrl is deprecated: use operatorEvents (alerts now go to it as signed operator events)')
    resolved.operatorEvents ??= { destination: { type: 'webhook', config: { url: callbackUrl } }, topics: [...alertTopics], tenantId: 'outflow-operator' }
  }
  return resolved
}
