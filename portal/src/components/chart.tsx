import { formatPercent } from '../format.js'

// Deliveries over time as stacked bars (successful, failed) with the error rate as a line: plain SVG,
// sized by its viewBox, with the numbers also in a table for screen readers and keyboard users.

export interface ChartPoint {
  time: Date
  successful: number
  failed: number
}

// The SVG stretches to its box (preserveAspectRatio none, strokes kept thin with non-scaling-stroke);
// the labels are HTML around it, so they stay readable at any width.
const width = 720
const height = 160
const pad = { top: 6, right: 0, bottom: 0, left: 0 }

function niceMax(value: number): number {
  if (value <= 5) return 5
  const magnitude = 10 ** Math.floor(Math.log10(value))
  return Math.ceil(value / magnitude) * magnitude
}

/** A single rate point as a short level line across its bar's slot (a dot would stretch with the plot). */
function widen(point: string, step: number): string[] {
  const [x, y] = point.split(',').map(Number) as [number, number]
  return [`${(x - step * 0.45).toFixed(1)},${y}`, `${(x + step * 0.45).toFixed(1)},${y}`]
}

function tickLabel(time: Date, spanMs: number): string {
  return spanMs > 2 * 86_400_000
    ? time.toLocaleDateString(undefined, { month: 'short', day: 'numeric' })
    : time.toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit' })
}

export function DeliveryChart({ title, points }: { title: string; points: ChartPoint[] }) {
  const total = points.reduce((n, p) => n + p.successful + p.failed, 0)
  const failed = points.reduce((n, p) => n + p.failed, 0)
  const max = niceMax(Math.max(0, ...points.map((p) => p.successful + p.failed)))
  const innerW = width - pad.left - pad.right
  const innerH = height - pad.top - pad.bottom
  const step = innerW / Math.max(1, points.length)
  const barW = Math.max(1, step * 0.7)
  const y = (v: number) => pad.top + innerH - (v / max) * innerH
  const spanMs = points.length > 1 ? points[points.length - 1]!.time.getTime() - points[0]!.time.getTime() : 0
  const rateLine = points
    .map((p, i) => {
      const n = p.successful + p.failed
      if (n === 0) return undefined
      return `${(pad.left + step * i + step / 2).toFixed(1)},${(pad.top + innerH - (p.failed / n) * innerH).toFixed(1)}`
    })
    .filter(Boolean)
  const summary = `${title}: ${total} deliveries, ${failed} failed${total ? ` (error rate ${formatPercent(failed / total)})` : ''}`
  const ticks = points.length ? [0, Math.floor(points.length / 2), points.length - 1] : []
  return (
    <figure class="chart">
      <figcaption>
        <span class="chart-title">{title}</span>
        <span class="chart-legend">
          <span class="legend legend-success">successful</span> <span class="legend legend-failed">failed</span>{' '}
          <span class="legend legend-rate">error rate</span>
        </span>
      </figcaption>
      <div class="chart-plot">
        <span class="chart-y chart-y-max" aria-hidden="true">{max}</span>
        <span class="chart-y chart-y-min" aria-hidden="true">0</span>
        <span class="chart-y chart-y-rate" aria-hidden="true">100%</span>
        <svg viewBox={`0 0 ${width} ${height}`} role="img" aria-label={summary} preserveAspectRatio="none">
          <line class="grid" x1={0} x2={width} y1={y(max)} y2={y(max)} vector-effect="non-scaling-stroke" />
          {points.map((p, i) => {
            const x = pad.left + step * i + (step - barW) / 2
            return (
              <g key={i}>
                <rect class="bar-success" x={x} y={y(p.successful)} width={barW} height={y(0) - y(p.successful)} />
                <rect class="bar-failed" x={x} y={y(p.successful + p.failed)} width={barW} height={y(p.successful) - y(p.successful + p.failed)} />
              </g>
            )
          })}
          <line class="axis" x1={0} x2={width} y1={y(0)} y2={y(0)} vector-effect="non-scaling-stroke" />
          {rateLine.length > 0 && <polyline class="rate-line" points={(rateLine.length > 1 ? rateLine : widen(rateLine[0]!, step)).join(' ')} vector-effect="non-scaling-stroke" />}
        </svg>
      </div>
      <div class="chart-x" aria-hidden="true">
        {ticks.map((i) => (
          <span key={i}>{tickLabel(points[i]!.time, spanMs)}</span>
        ))}
      </div>
      <p class="chart-summary">{summary}</p>
      <details class="chart-data">
        <summary>Data table</summary>
        <div class="table-scroll" tabIndex={0}>
          <table>
            <thead>
              <tr>
                <th scope="col">From</th>
                <th scope="col">Successful</th>
                <th scope="col">Failed</th>
                <th scope="col">Error rate</th>
              </tr>
            </thead>
            <tbody>
              {points
                .filter((p) => p.successful + p.failed > 0)
                .map((p) => (
                  <tr key={p.time.getTime()}>
                    <td>{p.time.toLocaleString()}</td>
                    <td>{p.successful}</td>
                    <td>{p.failed}</td>
                    <td>{formatPercent(p.failed / (p.successful + p.failed))}</td>
                  </tr>
                ))}
            </tbody>
          </table>
        </div>
      </details>
    </figure>
  )
}
