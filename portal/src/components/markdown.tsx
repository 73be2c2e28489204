import type { ComponentChildren, VNode } from 'preact'

// The destination types' instructions are Markdown (headings, paragraphs, lists, tables, code, links).
// They become elements, never HTML strings: nothing in them can run or load anything.

const inlinePattern = /`([^`]+)`|\*\*([^*]+)\*\*|\[([^\]]+)\]\(([^)\s]+)\)/g

function inline(text: string): ComponentChildren[] {
  const parts: ComponentChildren[] = []
  let last = 0
  for (const match of text.matchAll(inlinePattern)) {
    if (match.index > last) parts.push(text.slice(last, match.index))
    const [, code, bold, linkText, url] = match
    if (code !== undefined) parts.push(<code>{code}</code>)
    else if (bold !== undefined) parts.push(<strong>{bold}</strong>)
    else if (/^(https?:|mailto:)/i.test(url!))
      parts.push(
        <a href={url} target="_blank" rel="noopener noreferrer">
          {linkText}
        </a>,
      )
    else parts.push(linkText)
    last = match.index + match[0].length
  }
  if (last < text.length) parts.push(text.slice(last))
  return parts
}

const cells = (row: string) =>
  row
    .trim()
    .replace(/^\||\|$/g, '')
    .split('|')
    .map((c) => c.trim())

/** Markdown as elements; `headingLevel` is the level a `#` heading becomes (the page has its own h1/h2). */
export function Markdown({ text, headingLevel = 3 }: { text: string; headingLevel?: number }) {
  const lines = text.replace(/\r\n/g, '\n').split('\n')
  const blocks: VNode[] = []
  let i = 0
  while (i < lines.length) {
    const line = lines[i]!
    if (line.trim() === '') {
      i++
    } else if (line.startsWith('```')) {
      const code: string[] = []
      for (i++; i < lines.length && !lines[i]!.startsWith('```'); i++) code.push(lines[i]!)
      i++
      blocks.push(
        <pre tabIndex={0}>
          <code>{code.join('\n')}</code>
        </pre>,
      )
    } else if (/^#{1,6}\s/.test(line)) {
      const level = Math.min(6, headingLevel - 1 + line.indexOf(' '))
      const Tag = `h${level}` as 'h3'
      blocks.push(<Tag>{inline(line.replace(/^#+\s*/, ''))}</Tag>)
      i++
    } else if (line.trim().startsWith('|') && /^\s*\|?\s*:?-{3,}/.test(lines[i + 1] ?? '')) {
      const head = cells(line)
      const rows: string[][] = []
      for (i += 2; i < lines.length && lines[i]!.trim().startsWith('|'); i++) rows.push(cells(lines[i]!))
      blocks.push(
        <div class="table-scroll" tabIndex={0}>
          <table class="md-table">
            <thead>
              <tr>
                {head.map((h) => (
                  <th scope="col">{inline(h)}</th>
                ))}
              </tr>
            </thead>
            <tbody>
              {rows.map((r) => (
                <tr>
                  {r.map((c) => (
                    <td>{inline(c)}</td>
                  ))}
                </tr>
              ))}
            </tbody>
          </table>
        </div>,
      )
    } else if (/^\s*([-*]|\d+\.)\s/.test(line)) {
      const ordered = /^\s*\d+\./.test(line)
      const items: string[] = []
      // An item runs on over indented lines that do not start another item.
      for (; i < lines.length; i++) {
        const next = lines[i]!
        if (/^\s*([-*]|\d+\.)\s/.test(next)) items.push(next.replace(/^\s*([-*]|\d+\.)\s+/, ''))
        else if (/^\s+\S/.test(next) && items.length) items[items.length - 1] += ` ${next.trim()}`
        else break
      }
      const List = ordered ? 'ol' : 'ul'
      blocks.push(
        <List>
          {items.map((item) => (
            <li>{inline(item)}</li>
          ))}
        </List>,
      )
    } else {
      const paragraph: string[] = []
      for (; i < lines.length && lines[i]!.trim() !== '' && !/^(```|#{1,6}\s|\s*\||\s*([-*]|\d+\.)\s)/.test(lines[i]!); i++) paragraph.push(lines[i]!)
      if (paragraph.length === 0) paragraph.push(lines[i++]!)
      blocks.push(<p>{inline(paragraph.join(' '))}</p>)
    }
  }
  return <div class="markdown">{blocks}</div>
}
