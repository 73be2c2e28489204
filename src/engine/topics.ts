import { Catalog } from '../delivery/catalog.js'
import { notFound } from '../errors.js'
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
