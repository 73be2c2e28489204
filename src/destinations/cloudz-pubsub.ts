import type * as PubSubSdk from '@google-cloud/pubsub'
import * as v from 'valibot'
import { loadPeer } from './load-peer.js'
import type { AttemptResult, DestinationTypeDefinition, ErrorKind, FieldSpec, Publisher, PublisherContext, PublisherDestination } from './types.js'

const ConfigSchema = v.strictObject(
  {
    project_id: v.pipe(
      v.string('must be a string'),
      v.minLength(1, 'required'),
      v.regex(/^[a-z][a-z0-9-:.]{4,61}[a-z0-9]$|^[a-z][a-z0-9-]{0,62}$/, 'must be a Google Cloud project id'),
    ),
    topic: v.pipe(
      v.string('must be a string'),
      v.minLength(1, 'required'),
      v.maxLength(255, 'must be at most 255 characters'),
      v.regex(/^[A-Za-z][A-Za-z0-9\-_.~+%]*$/, 'must be a Pub/Sub topic id (start with a letter; letters, digits, - _ . ~ + %)'),
    ),
    endpoint: v.optional(
      v.pipe(v.string('must be a string'), v.regex(/^(https?:\/\/)?[A-Za-z0-9.\-[\]:]+(:\d{1,5})?\/?$/, 'must be host:port or a URL of a Pub/Sub endpoint or emulator')),
    ),
  },
  'unexpected field',
)

/** The service account key: a JSON object (any object when an emulator `endpoint` is set, which needs no auth). */
const CredentialsSchema = v.strictObject(
  {
    service_account_json: v.pipe(
      v.string('must be a string'),
      v.minLength(2, 'required'),
      v.check((text) => {
        try {
          const parsed: unknown = JSON.parse(text)
          return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)
        } catch {
          return false
        }
      }, 'must be the JSON key of a service account'),
    ),
  },
  'unexpected field',
)

const configFields: FieldSpec[] = [
  { key: 'project_id', type: 'text', label: 'Project ID', description: 'The Google Cloud project that owns the topic.', required: true, sensitive: false },
  { key: 'topic', type: 'text', label: 'Topic', description: 'The Pub/Sub topic id (not the full path). It must already exist.', required: true, sensitive: false },
  {
    key: 'endpoint',
    type: 'text',
    label: 'Endpoint',
    description: 'Optional host:port of a Pub/Sub emulator or a regional endpoint. An emulator connection is made without TLS or credentials.',
    required: false,
    sensitive: false,
  },
]

const credentialFields: FieldSpec[] = [
  {
    key: 'service_account_json',
    type: 'text',
    label: 'Service account key (JSON)',
    description: 'The JSON key of a service account with the Pub/Sub Publisher role on the topic.',
    required: true,
    sensitive: true,
  },
]

const grpcCodes: Record<number, ErrorKind> = {
  3: 'rejected', // INVALID_ARGUMENT
  4: 'timeout', // DEADLINE_EXCEEDED
  5: 'not_found', // NOT_FOUND
  7: 'authentication', // PERMISSION_DENIED
  8: 'throttled', // RESOURCE_EXHAUSTED
  14: 'network', // UNAVAILABLE
  16: 'authentication', // UNAUTHENTICATED
}

/** A failed publish as an attempt result; the message is the SDK's, which carries no key material. */
export function pubsubFailure(err: unknown): AttemptResult {
  const e = err as { code?: unknown; details?: unknown; message?: unknown }
  const kind = typeof e.code === 'number' ? grpcCodes[e.code] : undefined
  const detail = typeof e.details === 'string' && e.details ? e.details : String(e.message ?? err)
  return { ok: false, error_kind: kind ?? (/ECONNREFUSED|ENOTFOUND|EAI_AGAIN|socket/i.test(detail) ? 'network' : 'unknown'), error: `Pub/Sub publish failed: ${detail}` }
}

async function createPublisher(destination: PublisherDestination, context: PublisherContext): Promise<Publisher> {
  const config = v.parse(ConfigSchema, destination.config)
  const credentials = v.parse(CredentialsSchema, destination.credentials)
  const { PubSub } = await loadPeer<typeof PubSubSdk>('@google-cloud/pubsub')
  const key = JSON.parse(credentials.service_account_json) as Record<string, unknown>
  const client = new PubSub({
    projectId: config.project_id,
    ...(config.endpoint ? { apiEndpoint: config.endpoint.replace(/^https?:\/\//, '').replace(/\/$/, ''), emulatorMode: true } : { credentials: key }),
  })
  // One message per call: the pipeline batches work, and an attempt must map to one publish.
  const topic = client.topic(config.topic, { batching: { maxMessages: 1, maxMilliseconds: 0 }, gaxOpts: { timeout: context.timeoutMs, maxRetries: 0 } })
  return {
    async publish(message) {
      let timer: NodeJS.Timeout | undefined
      try {
        const deadline = new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(Object.assign(new Error(`no answer within ${context.timeoutMs} ms`), { code: 4 })), context.timeoutMs)
        })
        const messageId = await Promise.race([
          topic.publishMessage({ data: Buffer.from(JSON.stringify(message.data)), attributes: message.metadata }),
          deadline,
        ])
        return { ok: true, response_body: JSON.stringify({ message_id: messageId }) }
      } catch (err) {
        return pubsubFailure(err)
      } finally {
        clearTimeout(timer)
      }
    },
    async close() {
      await topic.flush().catch(() => undefined)
      await client.close()
    },
  }
}

/** Google Cloud Pub/Sub: each event is one message, data = the event's JSON, attributes = metadata. */
export const cloudzPubsub: DestinationTypeDefinition = {
  type: 'cloudz_pubsub',
  label: 'Google Cloud Pub/Sub',
  description: 'Publish events as messages to a Google Cloud Pub/Sub topic.',
  icon: '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24" width="24" height="24" fill="none" stroke="currentColor" stroke-width="1.5"><circle cx="12" cy="12" r="2.5"/><circle cx="5" cy="6" r="2"/><circle cx="19" cy="6" r="2"/><circle cx="12" cy="20" r="2"/><path d="M6.7 7.2 10 10.5M17.3 7.2 14 10.5M12 14.5V18"/></svg>',
  instructions: [
    '## Send events to Google Cloud Pub/Sub',
    '',
    '1. Create a topic: `gcloud pubsub topics create outflow-events`.',
    '2. Create a service account and give it the **Pub/Sub Publisher** role on the topic:',
    '   `gcloud pubsub topics add-iam-policy-binding outflow-events --member=serviceAccount:SA_EMAIL --role=roles/pubsub.publisher`.',
    '3. Create a JSON key for it (`gcloud iam service-accounts keys create key.json --iam-account=SA_EMAIL`) and paste the file content as the service account key.',
    '4. Enter the project id and the topic id.',
    '',
    'Each event becomes one message whose data is the event JSON; the attributes carry `event-id`, `topic`, `timestamp` and the metadata.',
    'For the Pub/Sub emulator set **Endpoint** to its `host:port`; any JSON object (e.g. `{}`) is then accepted as the key.',
  ].join('\n'),
  remote_setup_url: 'https://console.cloud.google.com/cloudpubsub/topic/list',
  config_fields: configFields,
  credential_fields: credentialFields,
  configSchema: ConfigSchema as v.GenericSchema<unknown, Record<string, unknown>>,
  credentialsSchema: CredentialsSchema as v.GenericSchema<unknown, Record<string, unknown>>,
  configRequired: true,
  credentialsRequired: true,
  target: (config) => `${String(config.project_id)}/${String(config.topic)}`,
  targetUrl: (config) =>
    `https://console.cloud.google.com/cloudpubsub/topic/detail/${encodeURIComponent(String(config.topic))}?project=${encodeURIComponent(String(config.project_id))}`,
  createPublisher,
}
