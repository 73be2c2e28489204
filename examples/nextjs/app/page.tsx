export default function Home() {
  return (
    <main>
      <h1>Outflow on Next.js</h1>
      <p>
        The event-delivery API is at <a href="/api/v1/openapi.json">/api/v1</a> (admin key or tenant token); tenants sign in to
        the portal at /portal/ through a link from <code>GET /api/v1/tenants/&#123;id&#125;/portal</code>.
      </p>
    </main>
  )
}
