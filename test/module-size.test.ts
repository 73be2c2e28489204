import { readdirSync, readFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import ts from 'typescript'
import { describe, expect, it } from 'vitest'

const SRC = join(import.meta.dirname, '..', 'src')
const MAX_FILE_LINES = 400
const MAX_FUNCTION_LINES = 60

/** Every .ts file below `dir`, recursively. */
function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) return sourceFiles(path)
    return entry.name.endsWith('.ts') ? [path] : []
  })
}

/** A readable name for a function-like node: its own name, or the variable or property it is assigned to. */
function functionName(node: ts.FunctionLikeDeclaration, file: ts.SourceFile): string {
  if (node.name) return node.name.getText(file)
  if (ts.isConstructorDeclaration(node)) return 'constructor'
  const parent = node.parent
  if ((ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent) || ts.isPropertyDeclaration(parent)) && parent.name) {
    return parent.name.getText(file)
  }
  return '(anonymous)'
}

/** The size offences in one file: the file itself, then each function-like node with a body that is too long. */
function offences(name: string, text: string): string[] {
  const file = ts.createSourceFile(name, text, ts.ScriptTarget.Latest, true)
  const found: string[] = []
  const fileLines = file.getLineAndCharacterOfPosition(file.getEnd()).line + (text.endsWith('\n') ? 0 : 1)
  if (fileLines > MAX_FILE_LINES) found.push(`${name}: file has ${fileLines} lines (max ${MAX_FILE_LINES})`)
  const visit = (node: ts.Node): void => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body) {
      const start = file.getLineAndCharacterOfPosition(node.getStart(file)).line
      const end = file.getLineAndCharacterOfPosition(node.getEnd()).line
      const lines = end - start + 1
      if (lines > MAX_FUNCTION_LINES) {
        found.push(`${name}:${start + 1}: ${functionName(node as ts.FunctionLikeDeclaration, file)} has ${lines} lines (max ${MAX_FUNCTION_LINES})`)
      }
    }
    ts.forEachChild(node, visit)
  }
  visit(file)
  return found
}

/** The path of a file in src/ as the repo names it: `src/storage/storage.ts`. */
const repoPath = (path: string): string => relative(join(SRC, '..'), path)

describe('module size', () => {
  it('reports each kind of function with a body over the limit, with its name, line and length', () => {
    const fn = (head: string, bodyLines: number): string => [head, ...Array.from({ length: bodyLines }, (_, i) => `  step(${i})`), '}'].join('\n')
    const source = [
      fn('function declared() {', 59),
      fn('const arrow = () => {', 59),
      fn('class Box { method() {', 59) + ' }',
      fn('export default function () {', 59),
      fn('const table = { entry: function () {', 59) + ' }',
      fn('const fits = () => {', 58),
    ].join('\n')
    expect(offences('src/sample.ts', source)).toEqual([
      'src/sample.ts:1: declared has 61 lines (max 60)',
      'src/sample.ts:62: arrow has 61 lines (max 60)',
      'src/sample.ts:123: method has 61 lines (max 60)',
      'src/sample.ts:184: (anonymous) has 61 lines (max 60)',
      'src/sample.ts:245: entry has 61 lines (max 60)',
    ])
  })

  it('reports a file over the limit with its line count', () => {
    const source = Array.from({ length: 401 }, (_, i) => `step(${i})`).join('\n') + '\n'
    expect(offences('src/long.ts', source)).toEqual(['src/long.ts: file has 401 lines (max 400)'])
    expect(offences('src/fits.ts', source.split('\n').slice(1).join('\n'))).toEqual([])
  })

  it(`has no file in src/ over ${MAX_FILE_LINES} lines and no function over ${MAX_FUNCTION_LINES} (STYLE §9)`, () => {
    const files = sourceFiles(SRC)
    expect(files.length).toBeGreaterThan(50)
    const found = files.flatMap((path) => offences(repoPath(path), readFileSync(path, 'utf8')))
    expect(found, `too long:\n${found.join('\n')}`).toEqual([])
  })
})
