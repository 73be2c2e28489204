import { mounts } from './mounts.js'
import { storageKind } from '../support/storages.js'
import { describeTopicsHttp } from './topics-suite.js'

for (const mount of mounts) describeTopicsHttp(mount, storageKind('sqlite :memory:'))
