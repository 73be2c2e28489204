import type { JsonObject } from './common.js'
import type { PublishInput } from './event.js'
import type { TopicsOption } from './topic.js'

// The catalog as the types of `publish`: an engine created with `topics` accepts only its topics, each with
// `data` typed from the topic's schema (a Standard Schema's input type; a JSON Schema written `as const`
// through FromJsonSchema below; otherwise any JSON object).

type Prettify<T> = { [K in keyof T]: T[K] } & {}

type FromJsonSchemaObject<S> = S extends { properties: infer P extends Record<string, unknown> }
  ? Prettify<
      { -readonly [K in keyof P as K extends RequiredKeys<S> ? K : never]: FromJsonSchema<P[K]> } & {
        -readonly [K in keyof P as K extends RequiredKeys<S> ? never : K]?: FromJsonSchema<P[K]>
      } & (S extends { additionalProperties: false } ? unknown : Record<string, unknown>)
    >
  : JsonObject

type RequiredKeys<S> = S extends { required: readonly (infer R)[] } ? R : never

type FromType<T, S> = T extends 'string'
  ? string
  : T extends 'number' | 'integer'
    ? number
    : T extends 'boolean'
      ? boolean
      : T extends 'null'
        ? null
        : T extends 'array'
          ? S extends { items: infer I } ? FromJsonSchema<I>[] : unknown[]
          : T extends 'object'
            ? FromJsonSchemaObject<S>
            : unknown

/**
 * The TypeScript type of the values a JSON Schema written `as const` accepts: `type` (one or a list),
 * `properties`/`required`, `items`, `enum`, `const`; anything else is `unknown`.
 *
 * @example
 * type Order = FromJsonSchema<typeof orderSchema> // { id: string; total: number; note?: string }
 */
export type FromJsonSchema<S> = S extends { const: infer C }
  ? C
  : S extends { enum: readonly (infer E)[] }
    ? E
    : S extends { type: readonly (infer T)[] }
      ? FromType<T, S>
      : S extends { type: infer T }
        ? FromType<T, S>
        : S extends { properties: object }
          ? FromJsonSchemaObject<S>
          : unknown

/** The `data` of a topic definition: from its Standard Schema, its JSON Schema, or any JSON object. */
export type TopicData<D> = D extends { schema: { '~standard': { types?: { input: infer I } | undefined } } }
  ? unknown extends I
    ? JsonObject
    : I
  : D extends { schema: infer S extends object }
    ? FromJsonSchema<S> extends infer T
      ? unknown extends T
        ? JsonObject
        : T
      : never
    : JsonObject

/** The catalog's topics by name, with their `data`. */
export type TopicDataMap<T> = T extends readonly (infer N extends string)[]
  ? { [K in N]: JsonObject }
  : { [K in keyof T & string]: TopicData<T[K]> }

/** One event to publish on an engine with catalog `T`: one of its topics, with that topic's `data`. */
export type CatalogPublishInput<T> = {
  [K in keyof TopicDataMap<T> & string]: Prettify<Omit<PublishInput, 'topic' | 'data'> & { topic: K; data: TopicDataMap<T>[K] }>
}[keyof TopicDataMap<T> & string]

/**
 * What `publish` takes: the catalog's events with a catalog whose names are known to the compiler; any input
 * (checked at run time) without one, or when the names are only known as `string`.
 */
export type PublishArgument<T extends TopicsOption | undefined> = [T] extends [undefined]
  ? unknown
  : string extends keyof TopicDataMap<Exclude<T, undefined>>
    ? unknown
    : CatalogPublishInput<Exclude<T, undefined>>
