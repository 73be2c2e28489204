import { mounts } from './mounts.js'
import { storageKind } from '../support/storages.js'
import { describeHttp } from './suite.js'

for (const mount of mounts) describeHttp(mount, storageKind('postgres'))
