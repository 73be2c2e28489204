// How the Postgres storage reads timestamptz values. drizzle has postgres.js hand them over as text
// and reads that with `new Date(text)`; V8 reads `0050-01-01 00:00:00+00` (a space, not a `T`) with
// its legacy parser, which takes two-digit years for 19xx: an event at year 50 came back at 1950.

/** Postgres' text output of a timestamptz: `YYYY-MM-DD HH:MM:SS[.ffffff]±HH[:MM[:SS]][ BC]`. */
const timestamptzText = /^(\d{4,})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)(\.\d+)?(?:([+-])(\d\d)(?::?(\d\d))?(?::?(\d\d))?)?( BC)?$/

/** postgres.js' type id of timestamptz. */
export const timestamptzOid = 1184

/**
 * A Date for Postgres' text of a timestamptz, any year, offset or era. Text in another form (`infinity`)
 * goes to the Date constructor as before.
 *
 * @example
 * parseTimestamptz('0050-01-01 00:00:00+00').toISOString() // '0050-01-01T00:00:00.000Z'
 */
export function parseTimestamptz(text: string): Date {
  const m = timestamptzText.exec(text)
  if (!m) return new Date(text)
  const [, year, month, day, hours, minutes, seconds, fraction, sign, offsetHours, offsetMinutes, offsetSeconds, bc] = m
  const date = new Date(0)
  // setUTCFullYear, unlike Date.UTC, takes years 0–99 as they are.
  date.setUTCFullYear(bc ? 1 - Number(year) : Number(year), Number(month) - 1, Number(day))
  date.setUTCHours(Number(hours), Number(minutes), Number(seconds), fraction ? Math.round(Number(fraction) * 1000) : 0)
  const offsetMs = sign ? (sign === '-' ? -1 : 1) * (Number(offsetHours) * 3600 + Number(offsetMinutes ?? 0) * 60 + Number(offsetSeconds ?? 0)) * 1000 : 0
  return new Date(date.getTime() - offsetMs)
}
