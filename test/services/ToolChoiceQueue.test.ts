import { assert, describe, it } from "@effect/vitest"
import { deepStrictEqual } from "@effect/vitest/utils"
import { Deferred, Effect, Either, Fiber, Option, Ref } from "effect"
import {
  EmptyDirective,
  type PushOptions,
  type RejectDecision,
  type RejectReason,
  ResolveRuntime,
  ToolChoice,
  ToolChoiceQueue,
  ToolResult
} from "../../src/index.js"

const tool = (name: string) => ToolChoice.forceTool(name)

/** Serves the next value and ends its turn successfully. */
const turn = Effect.gen(function*() {
  const queue = yield* ToolChoiceQueue
  const choice = yield* queue.nextToolChoice
  yield* queue.resolve
  return choice
})

/** Serves every remaining value (resolving each turn) and returns them. */
const serveAll = Effect.gen(function*() {
  const served: Array<ToolChoice.ToolChoice> = []
  for (;;) {
    const choice = yield* turn
    if (Option.isNone(choice)) return served
    served.push(choice.value)
  }
})

/** Options whose callbacks record into `log` (as "<tag>:resolved" / "<tag>:<reason>"). */
const recording = (
  log: Ref.Ref<ReadonlyArray<string>>,
  tag: string,
  decide: (reason: RejectReason) => RejectDecision = () => "drop"
): PushOptions => ({
  label: tag,
  onResolved: Ref.update(log, (l) => [...l, `${tag}:resolved`]),
  onRejected: (reason) => Effect.as(Ref.update(log, (l) => [...l, `${tag}:${reason}`]), decide(reason))
})

describe("ToolChoiceQueue", () => {
  describe("push (§2.1)", () => {
    it.effect("appends, and `now` prepends", () =>
      Effect.gen(function*() {
        const queue = yield* ToolChoiceQueue
        yield* queue.pushOnce(tool("a"), { label: "a" })
        yield* queue.pushOnce(tool("b"), { label: "b" })
        yield* queue.pushOnce(tool("c"), { label: "c", now: true })
        yield* queue.pushOnce("required", { label: "d" })
        deepStrictEqual(yield* queue.inspect, ["c", "a", "b", "d"])
        deepStrictEqual(yield* serveAll, [tool("c"), tool("a"), tool("b"), "required"])
      }).pipe(Effect.provide(ResolveRuntime.layer)))

    it.effect("does not de-duplicate equal directives", () =>
      Effect.gen(function*() {
        const queue = yield* ToolChoiceQueue
        const first = yield* queue.pushOnce(tool("search"), { label: "must-search" })
        const second = yield* queue.pushOnce(tool("search"), { label: "must-search" })
        assert.notStrictEqual(first, second)
        deepStrictEqual(yield* queue.inspect, ["must-search", "must-search"])
        deepStrictEqual(yield* serveAll, [tool("search"), tool("search")])
      }).pipe(Effect.provide(ResolveRuntime.layer)))

    it.effect("labels default to \"anonymous\" and every push gets a fresh id", () =>
      Effect.gen(function*() {
        const queue = yield* ToolChoiceQueue
        const ids = [
          yield* queue.pushOnce("auto"),
          yield* queue.push(["none", "auto"]),
          yield* queue.pushSequence(["required"])
        ]
        assert.strictEqual(new Set(ids).size, 3)
        deepStrictEqual(yield* queue.inspect, ["anonymous", "anonymous", "anonymous"])
        yield* queue.nextToolChoice
        const info = yield* queue.inFlight
        assert.isTrue(Option.isSome(info))
        assert.strictEqual(Option.getOrThrow(info).id, ids[0])
      }).pipe(Effect.provide(ResolveRuntime.layer)))

    it.effect("push accepts any iterable, served in order", () =>
      Effect.gen(function*() {
        const queue = yield* ToolChoiceQueue
        const choices = new Set<ToolChoice.ToolChoice>(["required", "auto"])
        yield* queue.push(choices, { label: "set" })
        deepStrictEqual(yield* serveAll, ["required", "auto"])
      }).pipe(Effect.provide(ResolveRuntime.layer)))

    it.effect("empty choices fail with EmptyDirective and change nothing", () =>
      Effect.gen(function*() {
        const queue = yield* ToolChoiceQueue
        yield* queue.pushOnce(tool("a"), { label: "a" })
        yield* queue.nextToolChoice
        yield* queue.pushOnce(tool("b"), { label: "b" })
        const before = { queued: yield* queue.inspect, inFlight: yield* queue.inFlight }
        const pushed = yield* Effect.either(queue.push([], { label: "nothing" }))
        const sequenced = yield* Effect.either(queue.pushSequence([], { now: true }))
        assert.isTrue(Either.isLeft(pushed))
        assert.instanceOf(Either.getLeft(pushed).pipe(Option.getOrThrow), EmptyDirective)
        assert.strictEqual(Option.getOrThrow(Either.getLeft(pushed)).label, "nothing")
        assert.strictEqual(Option.getOrThrow(Either.getLeft(sequenced)).label, "anonymous")
        deepStrictEqual({ queued: yield* queue.inspect, inFlight: yield* queue.inFlight }, before)
        yield* queue.resolve
        deepStrictEqual(yield* serveAll, [tool("b")])
      }).pipe(Effect.provide(ResolveRuntime.layer)))
  })

  describe("nextToolChoice (§2.2)", () => {
    it.effect("an empty queue serves none and puts nothing in flight", () =>
      Effect.gen(function*() {
        const queue = yield* ToolChoiceQueue
        assert.isTrue(Option.isNone(yield* queue.nextToolChoice))
        assert.isFalse(yield* queue.hasInFlight)
        assert.isTrue(Option.isNone(yield* queue.inFlight))
      }).pipe(Effect.provide(ResolveRuntime.layer)))

    it.effect("serves a sequence one value per turn; the directive leaves the queue with its last value", () =>
      Effect.gen(function*() {
        const queue = yield* ToolChoiceQueue
        yield* queue.pushSequence([tool("plan"), tool("edit")], { label: "seq" })
        yield* queue.pushOnce("auto", { label: "after" })
        deepStrictEqual(yield* queue.nextToolChoice, Option.some(tool("plan")))
        assert.isTrue(yield* queue.hasInFlight)
        deepStrictEqual(yield* queue.inspect, ["seq", "after"])
        yield* queue.resolve
        deepStrictEqual(yield* queue.nextToolChoice, Option.some(tool("edit")))
        // Exhausted: gone from the queue while its last value is still in flight.
        deepStrictEqual(yield* queue.inspect, ["after"])
        yield* queue.resolve
        deepStrictEqual(yield* queue.nextToolChoice, Option.some("auto" as const))
        deepStrictEqual(yield* queue.inspect, [])
      }).pipe(Effect.provide(ResolveRuntime.layer)))

    it.effect("reports the in-flight value, id, label and requeue count", () =>
      Effect.gen(function*() {
        const queue = yield* ToolChoiceQueue
        const id = yield* queue.pushOnce(tool("x"), { label: "lx" })
        yield* queue.nextToolChoice
        deepStrictEqual(
          yield* queue.inFlight,
          Option.some({ id, label: "lx", choice: tool("x"), requeues: 0, invoked: false })
        )
      }).pipe(Effect.provide(ResolveRuntime.layer)))

    it.effect("a second call while a value is in flight rejects it with \"error\" first; drop moves on", () =>
      Effect.gen(function*() {
        const queue = yield* ToolChoiceQueue
        const log = yield* Ref.make<ReadonlyArray<string>>([])
        const seen = yield* Ref.make<ReadonlyArray<boolean>>([])
        yield* queue.pushOnce(tool("a"), {
          label: "a",
          onRejected: (reason) =>
            Effect.gen(function*() {
              yield* Ref.update(log, (l) => [...l, `a:${reason}`])
              // The slot is already cleared when the callback runs.
              yield* Ref.update(seen, (s) => [...s, false])
              return "drop" as const
            })
        })
        yield* queue.pushOnce(tool("b"), recording(log, "b"))
        yield* queue.nextToolChoice
        deepStrictEqual(yield* queue.nextToolChoice, Option.some(tool("b")))
        deepStrictEqual(yield* Ref.get(log), ["a:error"])
        assert.strictEqual(Option.getOrThrow(yield* queue.inFlight).label, "b")
      }).pipe(Effect.provide(ResolveRuntime.layer)))

    it.effect("a second call while a value is in flight: a requeue decision serves the same value again", () =>
      Effect.gen(function*() {
        const queue = yield* ToolChoiceQueue
        const log = yield* Ref.make<ReadonlyArray<string>>([])
        const id = yield* queue.pushOnce(tool("a"), recording(log, "a", () => "requeue"))
        yield* queue.pushOnce(tool("b"), { label: "b" })
        yield* queue.nextToolChoice
        deepStrictEqual(yield* queue.nextToolChoice, Option.some(tool("a")))
        deepStrictEqual(yield* Ref.get(log), ["a:error"])
        const info = Option.getOrThrow(yield* queue.inFlight)
        deepStrictEqual([info.id, info.label, info.requeues], [id, "a", 1])
        deepStrictEqual(yield* queue.inspect, ["b"])
      }).pipe(Effect.provide(ResolveRuntime.layer)))

    it.effect("a value served while another call is still rejecting its old value is not lost", () =>
      Effect.gen(function*() {
        const queue = yield* ToolChoiceQueue
        const log = yield* Ref.make<ReadonlyArray<string>>([])
        const entered = yield* Deferred.make<void>()
        const release = yield* Deferred.make<void>()
        yield* queue.pushOnce(tool("x"), {
          label: "x",
          onRejected: (reason) =>
            Effect.gen(function*() {
              yield* Ref.update(log, (l) => [...l, `x:${reason}`])
              yield* Deferred.succeed(entered, void 0)
              yield* Deferred.await(release)
              return "requeue" as const
            })
        })
        yield* queue.pushOnce(tool("y"), recording(log, "y"))
        yield* queue.nextToolChoice // x in flight
        const second = yield* Effect.fork(queue.nextToolChoice) // rejects x, waits in its callback
        yield* Deferred.await(entered)
        // Meanwhile another fiber serves: x is no longer in flight, so y is served.
        deepStrictEqual(yield* queue.nextToolChoice, Option.some(tool("y")))
        yield* Deferred.succeed(release, void 0)
        const served = yield* Fiber.join(second)
        // The requeued x is served, but y must not vanish silently: it is rejected with "error" first.
        deepStrictEqual(served, Option.some(tool("x")))
        deepStrictEqual(yield* Ref.get(log), ["x:error", "y:error"])
        assert.strictEqual(Option.getOrThrow(yield* queue.inFlight).label, "x")
      }).pipe(Effect.provide(ResolveRuntime.layer)))
  })

  describe("resolve (§2.3)", () => {
    it.effect("clears the slot, records the label read-once, then runs onResolved", () =>
      Effect.gen(function*() {
        const queue = yield* ToolChoiceQueue
        const observed = yield* Ref.make<Option.Option<{ inFlight: boolean; queued: ReadonlyArray<string> }>>(
          Option.none()
        )
        yield* queue.pushOnce(tool("a"), {
          label: "a",
          onResolved: Effect.gen(function*() {
            const inFlight = yield* queue.hasInFlight
            const queued = yield* queue.inspect
            yield* Ref.set(observed, Option.some({ inFlight, queued }))
          })
        })
        yield* queue.pushOnce(tool("b"), { label: "b" })
        yield* queue.nextToolChoice
        assert.isTrue(Option.isNone(yield* queue.consumeLastServedLabel))
        yield* queue.resolve
        deepStrictEqual(yield* Ref.get(observed), Option.some({ inFlight: false, queued: ["b"] }))
        assert.isFalse(yield* queue.hasInFlight)
        deepStrictEqual(yield* queue.consumeLastServedLabel, Option.some("a"))
        assert.isTrue(Option.isNone(yield* queue.consumeLastServedLabel))
      }).pipe(Effect.provide(ResolveRuntime.layer)))

    it.effect("with nothing in flight does nothing", () =>
      Effect.gen(function*() {
        const queue = yield* ToolChoiceQueue
        const log = yield* Ref.make<ReadonlyArray<string>>([])
        yield* queue.pushOnce(tool("a"), recording(log, "a"))
        yield* queue.resolve
        deepStrictEqual(yield* Ref.get(log), [])
        deepStrictEqual(yield* queue.inspect, ["a"])
        assert.isTrue(Option.isNone(yield* queue.consumeLastServedLabel))
      }).pipe(Effect.provide(ResolveRuntime.layer)))

    it.effect("the last served label is the latest resolved one", () =>
      Effect.gen(function*() {
        const queue = yield* ToolChoiceQueue
        yield* queue.pushOnce("auto", { label: "one" })
        yield* queue.pushOnce("auto", { label: "two" })
        yield* turn
        yield* turn
        deepStrictEqual(yield* queue.consumeLastServedLabel, Option.some("two"))
        assert.isTrue(Option.isNone(yield* queue.consumeLastServedLabel))
      }).pipe(Effect.provide(ResolveRuntime.layer)))

    it.effect("a directive with onInvoked resolved without invocation is rejected with not_invoked", () =>
      Effect.gen(function*() {
        const queue = yield* ToolChoiceQueue
        const log = yield* Ref.make<ReadonlyArray<string>>([])
        yield* queue.pushOnce(tool("resolve"), {
          ...recording(log, "p"),
          onInvoked: () => Effect.succeed(ToolResult.text("ok"))
        })
        yield* queue.nextToolChoice
        yield* queue.resolve
        deepStrictEqual(yield* Ref.get(log), ["p:not_invoked"])
        assert.isTrue(Option.isNone(yield* queue.consumeLastServedLabel))
        assert.isFalse(yield* queue.hasInFlight)
      }).pipe(Effect.provide(ResolveRuntime.layer)))

    it.effect("not_invoked may requeue: the directive is not consumed", () =>
      Effect.gen(function*() {
        const queue = yield* ToolChoiceQueue
        const id = yield* queue.pushOnce(tool("resolve"), {
          label: "p",
          onRejected: () => Effect.succeed("requeue"),
          onInvoked: () => Effect.succeed(ToolResult.text("ok"))
        })
        yield* queue.nextToolChoice
        yield* queue.resolve
        deepStrictEqual(yield* queue.inspect, ["p"])
        yield* queue.nextToolChoice
        const info = Option.getOrThrow(yield* queue.inFlight)
        deepStrictEqual([info.id, info.label, info.requeues, info.invoked], [id, "p", 1, false])
      }).pipe(Effect.provide(ResolveRuntime.layer)))

    it.effect("an invoked directive resolves normally", () =>
      Effect.gen(function*() {
        const queue = yield* ToolChoiceQueue
        const log = yield* Ref.make<ReadonlyArray<string>>([])
        yield* queue.pushOnce(tool("resolve"), {
          ...recording(log, "p"),
          onInvoked: (call) => Effect.succeed(ToolResult.text(call.reason))
        })
        yield* queue.nextToolChoice
        const invoker = Option.getOrThrow(yield* queue.peekInFlightInvoker)
        const result = yield* invoker({ action: "apply", reason: "why" })
        assert.strictEqual(ToolResult.textOf(result), "why")
        assert.isTrue(Option.getOrThrow(yield* queue.inFlight).invoked)
        yield* queue.resolve
        deepStrictEqual(yield* Ref.get(log), ["p:resolved"])
        deepStrictEqual(yield* queue.consumeLastServedLabel, Option.some("p"))
      }).pipe(Effect.provide(ResolveRuntime.layer)))

    it.effect("a failed invocation does not count as invoked", () =>
      Effect.gen(function*() {
        const queue = yield* ToolChoiceQueue
        const log = yield* Ref.make<ReadonlyArray<string>>([])
        yield* queue.pushOnce(tool("resolve"), {
          ...recording(log, "p"),
          onInvoked: () => Effect.dieMessage("boom")
        })
        yield* queue.nextToolChoice
        const invoker = Option.getOrThrow(yield* queue.peekInFlightInvoker)
        const exit = yield* Effect.exit(invoker({ action: "apply", reason: "why" }))
        assert.isTrue(exit._tag === "Failure")
        assert.isFalse(Option.getOrThrow(yield* queue.inFlight).invoked)
        yield* queue.resolve
        deepStrictEqual(yield* Ref.get(log), ["p:not_invoked"])
      }).pipe(Effect.provide(ResolveRuntime.layer)))
  })

  describe("active (a directive wanted only while something is pending)", () => {
    it.effect("an inactive directive is dropped at the head without callbacks, and inspect hides it", () =>
      Effect.gen(function*() {
        const queue = yield* ToolChoiceQueue
        const log = yield* Ref.make<ReadonlyArray<string>>([])
        let wanted = true
        yield* queue.pushOnce(tool("late"), { ...recording(log, "late") })
        yield* queue.pushOnce(tool("resolve"), { ...recording(log, "gate"), now: true, active: () => wanted })
        deepStrictEqual(yield* queue.inspect, ["gate", "late"])
        wanted = false
        deepStrictEqual(yield* queue.inspect, ["late"])
        deepStrictEqual(yield* queue.nextToolChoice, Option.some(tool("late")))
        yield* queue.resolve
        deepStrictEqual(yield* queue.nextToolChoice, Option.none())
        deepStrictEqual(yield* Ref.get(log), ["late:resolved"])
      }).pipe(Effect.provide(ResolveRuntime.layer)))

    it.effect("a turn that ends while the directive is still active rejects it with not_invoked", () =>
      Effect.gen(function*() {
        const queue = yield* ToolChoiceQueue
        const log = yield* Ref.make<ReadonlyArray<string>>([])
        let wanted = true
        yield* queue.pushOnce(tool("resolve"), {
          ...recording(log, "gate", () => "requeue"),
          active: () => wanted
        })
        yield* turn
        deepStrictEqual(yield* Ref.get(log), ["gate:not_invoked"])
        deepStrictEqual(yield* queue.inspect, ["gate"])
        yield* queue.nextToolChoice
        wanted = false
        yield* queue.resolve
        deepStrictEqual(yield* Ref.get(log), ["gate:not_invoked", "gate:resolved"])
        deepStrictEqual(yield* queue.inspect, [])
      }).pipe(Effect.provide(ResolveRuntime.layer)))

    it.effect("an active() that throws counts as wanted: the directive is neither lost nor consumed", () =>
      Effect.gen(function*() {
        const queue = yield* ToolChoiceQueue
        const log = yield* Ref.make<ReadonlyArray<string>>([])
        yield* queue.pushOnce(tool("resolve"), {
          ...recording(log, "gate", () => "requeue"),
          active: () => {
            throw new Error("boom")
          }
        })
        deepStrictEqual(yield* queue.inspect, ["gate"])
        deepStrictEqual(yield* turn, Option.some(tool("resolve")))
        deepStrictEqual(yield* Ref.get(log), ["gate:not_invoked"])
        deepStrictEqual(yield* queue.inspect, ["gate"])
      }).pipe(Effect.provide(ResolveRuntime.layer)))
  })

  describe("peekInFlightInvoker", () => {
    it.effect("is none with nothing in flight, or when the in-flight directive has no onInvoked", () =>
      Effect.gen(function*() {
        const queue = yield* ToolChoiceQueue
        yield* queue.pushOnce(tool("resolve"), { onInvoked: () => Effect.succeed(ToolResult.text("x")) })
        assert.isTrue(Option.isNone(yield* queue.peekInFlightInvoker))
        yield* queue.pushOnce("auto", { now: true })
        yield* queue.nextToolChoice
        assert.isTrue(Option.isNone(yield* queue.peekInFlightInvoker))
        yield* queue.resolve
        yield* queue.nextToolChoice
        assert.isTrue(Option.isSome(yield* queue.peekInFlightInvoker))
        // Peeking neither consumes nor invokes.
        assert.isTrue(Option.isSome(yield* queue.peekInFlightInvoker))
        assert.isFalse(Option.getOrThrow(yield* queue.inFlight).invoked)
      }).pipe(Effect.provide(ResolveRuntime.layer)))
  })

  describe("reject (§2.4)", () => {
    it.effect("clears the slot and passes every reason to onRejected; the default is drop", () =>
      Effect.gen(function*() {
        const queue = yield* ToolChoiceQueue
        const log = yield* Ref.make<ReadonlyArray<string>>([])
        const reasons: ReadonlyArray<RejectReason> = ["aborted", "error", "unavailable", "not_invoked"]
        for (const reason of reasons) yield* queue.pushOnce("auto", recording(log, reason))
        yield* queue.pushOnce("none", { label: "no-callback" })
        for (const reason of reasons) {
          yield* queue.nextToolChoice
          yield* queue.reject(reason)
          assert.isFalse(yield* queue.hasInFlight)
        }
        yield* queue.nextToolChoice
        yield* queue.reject("error")
        deepStrictEqual(yield* Ref.get(log), reasons.map((r) => `${r}:${r}`))
        deepStrictEqual(yield* queue.inspect, [])
        assert.isTrue(Option.isNone(yield* queue.consumeLastServedLabel))
      }).pipe(Effect.provide(ResolveRuntime.layer)))

    it.effect("with nothing in flight does nothing", () =>
      Effect.gen(function*() {
        const queue = yield* ToolChoiceQueue
        const log = yield* Ref.make<ReadonlyArray<string>>([])
        yield* queue.pushOnce("auto", recording(log, "a", () => "requeue"))
        yield* queue.reject("error")
        deepStrictEqual(yield* Ref.get(log), [])
        deepStrictEqual(yield* queue.inspect, ["a"])
      }).pipe(Effect.provide(ResolveRuntime.layer)))

    it.effect("drop lets the value go; the next directive is served", () =>
      Effect.gen(function*() {
        const queue = yield* ToolChoiceQueue
        yield* queue.pushSequence([tool("a1"), tool("a2")], { label: "a", onRejected: () => Effect.succeed("drop") })
        yield* queue.pushOnce(tool("b"), { label: "b" })
        yield* queue.nextToolChoice
        yield* queue.reject("error")
        // Only the lost value is dropped; the rest of the sequence stays.
        deepStrictEqual(yield* queue.inspect, ["a", "b"])
        deepStrictEqual(yield* serveAll, [tool("a2"), tool("b")])
      }).pipe(Effect.provide(ResolveRuntime.layer)))

    it.effect("requeue puts exactly the lost value back at the head, same id and label", () =>
      Effect.gen(function*() {
        const queue = yield* ToolChoiceQueue
        const log = yield* Ref.make<ReadonlyArray<string>>([])
        yield* queue.pushOnce(tool("other"), { label: "other" })
        const id = yield* queue.pushSequence(
          [tool("a"), tool("b"), tool("c")],
          { ...recording(log, "seq", () => "requeue"), now: true }
        )
        deepStrictEqual(yield* queue.nextToolChoice, Option.some(tool("a")))
        yield* queue.reject("unavailable")
        deepStrictEqual(yield* queue.inspect, ["seq", "seq", "other"])
        deepStrictEqual(yield* queue.nextToolChoice, Option.some(tool("a")))
        deepStrictEqual(
          yield* queue.inFlight,
          Option.some({ id, label: "seq", choice: tool("a"), requeues: 1, invoked: false })
        )
        yield* queue.resolve
        // The requeued copy carries the callbacks too.
        deepStrictEqual(yield* Ref.get(log), ["seq:unavailable", "seq:resolved"])
        deepStrictEqual(yield* queue.consumeLastServedLabel, Option.some("seq"))
        // The rest of the sequence is served once, not duplicated.
        deepStrictEqual(yield* serveAll, [tool("b"), tool("c"), tool("other")])
      }).pipe(Effect.provide(ResolveRuntime.layer)))

    it.effect("repeated requeues keep the id and label and count up", () =>
      Effect.gen(function*() {
        const queue = yield* ToolChoiceQueue
        const id = yield* queue.pushOnce(tool("a"), { label: "a", onRejected: () => Effect.succeed("requeue") })
        yield* queue.pushOnce(tool("b"), { label: "b" })
        for (let i = 1; i <= 5; i++) {
          yield* queue.nextToolChoice
          yield* queue.reject("aborted")
          deepStrictEqual(yield* queue.inspect, ["a", "b"])
        }
        yield* queue.nextToolChoice
        const info = Option.getOrThrow(yield* queue.inFlight)
        deepStrictEqual([info.id, info.label, info.requeues], [id, "a", 5])
        yield* queue.resolve
        deepStrictEqual(yield* serveAll, [tool("b")])
      }).pipe(Effect.provide(ResolveRuntime.layer)))

    it.effect("onRejected runs after the slot is cleared", () =>
      Effect.gen(function*() {
        const queue = yield* ToolChoiceQueue
        const seen = yield* Ref.make<Option.Option<boolean>>(Option.none())
        yield* queue.pushOnce("auto", {
          onRejected: () => Effect.as(Effect.flatMap(queue.hasInFlight, (b) => Ref.set(seen, Option.some(b))), "drop")
        })
        yield* queue.nextToolChoice
        yield* queue.reject("error")
        deepStrictEqual(yield* Ref.get(seen), Option.some(false))
      }).pipe(Effect.provide(ResolveRuntime.layer)))
  })

  describe("removeByLabel (§2.5)", () => {
    it.effect("drops every queued directive with the label, returns the count and reports \"removed\"", () =>
      Effect.gen(function*() {
        const queue = yield* ToolChoiceQueue
        const log = yield* Ref.make<ReadonlyArray<string>>([])
        yield* queue.pushOnce(tool("x1"), recording(log, "x", () => "requeue"))
        yield* queue.pushOnce(tool("y"), recording(log, "y"))
        yield* queue.pushSequence([tool("x2"), tool("x3")], recording(log, "x", () => "requeue"))
        assert.strictEqual(yield* queue.removeByLabel("x"), 2)
        deepStrictEqual(yield* queue.inspect, ["y"])
        deepStrictEqual(yield* Ref.get(log), ["x:removed", "x:removed"])
        assert.strictEqual(yield* queue.removeByLabel("absent"), 0)
        deepStrictEqual(yield* Ref.get(log), ["x:removed", "x:removed"])
        deepStrictEqual(yield* serveAll, [tool("y")])
      }).pipe(Effect.provide(ResolveRuntime.layer)))

    it.effect("rejects a matching in-flight value with \"removed\"; its requeue answer is ignored", () =>
      Effect.gen(function*() {
        const queue = yield* ToolChoiceQueue
        const log = yield* Ref.make<ReadonlyArray<string>>([])
        yield* queue.pushOnce(tool("x"), recording(log, "x", () => "requeue"))
        yield* queue.pushOnce(tool("y"), { label: "y" })
        yield* queue.nextToolChoice
        assert.strictEqual(yield* queue.removeByLabel("x"), 1)
        assert.isFalse(yield* queue.hasInFlight)
        deepStrictEqual(yield* Ref.get(log), ["x:removed"])
        deepStrictEqual(yield* queue.inspect, ["y"])
        assert.isTrue(Option.isNone(yield* queue.consumeLastServedLabel))
      }).pipe(Effect.provide(ResolveRuntime.layer)))

    it.effect("removes a requeued value and counts in flight plus queued", () =>
      Effect.gen(function*() {
        const queue = yield* ToolChoiceQueue
        const log = yield* Ref.make<ReadonlyArray<string>>([])
        yield* queue.pushSequence([tool("x1"), tool("x2")], recording(log, "x", () => "requeue"))
        yield* queue.nextToolChoice
        yield* queue.reject("error") // x1 requeued at the head
        deepStrictEqual(yield* queue.inspect, ["x", "x"])
        yield* queue.nextToolChoice // x1 in flight again, rest of x queued
        assert.strictEqual(yield* queue.removeByLabel("x"), 2)
        deepStrictEqual(yield* queue.inspect, [])
        assert.isFalse(yield* queue.hasInFlight)
        deepStrictEqual(yield* Ref.get(log), ["x:error", "x:removed", "x:removed"])
      }).pipe(Effect.provide(ResolveRuntime.layer)))

    it.effect("leaves an in-flight value with another label alone", () =>
      Effect.gen(function*() {
        const queue = yield* ToolChoiceQueue
        yield* queue.pushOnce(tool("y"), { label: "y" })
        yield* queue.pushOnce(tool("x"), { label: "x" })
        yield* queue.nextToolChoice
        assert.strictEqual(yield* queue.removeByLabel("x"), 1)
        assert.strictEqual(Option.getOrThrow(yield* queue.inFlight).label, "y")
        yield* queue.resolve
        deepStrictEqual(yield* queue.consumeLastServedLabel, Option.some("y"))
      }).pipe(Effect.provide(ResolveRuntime.layer)))

    it.effect("a value being rejected when its label is removed is not requeued", () =>
      Effect.gen(function*() {
        const queue = yield* ToolChoiceQueue
        yield* queue.pushOnce(tool("x"), {
          label: "x",
          onRejected: (reason) =>
            reason === "error" ? Effect.as(queue.removeByLabel("x"), "requeue" as const) : Effect.succeed("drop")
        })
        yield* queue.nextToolChoice
        yield* queue.reject("error")
        deepStrictEqual(yield* queue.inspect, [])
      }).pipe(Effect.provide(ResolveRuntime.layer)))
  })

  describe("clear (§2.5)", () => {
    it.effect("rejects in flight with \"cleared\", ignores requeue, empties the queue, forgets the label", () =>
      Effect.gen(function*() {
        const queue = yield* ToolChoiceQueue
        const log = yield* Ref.make<ReadonlyArray<string>>([])
        yield* queue.pushOnce("auto", { label: "done" })
        yield* queue.pushOnce(tool("x"), recording(log, "x", () => "requeue"))
        yield* queue.pushSequence([tool("y1"), tool("y2")], recording(log, "y", () => "requeue"))
        yield* turn
        yield* queue.nextToolChoice // x in flight
        yield* queue.clear
        assert.isFalse(yield* queue.hasInFlight)
        deepStrictEqual(yield* queue.inspect, [])
        deepStrictEqual(yield* Ref.get(log), ["x:cleared", "y:cleared"])
        assert.isTrue(Option.isNone(yield* queue.consumeLastServedLabel))
        assert.isTrue(Option.isNone(yield* queue.nextToolChoice))
      }).pipe(Effect.provide(ResolveRuntime.layer)))

    it.effect("removes requeued values", () =>
      Effect.gen(function*() {
        const queue = yield* ToolChoiceQueue
        yield* queue.pushOnce(tool("x"), { label: "x", onRejected: () => Effect.succeed("requeue") })
        yield* queue.nextToolChoice
        yield* queue.reject("aborted")
        deepStrictEqual(yield* queue.inspect, ["x"])
        yield* queue.clear
        deepStrictEqual(yield* queue.inspect, [])
      }).pipe(Effect.provide(ResolveRuntime.layer)))

    it.effect("a value being rejected when the queue is cleared is not requeued", () =>
      Effect.gen(function*() {
        const queue = yield* ToolChoiceQueue
        yield* queue.pushOnce(tool("x"), {
          label: "x",
          onRejected: (reason) =>
            reason === "error" ? Effect.as(queue.clear, "requeue" as const) : Effect.succeed("drop")
        })
        yield* queue.nextToolChoice
        yield* queue.reject("error")
        deepStrictEqual(yield* queue.inspect, [])
        assert.isTrue(Option.isNone(yield* queue.nextToolChoice))
      }).pipe(Effect.provide(ResolveRuntime.layer)))

    it.effect("the queue works normally after a clear", () =>
      Effect.gen(function*() {
        const queue = yield* ToolChoiceQueue
        yield* queue.pushOnce("auto", { label: "old" })
        yield* queue.clear
        yield* queue.pushOnce(tool("new"), { label: "new" })
        deepStrictEqual(yield* serveAll, [tool("new")])
        deepStrictEqual(yield* queue.consumeLastServedLabel, Option.some("new"))
      }).pipe(Effect.provide(ResolveRuntime.layer)))
  })

  describe("inspect", () => {
    it.effect("lists queued labels head first, requeues and `now` pushes included, in-flight excluded", () =>
      Effect.gen(function*() {
        const queue = yield* ToolChoiceQueue
        yield* queue.pushOnce("auto", { label: "t1" })
        yield* queue.pushOnce("auto", { label: "t2" })
        yield* queue.pushOnce("auto", { label: "n1", now: true, onRejected: () => Effect.succeed("requeue") })
        yield* queue.pushOnce("auto", { label: "n2", now: true })
        deepStrictEqual(yield* queue.inspect, ["n2", "n1", "t1", "t2"])
        yield* turn // n2
        yield* queue.nextToolChoice // n1
        deepStrictEqual(yield* queue.inspect, ["t1", "t2"])
        yield* queue.reject("error")
        yield* queue.pushOnce("auto", { label: "t3" })
        deepStrictEqual(yield* queue.inspect, ["n1", "t1", "t2", "t3"])
      }).pipe(Effect.provide(ResolveRuntime.layer)))
  })

  describe("callbacks (§2.6)", () => {
    it.effect("may push, serve and clear re-entrantly without deadlock", () =>
      Effect.gen(function*() {
        const queue = yield* ToolChoiceQueue
        yield* queue.pushOnce(tool("a"), {
          label: "a",
          onResolved: Effect.asVoid(queue.pushOnce(tool("from-resolved"), { label: "from-resolved" }))
        })
        yield* queue.pushOnce(tool("b"), {
          label: "b",
          onRejected: () =>
            Effect.as(queue.pushOnce(tool("from-rejected"), { label: "from-rejected", now: true }), "drop")
        })
        yield* turn // a: pushes from-resolved at the tail
        deepStrictEqual(yield* queue.inspect, ["b", "from-resolved"])
        yield* queue.nextToolChoice
        yield* queue.reject("error") // b: pushes from-rejected at the head
        deepStrictEqual(yield* queue.inspect, ["from-rejected", "from-resolved"])
        yield* queue.pushOnce(tool("c"), { label: "c", now: true, onResolved: queue.clear })
        yield* queue.pushOnce(tool("d"), {
          label: "d",
          now: true,
          onResolved: Effect.gen(function*() {
            yield* queue.nextToolChoice // serves c inside the callback
            yield* queue.resolve // whose onResolved clears everything
          })
        })
        yield* turn
        deepStrictEqual(yield* queue.inspect, [])
        assert.isFalse(yield* queue.hasInFlight)
        assert.isTrue(Option.isNone(yield* queue.consumeLastServedLabel))
      }).pipe(Effect.provide(ResolveRuntime.layer)))

    it.effect("a failing or dying callback leaves the queue consistent", () =>
      Effect.gen(function*() {
        const queue = yield* ToolChoiceQueue
        yield* queue.pushOnce(tool("a"), { label: "a", onResolved: Effect.dieMessage("onResolved died") })
        yield* queue.pushOnce(tool("b"), {
          label: "b",
          // A typed failure the signature forbids, as a JavaScript caller could produce.
          onRejected: () => Effect.fail("nope") as unknown as Effect.Effect<RejectDecision>
        })
        yield* queue.pushOnce(tool("c"), {
          label: "c",
          onRejected: () => {
            throw new Error("thrown synchronously")
          }
        })
        yield* queue.pushOnce(tool("d"), { label: "d", onRejected: () => Effect.dieMessage("died") })
        yield* queue.pushOnce(tool("e"), { label: "e" })
        yield* turn
        deepStrictEqual(yield* queue.consumeLastServedLabel, Option.some("a"))
        for (let i = 0; i < 3; i++) {
          yield* queue.nextToolChoice
          yield* queue.reject("error")
          assert.isFalse(yield* queue.hasInFlight)
        }
        // Failed decisions count as drop: nothing was requeued.
        deepStrictEqual(yield* queue.inspect, ["e"])
        yield* queue.pushOnce(tool("f"), { label: "f", onRejected: () => Effect.dieMessage("died again") })
        assert.strictEqual(yield* queue.removeByLabel("f"), 1)
        yield* queue.pushOnce(tool("g"), { label: "g", onRejected: () => Effect.dieMessage("and again") })
        yield* queue.nextToolChoice
        yield* queue.clear
        deepStrictEqual(yield* queue.inspect, [])
        yield* queue.pushOnce(tool("h"), { label: "h" })
        deepStrictEqual(yield* serveAll, [tool("h")])
      }).pipe(Effect.provide(ResolveRuntime.layer)))
  })

  describe("concurrency (§2.7)", () => {
    it.effect("100 fibers pushing get 100 distinct ids and 100 queued directives", () =>
      Effect.gen(function*() {
        const queue = yield* ToolChoiceQueue
        const ids = yield* Effect.forEach(
          Array.from({ length: 100 }, (_, i) => i),
          (i) =>
            Effect.zipRight(Effect.yieldNow(), queue.pushOnce(tool(`t${i}`), { label: `l${i}`, now: i % 2 === 0 })),
          { concurrency: "unbounded" }
        )
        assert.strictEqual(new Set(ids).size, 100)
        const labels = yield* queue.inspect
        assert.strictEqual(labels.length, 100)
        assert.strictEqual(new Set(labels).size, 100)
        assert.strictEqual((yield* serveAll).length, 100)
      }).pipe(Effect.provide(ResolveRuntime.layer)))

    it.effect("100 fibers serving and ending turns settle every value exactly once", () =>
      Effect.gen(function*() {
        const queue = yield* ToolChoiceQueue
        const settled = yield* Ref.make<ReadonlyArray<string>>([])
        for (let i = 0; i < 100; i++) {
          const label = `l${i}`
          yield* queue.pushOnce(tool(`t${i}`), {
            label,
            onResolved: Effect.zipRight(Effect.yieldNow(), Ref.update(settled, (s) => [...s, label])),
            onRejected: () =>
              Effect.zipRight(Effect.yieldNow(), Effect.as(Ref.update(settled, (s) => [...s, label]), "drop" as const))
          })
        }
        yield* Effect.forEach(
          Array.from({ length: 100 }, (_, i) => i),
          (i) =>
            Effect.gen(function*() {
              yield* Effect.yieldNow()
              yield* queue.nextToolChoice
              yield* Effect.yieldNow()
              yield* i % 3 === 0 ? queue.reject("aborted") : queue.resolve
            }),
          { concurrency: "unbounded" }
        )
        // Whatever interleaving happened, drain the rest.
        yield* queue.resolve
        yield* serveAll
        const labels = yield* Ref.get(settled)
        assert.strictEqual(labels.length, 100)
        assert.strictEqual(new Set(labels).size, 100)
        deepStrictEqual(yield* queue.inspect, [])
        assert.isFalse(yield* queue.hasInFlight)
      }).pipe(Effect.provide(ResolveRuntime.layer)))

    it.effect("concurrent requeues and clears never leave the queue inconsistent", () =>
      Effect.gen(function*() {
        const queue = yield* ToolChoiceQueue
        const requeue = { onRejected: () => Effect.zipRight(Effect.yieldNow(), Effect.succeed("requeue" as const)) }
        yield* Effect.forEach(
          Array.from({ length: 100 }, (_, i) => i),
          (i) =>
            Effect.gen(function*() {
              yield* queue.pushOnce(tool(`t${i}`), { label: `l${i % 5}`, ...requeue })
              yield* Effect.yieldNow()
              yield* queue.nextToolChoice
              yield* Effect.yieldNow()
              if (i % 10 === 0) yield* queue.removeByLabel(`l${i % 5}`)
              else yield* queue.reject("error")
            }),
          { concurrency: "unbounded" }
        )
        yield* queue.clear
        deepStrictEqual(yield* queue.inspect, [])
        assert.isFalse(yield* queue.hasInFlight)
        assert.isTrue(Option.isNone(yield* queue.nextToolChoice))
      }).pipe(Effect.provide(ResolveRuntime.layer)))
  })

  describe("sessions", () => {
    it.effect("each layer build has its own queue", () =>
      Effect.gen(function*() {
        yield* Effect.flatMap(ToolChoiceQueue, (q) => q.pushOnce("auto", { label: "session-1" })).pipe(
          Effect.provide(ResolveRuntime.layer)
        )
        const other = yield* Effect.flatMap(ToolChoiceQueue, (q) => q.inspect).pipe(
          Effect.provide(ResolveRuntime.layer)
        )
        deepStrictEqual(other, [])
      }))
  })
})
