/**
 * How a durable session's set stays in step with its store (src/services/internal/storeMirror.ts), on each store:
 * it lists and knows every record the store holds, even those it no longer keeps in memory, and after a refresh it
 * sees what another process did to a record.
 */
import { assert, it } from "@effect/vitest"
import { deepStrictEqual } from "@effect/vitest/utils"
import { Deferred, Effect, Exit, Fiber, Layer, Option, Ref, Schema, Scope } from "effect"
import { afterAll } from "vitest"
import {
  ActionKind,
  PendingActionNotPending,
  PendingActions,
  type PendingStore,
  ResolveRuntime,
  stageKind,
  ToolResult
} from "../../../src/index.js"
import { tempDir } from "../../stores/subjects.js"
import { postgresForTests } from "../../support/pgTest.js"
import { apply, describeEachStore, Note, Notes } from "./durableSessions.js"

const pg = await postgresForTests()
const { dir, cleanup } = tempDir()
afterAll(cleanup)

describeEachStore("a durable session's mirror of its store", pg, dir, (subject) => {
  it.live("a session that keeps one settled action in memory still lists every record, and knows old ids", () =>
    Effect.gen(function*() {
      const store = yield* subject.make()
      const notes = yield* Ref.make<ReadonlyArray<string>>([])
      const scope = yield* Scope.make()
      const context = yield* Layer.buildWithScope(
        ResolveRuntime.durable({ session: "s5", store, kinds: [Note], retainSettled: 1 }).pipe(
          Layer.provide(Layer.succeed(Notes, notes))
        ),
        scope
      )
      const run = <A, E>(effect: Effect.Effect<A, E, ResolveRuntime.Services | PendingStore | Notes>) =>
        effect.pipe(Effect.provide(context), Effect.provideService(Notes, notes))
      const ids: Array<string> = []
      for (const text of ["one", "two", "three"]) {
        const note = yield* run(stageKind(Note, { text }, { label: `Note: ${text}`, sourceToolName: "note" }))
        yield* run(apply(note.id))
        ids.push(note.id)
      }
      const pending = yield* run(PendingActions)
      deepStrictEqual((yield* pending.list).map((info) => [info.id, info.status]), [
        [ids[2]!, "applied"],
        [ids[1]!, "applied"],
        [ids[0]!, "applied"]
      ])
      deepStrictEqual(
        Option.map(yield* pending.get(ids[0]!), (info) => ({ status: info.status, outcome: info.outcome })),
        Option.some({ status: "applied" as const, outcome: Option.some("noted one") })
      )
      const again = yield* run(Effect.flip(apply(ids[0]!)))
      assert.instanceOf(again, PendingActionNotPending)
      assert.strictEqual((again as PendingActionNotPending).status, "applied")
      deepStrictEqual((yield* Ref.get(notes)).length, 3)
      yield* Scope.close(scope, Exit.void)
    }))

  it.live("what another process resolves is seen here after a refresh: resolving there, then applied", () =>
    Effect.gen(function*() {
      const store = yield* subject.make()
      const notes = yield* Ref.make<ReadonlyArray<string>>([])
      const gate = yield* Deferred.make<void>()
      const Slow = ActionKind.make({
        name: "slow",
        payload: Schema.Struct({ text: Schema.String }),
        apply: ({ text }) => Effect.as(Deferred.await(gate), ToolResult.text(`slow ${text}`))
      })
      const openWithSlow = Effect.fn(function*() {
        const scope = yield* Scope.make()
        const context = yield* Layer.buildWithScope(
          ResolveRuntime.durable({ session: "s6", store, kinds: [Note, Slow] }).pipe(
            Layer.provide(Layer.succeed(Notes, notes))
          ),
          scope
        )
        return {
          run: <A, E>(effect: Effect.Effect<A, E, ResolveRuntime.Services | PendingStore | Notes>) =>
            effect.pipe(Effect.provide(context), Effect.provideService(Notes, notes)),
          close: Scope.close(scope, Exit.void)
        }
      })
      const here = yield* openWithSlow()
      const action = yield* here.run(stageKind(Slow, { text: "x" }, { label: "Slow: x", sourceToolName: "slow" }))
      const there = yield* openWithSlow()
      const applying = yield* Effect.fork(there.run(apply(action.id)))
      const pendingHere = yield* here.run(PendingActions)
      const statusHere = Effect.map(
        Effect.zipRight(pendingHere.refresh, pendingHere.get(action.id)),
        Option.map((info) => info.status)
      )
      // Poll until the other session's claim is visible in the store.
      let seen = yield* statusHere
      for (let i = 0; i < 200 && Option.getOrNull(seen) !== "resolving"; i++) {
        yield* Effect.sleep("5 millis")
        seen = yield* statusHere
      }
      deepStrictEqual(seen, Option.some("resolving" as const))
      const refused = yield* here.run(Effect.flip(apply(action.id)))
      assert.instanceOf(refused, PendingActionNotPending)
      yield* Deferred.succeed(gate, undefined)
      deepStrictEqual(ToolResult.textOf(yield* Fiber.join(applying)), "slow x")
      deepStrictEqual(yield* statusHere, Option.some("applied" as const))
      assert.isFalse(yield* pendingHere.hasPending)
      yield* here.close
      yield* there.close
    }))
})
