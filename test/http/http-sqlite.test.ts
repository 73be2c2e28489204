import { mounts } from './mounts.js'
import { sqliteStorage } from './storages.js'
import { describeHttp } from './suite.js'

for (const mount of mounts) describeHttp(mount, sqliteStorage)
