import { announce } from './notice.js'

/** Copy text to the clipboard and say so (or say how to copy it by hand). */
export async function copyText(text: string, what: string): Promise<void> {
  try {
    await navigator.clipboard.writeText(text)
    announce(`${what} copied to the clipboard`)
  } catch {
    announce(`Could not copy: select the ${what.toLowerCase()} and copy it by hand`, 'error')
  }
}
