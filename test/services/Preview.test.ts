/**
 * The Preview module (src/services/Preview.ts, over src/services/internal/invocation.ts): the commit
 * point of `apply`, and the helpers that run a resolve invocation and describe its result. How a staged action is
 * queued and resolved is tested after the modules that do it: test/services/internal/staging.test.ts and
 * resolving.test.ts.
 */
import { assert, describe, it } from "@effect/vitest"
import { deepStrictEqual } from "@effect/vitest/utils"
import { Effect, Fiber } from "effect"
import {
  ApplyFailed,
  Preview,
  ResolveRuntime,
  ResolveTool,
  stage,
  StandingResolveHandler,
  ToolChoiceQueue,
  ToolResult
} from "../../src/index.js"

describe("Preview", () => {
  describe("helpers", () => {
    it.effect("commit in a fiber that apply forked counts: a failure after it leaves the action applied", () =>
      Effect.gen(function*() {
        const queue = yield* ToolChoiceQueue
        const handle = yield* stage({
          label: "Edit",
          sourceToolName: "edit",
          apply: () =>
            Effect.zipRight(
              Effect.flatMap(Effect.fork(Preview.commit(Effect.void)), Fiber.join),
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
          stage({
            label: committing ? "committed" : "uncommitted",
            sourceToolName: "edit",
            apply: () => Effect.zipRight(committing ? Preview.commit(Effect.void) : Effect.void, Effect.fail("boom"))
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
        yield* Preview.commit(Effect.void)
        assert.strictEqual(yield* second.status, "pending")
      }).pipe(Effect.provide(ResolveRuntime.layer)))

    it.effect("commit outside apply just runs its effect", () =>
      Effect.gen(function*() {
        assert.strictEqual(yield* Preview.commit(Effect.succeed(42)), 42)
      }))

    it.effect("runResolveInvocation serves standing handlers with the same mapping and details", () =>
      Effect.gen(function*() {
        const standing = yield* StandingResolveHandler
        const spec: Preview.Spec<Error> = {
          label: "Plan: migrate",
          sourceToolName: "exit_plan_mode",
          apply: (_reason, extra) => Effect.succeed(ToolResult.text(`approved ${String(extra.title)}`, { plan: 1 }))
        }
        yield* standing.set((call) => Preview.runResolveInvocation(spec, call))
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
        assert.strictEqual(ToolResult.textOf(discarded), Preview.discardedText("Plan: migrate", "no"))
        assert.strictEqual(Preview.discardedText("L", "R"), "Discarded: L. Reason: R")
      }).pipe(Effect.provide(ResolveRuntime.layer)))

    it("withResolveDetails keeps the content and omits absent fields", () => {
      const merged = Preview.withResolveDetails(ToolResult.text("t"), { action: "apply", reason: "r" })
      deepStrictEqual(merged, {
        content: [{ type: "text", text: "t" }],
        details: { action: "apply", reason: "r" }
      })
    })
  })
})
