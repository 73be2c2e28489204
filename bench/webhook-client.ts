/**
 * Outbound webhook client benchmark: global fetch vs undici `request` through Outflow's pooled client
 * (`sendHttp`), POSTing ~1 KB of JSON to a local node:http server that answers 200.
 * The server runs in a worker thread so it does not share the client's event loop.
 *
 * Run: npx tsx bench/webhook-client.ts [requests] [concurrency]
 */
import { Worker } from 'node:worker_threads'
import { closeHttpClients, sendHttp } from '../src/net/http-client.js'
import { startDeadline } from '../src/net/deadline.js'

const total = Number(process.argv[2] ?? 20_000)
const concurrency = Number(process.argv[3] ?? 50)
const rounds = 2

const serverSource = `
const http = require('node:http')
const { parentPort } = require('node:worker_threads')
const server = http.createServer((req, res) => {
  req.resume()
  req.on('end', () => { res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '2' }); res.end('ok') })
})
server.keepAliveTimeout = 60_000
server.listen(0, '127.0.0.1', () => parentPort.postMessage(server.address().port))
`

const body = JSON.stringify({ type: 'order.created', data: { id: 'ord_1', items: Array.from({ length: 26 }, (_, i) => ({ sku: `SKU-${i}`, qty: i, price: 9.99 })) } })
const headers = { 'content-type': 'application/json', 'user-agent': 'outflow/bench', 'webhook-id': 'evt_bench' }

/** Run `total` calls of `send` with `concurrency` in flight; returns requests per second. */
async function measure(send: () => Promise<void>): Promise<number> {
  let started = 0
  const worker = async (): Promise<void> => {
    while (started < total) {
      started++
      await send()
    }
  }
  const begin = process.hrtime.bigint()
  await Promise.all(Array.from({ length: concurrency }, worker))
  const seconds = Number(process.hrtime.bigint() - begin) / 1e9
  return total / seconds
}

async function main(): Promise<void> {
  const server = new Worker(serverSource, { eval: true })
  const port = await new Promise<number>((resolve) => server.once('message', resolve))
  const url = `http://127.0.0.1:${port}/hook`

  const viaFetch = async (): Promise<void> => {
    const res = await fetch(url, { method: 'POST', headers, body, redirect: 'manual' })
    await res.text()
    if (res.status !== 200) throw new Error(`fetch got ${res.status}`)
  }
  const viaUndici = async (): Promise<void> => {
    // The deadline the worker gives every attempt.
    const deadline = startDeadline(10_000)
    try {
      const res = await sendHttp(url, { method: 'POST', headers, body }, { allowPrivateNetworks: true, signal: deadline.signal })
      if (res.status !== 200) throw new Error(`undici got ${res.status}`)
    } finally {
      deadline.clear()
    }
  }

  console.log(`${total} POSTs of ${body.length} B at concurrency ${concurrency}, best of ${rounds} rounds (after warm-up)`)
  const best = { fetch: 0, undici: 0 }
  for (let round = 0; round < rounds + 1; round++) {
    const f = await measure(viaFetch)
    const u = await measure(viaUndici)
    // Round 0 warms up the JIT and both connection pools.
    if (round === 0) continue
    best.fetch = Math.max(best.fetch, f)
    best.undici = Math.max(best.undici, u)
  }
  console.log(`global fetch:                 ${best.fetch.toFixed(0)} req/s`)
  console.log(`undici request (pooled Pool): ${best.undici.toFixed(0)} req/s`)
  console.log(`undici / fetch: ${(best.undici / best.fetch).toFixed(2)}x`)
  await closeHttpClients()
  await server.terminate()
}

await main()
