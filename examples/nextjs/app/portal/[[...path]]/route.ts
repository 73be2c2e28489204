// The built-in tenant portal at /portal/ (its page and assets), served by the same outflow.fetch as the API
// (uncompressed: see handlePortal).
// GET /api/v1/tenants/{id}/portal (admin key) answers a single-use sign-in link to it.
import { handlePortal } from '@/lib/outflow'

export const runtime = 'nodejs'
export const dynamic = 'force-dynamic'

export { handlePortal as GET, handlePortal as HEAD }
