import type { Page } from '../model/pagination.js'

/**
 * Every page of a keyset listing, first to last: `fetchPage` is called with each page's `next` cursor
 * (undefined for the first) until a page has none.
 *
 * @example
 * for await (const page of pages((next) => client.listEvents('acme', { limit: 1000, next }))) await archive(page.models)
 */
export async function* pages<P extends Page<unknown>>(fetchPage: (next: string | undefined) => Promise<P>): AsyncGenerator<P, void, undefined> {
  let next: string | undefined
  do {
    const page = await fetchPage(next)
    yield page
    next = page.pagination.next ?? undefined
  } while (next !== undefined)
}

/**
 * Every item of a keyset listing, page after page (see `pages`).
 *
 * @example
 * for await (const event of items((next) => client.listEvents('acme', { topic: 'order.created', next }))) console.log(event.id)
 */
export async function* items<T>(fetchPage: (next: string | undefined) => Promise<Page<T>>): AsyncGenerator<T, void, undefined> {
  for await (const page of pages(fetchPage)) yield* page.models
}
