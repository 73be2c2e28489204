import { ErrorBox } from '../components/notice.js'
import { JsonView } from '../components/json-view.js'
import { SchemaTree } from '../components/schema-tree.js'
import { listTopics } from '../topics.js'
import type { Topic } from '../types.js'
import { useLoad } from '../use-load.js'
import { PageTitle } from './page-title.js'

// The event catalog (GET /topics): what each topic means and carries, for the tenant's developers.

/** The topic's anchor on this page. */
export const topicAnchor = (name: string) => `topic-${name.replace(/[^A-Za-z0-9_-]/g, '-')}`

function DeprecatedBadge({ topic }: { topic: Topic }) {
  return <span class="badge badge-off">{topic.replaced_by ? `Deprecated: use ${topic.replaced_by}` : 'Deprecated'}</span>
}

function TopicCard({ topic }: { topic: Topic }) {
  const id = topicAnchor(topic.name)
  const example = topic.examples?.[0]
  return (
    <article class="topic-card" aria-labelledby={id}>
      <div class="topic-head">
        <h2 id={id}>
          <code>{topic.name}</code>
        </h2>
        {topic.deprecated && <DeprecatedBadge topic={topic} />}
      </div>
      {topic.description ? <p>{topic.description}</p> : <p class="muted">No description.</p>}
      {topic.replaced_by && (
        <p class="small">
          Replaced by <code>{topic.replaced_by}</code>: subscribe to it instead.
        </p>
      )}
      {topic.payload_schema ? (
        <>
          <h3>Payload</h3>
          <SchemaTree schema={topic.payload_schema} label={`Fields of ${topic.name}`} />
          {topic.validation === 'enforce' && <p class="small muted">Every event of this topic is checked against this schema before it is sent.</p>}
        </>
      ) : (
        <p class="small muted">No payload schema: any JSON object.</p>
      )}
      {example !== undefined && (
        <>
          <h3>Example</h3>
          <JsonView value={example} label={`Example payload of ${topic.name}`} />
        </>
      )}
    </article>
  )
}

export function EventTypesPage() {
  const loaded = useLoad(listTopics, [])
  return (
    <section aria-labelledby="page-title">
      <div class="page-head">
        <div>
          <PageTitle>Event types</PageTitle>
          <p class="muted">The topics your destinations can subscribe to, and what each event carries.</p>
        </div>
      </div>
      {loaded.error && <ErrorBox error={loaded.error} retry={loaded.reload} />}
      {!loaded.data && !loaded.error && <p class="muted">Loading…</p>}
      {loaded.data?.length === 0 && <p class="empty">This service has no event catalog: destinations can subscribe to any topic.</p>}
      {loaded.data?.map((topic) => <TopicCard key={topic.name} topic={topic} />)}
    </section>
  )
}
