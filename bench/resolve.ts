/**
 * Resolve round trip: a producer stages a preview (`stage`: push + reminder), the turn serves the
 * forced `resolve`, the model's `resolve` call goes through `ResolveTool.execute` (decode → look up → no-op apply →
 * merge details), the turn ends and the driver drains the steering bus. Also the memory figures.
 */
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Runtime from "effect/Runtime"
import * as Scope from "effect/Scope"
import {
  ResolveRuntime,
  ResolveTool,
  stage,
  SteeringBus,
  ToolChoice,
  ToolChoiceQueue,
  ToolResult
} from "../dist/index.js"
import { compareMedians, settledHeap } from "./harness.js"
import { PlainQueue } from "./PlainQueue.js"

const applied = ToolResult.text("Applied.", { files: 1 })
const spec = {
  label: "Edit: 1 replacement in 1 file",
  sourceToolName: "edit",
  apply: () => Effect.succeed(applied)
}

/** What an app writes for `cycles` previews, each resolved by the model in the next turn. */
export const roundTripProgram = (cycles: number) =>
  Effect.gen(function*() {
    const queue = yield* ToolChoiceQueue
    const bus = yield* SteeringBus
    for (let i = 0; i < cycles; i++) {
      yield* stage(spec)
      yield* bus.drain
      yield* queue.nextToolChoice
      // A fresh object per call, as the model's JSON would be.
      yield* ResolveTool.execute({ action: "apply", reason: "The diff matches the request." })
      yield* queue.resolve
    }
  })

/** One session: the runtime of a fresh `ResolveRuntime.layer`, built synchronously, and a way to close it. */
export const session = () => {
  const scope = Effect.runSync(Scope.make())
  const runtime = Effect.runSync(Layer.toRuntime(ResolveRuntime.layer).pipe(Scope.extend(scope)))
  return {
    runSync: <A, E>(effect: Effect.Effect<A, E, ResolveRuntime.Services>) => Runtime.runSync(runtime)(effect),
    runSyncExit: <A, E>(effect: Effect.Effect<A, E, ResolveRuntime.Services>) => Runtime.runSyncExit(runtime)(effect),
    dispose: () => Effect.runSync(Scope.close(scope, Exit.void))
  }
}

const plainApply = () => applied

/** The plain equivalent: plain queue, hand-written validation, closure invoker, details merge. */
const plainRoundTrip = (queue: PlainQueue, steering: Array<unknown>, cycles: number) => {
  for (let i = 0; i < cycles; i++) {
    let status = "pending"
    const invoke = (input: unknown) => {
      if (typeof input !== "object" || input === null) throw new Error("(root) must be an object")
      const { action, reason, extra, ...rest } = input as Record<string, unknown>
      if (action !== "apply" && action !== "discard") throw new Error("action must be apply or discard")
      if (typeof reason !== "string" || reason.trim() === "") throw new Error("reason is required")
      if (Object.keys(rest).length > 0) throw new Error("unexpected key")
      if (status !== "pending") throw new Error("already resolved")
      status = "resolving"
      const result = plainApply()
      status = "applied"
      return {
        ...result,
        details: {
          action,
          reason,
          ...(extra === undefined ? {} : { extra }),
          sourceToolName: "edit",
          label: spec.label
        }
      }
    }
    queue.pushOnce(ToolChoice.forceTool("resolve"), {
      label: "pending-action:edit",
      now: true,
      onRejected: () => status === "pending" ? "requeue" : "drop",
      onInvoked: () => undefined
    })
    steering.push({ customType: "resolve-reminder", content: "reminder", details: { toolName: "edit" } })
    steering.length = 0
    queue.nextToolChoice()
    const invoker = queue.peekInFlightInvoker()!
    invoker()
    invoke({ action: "apply", reason: "The diff matches the request." })
    queue.resolve()
  }
}

export const resolveRoundTrip = (cycles: number, repeats: number, floor: Effect.Effect<unknown>) => {
  let rt = session()
  const program = roundTripProgram(cycles)
  let plain = new PlainQueue()
  const steering: Array<unknown> = []
  const [value, floorTime, plainTime] = compareMedians(
    [
      {
        prepare: () => {
          rt.dispose()
          rt = session()
        },
        run: () => {
          const exit = rt.runSyncExit(program)
          if (Exit.isFailure(exit)) throw new Error(String(exit.cause))
        }
      },
      { run: () => Effect.runSync(floor) },
      {
        prepare: () => {
          plain = new PlainQueue()
        },
        run: () => plainRoundTrip(plain, steering, cycles)
      }
    ],
    cycles,
    repeats
  )
  rt.dispose()
  return { value: value!, floor: floorTime!, plain: plainTime! }
}

/** Retained heap per staged, unresolved pending action (median over `repeats` sessions of `count` actions). */
export const retainedPerAction = (count: number, repeats: number) => {
  const samples: Array<number> = []
  const plainSamples: Array<number> = []
  // Retained = what letting go of the staged actions frees: heap with them, minus heap once they are released.
  // (A baseline taken before staging also counts garbage of earlier sections that is freed meanwhile.)
  for (let r = 0; r < repeats; r++) {
    let rt: ReturnType<typeof session> | undefined = session()
    rt.runSync(Effect.gen(function*() {
      const bus = yield* SteeringBus
      for (let i = 0; i < count; i++) {
        yield* stage(spec)
        yield* bus.drain
      }
    }))
    const held = settledHeap()
    rt.dispose()
    rt = undefined
    samples.push((held - settledHeap()) / count)

    let plain: PlainQueue | undefined = new PlainQueue()
    for (let i = 0; i < count; i++) {
      let status = "pending"
      plain.pushOnce(ToolChoice.forceTool("resolve"), {
        label: "pending-action:edit",
        now: true,
        onRejected: () => status === "pending" ? "requeue" : "drop",
        onInvoked: () => (status = "applied")
      })
    }
    if (plain.inspect().length !== count) throw new Error("plain queue lost actions")
    const plainHeld = settledHeap()
    plain = undefined
    plainSamples.push((plainHeld - settledHeap()) / count)
  }
  return { samples, plainSamples }
}

/**
 * Heap after `segments` segments of `perSegment` stage/resolve cycles on one session, after a warm-up segment:
 * a flat series means nothing is retained per cycle.
 */
export const heapGrowth = (segments: number, perSegment: number) => {
  const rt = session()
  const segment = roundTripProgram(perSegment)
  rt.runSync(segment)
  const heaps = [settledHeap()]
  for (let i = 0; i < segments; i++) {
    rt.runSync(segment)
    heaps.push(settledHeap())
  }
  rt.dispose()
  return heaps
}
