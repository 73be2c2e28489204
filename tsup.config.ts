import { defineConfig } from 'tsup'

export default defineConfig({
  entry: {
    index: 'src/index.ts',
    sqlite: 'src/storage/sqlite.ts',
    postgres: 'src/storage/postgres.ts',
    express: 'adapters/express.ts',
    hono: 'adapters/hono.ts',
    fastify: 'adapters/fastify.ts',
  },
  format: ['esm', 'cjs'],
  dts: true,
  clean: true,
  shims: true,
  target: 'node20',
  splitting: true,
  sourcemap: true,
  // Drivers, frameworks and cloud SDKs are optional peers: never bundled.
  external: [/^@aws-sdk\//, '@azure/service-bus', '@google-cloud/pubsub', 'amqplib', 'better-sqlite3', 'postgres', 'express', 'fastify', 'hono'],
})
