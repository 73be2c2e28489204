import { useEffect, useState } from 'preact/hooks'
import { onSessionEnd, tenantId } from './api.js'
import { Notices } from './components/notice.js'
import { EditDestinationPage, NewDestinationPage, TypePicker } from './pages/destination-form.js'
import { DestinationPage } from './pages/destination-detail.js'
import { DestinationsPage } from './pages/destinations.js'
import { EventPage } from './pages/event-detail.js'
import { EventsPage } from './pages/events.js'
import { EventTypesPage } from './pages/event-types.js'
import { MetricsPage } from './pages/metrics.js'
import { href, useRoute, type Route } from './router.js'
import { currentTheme, setTheme } from './theme.js'

function Page({ route }: { route: Route }) {
  const [first, second, third] = route.segments
  if (first === 'events' && second) return <EventPage key={second} id={second} destinationId={route.query.get('destination_id')} />
  if (first === 'events') return <EventsPage route={route} />
  if (first === 'metrics') return <MetricsPage route={route} />
  if (first === 'event-types') return <EventTypesPage />
  if (first === 'destinations' && second === 'new' && third) return <NewDestinationPage key={third} typeName={third} />
  if (first === 'destinations' && second === 'new') return <TypePicker />
  if (first === 'destinations' && second && third === 'edit') return <EditDestinationPage key={second} id={second} />
  if (first === 'destinations' && second) return <DestinationPage key={second} id={second} />
  return <DestinationsPage />
}

function ThemeToggle() {
  const [theme, set] = useState(currentTheme)
  const next = theme === 'dark' ? 'light' : 'dark'
  return (
    <button type="button" class="button small ghost" onClick={() => (setTheme(next), set(next))} aria-label={`Switch to the ${next} theme`}>
      {next === 'dark' ? 'Dark theme' : 'Light theme'}
    </button>
  )
}

export function App() {
  const route = useRoute()
  const [ended, setEnded] = useState(false)
  useEffect(() => onSessionEnd(() => setEnded(true)), [])
  if (ended) return <SignedOut message="Your session has ended. Open the portal again from your application." />
  const section = route.segments[0] ?? 'destinations'
  const link = (name: string, label: string, target: string) => (
    <a href={target} aria-current={section === name ? 'page' : undefined}>
      {label}
    </a>
  )
  return (
    <>
      <a class="skip-link" href="#main" onClick={(e) => (e.preventDefault(), document.getElementById('main')?.focus())}>
        Skip to content
      </a>
      <header class="top">
        <div class="brand">
          <span class="brand-name">Event destinations</span>
          <span class="tenant" title="Tenant">
            {tenantId()}
          </span>
        </div>
        <nav aria-label="Portal">
          {link('destinations', 'Destinations', href([]))}
          {link('events', 'Events', href(['events']))}
          {link('metrics', 'Metrics', href(['metrics']))}
          {link('event-types', 'Event types', href(['event-types']))}
        </nav>
        <ThemeToggle />
      </header>
      <main id="main" tabIndex={-1}>
        <Page key={route.segments.slice(0, 1).join('/')} route={route} />
      </main>
      <Notices />
    </>
  )
}

export function SignedOut({ message }: { message: string }) {
  return (
    <main id="main" class="signed-out">
      <h1>Portal</h1>
      <p role="alert">{message}</p>
    </main>
  )
}
