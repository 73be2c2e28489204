import { compile, isRegistered, search, type JSONValue } from '@jmespath-community/jmespath'
import * as v from 'valibot'
import { OutflowError } from '../errors.js'
import type { AttemptResult } from '../model/attempt-result.js'
import type { DeliveryMessage } from './types.js'

/** What a template (`key_template`, `partition_key_template`) is evaluated against. */
export interface TemplateSubject {
  id: string
  topic: string
  time: string
  metadata: Record<string, string>
  data: unknown
}

/** Function names used anywhere in a compiled expression (the AST is plain nested objects). */
function functionNames(node: unknown, found: Set<string> = new Set()): Set<string> {
  if (Array.isArray(node)) {
    for (const child of node) functionNames(child, found)
  } else if (node !== null && typeof node === 'object') {
    const record = node as Record<string, unknown>
    if (record.type === 'Function' && typeof record.name === 'string') found.add(record.name)
    for (const value of Object.values(record)) functionNames(value, found)
  }
  return found
}

/**
 * Why a JMESPath expression is unusable as a template, or `null` when it compiles.
 *
 * @example
 * validateTemplate("join('/', [topic, id])") // null
 * validateTemplate('data.[') // 'Syntax error: ...'
 */
export function validateTemplate(expression: string): string | null {
  if (expression.trim() === '') return 'must not be empty'
  let ast: unknown
  try {
    ast = compile(expression)
  } catch (err) {
    return err instanceof Error ? err.message : String(err)
  }
  // The library only rejects unknown functions when evaluating; catch typos at create time instead.
  for (const name of functionNames(ast)) {
    if (!isRegistered(name)) return `unknown function: ${name}()`
  }
  return null
}

/**
 * Evaluate a template over `{ id, topic, time, metadata, data }` and return it as a string.
 * Non-string results are JSON-encoded; a null or empty result is an error (a key cannot be empty).
 *
 * @example
 * renderTemplate("join('/', [topic, id])", subject) // 'order.created/evt_1'
 */
export function renderTemplate(expression: string, subject: TemplateSubject): string {
  let result: JSONValue
  try {
    result = search(subject as unknown as JSONValue, expression)
  } catch (err) {
    const reason = err instanceof Error ? err.message : String(err)
    throw new OutflowError('validation', `template ${JSON.stringify(expression)} failed: ${reason}`, { cause: err })
  }
  const text = typeof result === 'string' ? result : result === null ? '' : JSON.stringify(result)
  if (text === '') throw new OutflowError('validation', `template ${JSON.stringify(expression)} evaluated to an empty value`)
  return text
}

/**
 * A name made from a template for one attempt (a key, a subject): what `render` gives, or the failed attempt when it
 * throws, a `configuration` failure of the setting `field`.
 *
 * @example
 * const key = renderForAttempt('key_template', () => renderTemplate(config.key_template, templateSubject(message)))
 * if (typeof key !== 'string') return key
 */
export function renderForAttempt(field: string, render: () => string): string | AttemptResult {
  try {
    return render()
  } catch (err) {
    return { ok: false, error_kind: 'configuration', error: `${field}: ${(err as Error).message}` }
  }
}

/** The subject of a delivery: the message with its time as an ISO 8601 string. */
export function templateSubject(message: DeliveryMessage): TemplateSubject {
  return { id: message.id, topic: message.topic, time: message.time.toISOString(), metadata: message.metadata, data: message.data }
}

/** A template config field: a JMESPath expression that compiles and names only known functions. */
export const TemplateSchema = v.pipe(
  v.string('must be a string'),
  v.rawCheck(({ dataset, addIssue }) => {
    if (!dataset.typed) return
    const problem = validateTemplate(dataset.value)
    if (problem) addIssue({ message: `invalid JMESPath template: ${problem}` })
  }),
)
