/**
 * How one action leaves pending (src/services/internal/resolving.ts), through the public API: `resolve` takes the
 * named action, else the most recent pending one; an unknown or settled one is a typed error; the action is
 * `resolving` while its callback runs, runs with the staging tool's context, and is claimed once even by two
 * sessions of one store; a failed apply steers the reminder again; `clear` ends an action, also one being resolved.
 */
import { assert, describe, it } from "@effect/vitest"
import { deepStrictEqual } from "@effect/vitest/utils"
import { Context, Deferred, Effect, Fiber, Layer, Option, Ref } from "effect"
import { afterAll } from "vitest"
import {
  NoPendingAction,
  PendingActionNotPending,
  PendingActions,
  PendingStore,
  PendingStoreError,
  ResolveRuntime,
  ResolveTool,
  stage,
  stageKind,
  SteeringBus,
  ToolChoiceQueue,
  ToolResult,
  UnknownPendingAction
} from "../../../src/index.js"
import { makeMemory } from "../../../src/services/PendingStore.js"
import { tempDir } from "../../stores/subjects.js"
import { postgresForTests } from "../../support/pgTest.js"
import { apply as applyOk, describeEachStore, Note, open } from "./durableSessions.js"

const pg = await postgresForTests()
const { dir, cleanup } = tempDir()
afterAll(cleanup)

const stageOne = (name: string) =>
  stage({
    label: `Edit: ${name}`,
    sourceToolName: "edit",
    preview: `diff of ${name}`,
    apply: (reason) => Effect.succeed(ToolResult.text(`wrote ${name} (${reason})`))
  })

const apply = (id?: string) => ResolveTool.execute({ action: "apply", reason: "Right.", extra: null, id: id ?? null })

class Greeting extends Context.Tag("test/Greeting")<Greeting, string>() {}

describe("resolving one action", () => {
  it.effect("resolve takes the named action first; without an id the most recent pending one", () =>
    Effect.gen(function*() {
      const a = yield* stageOne("a.ts")
      const b = yield* stageOne("b.ts")
      const c = yield* stageOne("c.ts")
      assert.strictEqual(ToolResult.textOf(yield* apply(a.id)), "wrote a.ts (Right.)")
      assert.strictEqual(ToolResult.textOf(yield* apply()), "wrote c.ts (Right.)")
      assert.strictEqual(ToolResult.textOf(yield* apply()), "wrote b.ts (Right.)")
      deepStrictEqual([yield* a.status, yield* b.status, yield* c.status], ["applied", "applied", "applied"])
      const none = yield* Effect.flip(apply())
      assert.instanceOf(none, NoPendingAction)
      assert.include(none.message, "was already applied")
    }).pipe(Effect.provide(ResolveRuntime.layer)))

  it.effect("an unknown id or one already resolved is a typed error that lists what is pending, and runs nothing", () =>
    Effect.gen(function*() {
      const a = yield* stageOne("a.ts")
      const b = yield* stageOne("b.ts")
      yield* apply(a.id)
      const unknown = yield* Effect.flip(apply("pa_made_up"))
      assert.instanceOf(unknown, UnknownPendingAction)
      deepStrictEqual((unknown as UnknownPendingAction).pending, [{ id: b.id, label: "Edit: b.ts" }])
      assert.include(unknown.message, b.id)
      const again = yield* Effect.flip(apply(a.id))
      assert.instanceOf(again, PendingActionNotPending)
      assert.strictEqual((again as PendingActionNotPending).status, "applied")
      assert.include(again.message, "was already applied")
      assert.strictEqual(yield* b.status, "pending")
    }).pipe(Effect.provide(ResolveRuntime.layer)))

  it.effect("clear ends a pending action and its forcing; a cleared one cannot be resolved", () =>
    Effect.gen(function*() {
      const pending = yield* PendingActions
      const queue = yield* ToolChoiceQueue
      const a = yield* stageOne("a.ts")
      deepStrictEqual(yield* queue.inspect, ["pending-action:edit"])
      assert.isTrue(yield* pending.clear(a.id))
      // The directive of a cleared action is dropped: the next turn forces nothing.
      deepStrictEqual(yield* queue.inspect, [])
      assert.isFalse(yield* pending.hasPending)
      deepStrictEqual(yield* queue.nextToolChoice, Option.none())
      assert.isFalse(yield* pending.clear(a.id))
      assert.strictEqual(yield* a.status, "cleared")
      const error = yield* Effect.flip(apply(a.id))
      assert.strictEqual((error as PendingActionNotPending).status, "cleared")
    }).pipe(Effect.provide(ResolveRuntime.layer)))

  it.effect("the reminder is steered once per staging, and again after a failed apply", () =>
    Effect.gen(function*() {
      const bus = yield* SteeringBus
      let fail = true
      const handle = yield* stage({
        label: "Edit: a.ts",
        sourceToolName: "edit",
        apply: () => fail ? Effect.fail(new Error("disk full")) : Effect.succeed(ToolResult.text("wrote a.ts"))
      })
      assert.lengthOf(yield* bus.drain, 1)
      yield* Effect.flip(apply(handle.id))
      assert.lengthOf(yield* bus.drain, 1)
      fail = false
      yield* apply(handle.id)
      assert.lengthOf(yield* bus.drain, 0)
    }).pipe(Effect.provide(ResolveRuntime.layer)))

  it.effect("apply runs with the context of the staging tool", () =>
    Effect.gen(function*() {
      const queue = yield* ToolChoiceQueue
      yield* stage({
        label: "Greet",
        sourceToolName: "greet",
        apply: (reason) => Effect.map(Greeting, (greeting) => ToolResult.text(`${greeting}, ${reason}`))
      }).pipe(Effect.provideService(Greeting, "hello"))
      yield* queue.nextToolChoice
      // resolve runs without Greeting in its context.
      const result = yield* ResolveTool.execute({ action: "apply", reason: "world" })
      assert.strictEqual(ToolResult.textOf(result), "hello, world")
    }).pipe(Effect.provide(ResolveRuntime.layer)))

  describe("status", () => {
    it.effect("is resolving while apply runs, then applied", () =>
      Effect.gen(function*() {
        const queue = yield* ToolChoiceQueue
        const started = yield* Deferred.make<void>()
        const release = yield* Deferred.make<void>()
        const handle = yield* stage({
          label: "Edit",
          sourceToolName: "edit",
          apply: () =>
            Effect.zipRight(
              Deferred.succeed(started, void 0),
              Effect.as(Deferred.await(release), ToolResult.text("ok"))
            )
        })
        assert.strictEqual(yield* handle.status, "pending")
        yield* queue.nextToolChoice
        const fiber = yield* Effect.fork(ResolveTool.execute({ action: "apply", reason: "ok" }))
        yield* Deferred.await(started)
        assert.strictEqual(yield* handle.status, "resolving")
        yield* Deferred.succeed(release, void 0)
        yield* Fiber.join(fiber)
        assert.strictEqual(yield* handle.status, "applied")
      }).pipe(Effect.provide(ResolveRuntime.layer)))

    it.effect("cleared while apply runs: a failing apply ends cleared and is not requeued", () =>
      Effect.gen(function*() {
        const queue = yield* ToolChoiceQueue
        const started = yield* Deferred.make<void>()
        const release = yield* Deferred.make<void>()
        const handle = yield* stage({
          label: "Edit",
          sourceToolName: "edit",
          apply: () =>
            Effect.zipRight(
              Deferred.succeed(started, void 0),
              Effect.zipRight(Deferred.await(release), Effect.fail(new Error("late failure")))
            )
        })
        const bus = yield* SteeringBus
        yield* queue.nextToolChoice
        yield* bus.drain
        const fiber = yield* Effect.fork(Effect.flip(ResolveTool.execute({ action: "apply", reason: "ok" })))
        yield* Deferred.await(started)
        yield* queue.clear
        yield* Deferred.succeed(release, void 0)
        yield* Fiber.join(fiber)
        assert.strictEqual(yield* handle.status, "cleared")
        // No reminder for an action that is no longer pending.
        deepStrictEqual(yield* bus.pending, [])
        yield* queue.resolve
        deepStrictEqual(yield* queue.inspect, [])
      }).pipe(Effect.provide(ResolveRuntime.layer)))

    it.effect("cleared while apply runs: a successful apply still counts as applied", () =>
      Effect.gen(function*() {
        const queue = yield* ToolChoiceQueue
        const started = yield* Deferred.make<void>()
        const release = yield* Deferred.make<void>()
        const handle = yield* stage({
          label: "Edit",
          sourceToolName: "edit",
          apply: () =>
            Effect.zipRight(
              Deferred.succeed(started, void 0),
              Effect.as(Deferred.await(release), ToolResult.text("ok"))
            )
        })
        yield* queue.nextToolChoice
        const fiber = yield* Effect.fork(ResolveTool.execute({ action: "apply", reason: "ok" }))
        yield* Deferred.await(started)
        yield* queue.removeByLabel("pending-action:edit")
        yield* Deferred.succeed(release, void 0)
        assert.strictEqual(ToolResult.textOf(yield* Fiber.join(fiber)), "ok")
        assert.strictEqual(yield* handle.status, "applied")
      }).pipe(Effect.provide(ResolveRuntime.layer)))
  })
})

describeEachStore("resolving in a durable session", pg, dir, (subject) => {
  it.live("two sessions of one store racing on one action: it is applied once", () =>
    Effect.gen(function*() {
      const store = yield* subject.make()
      const notes = yield* Ref.make<ReadonlyArray<string>>([])
      const one = yield* open(store, "s4", notes)
      const note = yield* one.run(
        stageKind(Note, { text: "once" }, { label: "Note: once", sourceToolName: "note" })
      )
      const two = yield* open(store, "s4", notes)
      const results = yield* Effect.all([
        one.run(Effect.either(applyOk(note.id))),
        two.run(Effect.either(applyOk(note.id)))
      ], {
        concurrency: "unbounded"
      })
      assert.strictEqual(results.filter((r) => r._tag === "Right").length, 1)
      deepStrictEqual(yield* Ref.get(notes), ["once (ok, attempt 1)"])
      yield* one.close
      yield* two.close
    }))
})

describe("clear during a claim that fails", () => {
  // A store whose claims wait for `gate`, then do what `outcome` says: fail, or find the record orphaned.
  const gatedStore = (gate: Deferred.Deferred<void>, outcome: "fail" | "orphaned") => {
    const memory = makeMemory()
    const claim: PendingStore.Service["claim"] = (input) =>
      Effect.zipRight(
        Deferred.await(gate),
        outcome === "fail" ?
          Effect.fail(new PendingStoreError({ operation: "claim", detail: "the disk went away" })) :
          // Another process took the record for orphaned meanwhile (this one would revive and run it).
          Effect.as(
            memory.transition({ id: input.id, from: ["pending"], to: "orphaned", now: input.now }),
            Option.none()
          )
      )
    return { ...memory, claim, memory }
  }

  for (const outcome of ["fail", "orphaned"] as const) {
    it.live(`the action ends cleared, in the set and in the store (claim ${outcome === "fail" ? "fails" : "finds it orphaned"})`, () =>
      Effect.gen(function*() {
        const gate = yield* Deferred.make<void>()
        const store = gatedStore(gate, outcome)
        const notes = yield* Ref.make<ReadonlyArray<string>>([])
        const session = yield* open(Layer.succeed(PendingStore, store), "s-drop", notes)
        const note = yield* session.run(stageKind(Note, { text: "x" }, { label: "Note: x", sourceToolName: "note" }))
        const resolving = yield* Effect.fork(session.run(Effect.either(applyOk(note.id))))
        yield* session.run(
          Effect.flatMap(
            PendingActions,
            (actions) => Effect.repeat(actions.list, { until: (all) => all.some((a) => a.status === "resolving") })
          )
        )
        assert.isFalse(yield* session.run(Effect.flatMap(PendingActions, (actions) => actions.clear(note.id))))
        yield* Deferred.succeed(gate, void 0)
        const result = yield* Fiber.join(resolving)
        assert.strictEqual(result._tag, "Left")
        assert.strictEqual(yield* note.status, "cleared")
        const stored = yield* store.memory.get(note.id)
        assert.strictEqual(Option.map(stored, (r) => r.status).pipe(Option.getOrNull), "cleared")
        deepStrictEqual(yield* Ref.get(notes), [])
        yield* session.close
      }))
  }
})
