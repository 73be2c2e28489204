import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import net from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { closedPort } from './publishers.js'

/** Debian's nats-server, the one the machine runs on 4222. */
export const natsServerBinary = process.env.OUTFLOW_TEST_NATS_SERVER ?? '/usr/sbin/nats-server'

export interface OwnNatsServer {
  port: number
  /** `127.0.0.1:<port>` */
  hostPort: string
  close(): Promise<void>
}

/** Whether something accepts TCP connections on the loopback port. */
export function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port })
    socket.once('connect', () => (socket.destroy(), resolve(true)))
    socket.once('error', () => resolve(false))
  })
}

/**
 * A nats-server of the test's own, with JetStream and the given configuration (auth, TLS), on a free loopback port;
 * `close()` stops it and removes its store.
 *
 * @example
 * const server = await startNatsServer('authorization { token: "s3cret" }')
 */
export async function startNatsServer(config = '', files: Record<string, string> = {}): Promise<OwnNatsServer> {
  const dir = mkdtempSync(join(tmpdir(), 'outflow-nats-'))
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text)
  const port = await closedPort()
  writeFileSync(join(dir, 'server.conf'), `listen: "127.0.0.1:${port}"\njetstream { store_dir: "${join(dir, 'store')}" }\n${config.replaceAll('$DIR', dir)}\n`)
  const child = spawn(natsServerBinary, ['-c', join(dir, 'server.conf')], { stdio: ['ignore', 'ignore', 'pipe'] })
  let output = ''
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()))
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  for (let i = 0; !(await listening(port)); i++) {
    if (child.exitCode !== null || i > 100) {
      child.kill()
      rmSync(dir, { recursive: true, force: true })
      throw new Error(`nats-server did not start: ${output}`)
    }
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  return {
    port,
    hostPort: `127.0.0.1:${port}`,
    async close() {
      child.kill()
      await exited
      rmSync(dir, { recursive: true, force: true })
    },
  }
}
