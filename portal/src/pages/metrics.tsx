import { DeliveryChart } from '../components/chart.js'
import { ErrorBox } from '../components/notice.js'
import { deliverySeries, destinationName, eventSeries, listDestinations, ranges } from '../data.js'
import { href, navigate, type Route } from '../router.js'
import { useLoad } from '../use-load.js'
import { PageTitle } from './page-title.js'

// Deliveries and error rate over time per destination (GET /metrics/attempts), and events published
// (GET /metrics/events).

export function MetricsPage({ route }: { route: Route }) {
  const range = ranges.find((r) => r.granularity === route.query.get('range')) ?? ranges[1]!
  const loaded = useLoad(async () => {
    const [series, events, destinations] = await Promise.all([deliverySeries(range), eventSeries(range), listDestinations()])
    return { series, events, destinations }
  }, [range.granularity])

  return (
    <section aria-labelledby="page-title">
      <div class="page-head">
        <PageTitle>Metrics</PageTitle>
        <div class="field inline">
          <label for="metrics-range">Period</label>
          <select id="metrics-range" value={range.granularity} onChange={(e) => navigate(['metrics'], { range: e.currentTarget.value })}>
            {ranges.map((r) => (
              <option key={r.granularity} value={r.granularity}>
                {r.label}
              </option>
            ))}
          </select>
        </div>
      </div>
      {loaded.error && <ErrorBox error={loaded.error} retry={loaded.reload} />}
      {!loaded.data && !loaded.error && <p class="muted">Loading…</p>}
      {loaded.data && (
        <>
          <p class="lead">
            {loaded.data.events.reduce((n, p) => n + p.count, 0)} events published, {range.label.toLowerCase()}.
          </p>
          {loaded.data.destinations.length === 0 && <p class="muted">No destinations yet.</p>}
          <div class="chart-grid">
            {loaded.data.destinations.map((d) => {
              const points = loaded.data!.series.get(d.id)
              return (
                <div key={d.id} class="chart-card">
                  <h2 class="chart-heading">
                    <a href={href(['destinations', d.id])}>{destinationName(d)}</a>
                  </h2>
                  {points ? <DeliveryChart title={`Deliveries to ${destinationName(d)}`} points={points} /> : <p class="muted">No deliveries in this period.</p>}
                </div>
              )
            })}
          </div>
        </>
      )}
    </section>
  )
}
