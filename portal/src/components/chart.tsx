import { formatPercent } from '../format.js'

// Deliveries over time as stacked bars (successful, failed) with the error rate as a line: plain SVG,
// sized by its viewBox, with the numbers also in a table for screen readers and keyboard users.

export interface ChartPoint {
  time: Date
  successful: number
  failed: number
}

const width = 720
const height = 200
const pad = { top: 12, right: 40, bottom: 24, left: 36 }

function niceMax(value: number): number {
  if (value <= 5) return 5
  const magnitude = 10 ** Math.floor(Math.log10(value))
  return Math.ceil(value / magnitude) * magnitude
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
      <svg viewBox={`0 0 ${width} ${height}`} role="img" aria-label={summary}>
        <line class="axis" x1={pad.left} x2={width - pad.right} y1={y(0)} y2={y(0)} />
        <line class="grid" x1={pad.left} x2={width - pad.right} y1={y(max)} y2={y(max)} />
        <text class="tick" x={pad.left - 6} y={y(max) + 4} text-anchor="end">
          {max}
        </text>
        <text class="tick" x={pad.left - 6} y={y(0) + 4} text-anchor="end">
          0
        </text>
        <text class="tick" x={width - pad.right + 6} y={y(max) + 4}>
          100%
        </text>
        {points.map((p, i) => {
          const x = pad.left + step * i + (step - barW) / 2
          return (
            <g key={i}>
              <rect class="bar-success" x={x} y={y(p.successful)} width={barW} height={y(0) - y(p.successful)} />
              <rect class="bar-failed" x={x} y={y(p.successful + p.failed)} width={barW} height={y(p.successful) - y(p.successful + p.failed)} />
            </g>
          )
        })}
        {rateLine.length > 1 && <polyline class="rate-line" points={rateLine.join(' ')} />}
        {rateLine.length === 1 && <circle class="rate-dot" cx={rateLine[0]!.split(',')[0]} cy={rateLine[0]!.split(',')[1]} r="3" />}
        {ticks.map((i) => (
          <text key={i} class="tick" x={pad.left + step * i + step / 2} y={height - 6} text-anchor="middle">
            {tickLabel(points[i]!.time, spanMs)}
          </text>
        ))}
      </svg>
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
