import * as v from 'valibot'
import { OutflowError } from '../errors.js'
import { issuesToData } from '../model/common.js'
import type { DestinationTypeName } from '../model/destination-type.js'

// Checking a destination's settings (config and credentials), as the SDK-backed types share it.

/**
 * The check of a text setting that a parser reads (a server list, a connection string): `parse` returns what it
 * read, or the message to report instead. The message is the parser's own, never the input, which may be secret.
 *
 * @example
 * server_url: v.pipe(v.string('must be a string'), v.minLength(1, 'required'), parsedBy(parseServerUrl))
 */
export function parsedBy(parse: (text: string) => unknown) {
  return v.rawCheck<string>(({ dataset, addIssue }) => {
    if (!dataset.typed) return
    const parsed = parse(dataset.value)
    if (typeof parsed === 'string') addIssue({ message: parsed })
  })
}

/**
 * Check stored settings again when a publisher is made: a corrupt row must not reach the SDK. A failure is a
 * `validation` error naming the fields (`config.name`), which the attempt records as a `configuration` failure.
 *
 * @example
 * const config = parseStored('cloudx_sqs', ConfigSchema, destination.config, 'config')
 */
export function parseStored<S extends v.GenericSchema>(type: DestinationTypeName, schema: S, input: unknown, part: 'config' | 'credentials'): v.InferOutput<S> {
  const result = v.safeParse(schema, input)
  if (result.success) return result.output
  throw new OutflowError('validation', `invalid ${type} ${part}`, { data: issuesToData(result.issues, part) })
}
