/** How big each measurement is; `--quick` shrinks everything so the whole table runs in under 2 minutes. */
export interface Sizes {
  /** Events delivered in the throughput rows (after `warmup` more, not counted). */
  deliveries: number
  warmup: number
  /** The warm-up also lasts at least this long. */
  warmupMs: number
  /** Delivery concurrency of Outflow and of every anchor. */
  concurrency: number
  /** Single `publish()` calls, with `concurrency` callers. */
  publishSingle: number
  /** Events sent with `publishMany` (and with the bare INSERT) in batches of `batch`. */
  publishMany: number
  batch: number
  /** publishMany batches in flight at a time in the end-to-end delivery row, so publishing is not its limit. */
  publishLanes: number
  /** Open-loop publish rate and event count of the latency rows. */
  latencyRate: number
  latencyEvents: number
  /** How long the latency rows wait for the last events after the last publish (the rest count as lost). */
  latencyDrainMs: number
  /** Stored events behind the listing rows, and requests timed per page. */
  storedEvents: number
  listRequests: number
  /** Stored events behind the metrics rows, spread evenly over `metricsDays`, and requests timed per route. */
  metricsEvents: number
  metricsDays: number
  metricsRequests: number
  /** Old delivered events the pruning rows start with (each with its delivery and attempt). */
  pruneEvents: number
  /** The day pruned by the prune-day rows (plain DELETE against partition DROP), and the live events published meanwhile. */
  pruneDayEvents: number
  pruneDayLive: number
  /** Delivered events the replay row sends again while it measures live latency. */
  replayEvents: number
  /** Pending deliveries of the RSS row, and how long the engine is sampled with them. */
  backlog: number
  backlogSampleMs: number
  /** How long an engine with an empty queue is sampled, as the RSS baseline. */
  idleSampleMs: number
  /** Response delay of the slow sink in the RSS row. */
  slowSinkDelayMs: number
  /** autocannon's connections and measured seconds in the HTTP API row (after a 3 s warm-up). */
  httpConnections: number
  httpSeconds: number
  /** Hard limit of one scenario process. */
  scenarioTimeoutMs: number
  /** `--soak`: deliveries end to end, the backlog the publisher keeps under, the sampling window, and its own time limit. */
  soakDeliveries: number
  soakBacklog: number
  soakSampleMs: number
  soakTimeoutMs: number
}

/**
 * The sizes of a full or a `--quick` run.
 *
 * @example
 * sizesFor(true).deliveries // 2000
 */
export function sizesFor(quick: boolean): Sizes {
  const common = { concurrency: 50, batch: 100, publishLanes: 4, latencyRate: 500, slowSinkDelayMs: 500, httpConnections: 50 }
  if (quick)
    return {
      ...common,
      deliveries: 2_000,
      warmup: 1_000,
      warmupMs: 1_500,
      publishSingle: 1_000,
      publishMany: 5_000,
      latencyEvents: 1_500,
      latencyDrainMs: 10_000,
      storedEvents: 50_000,
      listRequests: 200,
      metricsEvents: 50_000,
      metricsDays: 30,
      metricsRequests: 100,
      pruneEvents: 50_000,
      pruneDayEvents: 20_000,
      pruneDayLive: 1_500,
      replayEvents: 20_000,
      backlog: 20_000,
      backlogSampleMs: 3_000,
      idleSampleMs: 1_500,
      httpSeconds: 5,
      scenarioTimeoutMs: 90_000,
      soakDeliveries: 50_000,
      soakBacklog: 2_000,
      soakSampleMs: 5_000,
      soakTimeoutMs: 300_000,
    }
  return {
    ...common,
    deliveries: 20_000,
    warmup: 1_000,
    warmupMs: 3_000,
    publishSingle: 20_000,
    publishMany: 100_000,
    latencyEvents: 10_000,
    latencyDrainMs: 30_000,
    storedEvents: 1_000_000,
    listRequests: 1_000,
    metricsEvents: 1_000_000,
    metricsDays: 30,
    metricsRequests: 500,
    pruneEvents: 1_000_000,
    pruneDayEvents: 260_000,
    pruneDayLive: 8_000,
    replayEvents: 100_000,
    backlog: 200_000,
    backlogSampleMs: 15_000,
    idleSampleMs: 5_000,
    httpSeconds: 20,
    scenarioTimeoutMs: 900_000,
    soakDeliveries: 1_000_000,
    soakBacklog: 5_000,
    soakSampleMs: 30_000,
    soakTimeoutMs: 3_600_000,
  }
}
