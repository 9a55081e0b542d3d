/**
 * PostgresStore's prepared statements (`Options.prepare`, 0.4): a connection prepares a statement with parameters
 * from its second run, at most 256 of them; a prepared statement whose table changed under it runs again unnamed;
 * `prepare: false` prepares nothing. Each case runs on one connection (`maxConnections: 1`), and reads that
 * connection's `pg_prepared_statements`.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { describe, it } from "@effect/vitest"
import { Effect, Either, String as Str } from "effect"
import { deepStrictEqual, strictEqual } from "node:assert/strict"
import type { PendingRecord } from "../../src/domain/PendingRecord.js"
import { PendingStore } from "../../src/services/PendingStore.js"
import * as PostgresStore from "../../src/stores/PostgresStore.js"
import { postgresForTests, postgresSuiteName } from "../support/pgTest.js"
import { freshSchema } from "../support/postgres.js"
import { noteRecord } from "../support/records.js"

const pg = await postgresForTests()
const serverUrl = pg._tag === "Available" ? pg.url : ""

const T0 = 1_700_000_000_000

const record = (id: string): PendingRecord => noteRecord(id, { at: T0 })

/** The statements prepared on the connection this runs on (the query has no parameters: it is never prepared). */
const prepared = Effect.flatMap(
  SqlClient.SqlClient,
  (sql) =>
    Effect.map(
      sql.unsafe<{ statement: string }>("SELECT statement FROM pg_prepared_statements"),
      (rows) => rows.map((row) => row.statement.replace(/\s+/g, " "))
    )
)

/** Stages and claims `ids` through the store. */
const stageAndClaim = (ids: ReadonlyArray<string>) =>
  Effect.flatMap(
    PendingStore,
    (store) =>
      Effect.forEach(ids, (id) =>
        Effect.zipRight(
          store.insert(record(id)),
          store.claim({ id, owner: "o", leaseUntil: T0 + 60_000, now: T0 + 1 })
        ))
  )

describe.skipIf(pg._tag === "Unavailable")(postgresSuiteName("PostgresStore prepared statements", pg), () => {
  it.live("the store's statements are prepared from their second run on a connection, and answer the same", () =>
    Effect.gen(function*() {
      const url = yield* Effect.orDie(freshSchema(serverUrl))
      const result = yield* Effect.provide(
        Effect.gen(function*() {
          yield* stageAndClaim(["a"])
          const afterOne = yield* prepared
          yield* stageAndClaim(["b", "c"])
          const store = yield* PendingStore
          return {
            afterOne,
            afterThree: yield* prepared,
            claimed: (yield* store.stale(T0 + 60_000)).map((r) => [r.id, r.status, r.attempts])
          }
        }),
        PostgresStore.layerClient({ url, maxConnections: 1 })
      )
      const claim = (statements: ReadonlyArray<string>) =>
        statements.filter((s) => s.startsWith("UPDATE effect_resolve_pending SET status = 'resolving'")).length
      strictEqual(claim(result.afterOne), 0, "a statement run once is not prepared")
      strictEqual(claim(result.afterThree), 1, "the claim, run again, is prepared once")
      strictEqual(result.afterThree.some((s) => s.startsWith("INSERT INTO effect_resolve_pending")), true)
      deepStrictEqual(result.claimed, [["a", "resolving", 1], ["b", "resolving", 1], ["c", "resolving", 1]])
    }))

  it.live("prepare: false prepares nothing", () =>
    Effect.gen(function*() {
      const url = yield* Effect.orDie(freshSchema(serverUrl))
      const statements = yield* Effect.provide(
        Effect.zipRight(stageAndClaim(["a", "b", "c"]), prepared),
        PostgresStore.layerClient({ url, maxConnections: 1, prepare: false })
      )
      deepStrictEqual(statements, [])
    }))

  it.live("a connection prepares at most 256 statements; every other text still runs, unnamed", () =>
    Effect.gen(function*() {
      const url = yield* Effect.orDie(freshSchema(serverUrl))
      const result = yield* Effect.provide(
        Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          const sums: Array<number> = []
          for (let round = 0; round < 2; round++) {
            for (let i = 0; i < 400; i++) {
              const rows = yield* sql.unsafe<{ sum: number }>(`SELECT $1::int + ${i} AS sum`, [round])
              sums.push(rows[0]!.sum)
            }
          }
          return { sums, statements: yield* prepared }
        }),
        PostgresStore.layerClient({ url, maxConnections: 1 })
      )
      strictEqual(result.statements.length, 256)
      deepStrictEqual(result.sums, [
        ...Array.from({ length: 400 }, (_, i) => i),
        ...Array.from({ length: 400 }, (_, i) => i + 1)
      ])
    }))

  it.live("a prepared statement whose table gained a column runs again unnamed; in a transaction, it fails with why", () =>
    Effect.gen(function*() {
      const url = yield* Effect.orDie(freshSchema(serverUrl))
      const result = yield* Effect.provide(
        Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          yield* sql.unsafe("CREATE TABLE t (id int PRIMARY KEY, a text)")
          yield* sql.unsafe("INSERT INTO t VALUES (1, 'x')")
          const select = sql.unsafe<Record<string, unknown>>("SELECT * FROM t WHERE id = $1", [1])
          yield* select
          yield* select
          const preparedBefore = (yield* prepared).filter((s) => s.startsWith("SELECT * FROM t")).length
          yield* sql.unsafe("ALTER TABLE t ADD COLUMN b text DEFAULT 'y'")
          const outside = yield* select
          // Prepared again (on another text, the same plan problem) inside a transaction: the error says why.
          const other = sql.unsafe<Record<string, unknown>>("SELECT * FROM t WHERE id = $1 AND true", [1])
          yield* other
          yield* other
          yield* sql.unsafe("ALTER TABLE t ADD COLUMN c text DEFAULT 'z'")
          const inTransaction = yield* Effect.either(sql.withTransaction(other))
          return { preparedBefore, outside, inTransaction, after: yield* other }
        }),
        PostgresStore.layerClient({ url, maxConnections: 1 })
      )
      strictEqual(result.preparedBefore, 1)
      deepStrictEqual(result.outside, [{ id: 1, a: "x", b: "y" }])
      strictEqual(Either.isLeft(result.inTransaction), true)
      const cause = Either.isLeft(result.inTransaction) ? (result.inTransaction.left.cause as { code?: unknown }) : {}
      strictEqual(cause.code, "0A000")
      deepStrictEqual(result.after, [{ id: 1, a: "x", b: "y", c: "z" }])
    }))

  it.live("the pool keeps PgClient's options: the application's name and name transforms", () =>
    Effect.gen(function*() {
      const url = yield* Effect.orDie(freshSchema(serverUrl))
      const rows = yield* Effect.provide(
        Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          return yield* sql<{ applicationName: string }>`SELECT application_name FROM pg_stat_activity
            WHERE pid = pg_backend_pid()`
        }),
        PostgresStore.layerClient({
          url,
          maxConnections: 1,
          applicationName: "prepared-test",
          transformResultNames: Str.snakeToCamel
        })
      )
      deepStrictEqual(rows, [{ applicationName: "prepared-test" }])
    }))
})
