import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import net from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, it } from 'vitest'
import { waitFor } from '../support/receiver.js'

const root = join(import.meta.dirname, '../..')
const dir = mkdtempSync(join(tmpdir(), 'outflow-example-'))
const running: ChildProcess[] = []

/** Run examples/server.ts with `env` on a free port; its output and exit code as they come. */
function startExample(env: Record<string, string>) {
  const proc = spawn(process.execPath, ['--import', 'tsx', 'examples/server.ts'], {
    cwd: root,
    env: { ...process.env, HOST: '', OUTFLOW_API_KEY: '', OUTFLOW_JWT_SECRET: '', DATABASE_URL: '', PORT: '0', OUTFLOW_DB: join(dir, `example-${running.length}.db`), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  running.push(proc)
  const state = { output: '', exitCode: undefined as number | null | undefined }
  proc.stdout!.on('data', (c: Buffer) => (state.output += c.toString()))
  proc.stderr!.on('data', (c: Buffer) => (state.output += c.toString()))
  proc.on('exit', (code) => (state.exitCode = code))
  const listening = () => waitFor(() => /listening on http:\/\/(\S+):(\d+)\/api\/v1/.exec(state.output), 60_000, 'the example to listen')
  return { state, listening }
}

afterAll(async () => {
  for (const proc of running) if (proc.exitCode === null) proc.kill('SIGTERM')
  await Promise.all(running.map((proc) => (proc.exitCode === null ? new Promise((r) => proc.once('exit', r)) : undefined)))
  rmSync(dir, { recursive: true, force: true })
})

// Concurrent: each case waits for its own process to start.
describe.concurrent('example server (examples/server.ts)', { timeout: 90_000 }, () => {
  it('listens on 127.0.0.1 by default and closes a socket that sends its headers too slowly (slowloris)', async ({ expect }) => {
    const example = startExample({ OUTFLOW_HEADERS_TIMEOUT_MS: '300', OUTFLOW_REQUEST_TIMEOUT_MS: '600' })
    const [, address, port] = await example.listening()
    expect(address).toBe('127.0.0.1')

    const socket = net.connect(Number(port), '127.0.0.1')
    let answer = ''
    let closed = false
    socket.on('data', (c: Buffer) => (answer += c.toString()))
    socket.on('close', () => (closed = true))
    socket.on('error', () => {})
    socket.write('GET /api/v1/healthz HTTP/1.1\r\nHost: localhost\r\n')
    // One more header line now and then, never the blank line that ends the headers.
    let n = 0
    const drip = setInterval(() => socket.writable && socket.write(`x-slow-${n++}: 1\r\n`), 50)
    try {
      await waitFor(() => closed, 15_000, 'the server to close the slow socket')
    } finally {
      clearInterval(drip)
      socket.destroy()
    }
    expect(answer).toMatch(/^HTTP\/1\.1 408/)
  })

  it('listens on HOST when it is set', async ({ expect }) => {
    const example = startExample({ HOST: '0.0.0.0', OUTFLOW_API_KEY: 'example-admin-key-0123456789', OUTFLOW_JWT_SECRET: 'example-jwt-secret-0123456789' })
    const [, address] = await example.listening()
    expect(address).toBe('0.0.0.0')
  })

  it('answers GET /tenants/{id}/portal with a sign-in link to its own portal page, which loads and signs in once', async ({ expect }) => {
    const example = startExample({})
    const [, address, port] = await example.listening()
    const base = `http://${address}:${port}`
    const admin = { authorization: 'Bearer dev-admin-key-change-me' }
    expect((await fetch(`${base}/api/v1/tenants/acme`, { method: 'PUT', headers: admin })).status).toBe(201)
    const { redirect_url: link } = (await (await fetch(`${base}/api/v1/tenants/acme/portal?theme=dark`, { headers: admin })).json()) as { redirect_url: string }
    expect(link).toMatch(new RegExp(`^${base}/portal/\\?code=[\\w-]{43}&theme=dark$`))
    const page = await fetch(link)
    expect(page.status).toBe(200)
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8')
    expect(page.headers.get('content-security-policy')).toContain("script-src 'self'")
    const html = await page.text()
    for (const [, asset] of html.matchAll(/(?:src|href)="(assets\/[^"]+)"/g)) expect((await fetch(new URL(asset!, link))).status).toBe(200)
    const exchange = () => fetch(`${base}/api/v1/portal/sessions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ code: new URL(link).searchParams.get('code') }) })
    expect(((await (await exchange()).json()) as { tenant_id: string }).tenant_id).toBe('acme')
    expect((await exchange()).status).toBe(401)
  })

  it('refuses to listen beyond loopback with the dev keys', async ({ expect }) => {
    const example = startExample({ HOST: '0.0.0.0' })
    await waitFor(() => example.state.exitCode !== undefined, 60_000, 'the example to exit')
    expect(example.state.exitCode).toBe(1)
    expect(example.state.output).toMatch(/refusing to listen on 0\.0\.0\.0 with dev defaults/)
    expect(example.state.output).not.toMatch(/listening on/)
  })
})
