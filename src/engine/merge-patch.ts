/**
 * RFC 7396 JSON merge patch: objects merge recursively, `null` deletes a key, anything else replaces.
 * Every key is an own property of the result, `__proto__` and `constructor` included.
 *
 * @example
 * mergePatch({ a: 1, b: { c: 2 } }, { b: { c: null, d: 3 } }) // { a: 1, b: { d: 3 } }
 */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isPlainObject(patch)) return patch
  const result: Record<string, unknown> = isPlainObject(target) ? { ...target } : {}
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete result[key]
    // Defined, not assigned: assigning `__proto__` would set the prototype, and reading it would
    // find Object.prototype, not a key of the target.
    else Object.defineProperty(result, key, { value: mergePatch(Object.hasOwn(result, key) ? result[key] : undefined, value), enumerable: true, writable: true, configurable: true })
  }
  return result
}

function isPlainObject(x: unknown): x is Record<string, unknown> {
  return typeof x === 'object' && x !== null && !Array.isArray(x)
}
