import type { SqlContext } from './sql-context.js'
import * as directory from './sql-directory.js'
import * as expunge from './sql-expunge.js'
import * as metrics from './sql-metrics.js'
import * as portal from './sql-portal.js'
import * as queue from './sql-queue.js'
import * as ordering from './sql-ordering.js'
import * as rate from './sql-rate.js'
import * as replays from './sql-replays.js'
import * as retention from './sql-retention.js'
import * as signing from './sql-signing-keys.js'
import type { Storage } from './storage.js'

/** The Storage port over a dialect's SqlContext; drivers add migrate/close. */
export function createSqlStorage(
  ctx: SqlContext,
  lifecycle: Pick<Storage, 'migrate' | 'close' | 'onWork' | 'path' | 'lockPruner' | 'insertEventsInTransaction' | 'hostConnection'>,
): Storage {
  return {
    onWork: lifecycle.onWork,
    insertEventsInTransaction: lifecycle.insertEventsInTransaction,
    hostConnection: lifecycle.hostConnection,
    lockPruner: lifecycle.lockPruner,
    dialect: ctx.dialect,
    path: lifecycle.path,
    migrate: lifecycle.migrate,
    close: lifecycle.close,
    upsertTenant: (id, metadata, now) => directory.upsertTenant(ctx, id, metadata, now),
    getTenant: (id) => directory.getTenant(ctx, id),
    listTenants: (q) => directory.listTenants(ctx, q),
    deleteTenant: (id) => directory.deleteTenant(ctx, id),
    summarizeTenants: (ids) => directory.summarizeTenants(ctx, ids),
    listDestinations: (tenantId, filter) => directory.listDestinations(ctx, tenantId, filter),
    getDestination: (tenantId, id) => directory.getDestination(ctx, tenantId, id),
    insertDestination: (record) => directory.insertDestination(ctx, record),
    updateDestination: (record, readAt) => directory.updateDestination(ctx, record, readAt),
    deleteDestination: (tenantId, id) => directory.deleteDestination(ctx, tenantId, id),
    setDestinationDisabled: (tenantId, id, at, now) => directory.setDestinationDisabled(ctx, tenantId, id, at, now),
    scanCredentials: (after, limit) => directory.scanCredentials(ctx, after, limit),
    replaceCredentials: (rows) => directory.replaceCredentials(ctx, rows),
    publishTargets: (ids) => directory.publishTargets(ctx, ids),
    insertEvents: (items) => queue.insertEvents(ctx, items),
    claimDueDeliveries: (q) => queue.claimDueDeliveries(ctx, q),
    recordAttempts: (writes) => queue.recordAttempts(ctx, writes),
    extendLeases: (owner, ids, until) => queue.extendLeases(ctx, owner, ids, until),
    releaseLeases: (owner, ids) => queue.releaseLeases(ctx, owner, ids),
    holdDeliveries: (ids, cancel, now) => queue.holdDeliveries(ctx, ids, cancel, now),
    requeueDelivery: (t, e, d, now) => queue.requeueDelivery(ctx, t, e, d, now),
    listEvents: (q) => queue.listEvents(ctx, q),
    getEvent: (t, e, d) => queue.getEvent(ctx, t, e, d),
    listAttempts: (t, e) => queue.listAttempts(ctx, t, e),
    getDeliveredData: (t, e, d) => queue.getDeliveredData(ctx, t, e, d),
    queueStats: (now) => queue.queueStats(ctx, now),
    ping: () => queue.ping(ctx),
    eventMetrics: (q) => metrics.eventMetrics(ctx, q),
    attemptMetrics: (q) => metrics.attemptMetrics(ctx, q),
    pruneEvents: (q) => retention.pruneEvents(ctx, q),
    insertReplayJobs: (jobs) => replays.insertReplayJobs(ctx, jobs),
    getReplayJob: (t, d, id) => replays.getReplayJob(ctx, t, d, id),
    cancelReplayJob: (t, d, id, now) => replays.cancelReplayJob(ctx, t, d, id, now),
    claimReplayJob: (owner, now, until) => replays.claimReplayJob(ctx, owner, now, until),
    advanceReplayJob: (q) => replays.advanceReplayJob(ctx, q),
    releaseReplayJobs: (owner) => replays.releaseReplayJobs(ctx, owner),
    skippedDeliveries: (t, d) => replays.skippedDeliveries(ctx, t, d),
    ...expunge.expungeMethods(ctx),
    takeTokens: (t, d, limit, count, now) => rate.takeTokens(ctx, t, d, limit, count, now),
    promoteWaitingDeliveries: (now) => ordering.promoteWaiting(ctx, now),
    insertPortalCode: (code, now) => portal.insertPortalCode(ctx, code, now),
    takePortalCode: (hash) => portal.takePortalCode(ctx, hash),
    listSigningKeys: () => signing.listSigningKeys(ctx),
    insertSigningKey: (key, retireActiveAt, now) => signing.insertSigningKey(ctx, key, retireActiveAt, now),
    replaceSigningKeySecret: (kid, from, to) => signing.replaceSigningKeySecret(ctx, kid, from, to),
  }
}
