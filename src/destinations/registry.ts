import { OutflowError, type ErrorData } from '../errors.js'
import { loadPeer, PeerLoadError } from '../load-peer.js'
import { amqpBroker } from './amqp-broker.js'
import { cloudxKinesis } from './cloudx-kinesis.js'
import { cloudxS3 } from './cloudx-s3.js'
import { cloudxSqs } from './cloudx-sqs.js'
import { cloudyServicebus } from './cloudy-servicebus.js'
import { cloudzPubsub } from './cloudz-pubsub.js'
import { kafka } from './kafka.js'
import { awsEventbridge } from './aws-eventbridge.js'
import { natsJetstream } from './nats-jetstream.js'
import { redisStreams } from './redis-streams.js'
import { relay } from './relay.js'
import type { DestinationTypeDefinition } from './types.js'
import type { DestinationTypeName, DestinationTypeSchema } from '../model/destination-type.js'
import { webhook } from './webhook.js'

/** Every destination type, in the spec's order. Adding a type is adding a file and a line here. */
export const destinationRegistry: Record<DestinationTypeName, DestinationTypeDefinition> = {
  webhook,
  cloudx_sqs: cloudxSqs,
  amqp_broker: amqpBroker,
  relay,
  cloudx_kinesis: cloudxKinesis,
  cloudy_servicebus: cloudyServicebus,
  cloudx_s3: cloudxS3,
  cloudz_pubsub: cloudzPubsub,
  kafka,
  aws_eventbridge: awsEventbridge,
  nats_jetstream: natsJetstream,
  redis_streams: redisStreams,
}

/** The definition of a type, or a 404 for an unknown one. */
export function destinationType(type: string): DestinationTypeDefinition {
  const def = (destinationRegistry as Record<string, DestinationTypeDefinition | undefined>)[type]
  if (!def) throw new OutflowError('not_found', `unknown destination type: ${type}`)
  return def
}

/** The paragraph that tells the operator which optional packages a type needs. */
function packagesNote(packages: readonly string[]): string {
  const names = packages.map((name) => `\`${name}\``).join(' and ')
  return `## Requirements\n\nOutflow delivers to this type with the optional package ${names}, which must be installed beside it: \`npm install ${packages.join(' ')}\`.\n`
}

/** The public schema of a type (no validators, no publisher). */
export function typeSchema(def: DestinationTypeDefinition): DestinationTypeSchema {
  const { type, label, description, remote_setup_url, config_fields, credential_fields, icon } = def
  const instructions = def.packages?.length ? `${def.instructions.trimEnd()}\n\n${packagesNote(def.packages)}` : def.instructions
  return remote_setup_url === undefined
    ? { type, label, description, icon, instructions, config_fields, credential_fields }
    : { type, label, description, icon, instructions, remote_setup_url, config_fields, credential_fields }
}

/**
 * 422 data when a package the type's publisher needs cannot be loaded, so a destination is refused at create or
 * update instead of failing every attempt later; undefined when all load. Loads them (once per process).
 *
 * @example
 * await missingPackageIssues(destinationType('amqp_broker')) // { type: 'amqp_broker destinations need the optional package "amqplib", which is not installed: npm install amqplib' }
 */
export async function missingPackageIssues(def: DestinationTypeDefinition): Promise<ErrorData | undefined> {
  for (const name of def.packages ?? []) {
    try {
      await loadPeer(name, `${def.type} destinations`)
    } catch (err) {
      if (!(err instanceof PeerLoadError)) throw err
      const why = err.installed ? `which could not be loaded: reinstall it with npm install ${name}` : `which is not installed: npm install ${name}`
      return { type: `${def.type} destinations need the optional package "${name}", ${why}` }
    }
  }
  return undefined
}
