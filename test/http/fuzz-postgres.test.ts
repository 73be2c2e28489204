import { sqlStorages } from '../support/sql-storages.js'
import { describeFuzz } from './fuzz/suite.js'

describeFuzz(sqlStorages.find((s) => s.name === 'postgres')!)
