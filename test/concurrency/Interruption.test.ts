/**
 * Interruption at every yield point of `resolve` (SPEC §6.6), looping over the points instead of sampling them:
 * a supervisor counts the operations of the resolve fiber and interrupts it at operation k, for k = 1, 2, ... until
 * a run completes before k. After each run the action is either applied once with both of its writes done, or
 * still pending with nothing written — and the next forced turn then applies it exactly once.
 */
// node's strict deepStrictEqual: chai's treats Option.none() as equal to Option.some(x).
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Fiber, Ref } from "effect"
import { deepStrictEqual } from "node:assert/strict"
import {
  PendingActions,
  Preview,
  ResolveRuntime,
  ResolveTool,
  stage,
  ToolChoiceQueue,
  ToolResult
} from "../../src/index.js"
import { InterruptAt, withOpSupervision } from "../support/InterruptAt.js"

/** One run: stage, serve, resolve interrupted at operation k; returns what happened. */
const runInterruptedAt = (k: number, action: "apply" | "discard") =>
  Effect.gen(function*() {
    const queue = yield* ToolChoiceQueue
    const files = yield* Ref.make({ a: "old a", b: "old b" })
    const applies = yield* Ref.make(0)
    const handle = yield* stage({
      label: "Edit: 2 replacements in 2 files",
      sourceToolName: "edit",
      apply: () =>
        Effect.gen(function*() {
          // Work before the commit (reading, checking) may be interrupted: nothing is written yet.
          yield* Effect.yieldNow()
          const current = yield* Ref.get(files)
          yield* Effect.yieldNow()
          yield* Preview.commit(Effect.gen(function*() {
            yield* Ref.update(applies, (n) => n + 1)
            yield* Ref.set(files, { ...current, a: "new a" })
            yield* Effect.yieldNow()
            yield* Ref.update(files, (f) => ({ ...f, b: "new b" }))
          }))
          return ToolResult.text("Applied 2 replacements.")
        })
    })
    yield* queue.nextToolChoice
    const supervisor = new InterruptAt(k)
    const fiber = yield* Effect.fork(
      withOpSupervision(Effect.supervised(ResolveTool.execute({ action, reason: "interrupt test" }), supervisor))
    )
    const exit = yield* Fiber.await(fiber)
    yield* queue.resolve
    return {
      exit,
      status: yield* handle.status,
      files: yield* Ref.get(files),
      applies: yield* Ref.get(applies),
      ops: supervisor.ops,
      handle,
      filesRef: files,
      appliesRef: applies
    }
  })

describe("interruption at every yield point of resolve", () => {
  for (const action of ["apply", "discard"] as const) {
    it.effect(
      `${action}: every interruption point leaves the action applied once or untouched and pending`,
      () =>
        Effect.gen(function*() {
          let completedAt: number | undefined
          let interrupted = 0
          for (let k = 1; k < 5_000 && completedAt === undefined; k++) {
            const run = yield* Effect.gen(function*() {
              const r = yield* runInterruptedAt(k, action)
              const untouched = r.files.a === "old a" && r.files.b === "old b"
              const written = r.files.a === "new a" && r.files.b === "new b"
              if (Exit.isSuccess(r.exit)) {
                assert.strictEqual(r.status, action === "apply" ? "applied" : "discarded", `k=${k}`)
              } else {
                assert.isTrue(Exit.isInterrupted(r.exit), `k=${k}: ${String(r.exit)}`)
              }
              if (r.status === "applied") {
                assert.isTrue(written, `k=${k}: applied but files are ${JSON.stringify(r.files)}`)
                assert.strictEqual(r.applies, 1, `k=${k}`)
              } else {
                assert.isTrue(untouched, `k=${k}: ${r.status} but files are ${JSON.stringify(r.files)}`)
                assert.strictEqual(r.applies, 0, `k=${k}`)
                if (r.status === "pending") {
                  // The next forced turn resolves it, once.
                  const queue = yield* ToolChoiceQueue
                  deepStrictEqual(yield* queue.inspect, ["pending-action:edit"], `k=${k}`)
                  yield* queue.nextToolChoice
                  yield* ResolveTool.execute({ action, reason: "retry" })
                  yield* queue.resolve
                  assert.strictEqual(yield* r.handle.status, action === "apply" ? "applied" : "discarded")
                  assert.strictEqual(yield* Ref.get(r.appliesRef), action === "apply" ? 1 : 0)
                }
              }
              return { done: Exit.isSuccess(r.exit) && r.ops < k, interrupted: Exit.isFailure(r.exit) }
            }).pipe(Effect.provide(ResolveRuntime.layer))
            if (run.interrupted) interrupted++
            if (run.done) completedAt = k
          }
          assert.isDefined(completedAt, "resolve never completed before the interruption point")
          // Enough points were tried to cover the whole call.
          assert.isAbove(interrupted, 20)
        }),
      60_000
    )
  }

  it.effect("an interruption during the commit is deferred: the action counts as applied", () =>
    Effect.gen(function*() {
      let seen = 0
      for (let k = 1; k < 400; k++) {
        const r = yield* Effect.provide(runInterruptedAt(k, "apply"), ResolveRuntime.layer)
        if (Exit.isFailure(r.exit) && r.status === "applied") {
          seen++
          deepStrictEqual(r.files, { a: "new a", b: "new b" })
        }
      }
      assert.isAbove(seen, 0, "no interruption landed inside the commit")
    }))

  it.effect("a resolve fiber interrupted before it runs leaves the in-flight preview resolvable", () =>
    Effect.gen(function*() {
      const queue = yield* ToolChoiceQueue
      const handle = yield* stage({
        label: "Edit",
        sourceToolName: "edit",
        apply: () => Effect.succeed(ToolResult.text("ok"))
      })
      yield* queue.nextToolChoice
      const fiber = yield* Effect.fork(ResolveTool.execute({ action: "apply", reason: "x" }))
      yield* Fiber.interrupt(fiber)
      assert.strictEqual(yield* handle.status, "pending")
      assert.isTrue(yield* Effect.flatMap(PendingActions, (pending) => pending.hasPending))
      yield* ResolveTool.execute({ action: "apply", reason: "again" })
      assert.strictEqual(yield* handle.status, "applied")
    }).pipe(Effect.provide(ResolveRuntime.layer)))
})
