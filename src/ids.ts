import { randomBytes } from 'node:crypto'

const alphabet = '0123456789abcdefghjkmnpqrstvwxyz' // Crockford base32, lower case

let lastMs = 0
let counter = 0
// Random bytes are drawn 4 KiB at a time: one randomBytes call per id cost more than the rest of the id.
let pool = Buffer.alloc(0)
let offset = 0

function random12(): Buffer {
  if (offset + 12 > pool.length) {
    pool = randomBytes(4096)
    offset = 0
  }
  offset += 12
  return pool.subarray(offset - 12, offset)
}

/**
 * The time (ms) a `newId` id carries, or null when `id` is not one (ids of other origins, as tests write).
 *
 * @example
 * idTime(newId('dlv', new Date(0))) // 0
 */
export function idTime(id: string): number | null {
  const underscore = id.indexOf('_')
  if (underscore < 0 || id.length < underscore + 25) return null
  let ms = 0
  for (let i = underscore + 1; i <= underscore + 10; i++) {
    const digit = alphabet.indexOf(id[i]!)
    if (digit < 0) return null
    ms = ms * 32 + digit
  }
  return ms
}

/**
 * A time-ordered, prefixed id: `des_` + 10 chars of time + 2 chars of counter + 12 random chars.
 * Ids made later in this process sort after earlier ones, so they can break keyset ties.
 * `at`: the time to put in the id instead of now (a delivery's id carries its event's created_at, so
 * Postgres finds it in that day's partition: see postgres-partitions.ts).
 *
 * @example
 * newId('evt') // 'evt_01jd3m9y7q00k3v9x2m4p6a8'
 */
export function newId(prefix: 'des' | 'evt' | 'dlv' | 'att' | 'wrk' | 'opv' | 'rpl' | 'rpr' | 'exp' | 'exr', at?: Date): string {
  const now = at ? at.getTime() : Date.now()
  if (now === lastMs) counter++
  else {
    lastMs = now
    counter = 0
  }
  let time = ''
  for (let i = 9, t = now; i >= 0; i--, t = Math.floor(t / 32)) time = alphabet[t % 32] + time
  const seq = alphabet[(counter >> 5) & 31]! + alphabet[counter & 31]!
  const bytes = random12()
  let rand = ''
  for (const b of bytes) rand += alphabet[b & 31]
  return `${prefix}_${time}${seq}${rand}`
}
