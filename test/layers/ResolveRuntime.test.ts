import type * as FileSystem from "@effect/platform/FileSystem"
import { assert, describe, it } from "@effect/vitest"
import { deepStrictEqual } from "@effect/vitest/utils"
import { Deferred, Effect, Layer, ManagedRuntime, Option, Ref, Schema } from "effect"
import { expectTypeOf } from "vitest"
import {
  ActionKind,
  InvalidResolveParams,
  NoPendingAction,
  PendingAction,
  PendingActions,
  type PendingActionSpec,
  PendingStore,
  Preview,
  queueResolveHandler,
  resolve,
  ResolveRuntime,
  runResolve,
  stageKind,
  StandingResolveHandler,
  SteeringBus,
  ToolChoiceQueue,
  ToolResult
} from "../../src/index.js"
import * as FileEditPreview from "../../src/producers/FileEditPreview.js"
import * as PlanApproval from "../../src/producers/PlanApproval.js"
import { makeMemory } from "../../src/services/PendingStore.js"

/** A session runtime, disposed after `f` whatever happens. */
const withSession = async <A>(
  f: (session: ManagedRuntime.ManagedRuntime<ResolveRuntime.Services, never>) => Promise<A>
): Promise<A> => {
  const session = ManagedRuntime.make(ResolveRuntime.layer)
  try {
    return await f(session)
  } finally {
    await session.dispose()
  }
}

const stageAndServe = (spec: PendingAction.PendingActionSpec<unknown>) =>
  Effect.gen(function*() {
    const queue = yield* ToolChoiceQueue
    const handle = yield* queueResolveHandler(spec)
    yield* queue.nextToolChoice
    return handle
  })

describe("ResolveRuntime.layer", () => {
  it.effect("provides the queue, the steering bus and the standing handler", () =>
    Effect.gen(function*() {
      const queue = yield* ToolChoiceQueue
      const bus = yield* SteeringBus
      const standing = yield* StandingResolveHandler
      deepStrictEqual(yield* queue.inspect, [])
      deepStrictEqual(yield* bus.pending, [])
      assert.isTrue(Option.isNone(yield* standing.peek))
    }).pipe(Effect.provide(ResolveRuntime.layer)))

  it.effect("each build is a fresh session; sharing one build shares its state", () =>
    Effect.gen(function*() {
      const stage = stageAndServe({
        label: "Edit",
        sourceToolName: "edit",
        apply: () => Effect.succeed(ToolResult.text("ok"))
      })
      const inspect = Effect.flatMap(ToolChoiceQueue, (q) => Effect.zip(q.inspect, q.hasInFlight))
      const steering = Effect.flatMap(SteeringBus, (b) => b.pending)
      yield* Effect.provide(stage, ResolveRuntime.layer)
      deepStrictEqual(yield* Effect.provide(inspect, ResolveRuntime.layer), [[], false])
      deepStrictEqual(yield* Effect.provide(steering, ResolveRuntime.layer), [])
      // One build (memoized in a runtime) is one session.
      const session = yield* Layer.toRuntime(ResolveRuntime.layer)
      yield* Effect.provide(stage, session)
      deepStrictEqual(yield* Effect.provide(inspect, session), [[], true])
      assert.strictEqual((yield* Effect.provide(steering, session)).length, 1)
    }).pipe(Effect.scoped))
})

describe("runResolve", () => {
  it("resolves with the tool result", () =>
    withSession(async (session) => {
      const handle = await session.runPromise(
        stageAndServe({ label: "Edit", sourceToolName: "edit", apply: (r) => Effect.succeed(ToolResult.text(r)) })
      )
      const result = await runResolve(session, { action: "apply", reason: "Looks right." })
      assert.strictEqual(ToolResult.textOf(result), "Looks right.")
      assert.strictEqual(await session.runPromise(handle.status), "applied")
    }))

  it("rejects with the typed error", () =>
    withSession(async (session) => {
      const missing = await runResolve(session, { action: "apply", reason: "r" }).then(() => undefined, (e) => e)
      assert.instanceOf(missing, NoPendingAction)
      const invalid = await runResolve(session, { action: "apply" }).then(() => undefined, (e) => e)
      assert.instanceOf(invalid, InvalidResolveParams)
      assert.strictEqual((invalid as InvalidResolveParams).field, "reason")
    }))

  it("an abort during a slow apply, before commit, rejects with signal.reason and leaves the action pending", () =>
    withSession(async (session) => {
      const started = await session.runPromise(Deferred.make<void>())
      const writes = await session.runPromise(Ref.make(0))
      const attempts = await session.runPromise(Ref.make(0))
      const handle = await session.runPromise(stageAndServe({
        label: "Edit",
        sourceToolName: "edit",
        apply: () =>
          Effect.gen(function*() {
            if ((yield* Ref.getAndUpdate(attempts, (n) => n + 1)) === 0) {
              yield* Deferred.succeed(started, void 0)
              yield* Effect.never
            }
            yield* PendingAction.commit(Ref.update(writes, (n) => n + 1))
            return ToolResult.text("written")
          })
      }))
      const controller = new AbortController()
      const running = runResolve(session, { action: "apply", reason: "go" }, { signal: controller.signal })
      await session.runPromise(Deferred.await(started))
      const reason = new Error("The user pressed Esc.")
      controller.abort(reason)
      const outcome = await running.then(() => "resolved", (e) => e)
      assert.strictEqual(outcome, reason)
      assert.strictEqual(await session.runPromise(handle.status), "pending")
      assert.strictEqual(await session.runPromise(Ref.get(writes)), 0)
      // The preview is still there: a later call applies it.
      const result = await runResolve(session, { action: "apply", reason: "again" })
      assert.strictEqual(ToolResult.textOf(result), "written")
      assert.strictEqual(await session.runPromise(Ref.get(writes)), 1)
    }))

  it("an already aborted signal changes nothing", () =>
    withSession(async (session) => {
      let applied = 0
      const handle = await session.runPromise(stageAndServe({
        label: "Edit",
        sourceToolName: "edit",
        apply: () => Effect.sync(() => (applied++, ToolResult.text("ok")))
      }))
      const controller = new AbortController()
      controller.abort("stop")
      const outcome = await runResolve(session, { action: "apply", reason: "go" }, { signal: controller.signal }).then(
        () => "resolved",
        (e) => e
      )
      assert.strictEqual(outcome, "stop")
      assert.strictEqual(applied, 0)
      assert.strictEqual(await session.runPromise(handle.status), "pending")
    }))

  it("a signal that is never aborted does not get in the way", () =>
    withSession(async (session) => {
      await session.runPromise(stageAndServe({
        label: "Edit",
        sourceToolName: "edit",
        apply: () => Effect.succeed(ToolResult.text("ok"))
      }))
      const controller = new AbortController()
      const result = await runResolve(session, { action: "discard", reason: "no" }, { signal: controller.signal })
      assert.strictEqual(ToolResult.textOf(result), "Discarded: Edit. Reason: no")
    }))
})

describe("ResolveRuntime.layerDurable and the 0.2 names", () => {
  const Note = ActionKind.make({
    name: "note",
    payload: Schema.Struct({ text: Schema.String }),
    apply: ({ text }) => Effect.succeed(ToolResult.text(`noted ${text}`))
  })

  it.live("layerDurable requires the store the app provides; what it stages is there for the next build", () =>
    Effect.gen(function*() {
      const store = Layer.succeed(PendingStore, makeMemory())
      const session = ResolveRuntime.layerDurable({ session: "s", kinds: [Note] }).pipe(Layer.provide(store))
      const id = yield* Effect.scoped(Effect.flatMap(
        Layer.build(session),
        (context) =>
          Effect.provide(
            Effect.map(stageKind(Note, { text: "a" }, { label: "Note", sourceToolName: "note" }), (h) => h.id),
            context
          )
      ))
      const listed = yield* Effect.scoped(Effect.flatMap(
        Layer.build(session),
        (context) => Effect.provide(Effect.flatMap(PendingActions, (p) => p.list), context)
      ))
      deepStrictEqual(listed.map((info) => [info.id, info.status]), [[id, "pending"]])
    }))

  it.live("the deprecated ResolveRuntime.durable still builds a session on the store it is given", () =>
    Effect.gen(function*() {
      const store = Layer.succeed(PendingStore, makeMemory())
      const result = yield* Effect.scoped(Effect.flatMap(
        Layer.build(ResolveRuntime.durable({ session: "s", store, kinds: [Note] })),
        (context) =>
          Effect.provide(
            Effect.gen(function*() {
              const handle = yield* stageKind(Note, { text: "b" }, { label: "Note", sourceToolName: "note" })
              return yield* resolve({ action: "apply", reason: "ok", id: handle.id })
            }),
            context
          )
      ))
      assert.strictEqual(ToolResult.textOf(result), "noted b")
    }))
})

describe("the 0.2 names of the core", () => {
  it("PendingAction is the Preview module under its old name", () => {
    assert.strictEqual(PendingAction.commit, Preview.commit)
    assert.strictEqual(PendingAction.directiveLabel("edit"), Preview.directiveLabel("edit"))
    const spec: PendingActionSpec = {
      label: "x",
      sourceToolName: "t",
      apply: () => Effect.succeed(ToolResult.text(""))
    }
    const same: Preview.Spec = spec
    assert.strictEqual(same.label, "x")
  })
})

describe("ResolveRuntime.layerDurable's requirements", () => {
  it("with no kinds (or an empty list) it needs only the store, so the JSDoc example provides everything", () => {
    type Needs<L> = L extends Layer.Layer<infer _A, infer _E, infer R> ? R : never
    const none = ResolveRuntime.layerDurable({ session: "s" })
    const empty = ResolveRuntime.layerDurable({ session: "s", kinds: [] })
    assert.isTrue(Layer.isLayer(empty))
    expectTypeOf<Needs<typeof none>>().toEqualTypeOf<PendingStore>()
    expectTypeOf<Needs<typeof empty>>().toEqualTypeOf<PendingStore>()
    const provided = none.pipe(Layer.provideMerge(PendingStore.layerMemory))
    expectTypeOf<Needs<typeof provided>>().toEqualTypeOf<never>()
    assert.isTrue(Layer.isLayer(provided))
  })

  it("a contract needs nothing; a kind needs what its handlers use", () => {
    type Needs<L> = L extends Layer.Layer<infer _A, infer _E, infer R> ? R : never
    expectTypeOf<ActionKind.Requirements<[typeof FileEditPreview.contract, typeof PlanApproval.contract]>>()
      .toEqualTypeOf<never>()
    expectTypeOf<ActionKind.Requirements<[typeof FileEditPreview.kind]>>().toEqualTypeOf<
      FileSystem.FileSystem | FileEditPreview.Workspace
    >()
    const _edits = ResolveRuntime.layerDurable({ session: "s", kinds: [FileEditPreview.kind] })
    expectTypeOf<Needs<typeof _edits>>().toEqualTypeOf<
      PendingStore | FileSystem.FileSystem | FileEditPreview.Workspace
    >()
    assert.isFalse(ActionKind.isRunnable(FileEditPreview.contract))
    assert.isTrue(ActionKind.isRunnable(FileEditPreview.kind))
    assert.strictEqual(FileEditPreview.kind.amendment, FileEditPreview.contract.amendment)
  })
})
