/**
 * The steering journal, in memory, on SQLite and Postgres: a steer is recorded once per id (the same steer sent
 * again is the same message), read back exactly (NUL and other bytes a store may mangle included), oldest first, and
 * marked delivered once a saved turn carried it.
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

const steer = (content: string) => ({
  customType: "session-steer",
  content,
  details: { steerId: "st-1" },
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
  it.live("a steer once per id, read back exactly, oldest first, until a saved turn carried it", () =>
    Effect.gen(function*() {
      const journal = yield* SteeringJournal
      const odd = "Use tabs\u0000 not spaces \ud800 \u202e done."
      assert.isTrue(yield* journal.record("s", "st-1", steer(odd)))
      assert.isFalse(yield* journal.record("s", "st-1", steer("another text")), "the same id is the same steer")
      assert.isTrue(yield* journal.record("s", "st-2", steer("Second.")))
      assert.isTrue(yield* journal.record("t", "st-1", steer("Another session's.")))
      assert.isTrue(yield* journal.has("s", "st-2"))
      assert.isFalse(yield* journal.has("s", "st-3"))
      assert.deepStrictEqual((yield* journal.undelivered("s")).map((e) => [e.id, e.message.content]), [
        ["st-1", odd],
        ["st-2", "Second."]
      ])
      yield* journal.markDelivered("s", ["st-1"])
      assert.deepStrictEqual((yield* journal.undelivered("s")).map((e) => e.id), ["st-2"])
      assert.isFalse(yield* journal.record("s", "st-1", steer(odd)), "delivered: not recorded again")
      assert.deepStrictEqual((yield* journal.undelivered("t")).map((e) => e.id), ["st-1"])
    }).pipe(Effect.provide(layer())))
})
