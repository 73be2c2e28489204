import { execFile } from 'node:child_process'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { defineConfig, type Options } from 'tsup'

const shared: Options = {
  entry: {
    index: 'src/index.ts',
    sqlite: 'src/storage/sqlite.ts',
    postgres: 'src/storage/postgres.ts',
    express: 'adapters/express.ts',
    hono: 'adapters/hono.ts',
    fastify: 'adapters/fastify.ts',
    nestjs: 'adapters/nestjs.ts',
    verify: 'src/verify.ts',
    prometheus: 'src/prometheus.ts',
    client: 'src/client/index.ts',
  },
  dts: true,
  shims: true,
  target: 'node20',
  splitting: true,
  sourcemap: true,
  // Drivers, frameworks, cloud SDKs and OpenTelemetry are optional peers: never bundled.
  external: [/^@aws-sdk\//, '@azure/service-bus', '@google-cloud/pubsub', 'amqplib', 'better-sqlite3', 'postgres', 'express', 'fastify', 'hono', /^@nestjs\//, 'reflect-metadata', 'rxjs', /^@opentelemetry\//],
}

/** The tenant portal (portal/, Preact) into <outDir>/portal, once the ESM build (which cleans outDir) is done. */
const buildPortal = (outDir: string) => async () => {
  await promisify(execFile)(process.execPath, [join('node_modules', 'tsx', 'dist', 'cli.mjs'), join('scripts', 'build-portal.ts'), join(outDir, 'portal')])
}

export default defineConfig((cli) => [
  // The `outflow` command (package.json `bin`) is ESM only; esbuild keeps its `#!/usr/bin/env node` line.
  {
    ...shared,
    entry: { ...(shared.entry as Record<string, string>), cli: 'src/cli/main.ts' },
    dts: { entry: shared.entry },
    format: 'esm',
    clean: true,
    onSuccess: buildPortal(cli.outDir ?? 'dist'),
  },
  // jose 6 and p-queue 9 (with p-timeout) ship only ESM. The CommonJS build carries them inside, so
  // `require('outflow')` works without require(esm): under tsx's CJS mode, Jest, ts-node, and Node
  // started with --no-experimental-require-module.
  // ajv is CommonJS, but its JSON requires fail when tsx loads it through Node's ESM translators: carried inside too.
  { ...shared, format: 'cjs', treeshake: true, noExternal: ['jose', 'p-queue', 'p-timeout', /^ajv(\/|$)/, 'ajv-formats'] },
])
