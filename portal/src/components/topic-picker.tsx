import { listTopics } from '../topics.js'
import { useLoad } from '../use-load.js'

// The catalog's topics beside the destination form's topics field: each with its description, deprecated
// ones marked with their replacement. Checking one adds it to the field (in place of "*"); unchecking removes it.

const split = (value: string) =>
  value
    .split(',')
    .map((t) => t.trim())
    .filter(Boolean)

export function TopicPicker({ value, onChange }: { value: string; onChange: (value: string) => void }) {
  const loaded = useLoad(listTopics, [])
  const topics = loaded.data ?? []
  if (topics.length === 0) return null
  const chosen = split(value)
  // Picking a topic replaces "*" (every topic), which cannot be combined with others.
  const toggle = (name: string, on: boolean) =>
    onChange((on ? [...chosen.filter((t) => t !== name && t !== '*'), name] : chosen.filter((t) => t !== name)).join(', '))
  return (
    <fieldset class="topic-picker">
      <legend>Event types</legend>
      <ul>
        {topics.map((topic) => {
          const id = `topic-pick-${topic.name.replace(/[^A-Za-z0-9_-]/g, '-')}`
          return (
            <li key={topic.name}>
              <input type="checkbox" id={id} checked={chosen.includes(topic.name)} onChange={(e) => toggle(topic.name, e.currentTarget.checked)} aria-describedby={`${id}-desc`} />
              <label for={id}>
                <code>{topic.name}</code>
                {topic.deprecated && <span class="badge badge-off">{topic.replaced_by ? `Deprecated: use ${topic.replaced_by}` : 'Deprecated'}</span>}
              </label>
              <p class="field-desc" id={`${id}-desc`}>
                {topic.description || 'No description.'}
              </p>
            </li>
          )
        })}
      </ul>
    </fieldset>
  )
}
