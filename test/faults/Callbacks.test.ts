/**
 * Callbacks that fail or die (SPEC §2.6, §6.3–6.4): queue callbacks (`onResolved`, `onRejected`), a pending
 * action's `reject`, and steering. The queue stays consistent and the error is reported — logged for queue
 * callbacks, returned to the caller for `apply`/`reject`.
 */
// node's strict deepStrictEqual: chai's treats Option.none() as equal to Option.some(x).
import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Exit, Fiber, Layer, Logger, Option, Ref, Stream } from "effect"
import { deepStrictEqual } from "node:assert/strict"
import {
  ApplyFailed,
  PendingActions,
  Preview,
  ResolveRuntime,
  ResolveTool,
  stage,
  StandingResolveHandler,
  SteeringBus,
  ToolChoiceQueue,
  ToolError,
  ToolResult
} from "../../src/index.js"
import { failureOf } from "../support/exits.js"

/** A session whose logger records every error message. */
const session = Effect.gen(function*() {
  const logged = yield* Ref.make<ReadonlyArray<string>>([])
  const logger = Logger.make(({ logLevel, message }) => {
    if (logLevel._tag === "Error") Effect.runSync(Ref.update(logged, (l) => [...l, String(message)]))
  })
  return { logged, layer: Layer.merge(ResolveRuntime.layer, Logger.replace(Logger.defaultLogger, logger)) }
})

const withSession = <A, E>(
  body: (logged: Ref.Ref<ReadonlyArray<string>>) => Effect.Effect<A, E, ResolveRuntime.Services>
) => Effect.flatMap(session, ({ layer, logged }) => Effect.provide(body(logged), layer))

const failing = {
  fail: Effect.fail("callback failed") as unknown as Effect.Effect<never>,
  die: Effect.die(new Error("callback died")),
  throw: Effect.sync((): never => {
    throw new Error("callback threw")
  })
}

describe("queue callbacks that fail or die", () => {
  for (const [kind, bad] of Object.entries(failing)) {
    it.effect(`onResolved that ${kind}s: reported, the turn still resolves and the queue moves on`, () =>
      withSession((logged) =>
        Effect.gen(function*() {
          const queue = yield* ToolChoiceQueue
          yield* queue.pushOnce("required", { label: "bad", onResolved: bad })
          yield* queue.pushOnce("auto", { label: "next" })
          yield* queue.nextToolChoice
          yield* queue.resolve
          assert.lengthOf(yield* Ref.get(logged), 1)
          assert.include((yield* Ref.get(logged))[0], "onResolved")
          deepStrictEqual(yield* queue.consumeLastServedLabel, Option.some("bad"))
          assert.isFalse(yield* queue.hasInFlight)
          deepStrictEqual(yield* queue.nextToolChoice, Option.some<"auto">("auto"))
        })
      ))

    it.effect(`onRejected that ${kind}s: reported, treated as "drop", the queue moves on`, () =>
      withSession((logged) =>
        Effect.gen(function*() {
          const queue = yield* ToolChoiceQueue
          yield* queue.pushOnce("required", { label: "bad", onRejected: () => bad })
          yield* queue.pushOnce("auto", { label: "next" })
          yield* queue.nextToolChoice
          yield* queue.reject("unavailable")
          assert.lengthOf(yield* Ref.get(logged), 1)
          assert.include((yield* Ref.get(logged))[0], "onRejected")
          deepStrictEqual(yield* queue.inspect, ["next"])
          // clear and removeByLabel report the same way.
          yield* queue.pushOnce("none", { label: "bad2", onRejected: () => bad })
          yield* queue.pushOnce("none", { label: "bad3", onRejected: () => bad })
          assert.strictEqual(yield* queue.removeByLabel("bad2"), 1)
          yield* queue.clear
          assert.lengthOf(yield* Ref.get(logged), 3)
          deepStrictEqual(yield* queue.inspect, [])
        })
      ))
  }

  it.effect("onRejected that throws before returning an Effect is reported and treated as drop", () =>
    withSession((logged) =>
      Effect.gen(function*() {
        const queue = yield* ToolChoiceQueue
        yield* queue.pushOnce("required", {
          label: "bad",
          onRejected: () => {
            throw new Error("not even an Effect")
          }
        })
        yield* queue.nextToolChoice
        yield* queue.reject("aborted")
        assert.lengthOf(yield* Ref.get(logged), 1)
        deepStrictEqual(yield* queue.inspect, [])
      })
    ))

  it.effect("an invoker that dies is not marked invoked: the turn ends with not_invoked and the value requeues", () =>
    withSession(() =>
      Effect.gen(function*() {
        const queue = yield* ToolChoiceQueue
        const reasons: Array<string> = []
        yield* queue.pushOnce({ type: "tool", name: "resolve" }, {
          label: "p",
          onInvoked: () => Effect.die("handler died"),
          onRejected: (reason) => Effect.sync(() => (reasons.push(reason), "requeue" as const))
        })
        yield* queue.nextToolChoice
        const exit = yield* Effect.exit(ResolveTool.execute({ action: "apply", reason: "go" }))
        assert.isTrue(Exit.isFailure(exit) && Cause.isDie(exit.cause))
        yield* queue.resolve
        deepStrictEqual(reasons, ["not_invoked"])
        deepStrictEqual(yield* queue.inspect, ["p"])
      })
    ))
})

describe("pending-action callbacks that fail or die", () => {
  it.effect("a reject callback failing with ToolError: the error reaches the model, the action stays pending", () =>
    withSession(() =>
      Effect.gen(function*() {
        const queue = yield* ToolChoiceQueue
        const bus = yield* SteeringBus
        let fail = true
        const handle = yield* stage({
          label: "Edit",
          sourceToolName: "edit",
          apply: () => Effect.succeed(ToolResult.text("applied")),
          reject: () =>
            fail ?
              Effect.fail(new ToolError({ message: "could not restore the backup" })) :
              Effect.succeed(Option.none())
        })
        yield* bus.drain
        yield* queue.nextToolChoice
        const exit = yield* Effect.exit(ResolveTool.execute({ action: "discard", reason: "no" }))
        deepStrictEqual(exit, Exit.fail(new ToolError({ message: "could not restore the backup" })))
        assert.strictEqual(yield* handle.status, "pending")
        assert.lengthOf(yield* bus.drain, 1, "the reminder is steered again")
        yield* queue.resolve
        deepStrictEqual(yield* queue.inspect, ["pending-action:edit"])
        fail = false
        yield* queue.nextToolChoice
        const result = yield* ResolveTool.execute({ action: "discard", reason: "no" })
        assert.strictEqual(ToolResult.textOf(result), "Discarded: Edit. Reason: no")
        assert.strictEqual(yield* handle.status, "discarded")
      })
    ))

  it.effect("a reject callback that dies: a ToolError saying the discard failed, the action stays pending", () =>
    withSession(() =>
      Effect.gen(function*() {
        const queue = yield* ToolChoiceQueue
        const handle = yield* stage({
          label: "Edit",
          sourceToolName: "edit",
          apply: () => Effect.succeed(ToolResult.text("applied")),
          reject: () => Effect.die(new Error("reject died"))
        })
        yield* queue.nextToolChoice
        const exit = yield* Effect.exit(ResolveTool.execute({ action: "discard", reason: "no" }))
        deepStrictEqual(
          exit,
          Exit.fail(
            new ToolError({
              message:
                "Discard failed: reject died. The pending action \"Edit\" is still pending; call resolve with action " +
                "\"discard\" again to retry."
            })
          )
        )
        assert.strictEqual(yield* handle.status, "pending")
        yield* queue.resolve
        yield* queue.nextToolChoice
        yield* ResolveTool.execute({ action: "apply", reason: "apply instead" })
        assert.strictEqual(yield* handle.status, "applied")
      })
    ))

  for (
    const [name, failure, detail] of [
      ["a string", Effect.fail("disk full"), "disk full"],
      ["an object without message", Effect.fail({ code: 28 }), "{\"code\":28}"],
      ["a defect", Effect.die(new RangeError("out of range")), "out of range"],
      ["an empty Error", Effect.fail(new Error("")), "Error"],
      [
        "a null-prototype object holding a bigint",
        Effect.fail(Object.assign(Object.create(null), { n: 1n })),
        "{\"n\":1n}"
      ],
      [
        "an object whose message getter throws",
        Effect.fail({
          get message(): string {
            throw new Error("no message for you")
          }
        }),
        "{\"message\":[unreadable]}"
      ],
      ["a symbol", Effect.die(Symbol("gone")), "Symbol(gone)"]
    ] as const
  ) {
    it.effect(`apply failing with ${name} becomes ApplyFailed with a message; the action stays pending`, () =>
      withSession(() =>
        Effect.gen(function*() {
          const queue = yield* ToolChoiceQueue
          const handle = yield* stage({
            label: "Migrate",
            sourceToolName: "migrate",
            apply: () => failure as Effect.Effect<never, unknown>
          })
          yield* queue.nextToolChoice
          const error = yield* Effect.flip(ResolveTool.execute({ action: "apply", reason: "go" }))
          assert.strictEqual(error._tag, "ApplyFailed")
          assert.strictEqual(error.message, `Apply failed: ${detail}`)
          assert.strictEqual(yield* handle.status, "pending")
        })
      ))
  }

  it.effect("a failure value effect cannot print is kept behind an UnprintableFailure, so the error stays printable", () =>
    withSession(() =>
      Effect.gen(function*() {
        const queue = yield* ToolChoiceQueue
        const value = Object.assign(Object.create(null), { n: 1n })
        yield* stage({ label: "X", sourceToolName: "x", apply: () => Effect.fail(value) })
        yield* queue.nextToolChoice
        const exit = yield* Effect.exit(ResolveTool.execute({ action: "apply", reason: "go" }))
        const error = failureOf(exit)
        assert.instanceOf(error, ApplyFailed)
        if (!(error instanceof ApplyFailed)) return
        assert.instanceOf(error.cause, Preview.UnprintableFailure)
        assert.strictEqual((error.cause as Preview.UnprintableFailure).original, value)
        assert.strictEqual((error.cause as Error).message, "{\"n\":1n}")
        // effect's own printer (and so a rejected Effect.runPromise) works on it.
        assert.include(Cause.pretty(Exit.isFailure(exit) ? exit.cause : Cause.empty), "Apply failed: {\"n\":1n}")
        const rejected = yield* Effect.promise(() =>
          Effect.runPromise(Effect.fail(error)).then(() => undefined, (thrown: unknown) => thrown)
        )
        assert.include(String(rejected), "Apply failed")
      })
    ))

  it.effect("a circular failure value still gives ApplyFailed with a message", () =>
    withSession(() =>
      Effect.gen(function*() {
        const queue = yield* ToolChoiceQueue
        const circular: Record<string, unknown> = {}
        circular.self = circular
        yield* stage({ label: "X", sourceToolName: "x", apply: () => Effect.fail(circular) })
        yield* queue.nextToolChoice
        const error = yield* Effect.flip(ResolveTool.execute({ action: "apply", reason: "go" }))
        assert.strictEqual(error._tag, "ApplyFailed")
        assert.isAbove(error.message.length, "Apply failed: ".length)
      })
    ))

  it.effect("a standing handler that dies leaves the slot installed for the next call", () =>
    withSession(() =>
      Effect.gen(function*() {
        const standing = yield* StandingResolveHandler
        let die = true
        yield* standing.set(() => die ? Effect.die("standing died") : Effect.succeed(ToolResult.text("plan approved")))
        const exit = yield* Effect.exit(ResolveTool.execute({ action: "apply", reason: "go" }))
        assert.isTrue(Exit.isFailure(exit) && Cause.isDie(exit.cause))
        die = false
        assert.strictEqual(
          ToolResult.textOf(yield* ResolveTool.execute({ action: "apply", reason: "go" })),
          "plan approved"
        )
      })
    ))
})

describe("steering faults", () => {
  it.live("a failing observer of the steering stream does not affect steering or staging", () =>
    withSession(() =>
      Effect.gen(function*() {
        const bus = yield* SteeringBus
        const queue = yield* ToolChoiceQueue
        const subscription = yield* bus.subscribe
        const observer = yield* Effect.fork(Stream.runForEach(subscription, () => Effect.die("observer crashed")))
        yield* Effect.yieldNow()
        yield* stage({
          label: "Edit",
          sourceToolName: "edit",
          apply: () => Effect.succeed(ToolResult.text("ok"))
        })
        yield* stage({
          label: "Edit 2",
          sourceToolName: "edit",
          apply: () => Effect.succeed(ToolResult.text("ok"))
        })
        yield* Effect.yieldNow()
        assert.lengthOf(yield* bus.pending, 2)
        deepStrictEqual(yield* queue.inspect, ["pending-action:edit", "pending-action:edit"])
        const observed = yield* Fiber.await(observer).pipe(Effect.timeout("5 seconds"))
        assert.isTrue(Exit.isFailure(observed) && Cause.isDie(observed.cause), "the observer's own failure is its own")
      }).pipe(Effect.scoped)
    ))

  it.effect("a steering bus that dies: staging reports the defect, and the pushed directive stays resolvable", () =>
    Effect.gen(function*() {
      const queue = yield* ToolChoiceQueue
      const exit = yield* Effect.exit(stage({
        label: "Edit",
        sourceToolName: "edit",
        apply: () => Effect.succeed(ToolResult.text("applied"))
      }))
      assert.isTrue(Exit.isFailure(exit) && Cause.isDie(exit.cause))
      // Push first, steer second: the directive is queued, so the action is not lost.
      deepStrictEqual(yield* queue.inspect, ["pending-action:edit"])
      yield* queue.nextToolChoice
      const result = yield* ResolveTool.execute({ action: "apply", reason: "go" })
      assert.strictEqual(ToolResult.textOf(result), "applied")
    }).pipe(
      Effect.provide(
        PendingActions.layer().pipe(
          Layer.provideMerge(Layer.mergeAll(
            ToolChoiceQueue.layer,
            StandingResolveHandler.layer,
            Layer.succeed(SteeringBus, {
              steer: () => Effect.die(new Error("steering is down")),
              drain: Effect.succeed([]),
              pending: Effect.succeed([]),
              messages: Stream.empty,
              subscribe: Effect.succeed(Stream.empty)
            } as SteeringBus.Service)
          ))
        )
      )
    ))
})
