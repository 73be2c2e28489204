// Metric units as Prometheus name suffixes, as OpenTelemetry's Prometheus compatibility specification
// converts them (`delivery_latency` in ms is `delivery_latency_milliseconds`). The JavaScript exporter
// writes the unit only as a `# UNIT` comment, so the names are completed before it serializes them.

/** The specification's units and their words; any other unit is its own word. */
const unitWords: Record<string, string> = {
  d: 'days',
  h: 'hours',
  min: 'minutes',
  s: 'seconds',
  ms: 'milliseconds',
  us: 'microseconds',
  ns: 'nanoseconds',
  By: 'bytes',
  KiBy: 'kibibytes',
  MiBy: 'mebibytes',
  GiBy: 'gibibytes',
  TiBy: 'tebibytes',
  KBy: 'kilobytes',
  MBy: 'megabytes',
  GBy: 'gigabytes',
  TBy: 'terabytes',
  m: 'meters',
  V: 'volts',
  A: 'amperes',
  J: 'joules',
  W: 'watts',
  g: 'grams',
  Cel: 'celsius',
  Hz: 'hertz',
  '%': 'percent',
}

/** The denominators of rates (`By/s` is `bytes_per_second`). */
const perWords: Record<string, string> = { s: 'second', m: 'minute', h: 'hour', d: 'day', w: 'week', mo: 'month', y: 'year' }

/**
 * The Prometheus suffix of a unit: its word, `ratio` for a gauge of unit `1`, nothing for an
 * annotation (`{delivery}`) or no unit.
 *
 * @example
 * unitSuffix('ms', false) // 'milliseconds'
 * unitSuffix('By/s', false) // 'bytes_per_second'
 */
export function unitSuffix(unit: string, gauge: boolean): string | undefined {
  const bare = unit.replace(/\{[^}]*\}/g, '').trim()
  if (bare === '') return undefined
  if (bare === '1') return gauge ? 'ratio' : undefined
  const [amount, per] = bare.split('/', 2) as [string, string | undefined]
  const words = [amount && amount !== '1' ? (unitWords[amount] ?? amount) : undefined, per ? `per_${perWords[per] ?? per}` : undefined]
  return words.filter(Boolean).join('_') || undefined
}

/**
 * A metric's name with its unit's suffix, unless the name already ends with it.
 *
 * @example
 * nameWithUnit('outflow.queue.lag', 's', true) // 'outflow.queue.lag_seconds'
 */
export function nameWithUnit(name: string, unit: string, gauge: boolean): string {
  const suffix = unitSuffix(unit, gauge)
  if (!suffix || name.toLowerCase().replace(/[^a-z0-9]+/g, '_').endsWith(`_${suffix.toLowerCase()}`)) return name
  return `${name}_${suffix}`
}
