// Prints, as JSON, how many TypeScript samples README.md and docs/ hold and the compiler's problems with them.
// docs.test.ts runs it in a child process: the compiler works for tens of seconds without a break, which
// would starve the test worker's own messages to vitest.
import { join } from 'node:path'
import { codeSamples, markdownFiles, readMarkdown } from './markdown.js'
import { checkSamples } from './samples.js'

const root = join(import.meta.dirname, '../..')
const samples = markdownFiles(root).flatMap((file) => codeSamples(file, readMarkdown(root, file)))
process.stdout.write(JSON.stringify({ samples: samples.length, problems: checkSamples(root, samples) }))
