import { assert, describe, it } from "@effect/vitest"
import { deepStrictEqual } from "@effect/vitest/utils"
import { Effect, Either, Exit, Option, Ref, Scope } from "effect"
import {
  type Invoker,
  NoPendingAction,
  resolve,
  ResolveRuntime,
  stage,
  StandingResolveHandler,
  ToolChoice,
  ToolChoiceQueue,
  ToolResult
} from "../../src/index.js"

const answering = (text: string): Invoker => (call) => Effect.succeed(ToolResult.text(`${text}:${call.action}`))

/** Calls the peeked handler, so tests compare behaviour rather than function identity. */
const callPeeked = Effect.gen(function*() {
  const standing = yield* StandingResolveHandler
  const handler = yield* standing.peek
  if (Option.isNone(handler)) return Option.none<string>()
  return Option.some(ToolResult.textOf(yield* handler.value({ action: "apply", reason: "r" })))
})

describe("StandingResolveHandler (§4)", () => {
  it.effect("set, peek and clear one slot; set replaces", () =>
    Effect.gen(function*() {
      const standing = yield* StandingResolveHandler
      assert.isTrue(Option.isNone(yield* standing.peek))
      yield* standing.set(answering("one"))
      deepStrictEqual(yield* callPeeked, Option.some("one:apply"))
      yield* standing.set(answering("two"))
      deepStrictEqual(yield* callPeeked, Option.some("two:apply"))
      yield* standing.clear
      assert.isTrue(Option.isNone(yield* standing.peek))
      yield* standing.clear
      assert.isTrue(Option.isNone(yield* standing.peek))
    }).pipe(Effect.provide(ResolveRuntime.layer)))

  it.effect("install sets the handler for the life of the scope", () =>
    Effect.gen(function*() {
      const standing = yield* StandingResolveHandler
      const inside = yield* Effect.scoped(Effect.zipRight(standing.install(answering("plan")), callPeeked))
      deepStrictEqual(inside, Option.some("plan:apply"))
      assert.isTrue(Option.isNone(yield* standing.peek))
    }).pipe(Effect.provide(ResolveRuntime.layer)))

  it.effect("closing an earlier scope does not clear a later installation", () =>
    Effect.gen(function*() {
      const standing = yield* StandingResolveHandler
      const first = yield* Scope.make()
      const second = yield* Scope.make()
      yield* Scope.extend(standing.install(answering("first")), first)
      yield* Scope.extend(standing.install(answering("second")), second)
      yield* Scope.close(first, Exit.void)
      deepStrictEqual(yield* callPeeked, Option.some("second:apply"))
      yield* Scope.close(second, Exit.void)
      assert.isTrue(Option.isNone(yield* standing.peek))
    }).pipe(Effect.provide(ResolveRuntime.layer)))

  it.effect("the same function installed twice is told apart by installation", () =>
    Effect.gen(function*() {
      const standing = yield* StandingResolveHandler
      const shared = answering("shared")
      const first = yield* Scope.make()
      const second = yield* Scope.make()
      yield* Scope.extend(standing.install(shared), first)
      yield* Scope.extend(standing.install(shared), second)
      yield* Scope.close(first, Exit.void)
      deepStrictEqual(yield* callPeeked, Option.some("shared:apply"))
      yield* Scope.close(second, Exit.void)
      assert.isTrue(Option.isNone(yield* standing.peek))
    }).pipe(Effect.provide(ResolveRuntime.layer)))

  it.effect("a handler set inside an install's scope survives the scope's close", () =>
    Effect.gen(function*() {
      const standing = yield* StandingResolveHandler
      yield* Effect.scoped(Effect.zipRight(standing.install(answering("scoped")), standing.set(answering("set"))))
      deepStrictEqual(yield* callPeeked, Option.some("set:apply"))
    }).pipe(Effect.provide(ResolveRuntime.layer)))

  it.effect("a scope closed after an explicit clear leaves the slot empty", () =>
    Effect.gen(function*() {
      const standing = yield* StandingResolveHandler
      yield* Effect.scoped(Effect.zipRight(standing.install(answering("scoped")), standing.clear))
      assert.isTrue(Option.isNone(yield* standing.peek))
    }).pipe(Effect.provide(ResolveRuntime.layer)))

  describe("as resolve's fallback", () => {
    it.effect("resolve uses it when nothing is in flight, and never consumes it", () =>
      Effect.gen(function*() {
        const standing = yield* StandingResolveHandler
        const calls = yield* Ref.make<ReadonlyArray<string>>([])
        yield* standing.set((call) =>
          Effect.as(Ref.update(calls, (c) => [...c, `${call.action}:${call.reason}`]), ToolResult.text("plan"))
        )
        const first = yield* resolve({ action: "apply", reason: "one" })
        const second = yield* resolve({ action: "discard", reason: "two", extra: { title: "t" } })
        assert.strictEqual(ToolResult.textOf(first), "plan")
        assert.strictEqual(ToolResult.textOf(second), "plan")
        deepStrictEqual(yield* Ref.get(calls), ["apply:one", "discard:two"])
        assert.isTrue(Option.isSome(yield* standing.peek))
      }).pipe(Effect.provide(ResolveRuntime.layer)))

    it.effect("a pending preview wins over the standing handler, served or not", () =>
      Effect.gen(function*() {
        const queue = yield* ToolChoiceQueue
        const standing = yield* StandingResolveHandler
        const standingCalls = yield* Ref.make(0)
        yield* standing.set(() => Effect.as(Ref.update(standingCalls, (n) => n + 1), ToolResult.text("standing")))
        const stageOne = (text: string) =>
          stage({
            label: "Edit: 1 file",
            sourceToolName: "edit",
            apply: () => Effect.succeed(ToolResult.text(text))
          })
        yield* stageOne("first preview")
        // Staged, not yet served: the pending set is the truth, so the preview answers.
        assert.strictEqual(ToolResult.textOf(yield* resolve({ action: "apply", reason: "r" })), "first preview")
        yield* stageOne("second preview")
        yield* queue.nextToolChoice
        assert.strictEqual(ToolResult.textOf(yield* resolve({ action: "apply", reason: "r" })), "second preview")
        assert.strictEqual(yield* Ref.get(standingCalls), 0)
        yield* queue.resolve
        // The previews are consumed, the standing handler is not.
        assert.strictEqual(ToolResult.textOf(yield* resolve({ action: "apply", reason: "r" })), "standing")
        assert.strictEqual(ToolResult.textOf(yield* resolve({ action: "apply", reason: "r" })), "standing")
        assert.strictEqual(yield* Ref.get(standingCalls), 2)
      }).pipe(Effect.provide(ResolveRuntime.layer)))

    it.effect("an in-flight directive without an invoker falls through to the standing handler", () =>
      Effect.gen(function*() {
        const queue = yield* ToolChoiceQueue
        const standing = yield* StandingResolveHandler
        yield* queue.pushOnce(ToolChoice.forceTool("search"), { label: "must-search" })
        yield* queue.nextToolChoice
        yield* standing.set(answering("standing"))
        assert.strictEqual(ToolResult.textOf(yield* resolve({ action: "discard", reason: "r" })), "standing:discard")
      }).pipe(Effect.provide(ResolveRuntime.layer)))

    it.effect("after the scope closes resolve has nothing to resolve", () =>
      Effect.gen(function*() {
        const standing = yield* StandingResolveHandler
        yield* Effect.scoped(standing.install(answering("plan")))
        const result = yield* Effect.either(resolve({ action: "apply", reason: "r" }))
        assert.isTrue(Either.isLeft(result))
        assert.instanceOf(Option.getOrThrow(Either.getLeft(result)), NoPendingAction)
      }).pipe(Effect.provide(ResolveRuntime.layer)))
  })

  it.effect("each layer build has its own slot", () =>
    Effect.gen(function*() {
      yield* Effect.flatMap(StandingResolveHandler, (s) => s.set(answering("one"))).pipe(
        Effect.provide(ResolveRuntime.layer)
      )
      const other = yield* Effect.flatMap(StandingResolveHandler, (s) => s.peek).pipe(
        Effect.provide(ResolveRuntime.layer)
      )
      assert.isTrue(Option.isNone(other))
    }))
})
