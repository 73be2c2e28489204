import { defineConfig } from 'vitest/config'
import base from './vitest.config.js'

// `npm run test:nextjs`: the Next.js example installed, built with `next build` and served (a few minutes, most
// of it npm install of next and the build), a step of its own in .ci/run rather than part of `npm test`.
export default defineConfig({
  test: { ...base.test, include: ['test/examples/nextjs.test.ts'], exclude: [] },
})
