import type * as v from 'valibot'
import { describe, expect, it } from 'vitest'
import { destinationRegistry } from '../../src/destinations/registry.js'

/** The keys an object schema accepts, looking through pipes (strictObject wrapped in checks). */
function schemaKeys(schema: unknown): string[] | null {
  const s = schema as { entries?: Record<string, unknown>; pipe?: unknown[] }
  if (s.entries) return Object.keys(s.entries).sort()
  for (const item of s.pipe ?? []) {
    const keys = schemaKeys(item)
    if (keys) return keys
  }
  return null
}

describe('destination type schemas describe every field they accept', () => {
  for (const def of Object.values(destinationRegistry)) {
    it(`${def.type}: credential_fields are exactly the credentials schema's fields`, () => {
      expect(def.credential_fields.map((f) => f.key).sort()).toEqual(schemaKeys(def.credentialsSchema as v.GenericSchema))
    })
    if (def.type === 'relay')
      it('relay: config is free-form, and config_fields names the one field it reads (url)', () => {
        expect(schemaKeys(def.configSchema)).toBeNull()
        expect(def.config_fields.map((f) => f.key)).toEqual(['url'])
      })
    else
      it(`${def.type}: config_fields are exactly the config schema's fields`, () => {
        expect(def.config_fields.map((f) => f.key).sort()).toEqual(schemaKeys(def.configSchema))
      })
    it(`${def.type}: required flags match what create requires`, () => {
      const requiredCredentials = def.credential_fields.filter((f) => f.required)
      if (!def.credentialsRequired) expect(requiredCredentials).toEqual([])
      else expect(requiredCredentials.length).toBeGreaterThan(0)
      for (const f of [...def.config_fields, ...def.credential_fields]) expect(f.description.length).toBeGreaterThan(10)
    })
  }
})
