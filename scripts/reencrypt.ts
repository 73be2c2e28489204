// Re-encrypt every destination's stored credentials with the newest key (after a key rotation, or to
// encrypt rows written as enc:v1 or plain JSON by earlier releases).
//   OUTFLOW_ENCRYPTION_KEY=<new> OUTFLOW_PREVIOUS_ENCRYPTION_KEYS=<old>[,<older>] npm run reencrypt
// Storage as in the example server: DATABASE_URL (Postgres), else OUTFLOW_DB (SQLite, ./outflow.db;
// without OUTFLOW_ENCRYPTION_KEY its <OUTFLOW_DB>.key file is the newest key). OUTFLOW_REENCRYPT_BATCH_SIZE
// (500) rows are read and rewritten per transaction. Prints the counts as JSON; exits 1 when a row could
// not be read (wrong or missing key, or a tampered row: see the log).
import { createOutflow } from '../src/create-outflow.js'
import { postgres } from '../src/storage/postgres.js'
import { sqlite } from '../src/storage/sqlite.js'

const databaseUrl = process.env.DATABASE_URL
const outflow = await createOutflow({
  storage: databaseUrl ? postgres({ url: databaseUrl, max: 2 }) : sqlite({ path: process.env.OUTFLOW_DB ?? './outflow.db' }),
  encryptionKey: process.env.OUTFLOW_ENCRYPTION_KEY || undefined,
  previousEncryptionKeys: process.env.OUTFLOW_PREVIOUS_ENCRYPTION_KEYS?.split(',').map((k) => k.trim()).filter(Boolean),
  delivery: { worker: false },
})
try {
  const result = await outflow.reencryptCredentials({ batchSize: Number(process.env.OUTFLOW_REENCRYPT_BATCH_SIZE ?? 500) })
  console.log(JSON.stringify(result))
  process.exitCode = result.failed + result.signing_keys.failed > 0 ? 1 : 0
} finally {
  await outflow.close()
}
