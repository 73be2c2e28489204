/** Tasks of one priority, first in first out. */
interface Lane {
  priority: number
  tasks: (() => void)[]
  head: number
}

/**
 * Runs at most `concurrency` tasks at a time; waiting ones start by priority (higher first), then in the order
 * they were added. The subset of p-queue the worker uses, without its per-task bookkeeping (ids, events,
 * timeouts), which at two queues per delivery cost more than the rest of the worker's scheduling.
 *
 * @example
 * const queue = new TaskQueue(50)
 * await queue.add(() => attempt(delivery), { priority: -1 })
 */
export class TaskQueue {
  readonly #concurrency: number
  readonly #idle?: () => void
  /** By priority, highest first. */
  #lanes: Lane[] = []
  #running = 0
  #size = 0
  #idleWaiters: (() => void)[] = []

  /** `idle` is called each time the last task running ends with none waiting. */
  constructor(concurrency: number, idle?: () => void) {
    this.#concurrency = concurrency
    this.#idle = idle
  }

  /** Tasks running. */
  get pending(): number {
    return this.#running
  }

  /** Tasks waiting to start. */
  get size(): number {
    return this.#size
  }

  /** Run `task` when a slot is free (at once if one is); settles as it does. Never settles if cleared before it starts. */
  add<T>(task: () => Promise<T> | T, { priority = 0 }: { priority?: number } = {}): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const run = async () => {
        this.#running++
        try {
          resolve(await task())
        } catch (err) {
          reject(err)
        } finally {
          this.#running--
          this.#next()
        }
      }
      if (this.#running < this.#concurrency && this.#size === 0) void run()
      else this.#enqueue(run, priority)
    })
  }

  /** Drop the tasks waiting to start (running ones go on). */
  clear(): void {
    this.#lanes = []
    this.#size = 0
  }

  /** Resolves once no task is running or waiting. */
  onIdle(): Promise<void> {
    if (this.#running === 0 && this.#size === 0) return Promise.resolve()
    return new Promise((resolve) => this.#idleWaiters.push(resolve))
  }

  #enqueue(run: () => void, priority: number): void {
    let lane = this.#lanes.find((l) => l.priority === priority)
    if (!lane) {
      lane = { priority, tasks: [], head: 0 }
      this.#lanes.push(lane)
      this.#lanes.sort((a, b) => b.priority - a.priority)
    }
    lane.tasks.push(run)
    this.#size++
  }

  #next(): void {
    while (this.#running < this.#concurrency && this.#size > 0) this.#dequeue()()
    if (this.#running > 0 || this.#size > 0) return
    this.#idle?.()
    const waiters = this.#idleWaiters
    this.#idleWaiters = []
    for (const resolve of waiters) resolve()
  }

  #dequeue(): () => void {
    const lane = this.#lanes.find((l) => l.head < l.tasks.length)!
    const run = lane.tasks[lane.head]!
    lane.tasks[lane.head++] = undefined as unknown as () => void
    // Drop the started ones once they are most of the array, so a long queue does not keep them.
    if (lane.head === lane.tasks.length) {
      lane.tasks = []
      lane.head = 0
    } else if (lane.head > 1024 && lane.head * 2 > lane.tasks.length) {
      lane.tasks = lane.tasks.slice(lane.head)
      lane.head = 0
    }
    this.#size--
    return run
  }
}
