/**
 * The steering journal's writes for a decision: `replace` puts a decision's own note over one not yet delivered,
 * `replaceWith` commits it with the settle that runs alongside it, or neither. In memory, on SQLite and Postgres.
 */
import { LibsqlClient } from "@effect/sql-libsql"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { SteeringJournal } from "../../src/cluster.js"
import { PostgresStore } from "../../src/postgres.js"
import { postgresForTests, postgresSuiteName } from "../support/pgTest.js"
import { freshSchema } from "../support/postgres.js"

const pg = await postgresForTests()

const note = (content: string) => ({
  customType: "resolve-decision",
  content,
  details: { steerId: "decision:pa_1" },
  display: false,
  attribution: "agent" as const,
  timestamp: 1
})

const sqlite = () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "effect-resolve-journal-"))
  return SteeringJournal.layerSql.pipe(
    Layer.provide(LibsqlClient.layer({ url: `file:${path.join(dir, "journal.db")}`, intMode: "bigint" }))
  )
}

const postgres = () =>
  Layer.unwrapEffect(
    Effect.map(
      Effect.orDie(freshSchema(pg._tag === "Available" ? pg.url : "")),
      (url) => SteeringJournal.layerSql.pipe(Layer.provide(PostgresStore.layerClient({ url })))
    )
  )

const journals: ReadonlyArray<readonly [string, () => Layer.Layer<SteeringJournal, unknown>]> = [
  ["memory", () => SteeringJournal.layerMemory],
  ["sqlite", sqlite],
  ...(pg._tag === "Available" ? [[postgresSuiteName("postgres", pg), postgres] as const] : [])
]

describe.each(journals)("SteeringJournal (%s)", (_name, layer) => {
  it.live("replace puts a note over one not delivered; never over a delivered one", () =>
    Effect.gen(function*() {
      const journal = yield* SteeringJournal
      const carol = note("carol discarded it")
      const alice = note("alice applied it")
      assert.isTrue(yield* journal.record("s", "decision:pa_1", carol))
      yield* journal.replace("s", "decision:pa_1", alice)
      assert.deepStrictEqual((yield* journal.undelivered("s")).map((e) => e.message.content), ["alice applied it"])
      yield* journal.markDelivered("s", ["decision:pa_1"])
      yield* journal.replace("s", "decision:pa_1", carol)
      assert.deepStrictEqual(yield* journal.undelivered("s"), [])
      yield* journal.replace("s", "decision:pa_2", alice) // none before: recorded
      assert.deepStrictEqual((yield* journal.undelivered("s")).map((e) => e.id), ["decision:pa_2"])
    }).pipe(Effect.provide(layer())))

  it.live("replaceWith commits the note with what runs alongside it, or neither", () =>
    Effect.gen(function*() {
      const journal = yield* SteeringJournal
      const alice = note("alice applied it")
      assert.strictEqual(yield* journal.replaceWith("s", "decision:pa_1", alice, Effect.succeed(7)), 7)
      assert.deepStrictEqual((yield* journal.undelivered("s")).map((e) => e.id), ["decision:pa_1"])
      // What runs alongside fails: the note is not stored, and the failure is the caller's.
      const failed = yield* Effect.flip(
        journal.replaceWith("s", "decision:pa_2", alice, Effect.fail("settle refused" as const))
      )
      assert.strictEqual(failed, "settle refused")
      assert.isFalse(yield* journal.has("s", "decision:pa_2"))
      if (_name !== "memory") {
        // On SQL, a write alongside on the same database is rolled back with the note.
        const both = journal.replaceWith(
          "s",
          "decision:pa_3",
          alice,
          Effect.zipRight(journal.record("s", "steer-9", note("a steer")), Effect.fail("refused" as const))
        )
        assert.strictEqual(yield* Effect.flip(both), "refused")
        assert.deepStrictEqual([yield* journal.has("s", "decision:pa_3"), yield* journal.has("s", "steer-9")], [
          false,
          false
        ])
      }
      // Over a delivered note it stores nothing, but what runs alongside still runs.
      yield* journal.markDelivered("s", ["decision:pa_1"])
      assert.strictEqual(yield* journal.replaceWith("s", "decision:pa_1", note("carol"), Effect.succeed(1)), 1)
      assert.deepStrictEqual(yield* journal.undelivered("s"), [])
    }).pipe(Effect.provide(layer())))
})
