/**
 * Which settled records a durable session's store keeps (src/services/internal/retention.ts), on each store: the
 * last `keepLast`, pruned in the background; `"keep-all"` prunes nothing.
 */
import { it } from "@effect/vitest"
import { deepStrictEqual } from "@effect/vitest/utils"
import { Effect, Ref } from "effect"
import { afterAll } from "vitest"
import { PendingActions, PendingStore, stageKind } from "../../../src/index.js"
import { tempDir } from "../../stores/subjects.js"
import { postgresForTests } from "../../support/pgTest.js"
import { apply, describeEachStore, Note, open } from "./durableSessions.js"

const pg = await postgresForTests()
const { dir, cleanup } = tempDir()
afterAll(cleanup)

describeEachStore("durable retention", pg, dir, (subject) => {
  it.live("retention: the store keeps the last keepLast settled records, pruned in the background", () =>
    Effect.gen(function*() {
      const store = yield* subject.make()
      const notes = yield* Ref.make<ReadonlyArray<string>>([])
      const session = yield* open(store, "kept", notes, { keepLast: 3 })
      const settledInStore = session.run(Effect.flatMap(
        PendingStore,
        (s) => Effect.map(s.list("kept"), (all) => all.filter((r) => r.status !== "pending").map((r) => r.id))
      ))
      const ids: Array<string> = []
      for (let i = 0; i < 12; i++) {
        const handle = yield* session.run(stageKind(Note, { text: `n${i}` }, {
          label: `Note ${i}`,
          sourceToolName: "note"
        }))
        ids.push(handle.id)
        if (i < 10) yield* session.run(apply(handle.id))
      }
      // Pruning runs in the background: wait for it (it never holds up a resolve).
      let kept: ReadonlyArray<string> = []
      for (let tries = 0; tries < 100; tries++) {
        kept = yield* settledInStore
        if (kept.length === 3) break
        yield* Effect.sleep("20 millis")
      }
      deepStrictEqual([...kept].sort(), ids.slice(7, 10).sort())
      // The two still pending are kept, and a pruned id is unknown now.
      const listed = yield* session.run(Effect.flatMap(PendingActions, (p) => p.list))
      deepStrictEqual(listed.map((info) => info.status), ["pending", "pending", "applied", "applied", "applied"])
      yield* session.close
      // "keep-all" never prunes; by default the last 10 000 are kept (nothing goes here).
      const all = yield* open(store, "kept", notes, "keep-all")
      yield* all.run(apply(ids[10]!))
      yield* all.run(apply(ids[11]!))
      yield* Effect.sleep("100 millis")
      deepStrictEqual((yield* all.run(Effect.flatMap(PendingActions, (p) => p.list))).length, 5)
      yield* all.close
    }))
})
