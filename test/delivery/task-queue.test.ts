import { describe, expect, it } from 'vitest'
import { TaskQueue } from '../../src/delivery/task-queue.js'

/** A task that runs until `finish()`; `started` says whether it began. */
function gate<T>(value: T) {
  let finish!: () => void
  const done = new Promise<void>((resolve) => (finish = resolve))
  const task = { started: false, finish, run: async () => ((task.started = true), await done, value) }
  return task
}

const settle = () => new Promise((resolve) => setImmediate(resolve))

describe('TaskQueue', () => {
  it('runs at most `concurrency` tasks at a time, starting the next as one ends', async () => {
    const queue = new TaskQueue(2)
    const tasks = [gate(1), gate(2), gate(3)]
    const results = tasks.map((t) => queue.add(t.run))
    expect(tasks.map((t) => t.started)).toEqual([true, true, false])
    expect([queue.pending, queue.size]).toEqual([2, 1])
    tasks[1]!.finish()
    await settle()
    expect(tasks[2]!.started).toBe(true)
    for (const t of tasks) t.finish()
    expect(await Promise.all(results)).toEqual([1, 2, 3])
    expect([queue.pending, queue.size]).toEqual([0, 0])
  })

  it('starts waiting tasks by priority, higher first, then in the order they were added', async () => {
    const queue = new TaskQueue(1)
    const order: string[] = []
    const first = gate(undefined)
    void queue.add(first.run)
    const added = [
      ['replay 1', -1],
      ['live 1', 0],
      ['replay 2', -1],
      ['urgent', 5],
      ['live 2', 0],
    ] as const
    const all = added.map(([name, priority]) => queue.add(() => void order.push(name), { priority }))
    first.finish()
    await Promise.all(all)
    expect(order).toEqual(['urgent', 'live 1', 'live 2', 'replay 1', 'replay 2'])
  })

  it('passes a task failure to its caller and frees the slot', async () => {
    const queue = new TaskQueue(1)
    const failed = queue.add(async () => {
      throw new Error('boom')
    })
    const next = queue.add(() => 'next')
    await expect(failed).rejects.toThrow('boom')
    expect(await next).toBe('next')
  })

  it('calls back and resolves onIdle once the last task ends with none waiting', async () => {
    let idle = 0
    const queue = new TaskQueue(1, () => idle++)
    await queue.onIdle()
    const a = gate('a')
    const b = gate('b')
    void queue.add(a.run)
    void queue.add(b.run)
    let resolved = false
    void queue.onIdle().then(() => (resolved = true))
    a.finish()
    await settle()
    expect([idle, resolved]).toEqual([0, false])
    b.finish()
    await settle()
    expect([idle, resolved]).toEqual([1, true])
  })

  it('drops the waiting tasks on clear() while the running ones finish', async () => {
    const queue = new TaskQueue(1)
    const running = gate('running')
    const waiting = gate('waiting')
    const result = queue.add(running.run)
    void queue.add(waiting.run)
    queue.clear()
    expect(queue.size).toBe(0)
    running.finish()
    expect(await result).toBe('running')
    await queue.onIdle()
    expect(waiting.started).toBe(false)
  })

  it('keeps a long queue in order while it is worked through', async () => {
    const queue = new TaskQueue(3)
    const order: number[] = []
    await Promise.all(Array.from({ length: 5_000 }, (_, i) => queue.add(async () => void order.push(i))))
    expect(order).toEqual(Array.from({ length: 5_000 }, (_, i) => i))
  })
})
