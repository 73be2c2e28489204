import { readFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { describe, expect, it } from 'vitest'

// docs/http-api.md shows the Next.js example's files: they must stay the files its test builds and runs
// (test/examples/nextjs.test.ts, `npm run test:nextjs`).

const root = resolve(import.meta.dirname, '../..')
const example = (path: string) => readFileSync(join(root, 'examples/nextjs', path), 'utf8')
const docs = readFileSync(join(root, 'docs/http-api.md'), 'utf8')

describe('docs/http-api.md › Next.js', () => {
  it('shows lib/outflow.ts as it is', () => {
    expect(docs).toContain(`\`\`\`ts\n${example('lib/outflow.ts')}\`\`\``)
  })

  it('shows every code line of the API and portal routes and of next.config.mjs (their comments aside)', () => {
    for (const file of ['app/api/v1/[...path]/route.ts', 'app/portal/[[...path]]/route.ts', 'next.config.mjs']) {
      const lines = example(file).split('\n').filter((line) => line.trim() && !line.trim().startsWith('//'))
      for (const line of lines) expect(docs, `${file}: ${line}`).toContain(line)
    }
  })
})
