import { brokerLimits, type BatchState, type PayloadState } from '../delivery-options.js'
import { formatBytes } from '../format.js'
import type { DestinationType, FieldSpec } from '../types.js'
import { FieldInput } from './fields.js'

// The destination form's "Payload" and "Batching" sections: how a destination receives an event's data
// (docs/delivery.md › Thin payloads) and whether deliveries go out in batches. Errors are keyed as the
// engine names them (`payload`, `payload.thin_above_bytes`, `batch.max_events`, …).

const numberField = (key: string, label: string, description: string, required = false): FieldSpec => ({ key, type: 'number', label, description, required, sensitive: false })

/** What the type does with an event's data when the destination has no `payload`. */
export function payloadDefault(type: DestinationType): string {
  const limit = brokerLimits[type.type]
  if (limit === undefined) return `Default for ${type.label}: full, the data itself.`
  return `Default for ${type.label}: the data itself, or a link to it when it would pass the broker's limit of ${formatBytes(limit)} (when this engine serves payload links, else full).`
}

interface PayloadProps {
  type: DestinationType
  value: PayloadState
  onChange: (value: PayloadState) => void
  errors: Record<string, string>
}

export function PayloadSection({ type, value, onChange, errors }: PayloadProps) {
  const error = errors.payload
  const choices = [
    ['default', brokerLimits[type.type] === undefined ? "Type's default (full)" : `Type's default (thin above ${formatBytes(brokerLimits[type.type]!)})`],
    ['full', 'Full: the data itself'],
    ['thin', 'Thin: an envelope with a signed link to the data'],
    ['above', 'Thin above a size, the data itself below'],
  ] as const
  return (
    <fieldset class="form-section" id="f-payload" aria-describedby={`f-payload-desc${error ? ' f-payload-error' : ''}`}>
      <legend>Payload</legend>
      <p class="field-desc" id="f-payload-desc">
        {payloadDefault(type)} A thin delivery carries the event's id, topic, time, size and digest with a short-lived link from which the receiver fetches the data.
      </p>
      <div class="choices">
        {choices.map(([choice, label]) => (
          <div class="field-checkbox" key={choice}>
            <input id={`f-payload-${choice}`} type="radio" name="payload" checked={value.choice === choice} onChange={() => onChange({ ...value, choice })} />
            <label for={`f-payload-${choice}`}>{label}</label>
          </div>
        ))}
      </div>
      {value.choice === 'above' && (
        <FieldInput
          id="f-payload-thin_above_bytes"
          field={numberField('thin_above_bytes', 'Thin above (bytes)', 'Events whose data is larger than this many bytes go thin (0 to 1 GiB).', true)}
          value={value.bytes}
          onChange={(bytes) => onChange({ ...value, bytes: String(bytes) })}
          error={errors['payload.thin_above_bytes']}
        />
      )}
      {error && (
        <p class="field-error" id="f-payload-error">
          {error}
        </p>
      )}
    </fieldset>
  )
}

interface BatchProps {
  type: DestinationType
  value: BatchState
  onChange: (value: BatchState) => void
  errors: Record<string, string>
}

const batchFields = [
  numberField('max_events', 'Max events', 'Events per request, 1 to 1000.', true),
  numberField('max_bytes', 'Max bytes', 'Bytes per request, 1024 to 10 MiB; empty: 1 MiB.'),
  numberField('max_wait_ms', 'Max wait (ms)', 'How long a delivery waits for its batch to fill, 0 to 60000; empty: 1000.'),
]

export function BatchSection({ type, value, onChange, errors }: BatchProps) {
  const error = errors.batch
  const describedBy = `f-batch-on-desc${error ? ' f-batch-error' : ''}`
  return (
    <fieldset class="form-section" id="f-batch">
      <legend>Batching</legend>
      <div class="field field-checkbox">
        <input id="f-batch-on" type="checkbox" checked={value.on} onChange={(e) => onChange({ ...value, on: e.currentTarget.checked })} aria-describedby={describedBy} />
        <label for="f-batch-on">Batch deliveries</label>
        <p class="field-desc" id="f-batch-on-desc">
          {type.type === 'webhook' ? 'One request carries several events, signed as one body and acknowledged all or nothing.' : 'Events go out through the broker’s batch API.'} The event log stays per event.
        </p>
      </div>
      {value.on &&
        batchFields.map((field) => (
          <FieldInput
            key={field.key}
            id={`f-batch-${field.key}`}
            field={field}
            value={value[field.key as 'max_events']}
            onChange={(text) => onChange({ ...value, [field.key]: String(text) })}
            error={errors[`batch.${field.key}`]}
          />
        ))}
      {value.on && type.type === 'webhook' && (
        <div class="field">
          <label for="f-batch-format">Format</label>
          <select id="f-batch-format" value={value.format} onChange={(e) => onChange({ ...value, format: e.currentTarget.value as BatchState['format'] })} aria-describedby={`f-batch-format-desc${errors['batch.format'] ? ' f-batch-format-error' : ''}`} aria-invalid={errors['batch.format'] ? 'true' : undefined}>
            <option value="">Default (CloudEvents batch)</option>
            <option value="cloudevents">CloudEvents batch</option>
            <option value="json">JSON array</option>
          </select>
          <p class="field-desc" id="f-batch-format-desc">
            One POST whose body is a CloudEvents batch (<code>application/cloudevents-batch+json</code>) or a plain JSON array of the events.
          </p>
          {errors['batch.format'] && (
            <p class="field-error" id="f-batch-format-error">
              {errors['batch.format']}
            </p>
          )}
        </div>
      )}
      {error && (
        <p class="field-error" id="f-batch-error">
          {error}
        </p>
      )}
    </fieldset>
  )
}
