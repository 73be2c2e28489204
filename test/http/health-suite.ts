import { describe, expect, it } from 'vitest'
import type { SuiteContext } from './support.js'

/** `GET /healthz`: the plain check load balancers use, and the admin-only details. */
export function describeHealth(ctx: SuiteContext): void {
  describe('GET /healthz', () => {
    it('answers { status: "ok" } without credentials', async () => {
      for (const path of ['/healthz', '/healthz?details=0']) {
        const res = await ctx.api('GET', path, { as: null })
        expect(res.status).toBe(200)
        expect(res.body).toEqual({ status: 'ok' })
      }
    })

    it('with details=1 reports storage, queue, worker and loops to the admin key only', async () => {
      const res = await ctx.api('GET', '/healthz?details=1')
      expect(res.status).toBe(200)
      expect(res.body).toEqual({
        status: 'ok',
        storage: { dialect: ctx.outflow.storage.dialect, reachable: true },
        queue: { depth: expect.any(Number), oldest_due_age_seconds: expect.toBeOneOf([null, expect.any(Number)]) },
        worker: { enabled: true, running: true },
        loops: expect.arrayContaining([{ name: 'claim', status: 'running', restarts: 0 }, { name: 'results', status: 'running', restarts: 0 }]),
      })
      expect((await ctx.api('GET', '/healthz?details=true')).body.storage.reachable).toBe(true)
      expect((await ctx.api('GET', '/healthz?details=1', { as: null })).status).toBe(401)
      expect((await ctx.api('GET', '/healthz?details=1', { as: ctx.tokens.acme })).status).toBe(403)
    })

    it('rejects an unknown details value or parameter with 400', async () => {
      expect((await ctx.api('GET', '/healthz?details=yes', { as: null })).body).toMatchObject({ status: 400, data: { details: expect.any(String) } })
      expect((await ctx.api('GET', '/healthz?verbose=1', { as: null })).status).toBe(400)
    })
  })
}
