/**
 * What a session's pending set holds in memory (src/services/internal/pendingSet.ts), through the public API: every
 * action by id, most recent first; the forcing stack that names the most recent pending action; expiry; every
 * change published; and only the last `retainSettled` settled actions kept in a long session.
 */
import { assert, describe, it } from "@effect/vitest"
import { deepStrictEqual } from "@effect/vitest/utils"
import { Chunk, type Duration, Effect, Fiber, Option, Stream, TestClock } from "effect"
import {
  NoPendingAction,
  PendingActionNotPending,
  PendingActions,
  ResolveRuntime,
  ResolveTool,
  stage,
  ToolChoice,
  ToolChoiceQueue,
  ToolResult,
  UnknownPendingAction
} from "../../../src/index.js"

const stageOne = (name: string, options: { readonly expiresIn?: Duration.DurationInput } = {}) =>
  stage({
    label: `Edit: ${name}`,
    sourceToolName: "edit",
    preview: `diff of ${name}`,
    apply: (reason) => Effect.succeed(ToolResult.text(`wrote ${name} (${reason})`)),
    ...(options.expiresIn === undefined ? {} : { expiresIn: options.expiresIn })
  })

const apply = (id?: string) => ResolveTool.execute({ action: "apply", reason: "Right.", extra: null, id: id ?? null })

describe("PendingActions: the set in memory", () => {
  it.effect("lists every action by id, most recent first, with the preview the model saw", () =>
    Effect.gen(function*() {
      const pending = yield* PendingActions
      const a = yield* stageOne("a.ts")
      const b = yield* stageOne("b.ts")
      const listed = yield* pending.list
      deepStrictEqual(listed.map((info) => [info.id, info.status, info.preview]), [
        [b.id, "pending", "diff of b.ts"],
        [a.id, "pending", "diff of a.ts"]
      ])
      assert.notStrictEqual(a.id, b.id)
      deepStrictEqual(Option.map(yield* pending.get(a.id), (info) => info.label), Option.some("Edit: a.ts"))
      deepStrictEqual(yield* pending.get("pa_nope"), Option.none())
    }).pipe(Effect.provide(ResolveRuntime.layer)))

  it.effect("the forcing directive follows the set: satisfied when the action leaves pending, never forced for nothing", () =>
    Effect.gen(function*() {
      const queue = yield* ToolChoiceQueue
      const pending = yield* PendingActions
      const a = yield* stageOne("a.ts")
      const b = yield* stageOne("b.ts")
      deepStrictEqual(yield* queue.inspect, ["pending-action:edit", "pending-action:edit"])
      // Resolved by id while the other one is served: the served turn ends normally, the resolved one is gone.
      deepStrictEqual(yield* queue.nextToolChoice, Option.some(ToolChoice.forceTool("resolve")))
      yield* apply(a.id)
      deepStrictEqual(yield* queue.inspect, [])
      yield* queue.resolve // b is still pending: its directive comes back (not_invoked)
      deepStrictEqual(yield* queue.inspect, ["pending-action:edit"])
      yield* apply(b.id)
      deepStrictEqual(yield* queue.nextToolChoice, Option.none())
      assert.isFalse(yield* pending.hasPending)
    }).pipe(Effect.provide(ResolveRuntime.layer)))

  it.effect("an action past its expiry cannot be resolved, shows as expired, and stops forcing", () =>
    Effect.gen(function*() {
      const queue = yield* ToolChoiceQueue
      const pending = yield* PendingActions
      const a = yield* stageOne("a.ts", { expiresIn: "1 minute" })
      yield* TestClock.adjust("59 seconds")
      deepStrictEqual((yield* pending.list).map((info) => info.status), ["pending"])
      yield* TestClock.adjust("1 second")
      deepStrictEqual((yield* pending.list).map((info) => [info.status, info.expiresAt]), [
        ["expired", Option.some(60_000)]
      ])
      const error = yield* Effect.flip(apply(a.id))
      assert.instanceOf(error, PendingActionNotPending)
      assert.strictEqual((error as PendingActionNotPending).status, "expired")
      assert.include(error.message, "expired")
      assert.strictEqual(yield* a.status, "expired")
      deepStrictEqual(yield* queue.nextToolChoice, Option.none())
      assert.instanceOf(yield* Effect.flip(apply()), NoPendingAction)
    }).pipe(Effect.provide(ResolveRuntime.layer)))

  it.effect("changes streams every status change", () =>
    Effect.gen(function*() {
      const pending = yield* PendingActions
      const seen = yield* Effect.fork(Stream.runCollect(Stream.take(yield* pending.subscribe, 4)))
      const a = yield* stageOne("a.ts")
      yield* apply(a.id)
      const b = yield* stageOne("b.ts")
      const changes = Chunk.toReadonlyArray(yield* Fiber.join(seen))
      deepStrictEqual(changes.map((info) => [info.id, info.status]), [
        [a.id, "pending"],
        [a.id, "resolving"],
        [a.id, "applied"],
        [b.id, "pending"]
      ])
      deepStrictEqual(changes[2]!.outcome, Option.some("wrote a.ts (Right.)"))
    }).pipe(Effect.scoped, Effect.provide(ResolveRuntime.layer)))
})

describe("PendingActions in a long session", () => {
  it.effect("keeps every action not yet settled and the last retainSettled settled ones; older ids are unknown", () =>
    Effect.gen(function*() {
      const pending = yield* PendingActions
      const old = yield* stageOne("old.ts")
      const settled: Array<string> = []
      for (let i = 0; i < 50; i++) {
        const handle = yield* stageOne(`f${i}.ts`)
        yield* apply(handle.id)
        settled.push(handle.id)
      }
      const listed = yield* pending.list
      deepStrictEqual(listed.map((info) => [info.id, info.status]), [
        [settled[49]!, "applied"],
        [settled[48]!, "applied"],
        [settled[47]!, "applied"],
        [old.id, "pending"]
      ])
      deepStrictEqual(yield* pending.get(settled[0]!), Option.none())
      const forgotten = yield* Effect.flip(apply(settled[0]!))
      assert.instanceOf(forgotten, UnknownPendingAction)
      deepStrictEqual((forgotten as UnknownPendingAction).pending, [{ id: old.id, label: "Edit: old.ts" }])
      // The oldest action, still pending under fifty settled ones, is the one resolve takes.
      assert.strictEqual(ToolResult.textOf(yield* apply()), "wrote old.ts (Right.)")
      assert.strictEqual(yield* old.status, "applied")
    }).pipe(Effect.provide(ResolveRuntime.layerWith({ retainSettled: 3 }))))

  it.effect("resolving older actions under a newer pending one, many times: the most recent pending one is forced", () =>
    Effect.gen(function*() {
      const queue = yield* ToolChoiceQueue
      const pending = yield* PendingActions
      const handles = [yield* stageOne("f0.ts")]
      for (let i = 1; i < 300; i++) {
        handles.push(yield* stageOne(`f${i}.ts`))
        yield* apply(handles[i - 1]!.id)
      }
      const last = handles[299]!
      deepStrictEqual((yield* pending.list).filter((info) => info.status === "pending").map((info) => info.id), [
        last.id
      ])
      assert.isTrue(yield* pending.hasPending)
      deepStrictEqual(yield* queue.inspect, ["pending-action:edit"])
      yield* queue.nextToolChoice
      deepStrictEqual(Option.map(yield* queue.inFlight, (info) => info.id), Option.some(last.id))
      assert.strictEqual(ToolResult.textOf(yield* apply()), "wrote f299.ts (Right.)")
      assert.isFalse(yield* pending.hasPending)
      assert.instanceOf(yield* Effect.flip(apply()), NoPendingAction)
    }).pipe(Effect.provide(ResolveRuntime.layer)))
})
