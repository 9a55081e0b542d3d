/**
 * The PendingAction module (src/services/PendingAction.ts, over src/services/internal/invocation.ts): the commit
 * point of `apply`, and the helpers that run a resolve invocation and describe its result. How a staged action is
 * queued and resolved is tested after the modules that do it: test/services/internal/staging.test.ts and
 * resolving.test.ts.
 */
import { assert, describe, it } from "@effect/vitest"
import { deepStrictEqual } from "@effect/vitest/utils"
import { Effect, Fiber } from "effect"
import {
  ApplyFailed,
  PendingAction,
  queueResolveHandler,
  ResolveRuntime,
  ResolveTool,
  StandingResolveHandler,
  ToolChoiceQueue,
  ToolResult
} from "../../src/index.js"

describe("PendingAction", () => {
  describe("helpers", () => {
    it.effect("commit in a fiber that apply forked counts: a failure after it leaves the action applied", () =>
      Effect.gen(function*() {
        const queue = yield* ToolChoiceQueue
        const handle = yield* queueResolveHandler({
          label: "Edit",
          sourceToolName: "edit",
          apply: () =>
            Effect.zipRight(
              Effect.flatMap(Effect.fork(PendingAction.commit(Effect.void)), Fiber.join),
              Effect.fail(new Error("after the write"))
            )
        })
        yield* queue.nextToolChoice
        assert.instanceOf(yield* Effect.flip(ResolveTool.execute({ action: "apply", reason: "ok" })), ApplyFailed)
        assert.strictEqual(yield* handle.status, "applied")
      }).pipe(Effect.provide(ResolveRuntime.layer)))

    it.effect("each resolve call in a fiber has its own commit marker, and none outlives its call", () =>
      Effect.gen(function*() {
        const queue = yield* ToolChoiceQueue
        const failing = (committing: boolean) =>
          queueResolveHandler({
            label: committing ? "committed" : "uncommitted",
            sourceToolName: "edit",
            apply: () =>
              Effect.zipRight(committing ? PendingAction.commit(Effect.void) : Effect.void, Effect.fail("boom"))
          })
        const first = yield* failing(true)
        yield* queue.nextToolChoice
        yield* Effect.flip(ResolveTool.execute({ action: "apply", reason: "ok" }))
        yield* queue.resolve
        assert.strictEqual(yield* first.status, "applied")
        const second = yield* failing(false)
        yield* queue.nextToolChoice
        yield* Effect.flip(ResolveTool.execute({ action: "apply", reason: "ok" }))
        assert.strictEqual(yield* second.status, "pending")
        // A commit after the calls marks nothing.
        yield* PendingAction.commit(Effect.void)
        assert.strictEqual(yield* second.status, "pending")
      }).pipe(Effect.provide(ResolveRuntime.layer)))

    it.effect("commit outside apply just runs its effect", () =>
      Effect.gen(function*() {
        assert.strictEqual(yield* PendingAction.commit(Effect.succeed(42)), 42)
      }))

    it.effect("runResolveInvocation serves standing handlers with the same mapping and details", () =>
      Effect.gen(function*() {
        const standing = yield* StandingResolveHandler
        const spec: PendingAction.PendingActionSpec<Error> = {
          label: "Plan: migrate",
          sourceToolName: "exit_plan_mode",
          apply: (_reason, extra) => Effect.succeed(ToolResult.text(`approved ${String(extra.title)}`, { plan: 1 }))
        }
        yield* standing.set((call) => PendingAction.runResolveInvocation(spec, call))
        const applied = yield* ResolveTool.execute({ action: "apply", reason: "ok", extra: { title: "p" } })
        assert.strictEqual(ToolResult.textOf(applied), "approved p")
        deepStrictEqual(applied.details, {
          action: "apply",
          reason: "ok",
          extra: { title: "p" },
          sourceToolName: "exit_plan_mode",
          label: "Plan: migrate",
          sourceResultDetails: { plan: 1 }
        })
        const discarded = yield* ResolveTool.execute({ action: "discard", reason: "no" })
        assert.strictEqual(ToolResult.textOf(discarded), PendingAction.discardedText("Plan: migrate", "no"))
        assert.strictEqual(PendingAction.discardedText("L", "R"), "Discarded: L. Reason: R")
      }).pipe(Effect.provide(ResolveRuntime.layer)))

    it("withResolveDetails keeps the content and omits absent fields", () => {
      const merged = PendingAction.withResolveDetails(ToolResult.text("t"), { action: "apply", reason: "r" })
      deepStrictEqual(merged, {
        content: [{ type: "text", text: "t" }],
        details: { action: "apply", reason: "r" }
      })
    })
  })
})
