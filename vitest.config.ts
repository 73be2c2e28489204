import { configDefaults, defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Its own step (npm run test:nextjs, vitest.nextjs.config.ts): installing and building a Next.js app takes minutes.
    exclude: [...configDefaults.exclude, 'test/examples/nextjs.test.ts'],
    // The engine serves the portal from dist/portal: built here when its sources changed.
    globalSetup: ['test/support/portal-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Suites share one Postgres and one RabbitMQ; files run in parallel but each uses its own schema/vhost objects.
    pool: 'forks',
    fileParallelism: true,
    maxWorkers: 2,
  },
})
