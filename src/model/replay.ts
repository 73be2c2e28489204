import * as v from 'valibot'
import { DateTimeSchema, IdSchema, objectBody } from './common.js'
import { TopicSchema } from './destination.js'

/** Which deliveries a replay sends again: those that ended failed (default), succeeded, were skipped, or all three. */
export const ReplaySelectSchema = v.picklist(['failed', 'success', 'skipped', 'all'], 'must be "failed", "success", "skipped" or "all"')

/** Most topics and destinations one replay request names. */
export const replayLimits = { topics: 100, destinations: 100 } as const

const replayEntries = {
  since: DateTimeSchema,
  until: v.optional(DateTimeSchema),
  status: v.optional(ReplaySelectSchema),
  topics: v.optional(
    v.pipe(v.array(TopicSchema, 'must be a list of topics'), v.minLength(1, 'must not be empty'), v.maxLength(replayLimits.topics, `must have at most ${replayLimits.topics} topics`)),
  ),
}

/** Body of `POST /tenants/{t}/destinations/{d}/replay`: events by their `time`, `since` ≤ time ≤ `until` (default now). */
export const ReplaySchema = objectBody(v.strictObject(replayEntries, 'unexpected field'))
export type ReplayInput = v.InferInput<typeof ReplaySchema>

/** Body of `POST /tenants/{t}/replay`: the same, for each of `destination_id` (default: every enabled destination). */
export const TenantReplaySchema = objectBody(
  v.strictObject(
    {
      ...replayEntries,
      destination_id: v.optional(
        v.pipe(
          v.array(IdSchema, 'must be a list of destination ids'),
          v.minLength(1, 'must not be empty'),
          v.maxLength(replayLimits.destinations, `must have at most ${replayLimits.destinations} destinations`),
        ),
      ),
    },
    'unexpected field',
  ),
)
export type TenantReplayInput = v.InferInput<typeof TenantReplaySchema>

/** A replay job as the API shows it; `status` is the job's, `criteria.status` the deliveries it selects. */
export const ReplayJobSchema = v.object({
  id: v.string(),
  destination_id: v.string(),
  status: v.pipe(v.picklist(['running', 'completed', 'cancelled']), v.description('`running` until every matched delivery was handed out and attempted once, then `completed`; `cancelled` by DELETE or when the destination was deleted.')),
  matched: v.pipe(v.number(), v.description('Deliveries the criteria selected when the job was created.')),
  done: v.pipe(v.number(), v.description('Deliveries replayed and attempted so far.')),
  failed: v.pipe(v.number(), v.description('Of `done`, those whose replayed attempt failed (they follow the retry policy from there).')),
  created_at: v.string(),
  updated_at: v.string(),
  finished_at: v.nullable(v.string()),
  criteria: v.object({
    since: v.string(),
    until: v.string(),
    status: ReplaySelectSchema,
    topics: v.nullable(v.array(v.string())),
  }),
})
/** A replay job: what it selected (`criteria`), how far it got (`matched`, `done`, `failed`) and its status. */
export type ReplayJob = v.InferOutput<typeof ReplayJobSchema>

/** Query of Enable Destination: `replay=skipped` also replays what was skipped while it was disabled. */
export const EnableQuerySchema = v.strictObject(
  { replay: v.optional(v.picklist(['skipped'], 'must be "skipped"')) },
  'unknown query parameter',
)
export type EnableQuery = v.InferInput<typeof EnableQuerySchema>

/** What the answer of Enable Destination adds when deliveries were skipped: how to send them, or the replay started. */
export const RecoverySchema = v.object({
  skipped: v.pipe(v.number(), v.description('Deliveries recorded as skipped while the destination was disabled.')),
  oldest_skipped_event_time: v.nullable(v.string()),
  how_to_replay: v.pipe(v.string(), v.description('The call that sends them: a replay with `status: "skipped"` since the oldest one.')),
  replay: v.object({ method: v.literal('POST'), path: v.string(), body: v.object({ since: v.string(), status: v.literal('skipped') }) }),
  replay_job: v.optional(ReplayJobSchema),
})
/** `recovery` of Enable Destination: the skipped deliveries and the replay call that sends them (or the job it started). */
export type Recovery = v.InferOutput<typeof RecoverySchema>
