import { execFile } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { dirname, join, normalize, relative } from 'node:path'
import { describe, expect, it } from 'vitest'
import { anchors, codeSamples, isExternal, links, markdownFiles, readMarkdown } from './markdown.js'
import { type SampleProblem, checkSamples, entrySources } from './samples.js'

const root = join(import.meta.dirname, '../..')
const files = markdownFiles(root)

/** The relative links of `file` that name no file of the repository, or no heading of the Markdown they point at. */
function brokenLinks(file: string, text: string, read: (path: string) => string | undefined): string[] {
  return links(file, text).flatMap(({ line, target }) => {
    if (isExternal(target)) return []
    const [path = '', anchor] = target.split('#', 2)
    const resolved = path === '' ? file : normalize(join(dirname(file), decodeURIComponent(path)))
    const where = `${file}:${line}: ${target}`
    if (resolved.startsWith('..')) return [`${where} (leaves the repository)`]
    const content = read(resolved)
    if (content === undefined) return [`${where} (no such file)`]
    if (anchor === undefined || !resolved.endsWith('.md')) return []
    return anchors(content).has(anchor) ? [] : [`${where} (no heading with that anchor in ${resolved})`]
  })
}

/** The samples of README.md and docs/, compiled by check-samples.ts in a child process. */
function checkDocsSamples(): Promise<{ samples: number; problems: SampleProblem[] }> {
  const tsx = join(root, 'node_modules', 'tsx', 'dist', 'cli.mjs')
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [tsx, join(root, 'test', 'docs', 'check-samples.ts')], { cwd: root, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`check-samples.ts failed: ${error.message}\n${stderr}`))
      else resolve(JSON.parse(stdout) as { samples: number; problems: SampleProblem[] })
    })
  })
}

/** A repository file's text ('' for a directory), or undefined when it does not exist. */
function readRepoFile(path: string): string | undefined {
  const absolute = join(root, path)
  if (!existsSync(absolute)) return undefined
  try {
    return readFileSync(absolute, 'utf8')
  } catch {
    return ''
  }
}

describe('the docs', () => {
  it('are README.md and the pages under docs/, with docs/README.md as the index', () => {
    expect(files).toContain('README.md')
    expect(files).toContain(join('docs', 'README.md'))
    const index = readMarkdown(root, join('docs', 'README.md'))
    const unlisted = files.filter((f) => f.startsWith('docs') && f !== join('docs', 'README.md'))
      .filter((f) => !index.includes(`](${relative('docs', f)})`))
    expect(unlisted).toEqual([])
  })

  it('keep README.md a front page of at most 300 lines', () => {
    expect(readMarkdown(root, 'README.md').split('\n').length).toBeLessThanOrEqual(300)
  })

  it('map every package entry point of package.json to its source for the samples', () => {
    const exports = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).exports as Record<string, unknown>
    expect(Object.keys(entrySources).sort()).toEqual(Object.keys(exports).sort())
    expect(Object.values(entrySources).filter((source) => !existsSync(join(root, source)))).toEqual([])
  })

  it('type-check every TypeScript sample against the sources', async () => {
    const { samples, problems } = await checkDocsSamples()
    expect(samples).toBeGreaterThanOrEqual(20)
    expect(problems.map((p) => `${p.file}:${p.line}: ${p.message}`)).toEqual([])
  }, 240_000)

  it('resolve every relative link and #anchor', () => {
    const broken = files.flatMap((file) => brokenLinks(file, readMarkdown(root, file), readRepoFile))
    expect(broken).toEqual([])
  })
})

describe('the docs checks', () => {
  const markdown = [
    '# Title',
    '',
    '## Running the service (`outflow serve`)',
    '',
    'See [the service](#running-the-service-outflow-serve), [nothing](#nowhere) and [a file](missing.md).',
    '',
    '```ts',
    "const n: number = 'one'",
    '```',
  ].join('\n')

  it('report a sample that does not compile at its file and line, with the compiler error', () => {
    const problems = checkSamples(root, codeSamples('fake.md', markdown))
    expect(problems).toEqual([{ file: 'fake.md', line: 8, message: "TS2322: Type 'string' is not assignable to type 'number'." }])
  })

  it('refuse a preamble that does more than declare', () => {
    const sample = ['<!-- sample preamble', 'const hidden = 1', '-->', '```ts', 'export const n: number = hidden', '```'].join('\n')
    expect(checkSamples(root, codeSamples('fake.md', sample)).map((p) => `${p.line}: ${p.message}`)).toEqual([
      '2: a sample preamble may hold only imports, declare statements, interfaces and type aliases',
    ])
  })

  it('report a link to a missing file or heading, and accept a heading slug as GitHub writes it', () => {
    const broken = brokenLinks('fake.md', markdown, (path) => (path === 'fake.md' ? markdown : undefined))
    expect(broken).toEqual(['fake.md:5: #nowhere (no heading with that anchor in fake.md)', 'fake.md:5: missing.md (no such file)'])
  })
})
