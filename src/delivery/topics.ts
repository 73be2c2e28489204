/** The wildcard: as a whole pattern it matches every topic; as a segment, one or more segments. */
const WILDCARD = '*'

/** Whether a topic string is a glob pattern (has a `*` segment) rather than an exact topic. */
export function isTopicPattern(topicOrPattern: string): boolean {
  return topicOrPattern.split('.').includes(WILDCARD)
}

/** Match pattern segments from `p` against topic segments from `t`; `*` consumes one or more. */
function matchSegments(pattern: string[], topic: string[], p: number, t: number): boolean {
  if (p === pattern.length) return t === topic.length
  if (t === topic.length) return false
  if (pattern[p] !== WILDCARD) return pattern[p] === topic[t] && matchSegments(pattern, topic, p + 1, t + 1)
  // Try every span length; topics are a handful of segments, so backtracking stays cheap.
  for (let end = t + 1; end <= topic.length; end++) {
    if (matchSegments(pattern, topic, p + 1, end)) return true
  }
  return false
}

/** Whether one topic pattern (or exact topic) matches a topic. */
function matchesOne(pattern: string, topic: string): boolean {
  if (pattern === WILDCARD || pattern === topic) return true
  if (!isTopicPattern(pattern)) return false
  return matchSegments(pattern.split('.'), topic.split('.'), 0, 0)
}

/**
 * Whether a destination subscribed to `patterns` receives `topic`.
 *
 * @example
 * matchesTopic(['order.*'], 'order.created.v2') // true
 * matchesTopic(['order.*'], 'order') // false
 */
export function matchesTopic(patterns: readonly string[], topic: string): boolean {
  return patterns.some((pattern) => matchesOne(pattern, topic))
}

/**
 * Whether a destination may subscribe to `topicOrPattern` under an engine topic allow-list:
 * an exact topic must be listed, a pattern must match at least one listed topic, `"*"` always passes.
 *
 * @example
 * topicAllowed(['order.created'], 'order.*') // true
 */
export function topicAllowed(allowList: readonly string[], topicOrPattern: string): boolean {
  if (topicOrPattern === WILDCARD || allowList.includes(topicOrPattern)) return true
  if (!isTopicPattern(topicOrPattern)) return false
  return allowList.some((listed) => matchesOne(topicOrPattern, listed))
}
