import { OutflowError } from '../errors.js'
import { amqpBroker } from './amqp-broker.js'
import { cloudxKinesis } from './cloudx-kinesis.js'
import { cloudxS3 } from './cloudx-s3.js'
import { cloudxSqs } from './cloudx-sqs.js'
import { cloudyServicebus } from './cloudy-servicebus.js'
import { cloudzPubsub } from './cloudz-pubsub.js'
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
}

/** The definition of a type, or a 404 for an unknown one. */
export function destinationType(type: string): DestinationTypeDefinition {
  const def = (destinationRegistry as Record<string, DestinationTypeDefinition | undefined>)[type]
  if (!def) throw new OutflowError('not_found', `unknown destination type: ${type}`)
  return def
}

/** The public schema of a type (no validators, no publisher). */
export function typeSchema(def: DestinationTypeDefinition): DestinationTypeSchema {
  const { type, label, description, icon, instructions, remote_setup_url, config_fields, credential_fields } = def
  return remote_setup_url === undefined
    ? { type, label, description, icon, instructions, config_fields, credential_fields }
    : { type, label, description, icon, instructions, remote_setup_url, config_fields, credential_fields }
}
