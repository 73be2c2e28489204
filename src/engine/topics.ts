import { Catalog } from '../delivery/catalog.js'
import { notFound } from '../errors.js'
import type { Destination } from '../model/destination.js'
import type { DeprecatedTopic, TopicInfo } from '../model/topic.js'
import type { EngineContext } from './context.js'

/** The catalog's topics as `GET /topics` lists them. */
export function listTopics(ctx: EngineContext): TopicInfo[] {
  return ctx.catalog?.topics().map((t) => Catalog.info(t)) ?? []
}

/** One topic; 404 when the catalog has none of that name. */
export function getTopic(ctx: EngineContext, name: string): TopicInfo {
  const topic = ctx.catalog?.get(name)
  if (!topic) throw notFound('topic', name)
  return Catalog.info(topic)
}

/** The deprecated topics among a destination's, each with its replacement (what create/update answers and log). */
export function deprecatedTopics(ctx: EngineContext, topics: readonly string[]): DeprecatedTopic[] {
  const { catalog } = ctx
  if (!catalog) return []
  return topics.flatMap((name) => {
    const topic = catalog.get(name)
    return topic?.deprecated ? [{ name, replaced_by: topic.replaced_by }] : []
  })
}

/** A destination subscribed to deprecated topics still works: its answer and the log say what replaces them. */
export function noteDeprecatedTopics(ctx: EngineContext, destination: Destination, change: 'created' | 'updated'): Destination {
  const deprecated = deprecatedTopics(ctx, destination.topics)
  if (deprecated.length === 0) return destination
  const replaced = deprecated.map((t) => (t.replaced_by ? `"${t.name}" (replaced by "${t.replaced_by}")` : `"${t.name}"`)).join(', ')
  ctx.options.logger.warn({ destination_id: destination.id, deprecated_topics: deprecated }, `destination ${change} with deprecated topics: ${replaced}`)
  return { ...destination, deprecated_topics: deprecated }
}
