/**
 * SqliteStore and SqlPendingStore on SQLite: what the conformance suite does not cover (opening, reopening,
 * refusals at open, a client with name transforms).
 */
import * as LibsqlClient from "@effect/sql-libsql/LibsqlClient"
import * as SqlClient from "@effect/sql/SqlClient"
import { describe, it } from "@effect/vitest"
import { Config, ConfigError, ConfigProvider, Context, Effect, Layer, Option, String as Str } from "effect"
import { deepStrictEqual, strictEqual } from "node:assert/strict"
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll } from "vitest"
import type { PendingRecord } from "../../src/domain/PendingRecord.js"
import { PendingStore, PendingStoreError } from "../../src/services/PendingStore.js"
import * as SqliteStore from "../../src/stores/SqliteStore.js"
import * as SqlPendingStore from "../../src/stores/SqlPendingStore.js"
import { tempDir } from "./subjects.js"

const tmp = tempDir()
afterAll(() => tmp.cleanup())

const T0 = 1_700_000_000_000

const record = (id: string): PendingRecord => ({
  id,
  session: "s1",
  kind: "plan",
  label: "Plan: 3 steps",
  sourceToolName: "plan",
  stager: null,
  preview: "1. a\n2. b\n3. c",
  payload: { steps: ["a", "b", "c"] },
  status: "pending",
  attempts: 0,
  owner: null,
  leaseUntil: null,
  createdAt: T0,
  updatedAt: T0,
  expiresAt: T0 + 60_000,
  outcome: null
})

const openError = (layer: Layer.Layer<PendingStore, PendingStoreError>) =>
  Effect.flip(Effect.provide(PendingStore, layer)).pipe(
    Effect.tap((e) => strictEqual(e instanceof PendingStoreError, true))
  )

describe("SqliteStore", () => {
  it.live("a reopened file has every record, journal and session state; it is in WAL mode", () =>
    Effect.gen(function*() {
      const filename = path.join(tmp.dir, "reopen.db")
      const layer = SqliteStore.layer({ filename })
      yield* Effect.provide(
        Effect.gen(function*() {
          const store = yield* PendingStore
          yield* store.insert(record("a"))
          yield* store.insert(record("b"))
          yield* store.claim({ id: "a", owner: "o", leaseUntil: T0 + 10, now: T0 + 1 })
          yield* store.saveSession("s1", "{\"turn\":3}")
        }),
        layer
      )
      const { events, list, session, stale } = yield* Effect.provide(
        Effect.gen(function*() {
          const store = yield* PendingStore
          return {
            list: yield* store.list("s1"),
            stale: yield* store.stale(T0 + 10),
            events: yield* store.history("a"),
            session: yield* store.loadSession("s1")
          }
        }),
        layer
      )
      deepStrictEqual(list.map((r) => [r.id, r.status]), [["b", "pending"], ["a", "resolving"]])
      deepStrictEqual(stale.map((r) => r.id), ["a"])
      deepStrictEqual(events.map((e) => e.to), ["pending", "resolving"])
      deepStrictEqual(session, Option.some("{\"turn\":3}"))
      const mode = yield* Effect.provide(
        Effect.flatMap(SqlClient.SqlClient, (sql) => sql<{ journal_mode: string }>`PRAGMA journal_mode`),
        LibsqlClient.layer({ url: `file:${filename}` })
      )
      deepStrictEqual(mode, [{ journal_mode: "wal" }])
    }))

  it.live("a missing directory, :memory: and a file that is not a database fail typed at open", () =>
    Effect.gen(function*() {
      const missing = yield* openError(SqliteStore.layer({ filename: path.join(tmp.dir, "no", "such", "x.db") }))
      strictEqual(missing.operation, "open")
      strictEqual(missing.message.includes("Check that its directory exists and is writable."), true)
      const memory = yield* openError(SqliteStore.layer({ filename: ":memory:" }))
      strictEqual(memory.message.includes("PendingStore.layerMemory"), true)
      const garbage = path.join(tmp.dir, "garbage.db")
      fs.writeFileSync(garbage, "this is not a database ".repeat(100))
      const notDb = yield* openError(SqliteStore.layer({ filename: garbage }))
      strictEqual(["open", "migrate"].includes(notDb.operation), true)
      // What SQLite said, not the generic message of the SqlError around it ("Failed to execute statement").
      strictEqual(notDb.message.includes("SQLITE_NOTADB: file is not a database"), true, notDb.message)
      strictEqual(fs.readFileSync(garbage, "utf8"), "this is not a database ".repeat(100))
    }))

  it.live("a migration the database refuses fails typed (not a defect) and leaves the database as it was", () =>
    Effect.gen(function*() {
      const filename = path.join(tmp.dir, "taken.db")
      // An app's own table under the store's name: the store's CREATE TABLE fails inside the Migrator.
      yield* Effect.provide(
        Effect.flatMap(SqlClient.SqlClient, (sql) => sql`CREATE TABLE effect_resolve_pending (x INTEGER)`),
        LibsqlClient.layer({ url: `file:${filename}` })
      )
      const error = yield* openError(SqliteStore.layer({ filename }))
      strictEqual(error.operation, "migrate")
      strictEqual(error.message.includes("could not be created or upgraded"), true, error.message)
      strictEqual(error.message.includes("table effect_resolve_pending already exists"), true, error.message)
      const tables = yield* Effect.provide(
        Effect.flatMap(
          SqlClient.SqlClient,
          (sql) => sql<{ readonly name: string }>`SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name`
        ),
        LibsqlClient.layer({ url: `file:${filename}` })
      )
      deepStrictEqual(tables.map((t) => t.name).filter((name) => name !== "effect_resolve_migrations"), [
        "effect_resolve_pending"
      ])
    }))

  it.live("SqlPendingStore.layer works on an app's client that transforms result names", () =>
    Effect.gen(function*() {
      const client = LibsqlClient.layer({
        url: `file:${path.join(tmp.dir, "transforms.db")}`,
        transformResultNames: Str.snakeToCamel,
        transformQueryNames: Str.camelToSnake
      })
      const result = yield* Effect.provide(
        Effect.gen(function*() {
          const store = yield* PendingStore
          yield* store.insert(record("a"))
          yield* store.claim({ id: "a", owner: "o", leaseUntil: T0 + 10, now: T0 + 1 })
          return { record: yield* store.get("a"), history: yield* store.history("a") }
        }),
        Layer.provide(SqlPendingStore.layer, client)
      )
      deepStrictEqual(Option.getOrNull(result.record), {
        ...record("a"),
        status: "resolving",
        attempts: 1,
        owner: "o",
        leaseUntil: T0 + 10,
        updatedAt: T0 + 1
      })
      deepStrictEqual(result.history.map((e) => e.actionId), ["a", "a"])
    }))
})

const root = path.resolve(import.meta.dirname, "../..")

/** A script for another process: takes the write lock of `file`, says so, and commits `ms` later. */
const holdWriteLock = (file: string, ms: number) =>
  `import { createClient } from "@libsql/client"
const client = createClient({ url: ${JSON.stringify(`file:${file}`)} })
const tx = await client.transaction("write")
await tx.execute("UPDATE effect_resolve_pending SET label = label")
process.stdout.write("held\\n")
setTimeout(async () => { await tx.commit(); client.close(); process.exit(0) }, ${ms})`

describe("SqliteStore under another process's writes", () => {
  it.live("a transaction that meets another connection's write lock waits for it, and the next one commits", () =>
    Effect.gen(function*() {
      const file = path.join(tmp.dir, "contended.db")
      const store = Context.get(yield* Layer.build(SqliteStore.layer({ filename: file })), PendingStore)
      // One transaction first: libsql opens a fresh connection after it, for the store's next one.
      yield* store.transaction(store.insert(record("a")))
      // Another process holds the write lock for 300 ms.
      const child = spawn(process.execPath, ["--input-type=module", "-e", holdWriteLock(file, 300)], { cwd: root })
      const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)))
      yield* Effect.promise(() => new Promise<void>((resolve) => child.stdout.once("data", () => resolve())))
      // Without a busy timeout on the fresh connection, its BEGIN fails at once, and libsql leaves that failed
      // statement in progress: every later COMMIT on the connection then fails ("SQL statements in progress").
      yield* store.transaction(store.insert(record("b")))
      strictEqual(yield* Effect.promise(() => exited), 0)
      yield* store.transaction(store.insert(record("c")))
      deepStrictEqual((yield* store.list("s1")).map((r) => r.id).sort(), ["a", "b", "c"])
    }).pipe(Effect.scoped))
})

describe("SqliteStore.layerConfig", () => {
  it.live("reads the file name from Config; a missing one is a ConfigError, not a store", () =>
    Effect.gen(function*() {
      const filename = path.join(tmp.dir, "from-config.db")
      const layer = SqliteStore.layerConfig({ filename: Config.string("AGENT_DB") })
      yield* Effect.flatMap(PendingStore, (store) => store.insert(record("c"))).pipe(
        Effect.provide(layer),
        Effect.withConfigProvider(ConfigProvider.fromMap(new Map([["AGENT_DB", filename]])))
      )
      strictEqual(fs.existsSync(filename), true)
      const missing = yield* Effect.flip(Effect.provide(PendingStore, layer)).pipe(
        Effect.withConfigProvider(ConfigProvider.fromMap(new Map()))
      )
      strictEqual(ConfigError.isConfigError(missing), true)
    }))
})
