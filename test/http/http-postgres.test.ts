import { mounts } from './mounts.js'
import { postgresStorage } from './storages.js'
import { describeHttp } from './suite.js'

for (const mount of mounts) describeHttp(mount, postgresStorage)
