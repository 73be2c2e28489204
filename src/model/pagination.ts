import * as v from 'valibot'
import { OutflowError } from '../errors.js'
import { isStorableInstant, isStorableText } from './common.js'

export type Dir = 'asc' | 'desc'

/** `pagination` of every list page. */
export const PaginationSchema = v.object({
  /** The field the page is sorted by. */
  order_by: v.string(),
  /** The sort direction. */
  dir: v.picklist(['asc', 'desc']),
  /** The most items a page holds. */
  limit: v.number(),
  /** The cursor of the next page (pass it as `next`), or null on the last page. */
  next: v.nullable(v.string()),
  /** The cursor of the previous page (pass it as `prev`), or null on the first page. */
  prev: v.nullable(v.string()),
})
/** Where a page sits in its listing: its order and the cursors of its neighbours. */
export type Pagination = v.InferOutput<typeof PaginationSchema>

/** One page of a keyset-paginated listing. */
export interface Page<T> {
  /** The items of this page, in listing order. */
  models: T[]
  /** The page's order, limit and the cursors to move on. */
  pagination: Pagination
}

/** A keyset position: the sort key (ms since epoch) and the tie-breaking ids. */
export type KeysetPosition = [sortKey: number, ...ids: string[]]

/** What storage needs to read one page: direction of the sort, and where to start. */
export interface KeysetRequest {
  dir: Dir
  limit: number
  /** Rows strictly after (`next`) or before (`prev`) this position in `dir` order. */
  after?: KeysetPosition
  before?: KeysetPosition
}

interface CursorBody {
  /** listing the cursor belongs to (`tenants`, `events`) */
  l: string
  /** dir it was made for */
  d: Dir
  /** position */
  p: KeysetPosition
}

/** Opaque base64url cursor for a position in one listing. */
export function encodeCursor(listing: string, dir: Dir, position: KeysetPosition): string {
  const body: CursorBody = { l: listing, d: dir, p: position }
  return Buffer.from(JSON.stringify(body)).toString('base64url')
}

/** Ids after the sort key in each listing's positions: tenants sort by (created_at, id), events by (time, event id, destination id). */
const positionIds: Record<string, number> = { tenants: 1, events: 2 }

/** Ids are at most 128 characters (IdSchema); a cursor is not a way around that. */
const maxCursorIdLength = 128

/**
 * Whether `p` is a position this server could have written for `listing`: a storable instant, then
 * the listing's ids. Storage turns it into SQL parameters, so anything else (a forged or mangled
 * cursor) must be refused here as a 400 rather than fail in the database.
 */
function isPosition(p: unknown, listing: string): p is KeysetPosition {
  if (!Array.isArray(p) || p.length !== 1 + (positionIds[listing] ?? 1)) return false
  const [sortKey, ...ids] = p as unknown[]
  if (typeof sortKey !== 'number' || !Number.isInteger(sortKey) || !isStorableInstant(sortKey)) return false
  return ids.every((id) => typeof id === 'string' && id.length <= maxCursorIdLength && isStorableText(id))
}

function decodeCursor(param: 'next' | 'prev', cursor: string, listing: string, dir: Dir): KeysetPosition {
  const invalid = (why: string) =>
    new OutflowError('bad_request', 'invalid query parameter', { data: { [param]: why } })
  let body: Partial<CursorBody> | null
  try {
    body = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as Partial<CursorBody> | null
  } catch {
    throw invalid('malformed cursor')
  }
  if (typeof body !== 'object' || body === null || typeof body.l !== 'string' || (body.d !== 'asc' && body.d !== 'desc')) throw invalid('malformed cursor')
  if (body.l !== listing) throw invalid('cursor belongs to another listing')
  if (body.d !== dir) throw invalid(`cursor was made for dir=${body.d}`)
  if (!isPosition(body.p, listing)) throw invalid('malformed cursor')
  return body.p
}

/** Turn `next`/`prev` query values into a keyset request; both at once is a 400. */
export function keysetRequest(
  listing: string,
  q: { dir: Dir; limit: number; next?: string; prev?: string },
): KeysetRequest {
  if (q.next !== undefined && q.prev !== undefined)
    throw new OutflowError('bad_request', 'invalid query parameter', { data: { next: 'next and prev cannot be combined' } })
  const req: KeysetRequest = { dir: q.dir, limit: q.limit }
  if (q.next !== undefined) req.after = decodeCursor('next', q.next, listing, q.dir)
  if (q.prev !== undefined) req.before = decodeCursor('prev', q.prev, listing, q.dir)
  return req
}

/**
 * Build the page from the rows storage returned for a keyset request.
 * Storage returns up to `limit + 1` rows in display order; the extra row tells whether more exist.
 */
export function buildPage<R, T>(
  listing: string,
  orderBy: string,
  req: KeysetRequest,
  rows: R[],
  positionOf: (row: R) => KeysetPosition,
  toModel: (row: R) => T,
): Page<T> {
  const more = rows.length > req.limit
  let page = rows
  if (more) page = req.before ? rows.slice(rows.length - req.limit) : rows.slice(0, req.limit)
  const first = page[0]
  const last = page.at(-1)
  let next: string | null = null
  let prev: string | null = null
  if (req.before) {
    // Walking backwards: there is always something after (where we came from); before only if more.
    if (last) next = encodeCursor(listing, req.dir, positionOf(last))
    if (more && first) prev = encodeCursor(listing, req.dir, positionOf(first))
  } else {
    if (more && last) next = encodeCursor(listing, req.dir, positionOf(last))
    if (req.after && first) prev = encodeCursor(listing, req.dir, positionOf(first))
  }
  return { models: page.map(toModel), pagination: { order_by: orderBy, dir: req.dir, limit: req.limit, next, prev } }
}
