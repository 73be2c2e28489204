// Type-checks the TypeScript samples of the docs against the project's sources: each sample becomes an
// in-memory module (with its preamble and side files), and one program checks them all, with
// `outflow`, `outflow/sqlite`, … mapped to the files the package builds them from.
import { readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import ts from 'typescript'
import type { CodeSample } from './markdown.js'

/** The source of each package entry point (package.json "exports"), as tsup.config.ts builds them. */
export const entrySources: Record<string, string> = {
  '.': 'src/index.ts',
  './sqlite': 'src/storage/sqlite.ts',
  './postgres': 'src/storage/postgres.ts',
  './express': 'adapters/express.ts',
  './hono': 'adapters/hono.ts',
  './fastify': 'adapters/fastify.ts',
  './nestjs': 'adapters/nestjs.ts',
  './verify': 'src/verify.ts',
  './prometheus': 'src/prometheus.ts',
  './client': 'src/client/index.ts',
}

/** A compiler error in a sample, placed at its line in the Markdown file. */
export interface SampleProblem {
  file: string
  line: number
  message: string
}

interface VirtualFile {
  path: string
  text: string
  /** Maps a 0-based line of the virtual file to a 1-based line of the Markdown file. */
  toMarkdown: (line: number) => number
  sample: CodeSample
}

/** A preamble may only declare what the sample assumes exists: imports, `declare`s and types. */
function preambleProblems(sample: CodeSample): SampleProblem[] {
  if (!sample.preamble) return []
  const source = ts.createSourceFile('preamble.ts', sample.preamble.code, ts.ScriptTarget.Latest, true)
  return source.statements
    .filter((statement) => {
      if (ts.isImportDeclaration(statement) || ts.isInterfaceDeclaration(statement) || ts.isTypeAliasDeclaration(statement)) return false
      const modifiers = ts.canHaveModifiers(statement) ? ts.getModifiers(statement) : undefined
      return !modifiers?.some((m) => m.kind === ts.SyntaxKind.DeclareKeyword)
    })
    .map((statement) => ({
      file: sample.file,
      line: sample.preamble!.line + source.getLineAndCharacterOfPosition(statement.getStart()).line,
      message: 'a sample preamble may hold only imports, declare statements, interfaces and type aliases',
    }))
}

/** Samples may not switch the checker off. */
function suppressionProblems(sample: CodeSample): SampleProblem[] {
  return sample.code.split('\n').flatMap((line, index) =>
    /@ts-(ignore|nocheck)/.test(line) ? [{ file: sample.file, line: sample.line + index, message: 'samples may not use @ts-ignore or @ts-nocheck' }] : [],
  )
}

/** The in-memory files of one sample: the sample (preamble first) and its side files, in a directory of its own. */
function virtualFiles(root: string, sample: CodeSample, index: number): VirtualFile[] {
  const dir = join(root, '.doc-samples', `${sample.file.replace(/[^\w]/g, '_')}_L${sample.line}_${index}`)
  const preamble = sample.preamble?.code.replace(/\n$/, '') ?? ''
  const preambleLines = preamble ? preamble.split('\n').length : 0
  const isModule = /^\s*(import|export)\s/m.test(`${preamble}\n${sample.code}`)
  const text = `${preamble ? `${preamble}\n` : ''}${sample.code}\n${isModule ? '' : 'export {}\n'}`
  const main: VirtualFile = {
    path: join(dir, 'sample.ts'),
    text,
    toMarkdown: (line) => (line < preambleLines ? sample.preamble!.line + line : sample.line + line - preambleLines),
    sample,
  }
  const sides = sample.files.map((file) => ({ path: join(dir, file.name), text: file.code, toMarkdown: (line: number) => file.line + line, sample }))
  return [main, ...sides]
}

/** The project's compiler options, with the package's own names mapped to its sources. */
function compilerOptions(root: string): ts.CompilerOptions {
  const config = ts.readConfigFile(join(root, 'tsconfig.json'), ts.sys.readFile)
  const { options } = ts.parseJsonConfigFileContent(config.config, ts.sys, root)
  const name = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).name as string
  const paths = Object.fromEntries(Object.entries(entrySources).map(([key, source]) => [key === '.' ? name : `${name}/${key.slice(2)}`, [join(root, source)]]))
  return { ...options, noEmit: true, paths }
}

/** A compiler host that serves the virtual files and reads everything else from disk. */
function compilerHost(options: ts.CompilerOptions, files: Map<string, VirtualFile>): ts.CompilerHost {
  const host = ts.createCompilerHost(options, true)
  const dirs = new Set([...files.keys()].map((path) => dirname(path)))
  const { getSourceFile, fileExists, readFile, directoryExists } = host
  return Object.assign(host, {
    getSourceFile: (path: string, language: ts.ScriptTarget | ts.CreateSourceFileOptions, onError?: (message: string) => void) => {
      const file = files.get(path)
      return file ? ts.createSourceFile(path, file.text, language) : getSourceFile.call(host, path, language, onError)
    },
    fileExists: (path: string) => files.has(path) || fileExists.call(host, path),
    readFile: (path: string) => files.get(path)?.text ?? readFile.call(host, path),
    directoryExists: (path: string) => dirs.has(path) || (directoryExists?.call(host, path) ?? true),
  })
}

/** Compile every sample in one program; the problems, each at its Markdown file and line. */
export function checkSamples(root: string, samples: CodeSample[]): SampleProblem[] {
  const problems = samples.flatMap((sample) => [...preambleProblems(sample), ...suppressionProblems(sample)])
  const files = new Map(samples.flatMap((sample, index) => virtualFiles(root, sample, index)).map((file) => [file.path, file]))
  const options = compilerOptions(root)
  const program = ts.createProgram({ rootNames: [...files.keys()], options, host: compilerHost(options, files) })
  for (const diagnostic of program.getGlobalDiagnostics()) problems.push({ file: 'tsconfig.json', line: 1, message: ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n') })
  for (const file of files.values()) {
    const source = program.getSourceFile(file.path)!
    for (const diagnostic of [...program.getSyntacticDiagnostics(source), ...program.getSemanticDiagnostics(source)]) {
      const line = source.getLineAndCharacterOfPosition(diagnostic.start ?? 0).line
      const side = file.path.endsWith('sample.ts') ? '' : ` (in the sample's file ${file.path.split('/').pop()})`
      problems.push({
        file: file.sample.file,
        line: file.toMarkdown(line),
        message: `TS${diagnostic.code}: ${ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n')}${side}`,
      })
    }
  }
  return problems
}
