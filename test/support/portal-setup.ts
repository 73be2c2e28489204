import { ensurePortalBuilt } from '../../scripts/build-portal.js'

/**
 * vitest global setup: build the tenant portal into dist/portal when its sources changed, so the
 * engine serves it from the sources without a prior `npm run build` (a current build is kept: ~1 s saved).
 */
export default async function setup(): Promise<void> {
  await ensurePortalBuilt()
}
