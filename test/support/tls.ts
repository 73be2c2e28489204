import { execFile, execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import tls from 'node:tls'
import { promisify } from 'node:util'
import type { AttemptResult } from '../../src/model/attempt-result.js'

/** A self-signed certificate (and its key) for localhost and 127.0.0.1, made with openssl: no CA trusts it. */
export function selfSignedCertificate(): { key: string; cert: string } {
  const dir = mkdtempSync(join(tmpdir(), 'outflow-tls-'))
  try {
    const [key, cert] = [join(dir, 'key.pem'), join(dir, 'cert.pem')]
    execFileSync('openssl', [
      'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '2',
      '-subj', '/CN=localhost', '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1', '-keyout', key, '-out', cert,
    ], { stdio: 'ignore' })
    return { key: readFileSync(key, 'utf8'), cert: readFileSync(cert, 'utf8') }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

/**
 * A TLS server on 127.0.0.1 with a self-signed certificate: a client that verifies certificates (every publisher
 * does) fails the handshake. It counts the handshakes it saw start.
 *
 * @example
 * const server = await startUntrustedTlsServer()
 * await deliver({ url: `https://127.0.0.1:${server.port}/hook` }) // error_kind 'tls'
 */
export async function startUntrustedTlsServer(): Promise<{ port: number; connections: () => number; close(): Promise<void> }> {
  let connections = 0
  const server = tls.createServer(selfSignedCertificate(), (socket) => socket.end())
  server.on('connection', () => connections++)
  server.on('tlsClientError', () => {})
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    port: (server.address() as AddressInfo).port,
    connections: () => connections,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
}

/**
 * Deliver one message with a publisher of `type` in a child process that trusts `cert` (NODE_EXTRA_CA_CERTS): a
 * certificate cannot be trusted inside a running process, and a publisher takes no CA of its own.
 *
 * @example
 * expect(await deliverTrusting(cert, 'redis_streams', { url: `rediss://127.0.0.1:${port}`, stream_key: 'tls' })).toMatchObject({ ok: true })
 */
export async function deliverTrusting(cert: string, type: string, config: Record<string, unknown>): Promise<AttemptResult> {
  const dir = mkdtempSync(join(tmpdir(), 'outflow-trusted-'))
  try {
    writeFileSync(join(dir, 'ca.pem'), cert)
    const fixture = join(import.meta.dirname, '../fixtures/trusted-tls-delivery.ts')
    const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', fixture, type, JSON.stringify(config)], {
      env: { ...process.env, NODE_EXTRA_CA_CERTS: join(dir, 'ca.pem') },
      timeout: 60_000,
    })
    return JSON.parse(stdout.trim().split('\n').pop()!) as AttemptResult
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}
