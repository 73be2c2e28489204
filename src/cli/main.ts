#!/usr/bin/env node
// The `outflow` command (package.json `bin`): run Outflow as a service from environment variables
// and/or a JSON config file. docs/operating.md › Running the service lists every setting.
import { parseArgs } from 'node:util'
import pkg from '../../package.json' with { type: 'json' }
import { createOutflow } from '../create-outflow.js'
import { OutflowError } from '../errors.js'
import { errorFields } from '../logger.js'
import { jsonLogger } from './json-logger.js'
import { serve } from './serve.js'
import { engineOptions, readSettings, storageError, storageOf, type ReadSettings } from './settings.js'

const usage = `Usage: outflow <command> [--config <file>]

Commands:
  serve       run the HTTP API (/api/v1) and the delivery worker until SIGTERM or SIGINT
  migrate     apply the storage migrations, then exit
  reencrypt   move stored destination credentials to OUTFLOW_ENCRYPTION_KEY, then exit

Options:
  -c, --config <file>   JSON settings (also OUTFLOW_CONFIG); environment variables override it
  --batch-size <n>      reencrypt: rows per transaction (default 500)
  --partition-history   migrate, Postgres: move an existing event log to daily partitions, online and
                        resumably (engines go on delivering; see README, "Partitioned history")
  -h, --help            this text
  -v, --version         the version

Storage: DATABASE_URL=postgres://… for Postgres, else SQLite at OUTFLOW_SQLITE_PATH (./outflow.db).
Every setting: README, "Running the service".`

/** A mistake in how the command was called: exit code 2. */
class UsageError extends Error {}

async function main(argv: string[]): Promise<void> {
  const { values, positionals } = parseCommandLine(argv)
  if (values.help) return void console.log(usage)
  if (values.version) return void console.log(pkg.version)
  const [command, ...extra] = positionals
  if (!command) throw new UsageError('a command is required')
  if (extra.length > 0) throw new UsageError(`unexpected argument: ${extra[0]}`)
  if (!['serve', 'migrate', 'reencrypt'].includes(command)) throw new UsageError(`unknown command: ${command}`)

  const read = readSettings({ env: process.env, configFile: values.config ?? (process.env.OUTFLOW_CONFIG || undefined) })
  const logger = jsonLogger(read.settings.logLevel)
  try {
    if (command === 'serve') await serve(read, logger, process.env)
    else if (command === 'migrate') await migrate(read, logger, values['partition-history'] ?? false)
    else await reencrypt(read, batchSize(values['batch-size']))
  } catch (error) {
    throw explain(error, read)
  }
}

function parseCommandLine(argv: string[]) {
  try {
    return parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        config: { type: 'string', short: 'c' },
        'batch-size': { type: 'string' },
        'partition-history': { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
        version: { type: 'boolean', short: 'v' },
      },
    })
  } catch (error) {
    throw new UsageError((error as Error).message)
  }
}

function batchSize(text: string | undefined): number {
  if (text === undefined) return 500
  if (!/^\d+$/.test(text) || Number(text) < 1) throw new UsageError(`--batch-size must be a positive integer, got ${JSON.stringify(text)}`)
  return Number(text)
}

/**
 * `outflow migrate`: the storage's migrations only (no keys needed), for operators who migrate before deploying;
 * with `--partition-history`, then the move of a Postgres event log to daily partitions, its steps logged.
 */
async function migrate({ settings }: ReadSettings, logger: ReturnType<typeof jsonLogger>, partitionHistory: boolean): Promise<void> {
  const target = storageOf(settings)
  if (partitionHistory && target.kind !== 'postgres') throw new UsageError('--partition-history moves a Postgres event log: set DATABASE_URL to a postgres:// URL')
  try {
    const storage = await target.open()
    try {
      await storage.migrate()
      logger.info({ storage: target.kind, at: target.where }, 'migrations applied')
      if (partitionHistory && storage.partitionHistory) {
        const report = await storage.partitionHistory((message, fields) => logger.info(fields, message))
        logger.info(report, report.moved ? 'the event log is partitioned by day' : 'the event log was already partitioned by day')
      }
    } finally {
      await storage.close()
    }
  } catch (error) {
    throw storageError(target, error)
  }
}

/** `outflow reencrypt`: prints `{ scanned, reencrypted, failed, signing_keys }`; exit code 1 when a row could not be read. */
async function reencrypt({ settings }: ReadSettings, size: number): Promise<void> {
  const target = storageOf(settings)
  const outflow = await createOutflow({ ...engineOptions(settings), storage: target.open, delivery: { ...settings.delivery, worker: false } }).catch((error: unknown) => {
    throw storageError(target, error)
  })
  try {
    const result = await outflow.reencryptCredentials({ batchSize: size })
    console.log(JSON.stringify(result))
    if (result.failed + result.signing_keys.failed > 0) process.exitCode = 1
  } finally {
    await outflow.close()
  }
}

/** An engine error that names options (`encryptionKey`) names the variables or keys they came from instead. */
function explain(error: unknown, { origin }: ReadSettings): unknown {
  if (!(error instanceof OutflowError) || error.code !== 'validation' || !error.data || !error.message.startsWith('invalid Outflow options')) return error
  const problems = Object.entries(error.data).map(([path, message]) => `${origin(path)}: ${message}`)
  return new OutflowError('validation', `invalid configuration: ${problems.join('; ')}`, { data: error.data })
}

main(process.argv.slice(2)).catch((error: unknown) => {
  // One line, no stack: the message names the variable, key or command-line mistake.
  if (error instanceof UsageError) {
    console.error(`outflow: ${error.message} (see outflow --help)`)
    process.exit(2)
  }
  if (error instanceof OutflowError) console.error(`outflow: ${error.message}`)
  else {
    const { message, code } = errorFields(error)
    console.error(`outflow: ${message}${code && !message.includes(code) ? ` (${code})` : ''}`)
  }
  process.exit(1)
})
