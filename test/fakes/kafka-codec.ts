import { createRequire } from 'node:module'

// The Kafka wire primitives of the fake broker come from kafkajs's own protocol codec (its Encoder and Decoder:
// big-endian ints, int16-length strings, int32-length bytes and arrays, varints, and its record batch v2 decoder);
// this file only lays out the few request and response versions the fake speaks. No server-side Kafka codec is
// published on npm. The batch CRC32C is checked with an implementation of its own (below), not the client's.

const require = createRequire(import.meta.url)

/** The part of kafkajs's Decoder the fake uses. */
export interface KafkaDecoder {
  readInt8(): number
  readInt16(): number
  readInt32(): number
  readInt64(): bigint
  readBoolean(): boolean
  readString(): string | null
  readBytes(): Buffer | null
  readArray<T>(reader: (decoder: KafkaDecoder) => T): T[]
  canReadBytes(length: number): boolean
}

/** The part of kafkajs's Encoder the fake uses. */
export interface KafkaEncoder {
  writeInt8(value: number): KafkaEncoder
  writeInt16(value: number): KafkaEncoder
  writeInt32(value: number): KafkaEncoder
  writeInt64(value: bigint | number | string): KafkaEncoder
  writeBoolean(value: boolean): KafkaEncoder
  writeString(value: string | null): KafkaEncoder
  writeBytes(value: Buffer | string | null): KafkaEncoder
  writeArray(values: (KafkaEncoder | number | string)[], type?: 'int32' | 'string' | 'object'): KafkaEncoder
  writeEncoder(value: KafkaEncoder): KafkaEncoder
  buffer: Buffer
}

/** One record of a batch as kafkajs's record batch decoder returns it. */
export interface DecodedRecord {
  key: Buffer | null
  value: Buffer | null
  headers: Record<string, Buffer | Buffer[]>
  timestamp: string
  offset: string
}

/** A record batch (magic 2) as kafkajs's decoder returns it. */
export interface DecodedBatch {
  producerId: string
  producerEpoch: number
  firstSequence: number
  inTransaction: boolean
  records: DecodedRecord[]
}

const DecoderClass = require('kafkajs/src/protocol/decoder') as new (buffer: Buffer) => KafkaDecoder
const EncoderClass = require('kafkajs/src/protocol/encoder') as new () => KafkaEncoder
const decodeRecordBatch = require('kafkajs/src/protocol/recordBatch/v0/decoder') as (decoder: KafkaDecoder) => Promise<DecodedBatch>

export const decoder = (buffer: Buffer): KafkaDecoder => new DecoderClass(buffer)
export const encoder = (): KafkaEncoder => new EncoderClass()

/** CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum of Kafka record batches. */
const crcTable = Array.from({ length: 256 }, (_, n) => {
  let c = n
  for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0x82f63b78 : c >>> 1
  return c >>> 0
})

/**
 * The CRC-32C of `bytes`.
 *
 * @example
 * crc32c(Buffer.from('123456789')) // 0xe3069283
 */
export function crc32c(bytes: Buffer): number {
  let crc = 0xffffffff
  for (const byte of bytes) crc = crcTable[(crc ^ byte) & 0xff]! ^ (crc >>> 8)
  return (crc ^ 0xffffffff) >>> 0
}

/** Why a record batch (v2) is unusable — bad magic, truncated, wrong CRC — or null. */
export function recordBatchProblem(bytes: Buffer): string | null {
  if (bytes.length < 61) return `a record batch is at least 61 bytes, got ${bytes.length}`
  const length = bytes.readInt32BE(8)
  if (12 + length !== bytes.length) return `batch length ${length} does not match the ${bytes.length - 12} bytes sent`
  if (bytes.readInt8(16) !== 2) return `magic ${bytes.readInt8(16)} (only record batch v2 is accepted)`
  // The CRC covers everything from the attributes (byte 21) to the end of the batch.
  const expected = bytes.readUInt32BE(17)
  const actual = crc32c(bytes.subarray(21))
  return expected === actual ? null : `CRC32C mismatch: the batch says ${expected.toString(16)}, its bytes give ${actual.toString(16)}`
}

/** Decode one record batch (its CRC checked first). */
export async function readRecordBatch(bytes: Buffer): Promise<DecodedBatch> {
  const problem = recordBatchProblem(bytes)
  if (problem) throw new Error(problem)
  return decodeRecordBatch(decoder(bytes))
}

/** Kafka API keys the fake answers. */
export const apiKeys = { Produce: 0, Metadata: 3, SaslHandshake: 17, ApiVersions: 18, InitProducerId: 22, SaslAuthenticate: 36 } as const

/** Kafka error codes the fake sends (see the protocol guide's error table). */
export const errorCodes = {
  NONE: 0,
  CORRUPT_MESSAGE: 2,
  UNKNOWN_TOPIC_OR_PARTITION: 3,
  LEADER_NOT_AVAILABLE: 5,
  MESSAGE_TOO_LARGE: 10,
  NOT_ENOUGH_REPLICAS: 19,
  NOT_ENOUGH_REPLICAS_AFTER_APPEND: 20,
  INVALID_REQUIRED_ACKS: 21,
  TOPIC_AUTHORIZATION_FAILED: 29,
  UNSUPPORTED_SASL_MECHANISM: 33,
  ILLEGAL_SASL_STATE: 34,
  UNSUPPORTED_VERSION: 35,
  OUT_OF_ORDER_SEQUENCE_NUMBER: 45,
  DUPLICATE_SEQUENCE_NUMBER: 46,
  SASL_AUTHENTICATION_FAILED: 58,
} as const
