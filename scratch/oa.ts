import { buildOpenApiDocument } from '../src/http/openapi.js'
import { routes } from '../src/http/routes.js'
const doc = buildOpenApiDocument(routes) as any
const s = doc.components.schemas
for (const name of Object.keys(s)) if (JSON.stringify(s[name]).includes('max_events')) console.log(name, JSON.stringify(s[name].properties?.batch ?? '').slice(0, 900))
