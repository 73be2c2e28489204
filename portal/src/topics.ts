import { api } from './api.js'
import type { Topic } from './types.js'

let topics: Promise<Topic[]> | undefined

/** The engine's topic catalog (GET /topics), read once per page load; empty when the engine has none. */
export function listTopics(): Promise<Topic[]> {
  topics ??= api<Topic[]>('GET', '/topics').catch((error: unknown) => {
    topics = undefined
    throw error
  })
  return topics
}
