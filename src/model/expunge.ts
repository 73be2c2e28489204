import * as v from 'valibot'
import { DateTimeSchema, IdSchema, objectBody } from './common.js'
import { TopicSchema } from './destination.js'

/** Most event ids one erasure by ids names. */
export const maxExpungeIds = 1000

/**
 * Body of `POST /tenants/{t}/events/expunge` and argument of `outflow.expungeEvents`: either `ids` (answered per
 * id at once), or a time range `from`..`to` (default now) of events by their `time`, optionally of one `topic`
 * (a durable job). The engine checks that exactly one of the two forms is given.
 */
export const ExpungeSchema = objectBody(
  v.strictObject(
    {
      ids: v.optional(
        v.pipe(
          v.array(IdSchema, 'must be a list of event ids'),
          v.minLength(1, 'must not be empty'),
          v.maxLength(maxExpungeIds, `must have at most ${maxExpungeIds} ids`),
          v.description(`Event ids to erase now (at most ${maxExpungeIds}); the answer says, per id, \`expunged\` or \`not_found\`.`),
        ),
      ),
      from: v.optional(v.pipe(DateTimeSchema, v.description('Erase events whose `time` is at or after this (a durable job; not with `ids`).'))),
      to: v.optional(v.pipe(DateTimeSchema, v.description('…and at or before this (default: now).'))),
      topic: v.optional(v.pipe(TopicSchema, v.description('Only events of this topic (with `from`).'))),
    },
    'unexpected field',
  ),
)
/** What to erase: `{ ids }`, or `{ from, to?, topic? }`. */
export type ExpungeInput = { ids: string[] } | { from: string | Date; to?: string | Date; topic?: string }
/** What `expungeEvents` answers for an input: per-id results for `{ ids }`, a job for a range. */
export type ExpungeAnswer<B extends ExpungeInput> = B extends { ids: string[] } ? ExpungeResult : ExpungeJob

/** The answer of an erasure by ids. */
export const ExpungeResultSchema = v.object({
  results: v.array(
    v.object({
      id: v.string(),
      status: v.pipe(
        v.picklist(['expunged', 'not_found']),
        v.description('`expunged`: the event is erased (now, or by an earlier request); `not_found`: this tenant has no event with this id.'),
      ),
    }),
  ),
})
/** Per event id, whether it was erased or not found. */
export type ExpungeResult = v.InferOutput<typeof ExpungeResultSchema>

/** An erasure job of a time range, as the API shows it. */
export const ExpungeJobSchema = v.object({
  id: v.string(),
  status: v.pipe(
    v.picklist(['created', 'running', 'done']),
    v.description('`created` until its first batch is erased, `running` while events of the range are left, then `done`.'),
  ),
  expunged: v.pipe(v.number(), v.description('Events this job erased so far (events erased before it are not counted).')),
  criteria: v.object({ from: v.string(), to: v.string(), topic: v.nullable(v.string()) }),
  created_at: v.string(),
  updated_at: v.string(),
  finished_at: v.nullable(v.string()),
})
/** An erasure job of a time range and where it stands. */
export type ExpungeJob = v.InferOutput<typeof ExpungeJobSchema>
