import * as v from 'valibot'
import { BatchPolicySchema } from '../src/model/batch-policy.ts'
for (const x of [{}, {max_events: 0}, {max_events: 5}, {max_events: 'a'}, {max_events:5, x:1}, {max_events: 5, format:'xml'}]) {
  const r = v.safeParse(BatchPolicySchema, x); console.log(JSON.stringify(x), r.success, r.issues?.map(i => [v.getDotPath(i), i.message]))
}
