/**
 * PostgresStore on a real server: what the conformance suite does not cover (reconnecting, the shared client of
 * `layerClient`, an unreachable server, a client with name transforms, epoch milliseconds through `bigint`).
 */
import * as PgClient from "@effect/sql-pg/PgClient"
import * as SqlClient from "@effect/sql/SqlClient"
import { describe, it } from "@effect/vitest"
import { Effect, Layer, Option, Redacted, String as Str } from "effect"
import { deepStrictEqual, strictEqual } from "node:assert/strict"
import type { PendingRecord } from "../../src/domain/PendingRecord.js"
import { PendingStore, PendingStoreError } from "../../src/services/PendingStore.js"
import * as PostgresStore from "../../src/stores/PostgresStore.js"
import * as SqlPendingStore from "../../src/stores/SqlPendingStore.js"
import { postgresForTests, postgresSuiteName } from "../support/pgTest.js"
import { freePort, freshSchema } from "../support/postgres.js"

const pg = await postgresForTests()
const serverUrl = pg._tag === "Available" ? pg.url : ""

const T0 = 1_700_000_000_000

const record = (id: string): PendingRecord => ({
  id,
  session: "s1",
  kind: "edit",
  label: "Edit: 1 replacement in 1 file",
  sourceToolName: "edit",
  stager: null,
  preview: "-a\n+b",
  payload: { paths: ["a.ts"] },
  status: "pending",
  attempts: 0,
  owner: null,
  leaseUntil: null,
  createdAt: T0,
  updatedAt: T0,
  expiresAt: Number.MAX_SAFE_INTEGER,
  outcome: null
})

describe.skipIf(pg._tag === "Unavailable")(postgresSuiteName("PostgresStore", pg), () => {
  it.live("a new pool on the same database sees every record, journal and session state", () =>
    Effect.gen(function*() {
      const url = yield* Effect.orDie(freshSchema(serverUrl))
      yield* Effect.provide(
        Effect.gen(function*() {
          const store = yield* PendingStore
          yield* store.insert(record("a"))
          yield* store.claim({ id: "a", owner: "o", leaseUntil: T0 + 10, now: T0 + 1 })
          yield* store.saveSession("s1", "state")
        }),
        PostgresStore.layer({ url })
      )
      const after = yield* Effect.provide(
        Effect.gen(function*() {
          const store = yield* PendingStore
          return {
            record: yield* store.get("a"),
            events: yield* store.history("a"),
            session: yield* store.loadSession("s1")
          }
        }),
        PostgresStore.layer({ url: Redacted.make(url) })
      )
      deepStrictEqual(Option.getOrNull(after.record), {
        ...record("a"),
        status: "resolving",
        attempts: 1,
        owner: "o",
        leaseUntil: T0 + 10,
        updatedAt: T0 + 1
      })
      // bigint columns come back from Postgres as strings; the store decodes them to the exact numbers.
      strictEqual(Option.getOrThrow(after.record).expiresAt, Number.MAX_SAFE_INTEGER)
      const journal = after.events.map((e) => [e.from, e.to, e.at])
      deepStrictEqual(journal, [[null, "pending", T0], ["pending", "resolving", T0 + 1]])
      deepStrictEqual(after.session, Option.some("state"))
    }))

  it.live("layerClient gives the app the store's pool: its queries see the store's tables", () =>
    Effect.gen(function*() {
      const url = yield* Effect.orDie(freshSchema(serverUrl))
      const rows = yield* Effect.provide(
        Effect.gen(function*() {
          const store = yield* PendingStore
          yield* store.insert(record("a"))
          const sql = yield* SqlClient.SqlClient
          const pgClient = yield* PgClient.PgClient
          strictEqual(pgClient as unknown, sql as unknown)
          return yield* sql<{ id: string; status: string }>`SELECT id, status FROM effect_resolve_pending`
        }),
        PostgresStore.layerClient({ url })
      )
      deepStrictEqual(rows, [{ id: "a", status: "pending" }])
    }))

  it.live("an unreachable server fails the layer with a typed error", () =>
    Effect.gen(function*() {
      const port = yield* Effect.promise(freePort)
      const error = yield* Effect.flip(
        Effect.provide(PendingStore, PostgresStore.layer({ url: `postgres://postgres@127.0.0.1:${port}/postgres` }))
      )
      strictEqual(error instanceof PendingStoreError, true)
      strictEqual(error.operation, "connect")
      strictEqual(error.message.includes("Check the URL and that the server is running."), true)
    }))

  it.live("SqlPendingStore.layer works on an app's client that transforms names", () =>
    Effect.gen(function*() {
      const url = yield* Effect.orDie(freshSchema(serverUrl))
      const client = PgClient.layer({
        url: Redacted.make(url),
        transformResultNames: Str.snakeToCamel,
        transformQueryNames: Str.camelToSnake
      })
      const result = yield* Effect.provide(
        Effect.gen(function*() {
          const store = yield* PendingStore
          yield* store.insert(record("a"))
          yield* store.claim({ id: "a", owner: "o", leaseUntil: T0 + 10, now: T0 + 1 })
          return { stale: yield* store.stale(T0 + 10), history: yield* store.history("a") }
        }),
        Layer.provide(SqlPendingStore.layer, client)
      )
      deepStrictEqual(result.stale.map((r) => [r.id, r.sourceToolName, r.leaseUntil]), [["a", "edit", T0 + 10]])
      deepStrictEqual(result.history.map((e) => e.actionId), ["a", "a"])
    }))
})
