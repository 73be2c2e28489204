import * as v from 'valibot'

/** The largest `thin_above_bytes`: 1 GiB, far above any event the engine takes. */
export const maxThinAboveBytes = 1024 ** 3

const bytesMessage = `must be an integer between 0 and ${maxThinAboveBytes}`

/**
 * How a destination receives an event's data (an addition to the spec's fields): `full` (the data itself),
 * `thin` (an envelope with a signed, expiring link to the data), or `{ thin_above_bytes }` (thin only when the
 * data is larger). Absent: full, except for types whose broker refuses large messages (SQS, Service Bus,
 * Kinesis, EventBridge), which go thin above their limit once the engine has a `publicUrl`.
 */
export const PayloadPolicySchema = v.pipe(
  v.union(
    [
      v.picklist(['full', 'thin']),
      v.strictObject({ thin_above_bytes: v.pipe(v.number(bytesMessage), v.integer(bytesMessage), v.minValue(0, bytesMessage), v.maxValue(maxThinAboveBytes, bytesMessage)) }, 'unexpected field'),
    ],
    `must be "full", "thin" or { "thin_above_bytes": an integer between 0 and ${maxThinAboveBytes} }`,
  ),
  v.description(
    '`full`: the data itself. `thin`: an envelope (id, topic, time, metadata, size, sha256, payload_url, payload_expires_at) whose signed link answers the data for a limited time. `{ thin_above_bytes }`: thin when the data is larger than this many bytes. Absent: full, or thin above the broker\'s limit for SQS, Service Bus, Kinesis and EventBridge when the engine has a publicUrl.',
  ),
)
export type PayloadPolicy = v.InferOutput<typeof PayloadPolicySchema>
