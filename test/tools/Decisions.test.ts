/**
 * `Decisions`, the one path of a reviewer's decisions (issue 27), through the public API on a durable session in
 * memory: a decision is recorded `requested`, run exactly as a model's `resolve` would and completed with its
 * action's settle; a failed apply completes it `failed` and leaves the action pending; a decision whose action was
 * settled another way first is `failed` without running; the model is told through the session's `SteeringBus`, the
 * reviewer's reason once; a response is recorded while the action waits, and refused once it is settled.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Option, Ref } from "effect"
import {
  type Decision,
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

/** Records a reviewer's decision of `actionId`; it must be recorded. */
const record = (actionId: string, action: "apply" | "discard", reason: string) =>
  Effect.flatMap(
    Decisions,
    (decisions) =>
      Effect.flatMap(decisions.record({ actionId, reviewer: "ann", action, reason, amendment: null }), (recorded) =>
        recorded._tag === "Recorded" ? Effect.succeed(recorded.decision) : Effect.dieMessage(recorded._tag))
  )

/** What `tell` steers for `decision`, alone (what staging steered before is taken first). */
const told = (decision: Decision.Decision) =>
  Effect.gen(function*() {
    const bus = yield* SteeringBus
    yield* bus.drain
    yield* Effect.flatMap(Decisions, (decisions) => decisions.tell(decision))
    return yield* bus.drain
  })

describe("Decisions", () => {
  it.live("record, run once, tell: the action applied, the decision done with its result, the model told", () =>
    Effect.gen(function*() {
      const decisions = yield* Decisions
      const applied = yield* Ref.make(0)
      const handle = yield* stageWrite(applied)
      const decision = yield* record(handle.id, "apply", "Looks right")
      const again = yield* decisions.record({
        actionId: handle.id,
        reviewer: "bob",
        action: "discard",
        reason: "No",
        amendment: null
      })
      assert.strictEqual(again._tag, "AlreadyRequested", "one requested decision per action")
      const ran = yield* decisions.run(decision, "worker-1")
      if (ran._tag !== "Done") return assert.fail(ran._tag)
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
      const twice = yield* decisions.run(decision, "worker-2")
      assert.strictEqual(twice._tag, "Done")
      assert.strictEqual(yield* Ref.get(applied), 1, "applied once")
      // The model hears it through the session's bus.
      const [message] = yield* told(ran.decision)
      assert.strictEqual(message?.customType, "reviewer-decision")
      assert.strictEqual(
        message?.content,
        `A reviewer (ann) applied ${handle.id}: Looks right. Result: Wrote a.ts. Do not resolve ${handle.id} again.`
      )
    }).pipe(Effect.provide(layer)))

  it.live("a failing apply completes the decision failed and leaves the action pending", () =>
    Effect.gen(function*() {
      const handle = yield* stageWrite(yield* Ref.make(0), true)
      const ran = yield* Effect.flatMap(
        record(handle.id, "apply", "Go"),
        (decision) => Effect.flatMap(Decisions, (decisions) => decisions.run(decision, "worker-1"))
      )
      if (ran._tag !== "Failed") return assert.fail(ran._tag)
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
      const decision = yield* record(handle.id, "apply", "Go")
      const responded = yield* decisions.respond({ actionId: handle.id, reviewer: "bob", message: "Wait" })
      assert.strictEqual(responded._tag, "Recorded", "a requested decision does not stand in a response's way")
      // The model discards it first.
      yield* resolve({ action: "discard", reason: "Not needed.", id: handle.id })
      const ran = yield* decisions.run(decision, "worker-1")
      if (ran._tag !== "Failed") return assert.fail(ran._tag)
      assert.strictEqual(ran.message, "Not run: the action was already discarded before this decision could run.")
      assert.strictEqual(yield* Ref.get(applied), 0)
      const late = yield* decisions.respond({ actionId: handle.id, reviewer: "bob", message: "Too late" })
      assert.strictEqual(late._tag, "NotDecidable")
    }).pipe(Effect.provide(layer)))

  it.live("the model reads the reviewer's reason once when the result quotes it", () =>
    Effect.gen(function*() {
      const handle = yield* stageWrite(yield* Ref.make(0))
      const ran = yield* Effect.flatMap(
        record(handle.id, "discard", "Out of scope"),
        (decision) => Effect.flatMap(Decisions, (decisions) => decisions.run(decision, "worker-1"))
      )
      if (ran._tag !== "Done") return assert.fail(ran._tag)
      const [message] = yield* told(ran.decision)
      assert.strictEqual(
        message?.content,
        `A reviewer (ann) discarded ${handle.id}: Result: Discarded: Write a.ts. Reason: Out of scope. Do not ` +
          `resolve ${handle.id} again.`
      )
    }).pipe(Effect.provide(layer)))

  it.live("decide: run at once and recorded with its settle, answered as a resolve call is; the same again is settled before", () =>
    Effect.gen(function*() {
      const decisions = yield* Decisions
      const store = yield* PendingStore
      const applied = yield* Ref.make(0)
      const handle = yield* stageWrite(applied)
      const input = {
        actionId: handle.id,
        reviewer: "ann",
        action: "apply",
        reason: "Ship it",
        amendment: null
      } as const
      const decided = yield* decisions.decide(input, "worker-1")
      assert.deepStrictEqual([decided.message, decided.settledBefore], ["Wrote a.ts", false])
      assert.deepStrictEqual(
        Option.map(decided.decision, (d) => [d.state, d.reviewer, d.settledBy]),
        Option.some(["done", "ann", "worker-1"])
      )
      // Sent again (a reply lost on the way): settled before, the same result, not applied twice, not recorded twice.
      const again = yield* decisions.decide(input, "worker-1")
      assert.deepStrictEqual([again.message, again.settledBefore], ["Wrote a.ts", true])
      assert.strictEqual(yield* Ref.get(applied), 1)
      assert.strictEqual((yield* store.decisions(handle.id)).length, 1)
      // The opposite decision, and one on an id nobody staged: refused, typed, and nothing recorded.
      const opposite = yield* Effect.flip(decisions.decide({ ...input, action: "discard" }, "worker-1"))
      assert.deepStrictEqual([opposite._tag, (opposite as { status?: unknown }).status], [
        "PendingActionNotPending",
        "applied"
      ])
      const unknown = yield* Effect.flip(decisions.decide({ ...input, actionId: "pa_nobody" }, "worker-1"))
      assert.strictEqual(unknown._tag, "UnknownPendingAction")
      assert.strictEqual((yield* store.decisions(handle.id)).length, 1)
      assert.deepStrictEqual(yield* store.decisions("pa_nobody"), [])
    }).pipe(Effect.provide(layer)))

  it.live("decide: a failed apply answers with its typed error, leaves the action pending and records nothing", () =>
    Effect.gen(function*() {
      const decisions = yield* Decisions
      const store = yield* PendingStore
      const handle = yield* stageWrite(yield* Ref.make(0), true)
      const error = yield* Effect.flip(
        decisions.decide({ actionId: handle.id, reviewer: "ann", action: "apply", reason: "Go", amendment: null }, "w")
      )
      assert.include(error.message, "the disk is full")
      assert.strictEqual(Option.getOrThrow(yield* store.get(handle.id)).status, "pending")
      assert.deepStrictEqual(yield* store.decisions(handle.id), [])
    }).pipe(Effect.provide(layer)))
})
