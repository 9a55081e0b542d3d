/**
 * `Decisions`, the one path of a reviewer's decisions (issue 27), through the public API on a durable session in
 * memory: a decision is recorded `requested`, run exactly as a model's `resolve` would and completed with its
 * action's settle; a failed apply completes it `failed` and leaves the action pending; a decision whose action was
 * settled another way first is `failed` without running; the model is told through the session's `SteeringBus`; a
 * response is recorded while the action waits, and refused once it is settled.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Option, Ref } from "effect"
import {
  Decisions,
  PendingActions,
  PendingStore,
  resolve,
  ResolveRuntime,
  stage,
  SteeringBus,
  ToolError,
  ToolResult
} from "../../src/index.js"

const layer = Layer.mergeAll(Decisions.layer, ResolveRuntime.layerDurable({ session: "s-dec" })).pipe(
  Layer.provideMerge(PendingStore.layerMemory)
)

const stageWrite = (applied: Ref.Ref<number>, fail = false) =>
  stage({
    label: "Write a.ts",
    sourceToolName: "write",
    apply: () =>
      fail ?
        Effect.fail(new ToolError({ message: "the disk is full" })) :
        Effect.as(Ref.update(applied, (n) => n + 1), ToolResult.text("Wrote a.ts"))
  })

describe("Decisions", () => {
  it.live("record, run once, tell: the action applied, the decision done with its result, the model told", () =>
    Effect.gen(function*() {
      const decisions = yield* Decisions
      const applied = yield* Ref.make(0)
      const handle = yield* stageWrite(applied)
      const recorded = yield* decisions.record({
        actionId: handle.id,
        reviewer: "ann",
        action: "apply",
        reason: "Looks right",
        amendment: null
      })
      assert.strictEqual(recorded._tag, "Recorded")
      if (recorded._tag !== "Recorded") return
      const again = yield* decisions.record({
        actionId: handle.id,
        reviewer: "bob",
        action: "discard",
        reason: "No",
        amendment: null
      })
      assert.strictEqual(again._tag, "AlreadyRequested", "one requested decision per action")
      const ran = yield* decisions.run(recorded.decision, "worker-1")
      assert.strictEqual(ran._tag, "Done")
      if (ran._tag !== "Done") return
      assert.deepStrictEqual([ran.decision.state, ran.decision.outcome, ran.decision.settledBy, ran.message], [
        "done",
        "Wrote a.ts",
        "worker-1",
        "Wrote a.ts"
      ])
      assert.strictEqual(yield* Ref.get(applied), 1)
      const store = yield* PendingStore
      assert.strictEqual(Option.getOrThrow(yield* store.get(handle.id)).status, "applied")
      assert.deepStrictEqual((yield* store.decisions(handle.id)).map((d) => d.state), ["done"])
      // Running it again runs nothing: the action is settled as decided.
      const twice = yield* decisions.run(recorded.decision, "worker-2")
      assert.strictEqual(twice._tag, "Done")
      assert.strictEqual(yield* Ref.get(applied), 1, "applied once")
      // The model hears it through the session's bus, the reason once (after what staging steered).
      yield* Effect.flatMap(SteeringBus, (bus) => bus.drain)
      yield* decisions.tell(ran.decision)
      const [message] = yield* Effect.flatMap(SteeringBus, (bus) => bus.drain)
      assert.strictEqual(message?.customType, "reviewer-decision")
      assert.strictEqual(
        message?.content,
        `A reviewer (ann) applied ${handle.id}: Looks right. Result: Wrote a.ts. Do not resolve ${handle.id} again.`
      )
    }).pipe(Effect.provide(layer)))

  it.live("a failing apply completes the decision failed and leaves the action pending", () =>
    Effect.gen(function*() {
      const decisions = yield* Decisions
      const handle = yield* stageWrite(yield* Ref.make(0), true)
      const recorded = yield* decisions.record({
        actionId: handle.id,
        reviewer: "ann",
        action: "apply",
        reason: "Go",
        amendment: null
      })
      if (recorded._tag !== "Recorded") return assert.fail(recorded._tag)
      const ran = yield* decisions.run(recorded.decision, "worker-1")
      assert.strictEqual(ran._tag, "Failed")
      if (ran._tag !== "Failed") return
      assert.include(ran.message, "the disk is full")
      assert.strictEqual(ran.decision.state, "failed")
      const info = yield* Effect.flatMap(PendingActions, (pending) => pending.get(handle.id))
      assert.strictEqual(Option.getOrThrow(info).status, "pending")
    }).pipe(Effect.provide(layer)))

  it.live("a decision whose action was settled another way first fails without running; responses only while open", () =>
    Effect.gen(function*() {
      const decisions = yield* Decisions
      const applied = yield* Ref.make(0)
      const handle = yield* stageWrite(applied)
      const recorded = yield* decisions.record({
        actionId: handle.id,
        reviewer: "ann",
        action: "apply",
        reason: "Go",
        amendment: null
      })
      if (recorded._tag !== "Recorded") return assert.fail(recorded._tag)
      const responded = yield* decisions.respond({ actionId: handle.id, reviewer: "bob", message: "Wait" })
      assert.strictEqual(responded._tag, "Recorded", "a requested decision does not stand in a response's way")
      // The model discards it first.
      yield* resolve({ action: "discard", reason: "Not needed.", id: handle.id })
      const ran = yield* decisions.run(recorded.decision, "worker-1")
      assert.strictEqual(ran._tag, "Failed")
      if (ran._tag !== "Failed") return
      assert.strictEqual(ran.message, "Not run: the action was already discarded before this decision could run.")
      // A result that quotes the reviewer's reason: the model reads the reason once.
      const discarded = yield* stageWrite(applied)
      const discard = yield* decisions.record({
        actionId: discarded.id,
        reviewer: "ann",
        action: "discard",
        reason: "Out of scope",
        amendment: null
      })
      if (discard._tag !== "Recorded") return assert.fail(discard._tag)
      const gone = yield* decisions.run(discard.decision, "worker-1")
      if (gone._tag !== "Done") return assert.fail(gone._tag)
      yield* Effect.flatMap(SteeringBus, (bus) => bus.drain)
      yield* decisions.tell(gone.decision)
      const [told] = yield* Effect.flatMap(SteeringBus, (bus) => bus.drain)
      assert.strictEqual(
        told?.content,
        `A reviewer (ann) discarded ${discarded.id}: Result: Discarded: Write a.ts. Reason: Out of scope. Do not ` +
          `resolve ${discarded.id} again.`
      )
      assert.strictEqual(told!.content.split("Out of scope").length - 1, 1, "the reason once")
      assert.strictEqual(yield* Ref.get(applied), 0)
      const late = yield* decisions.respond({ actionId: handle.id, reviewer: "bob", message: "Too late" })
      assert.strictEqual(late._tag, "NotDecidable")
    }).pipe(Effect.provide(layer)))
})
