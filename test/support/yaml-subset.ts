/**
 * Reads the YAML this repository writes (compose.yaml): block mappings, block sequences of scalars,
 * JSON-style flow sequences (`["CMD", "x"]`), quoted and plain scalars (kept as strings), full-line
 * comments. Anything outside that subset throws with its line number, so a file the test cannot
 * read fails it rather than being misread. (No YAML parser is among the dependencies.)
 *
 * @example
 * readYamlSubset('a:\n  b: "1"\n  c:\n    - x\n') // { a: { b: '1', c: ['x'] } }
 */
export function readYamlSubset(text: string, file = 'yaml'): unknown {
  const lines = text
    .split('\n')
    .map((raw, i) => ({ n: i + 1, indent: raw.search(/\S/), text: raw.trim() }))
    .filter((line) => line.indent >= 0 && !line.text.startsWith('#'))
  let i = 0
  const fail = (n: number, why: string) => new Error(`${file}:${n}: ${why} (outside the YAML subset test/support/yaml-subset.ts reads)`)

  function scalar(value: string, n: number): unknown {
    if (value.startsWith('"') || value.startsWith('[')) {
      try {
        return JSON.parse(value)
      } catch {
        throw fail(n, `not a JSON-style scalar or flow sequence: ${value}`)
      }
    }
    if (value.startsWith("'")) {
      if (!value.endsWith("'")) throw fail(n, 'an unterminated quoted scalar')
      return value.slice(1, -1).replaceAll("''", "'")
    }
    if (/^[{&*!|>%@`]/.test(value) || value.includes(' #')) throw fail(n, `an unsupported scalar: ${value}`)
    return value
  }

  function block(indent: number): unknown {
    if (lines[i]!.text.startsWith('- ')) {
      const list: unknown[] = []
      while (i < lines.length && lines[i]!.indent === indent && lines[i]!.text.startsWith('- ')) {
        const item = lines[i]!.text.slice(2)
        if (/^[\w.-]+:(\s|$)/.test(item)) throw fail(lines[i]!.n, 'a mapping inside a sequence')
        list.push(scalar(item, lines[i]!.n))
        i++
      }
      return list
    }
    const map: Record<string, unknown> = {}
    while (i < lines.length && lines[i]!.indent === indent) {
      const { n, text } = lines[i]!
      const match = /^([\w.-]+):(?:\s+(.*))?$/.exec(text)
      if (!match) throw fail(n, `not a "key: value" line: ${text}`)
      const [, key, value] = match
      if (key! in map) throw fail(n, `a duplicate key: ${key}`)
      i++
      if (value) map[key!] = scalar(value, n)
      else if (i < lines.length && lines[i]!.indent > indent) map[key!] = block(lines[i]!.indent)
      else map[key!] = null
    }
    return map
  }

  const document = lines.length > 0 ? block(lines[0]!.indent) : null
  if (i < lines.length) throw fail(lines[i]!.n, 'unexpected indentation')
  return document
}
