// A webhook sink for local testing: verifies Standard Webhooks signatures and prints what arrives.
//   npm run receiver                      # listens on RECEIVER_PORT (4000)
// WEBHOOK_SECRET is the destination's `credentials.secret` (a dev default is printed).
import http from 'node:http'
import { Webhook } from 'standardwebhooks'

const devSecret = `whsec_${Buffer.from('outflow-example-receiver-secret!').toString('base64')}`
const port = Number(process.env.RECEIVER_PORT ?? 4000)
const secret = process.env.WEBHOOK_SECRET ?? devSecret
if (!process.env.WEBHOOK_SECRET) console.log(`WEBHOOK_SECRET not set, using the dev secret: ${secret}`)
const webhook = new Webhook(secret)

/** Node's header map flattened to the string record standardwebhooks expects. */
function headerRecord(req: http.IncomingMessage): Record<string, string> {
  return Object.fromEntries(Object.entries(req.headers).map(([name, value]) => [name, Array.isArray(value) ? value.join(', ') : (value ?? '')]))
}

const server = http.createServer((req, res) => {
  const chunks: Buffer[] = []
  req.on('data', (chunk: Buffer) => chunks.push(chunk))
  req.on('end', () => {
    const body = Buffer.concat(chunks).toString('utf8')
    const headers = headerRecord(req)
    let verified = true
    try {
      webhook.verify(body, headers)
    } catch (error) {
      verified = false
      console.log(`✗ ${req.method} ${req.url}: signature rejected (${(error as Error).message})`)
    }
    if (verified) {
      console.log(`✓ ${req.method} ${req.url} webhook-id=${headers['webhook-id']} topic=${headers['x-outflow-topic'] ?? '?'} signature verified`)
      console.log(`  ${body}`)
    }
    res.statusCode = verified ? 200 : 401
    res.setHeader('content-type', 'application/json')
    res.end(JSON.stringify({ received: verified }))
  })
})

server.listen(port, () => console.log(`receiver listening on http://localhost:${port}`))
