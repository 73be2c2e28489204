/** The wildcard: as a whole pattern it matches every topic; as a segment, one or more segments. */
const WILDCARD = '*'

/** Whether a topic string is a glob pattern (has a `*` segment) rather than an exact topic. */
export function isTopicPattern(topicOrPattern: string): boolean {
  return topicOrPattern.split('.').includes(WILDCARD)
}

/**
 * Whether pattern segments match topic segments, `*` taking one or more. Dynamic programming over
 * the segments, one pattern segment per row, so the cost is at most pattern × topic segments (a
 * backtracking search is exponential on patterns like `*.*.*.*.*.*.*.*.*.z`). `meter.steps` counts
 * the cells visited, for tests and benchmarks.
 *
 * @example
 * matchSegments(['order', '*'], ['order', 'created', 'v2']) // true
 */
export function matchSegments(pattern: readonly string[], topic: readonly string[], meter?: { steps: number }): boolean {
  const m = pattern.length
  const n = topic.length
  // Every segment takes at least one topic segment.
  if (m > n) return false
  // reach[j]: the pattern segments so far match the first j topic segments.
  let reach = new Uint8Array(n + 1)
  let next = new Uint8Array(n + 1)
  reach[0] = 1
  for (let i = 1; i <= m; i++) {
    const segment = pattern[i - 1]
    // After i segments at least i topic segments are taken, and m - i must be left for the rest.
    const first = i
    const last = n - (m - i)
    // Only the band [first, last] is read by the next row; the cell before it starts the `*` run.
    next[first - 1] = 0
    let any = 0
    for (let j = first; j <= last; j++) {
      next[j] = segment === WILDCARD ? reach[j - 1]! | next[j - 1]! : segment === topic[j - 1] ? reach[j - 1]! : 0
      any |= next[j]!
    }
    if (meter) meter.steps += last - first + 1
    if (!any) return false
    ;[reach, next] = [next, reach]
  }
  return reach[n] === 1
}

/** Whether one topic pattern (or exact topic) matches a topic. */
function matchesOne(pattern: string, topic: string): boolean {
  if (pattern === WILDCARD || pattern === topic) return true
  if (!isTopicPattern(pattern)) return false
  return matchSegments(pattern.split('.'), topic.split('.'))
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
