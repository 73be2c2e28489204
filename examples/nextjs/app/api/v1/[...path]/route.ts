// The Outflow HTTP API at /api/v1/…: every method it serves, answered by outflow.fetch (it sees the full
// path and strips its default basePath, /api/v1).
import { handleOutflow } from '@/lib/outflow'

// better-sqlite3 and postgres are Node modules (the Edge runtime has neither), and every answer is live.
export const runtime = 'nodejs'
export const dynamic = 'force-dynamic'

export { handleOutflow as GET, handleOutflow as HEAD, handleOutflow as POST, handleOutflow as PUT, handleOutflow as PATCH, handleOutflow as DELETE, handleOutflow as OPTIONS }
