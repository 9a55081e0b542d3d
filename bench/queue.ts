/**
 * Queue cycle benchmark: `pushOnce → nextToolChoice → resolve` at several queue depths, for tail pushes and for
 * `now: true` pushes (the preview path), against the Effect floor and the plain baseline.
 */
import * as Effect from "effect/Effect"
import { ToolChoice, ToolChoiceQueue } from "../dist/index.js"
import { compareMedians } from "./harness.js"
import { PlainQueue } from "./PlainQueue.js"

const choice = ToolChoice.forceTool("resolve")

/**
 * The Effect floor: `steps` `Effect.sync` calls per cycle over a mutable array inside one `Effect.gen`, the least
 * any Effect-based API can cost for that many calls.
 */
export const floorProgram = (cycles: number, steps: number) =>
  Effect.gen(function*() {
    const items: Array<number> = []
    let last = 0
    for (let i = 0; i < cycles; i++) {
      yield* Effect.sync(() => items.push(i))
      for (let s = 2; s < steps; s++) yield* Effect.sync(() => items.length)
      yield* Effect.sync(() => {
        last = items.pop()!
      })
    }
    return last
  })

/** What an app writes: one Effect program calling the queue's public API. */
const cycleProgram = (cycles: number, now: boolean) =>
  Effect.gen(function*() {
    const queue = yield* ToolChoiceQueue
    const options = { label: "bench", now }
    for (let i = 0; i < cycles; i++) {
      yield* queue.pushOnce(choice, options)
      yield* queue.nextToolChoice
      yield* queue.resolve
    }
  })

export interface CycleFigures {
  readonly depth: number
  readonly now: boolean
  readonly queue: number
  readonly floor: number
  readonly plain: number
}

/**
 * One queue-cycle figure: the queue holds `depth - 1` other directives, so a cycle runs at depth `depth`.
 *
 * Each subject's queue is filled once, before its warm-up run, and reused by every timed run: a cycle pushes one
 * directive and serves one, so the depth stays `depth`. (Refilling it before each timed run charged that run with
 * the garbage collector promoting the freshly built directives, a one-off cost proportional to the depth: about
 * +40% per cycle at depth 10 000 over 20 000 cycles, +12% over 100 000, nothing to do with the cost of a cycle.)
 */
export const queueCycle = (depth: number, now: boolean, cycles: number, repeats: number): CycleFigures => {
  let service: ToolChoiceQueue.Service | undefined
  let plain: PlainQueue | undefined
  const floor = floorProgram(cycles, 3)
  const program = cycleProgram(cycles, now)
  const [queue, floorTime, plainTime] = compareMedians(
    [
      {
        prepare: () => {
          if (service !== undefined) return
          service = Effect.runSync(Effect.provide(ToolChoiceQueue, ToolChoiceQueue.layer))
          Effect.runSync(Effect.forEach(
            Array.from({ length: depth - 1 }, (_, i) => i),
            () => service!.pushOnce("auto", { label: "background" }),
            { discard: true }
          ))
        },
        run: () => Effect.runSync(Effect.provideService(program, ToolChoiceQueue, service!))
      },
      { run: () => Effect.runSync(floor) },
      {
        prepare: () => {
          if (plain !== undefined) return
          plain = new PlainQueue()
          for (let i = 0; i < depth - 1; i++) plain.pushOnce("auto", { label: "background" })
        },
        run: () => {
          const options = { label: "bench", now }
          for (let i = 0; i < cycles; i++) {
            plain!.pushOnce(choice, options)
            plain!.nextToolChoice()
            plain!.resolve()
          }
        }
      }
    ],
    cycles,
    repeats
  )
  return { depth, now, queue: queue!, floor: floorTime!, plain: plainTime! }
}
