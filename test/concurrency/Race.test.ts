/**
 * Many fibers on one session (SPEC §2.7, §6.2): up to 1 000 fibers racing stage / serve / resolve / clear /
 * removeByLabel. Fibers yield every 32 operations (`withMaxOpsBeforeYield(32)`), so they interleave in the
 * middle of every operation. Invariants: no staged action is applied twice or lost, every action ends exactly once, and the run
 * finishes within a bound (no deadlock).
 */
// node's strict deepStrictEqual: chai's treats Option.none() as equal to Option.some(x).
import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect, Option, Random, Ref } from "effect"
import { deepStrictEqual } from "node:assert/strict"
import { Preview, ResolveRuntime, ResolveTool, stage, ToolChoiceQueue, ToolResult } from "../../src/index.js"

const bound = Duration.seconds(20)
const terminal = new Set<Preview.PendingStatus>(["applied", "discarded", "cleared"])

// Yield to the other fibers every 32 operations instead of 2048. (Below about 16, a fiber's own yield costs more
// operations than the budget and it never makes progress.)
const interleaved = <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.withMaxOpsBeforeYield(self, 32)

/** A session with `count` helpers to stage actions whose apply commits (counts) once per call. */
const makeStage = Effect.gen(function*() {
  const applied = yield* Ref.make(new Map<string, number>())
  const handles: Array<Preview.Handle> = []
  const stageOne = (source: string) =>
    Effect.tap(
      stage({
        label: `Edit by ${source}`,
        sourceToolName: source,
        apply: () =>
          Effect.gen(function*() {
            yield* Effect.yieldNow()
            const handle = handles.find((h) => h.label === `Edit by ${source}`)!
            yield* Preview.commit(
              Ref.update(applied, (m) => new Map(m).set(handle.id, (m.get(handle.id) ?? 0) + 1))
            )
            return ToolResult.text(`applied ${source}`)
          })
      }),
      (handle) => Effect.sync(() => handles.push(handle))
    )
  return { applied, handles, stageOne }
})

/** Every action is terminal after a final `clear`, and applied at most once — exactly once when applied. */
const checkEndsOnce = (
  handles: ReadonlyArray<Preview.Handle>,
  applied: Ref.Ref<Map<string, number>>
) =>
  Effect.gen(function*() {
    const queue = yield* ToolChoiceQueue
    yield* queue.clear
    const counts = yield* Ref.get(applied)
    for (const h of handles) {
      const status = yield* h.status
      assert.isTrue(terminal.has(status), `${h.label} is still ${status}`)
      const n = counts.get(h.id) ?? 0
      assert.isAtMost(n, 1, `${h.label} applied ${n} times`)
      assert.strictEqual(n === 1, status === "applied", `${h.label}: ${status} with ${n} applies`)
    }
    deepStrictEqual(yield* queue.inspect, [])
  })

describe("concurrency", () => {
  it.live("1000 fibers racing resolve on one in-flight preview apply it exactly once", () =>
    Effect.gen(function*() {
      const { applied, handles, stageOne } = yield* makeStage
      const queue = yield* ToolChoiceQueue
      yield* stageOne("edit")
      yield* queue.nextToolChoice
      const results = yield* Effect.forEach(
        Array.from({ length: 1_000 }, (_, i) => i),
        (i) => Effect.either(ResolveTool.execute({ action: i % 2 === 0 ? "apply" : "discard", reason: `call ${i}` })),
        { concurrency: "unbounded" }
      ).pipe(interleaved)
      const wins = results.filter((r) => r._tag === "Right")
      assert.strictEqual(wins.length, 1)
      // Losers: "being resolved" while the winner runs, "nothing pending" after it.
      for (const r of results) {
        if (r._tag === "Left") assert.include(["NoPendingAction", "PendingActionNotPending"], r.left._tag)
      }
      const status = yield* handles[0]!.status
      assert.strictEqual(status, ToolResult.textOf(wins[0]!.right).startsWith("applied") ? "applied" : "discarded")
      yield* queue.resolve
      yield* checkEndsOnce(handles, applied)
    }).pipe(Effect.timeout(bound), Effect.provide(ResolveRuntime.layer)))

  it.live("1000 fibers staging, serving, resolving, clearing and removing: nothing applied twice or lost", () =>
    Effect.gen(function*() {
      const { applied, handles, stageOne } = yield* makeStage
      const queue = yield* ToolChoiceQueue
      const sources = ["edit", "write", "ast_edit", "rename"]
      const fiber = (i: number) =>
        Effect.gen(function*() {
          const r = yield* Random.nextIntBetween(0, 100)
          if (r < 30) {
            yield* stageOne(`${sources[i % sources.length]}-${i}`)
          } else if (r < 55) {
            yield* queue.nextToolChoice
          } else if (r < 80) {
            yield* Effect.either(ResolveTool.execute({ action: r % 2 === 0 ? "apply" : "discard", reason: "race" }))
          } else if (r < 90) {
            yield* queue.resolve
          } else if (r < 94) {
            yield* queue.reject("aborted")
          } else if (r < 97) {
            yield* queue.removeByLabel(`pending-action:${sources[(i + 3) % sources.length]}-${i - 1}`)
          } else {
            yield* queue.clear
          }
        })
      yield* Effect.forEach(Array.from({ length: 1_000 }, (_, i) => i), fiber, {
        concurrency: "unbounded",
        discard: true
      }).pipe(interleaved, Effect.withRandom(Random.make(42)))

      // Nothing lost: every action still pending has its directive queued or in flight.
      const pending = yield* Effect.filter(handles, (h) => Effect.map(h.status, (s) => s === "pending"))
      const labels = [...(yield* queue.inspect), ...Option.toArray(Option.map(yield* queue.inFlight, (f) => f.label))]
      for (const h of pending) {
        assert.include(labels, `pending-action:${h.sourceToolName}`, `${h.label} is pending but not queued`)
      }
      // Drain turn by turn: each remaining preview is applied exactly once.
      for (let turn = 0; turn < 3 * handles.length + 10; turn++) {
        const served = yield* queue.nextToolChoice
        if (Option.isNone(served)) break
        yield* Effect.either(ResolveTool.execute({ action: "apply", reason: "drain" }))
        yield* queue.resolve
      }
      for (const h of pending) assert.strictEqual(yield* h.status, "applied", h.label)
      yield* checkEndsOnce(handles, applied)
    }).pipe(Effect.timeout(bound), Effect.provide(ResolveRuntime.layer)))

  // Every yield budget from 16 to 47 operations, so the fibers' yields land at every offset inside the serve step.
  it.live("fibers serving while others stageOne, at every yield offset: no in-flight value is overwritten", () =>
    Effect.forEach(Array.from({ length: 32 }, (_, i) => 16 + i), (budget) =>
      Effect.gen(function*() {
        const { applied, handles, stageOne } = yield* makeStage
        const queue = yield* ToolChoiceQueue
        yield* Effect.forEach(
          Array.from({ length: 200 }, (_, i) => i),
          (i) => i % 2 === 0 ? Effect.asVoid(stageOne(`s${i}`)) : Effect.asVoid(queue.nextToolChoice),
          { concurrency: "unbounded", discard: true }
        ).pipe(Effect.withMaxOpsBeforeYield(budget))
        const labels = [...(yield* queue.inspect), ...Option.toArray(Option.map(yield* queue.inFlight, (f) => f.label))]
        assert.strictEqual(labels.length, handles.length, `budget ${budget}: a staged preview was lost`)
        for (const h of handles) assert.strictEqual(yield* h.status, "pending")
        yield* checkEndsOnce(handles, applied)
        for (const h of handles) assert.strictEqual(yield* h.status, "cleared")
      }).pipe(Effect.provide(ResolveRuntime.layer)), { discard: true }).pipe(Effect.timeout(bound)))

  it.live("callbacks that push or clear from inside the queue do not deadlock", () =>
    Effect.gen(function*() {
      const queue = yield* ToolChoiceQueue
      yield* Effect.forEach(Array.from({ length: 200 }, (_, i) => i), (i) =>
        queue.pushOnce("auto", {
          label: `c${i % 5}`,
          onResolved: i % 7 === 0 ? queue.clear : Effect.asVoid(queue.pushOnce("none", { label: "from-callback" })),
          onRejected: () => Effect.as(queue.removeByLabel("from-callback"), "requeue" as const)
        }), { concurrency: "unbounded", discard: true })
      yield* Effect.forEach(Array.from({ length: 400 }, (_, i) => i), (i) =>
        i % 3 === 0 ?
          Effect.asVoid(queue.nextToolChoice) :
          i % 3 === 1 ?
          queue.resolve :
          queue.reject("unavailable"), { concurrency: "unbounded", discard: true }).pipe(interleaved)
      yield* queue.clear
      deepStrictEqual(yield* queue.inspect, [])
      assert.isFalse(yield* queue.hasInFlight)
    }).pipe(Effect.timeout(bound), Effect.provide(ResolveRuntime.layer)))
})
