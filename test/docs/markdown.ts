// Reads the project's Markdown the way GitHub renders it, as far as the docs checks need: fenced code
// samples (with their line numbers), headings and their anchors, and the links of the prose.
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'

/** README.md and every Markdown file under docs/, as paths relative to the root. */
export function markdownFiles(root: string): string[] {
  const walk = (dir: string): string[] =>
    readdirSync(join(root, dir), { withFileTypes: true }).flatMap((entry) => {
      const path = join(dir, entry.name)
      if (entry.isDirectory()) return walk(path)
      return entry.name.endsWith('.md') ? [path] : []
    })
  return ['README.md', ...walk('docs').sort()]
}

/** A text file next to a sample, declared in an HTML comment above it (`<!-- sample file NAME … -->`). */
export interface SampleFile {
  name: string
  code: string
  line: number
}

/** One ```ts / ```typescript fence: `line` is the 1-based line of its first code line. */
export interface CodeSample {
  file: string
  line: number
  code: string
  /** Declarations prepended to the sample (`<!-- sample preamble … -->` right above the fence). */
  preamble?: { code: string; line: number }
  files: SampleFile[]
}

interface Fence {
  marker: string
  indent: number
  info: string
  start: number
  body: string[]
}

const fenceOpen = /^(\s*)(`{3,}|~{3,})\s*([^`\s]*)/

/** Each fenced block of a Markdown text, with the 0-based line of its opening fence. */
export function fences(text: string): Fence[] {
  const lines = text.split('\n')
  const found: Fence[] = []
  let open: Fence | undefined
  lines.forEach((line, index) => {
    if (open) {
      const close = /^\s*(`{3,}|~{3,})\s*$/.exec(line)
      if (close && close[1]![0] === open.marker[0] && close[1]!.length >= open.marker.length) {
        found.push(open)
        open = undefined
      } else {
        open.body.push(line.slice(Math.min(open.indent, line.length - line.trimStart().length)))
      }
      return
    }
    const match = fenceOpen.exec(line)
    if (match) open = { marker: match[2]!, indent: match[1]!.length, info: match[3]!.toLowerCase(), start: index, body: [] }
  })
  return found
}

/** The lines that are prose (not inside a fence), so links and headings in code are ignored. */
export function proseLines(text: string): { line: string; number: number }[] {
  const inFence = new Set<number>()
  for (const fence of fences(text)) for (let i = fence.start; i <= fence.start + fence.body.length + 1; i++) inFence.add(i)
  return text
    .split('\n')
    .map((line, index) => ({ line, number: index + 1 }))
    .filter(({ number }) => !inFence.has(number - 1))
}

const sampleComment = /<!--\s*sample (preamble|file ([\w.-]+))\s*\n([\s\S]*?)-->\s*$/

/** The HTML comments that declare a sample's preamble and files, directly above its fence. */
function sampleComments(lines: string[], fenceStart: number): { kind: string; name?: string; code: string; line: number }[] {
  const comments: { kind: string; name?: string; code: string; line: number }[] = []
  let end = fenceStart - 1
  while (end >= 0 && lines[end]!.trim() === '') end--
  while (end >= 0 && lines[end]!.trim().endsWith('-->')) {
    let start = end
    while (start >= 0 && !lines[start]!.includes('<!--')) start--
    if (start < 0) break
    const match = sampleComment.exec(lines.slice(start, end + 1).join('\n'))
    if (!match) break
    comments.unshift({ kind: match[1]!.startsWith('file') ? 'file' : 'preamble', name: match[2], code: match[3]!, line: start + 2 })
    end = start - 1
    while (end >= 0 && lines[end]!.trim() === '') end--
  }
  return comments
}

/** Every TypeScript sample of one Markdown file. */
export function codeSamples(file: string, text: string): CodeSample[] {
  const lines = text.split('\n')
  return fences(text)
    .filter((fence) => fence.info === 'ts' || fence.info === 'typescript')
    .map((fence) => {
      const comments = sampleComments(lines, fence.start)
      const preamble = comments.find((c) => c.kind === 'preamble')
      return {
        file,
        line: fence.start + 2,
        code: fence.body.join('\n'),
        ...(preamble ? { preamble: { code: preamble.code, line: preamble.line } } : {}),
        files: comments.filter((c) => c.kind === 'file').map((c) => ({ name: c.name!, code: c.code, line: c.line })),
      }
    })
}

/** The text GitHub renders for a heading's inline Markdown. */
function headingText(markdown: string): string {
  return markdown
    .replace(/\s+#+\s*$/, '')
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/<[^>]+>/g, '')
    .replace(/`([^`]*)`/g, '$1')
    .replace(/(\*\*|__|\*)(.+?)\1/g, '$2')
    .trim()
}

/** GitHub's heading anchor (github-slugger): lower case, punctuation and symbols dropped, spaces to `-`. */
export function slug(heading: string): string {
  return headingText(heading)
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-')
}

/** Every anchor a Markdown file offers: its headings (repeats numbered as GitHub does) and `<a id|name>`. */
export function anchors(text: string): Set<string> {
  const found = new Set<string>()
  const counts = new Map<string, number>()
  for (const { line } of proseLines(text)) {
    const heading = /^ {0,3}#{1,6}\s+(.*)$/.exec(line)
    if (heading) {
      const base = slug(heading[1]!)
      let name = base
      while (found.has(name)) {
        const n = (counts.get(base) ?? 0) + 1
        counts.set(base, n)
        name = `${base}-${n}`
      }
      found.add(name)
    }
    for (const html of line.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) found.add(html[1]!)
  }
  return found
}

/** One link target in the prose of a Markdown file. */
export interface Link {
  file: string
  line: number
  target: string
}

/** The links and images of a file's prose: inline, reference definitions and HTML `href`/`src`. */
export function links(file: string, text: string): Link[] {
  const found: Link[] = []
  for (const { line, number } of proseLines(text)) {
    const prose = line.replace(/(`+)[^`]*?\1/g, '')
    const targets = [
      ...[...prose.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1]!),
      ...[...prose.matchAll(/^\s{0,3}\[[^\]]+\]:\s+<?(\S+?)>?(?:\s|$)/g)].map((m) => m[1]!),
      ...[...prose.matchAll(/\b(?:href|src)="([^"]+)"/g)].map((m) => m[1]!),
    ]
    for (const target of targets) found.push({ file, line: number, target })
  }
  return found
}

/** Whether a link leaves the repository (a URL with a scheme, or protocol-relative). */
export function isExternal(target: string): boolean {
  return /^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('//')
}

/** Read a Markdown file of the root. */
export function readMarkdown(root: string, file: string): string {
  return readFileSync(join(root, file), 'utf8')
}
