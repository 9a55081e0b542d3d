/**
 * One unreadable row never stops a session (SQLite and Postgres): rows are corrupted with raw SQL, as a person or a
 * broken tool outside the store would (a payload that is not JSON, a time that is not epoch milliseconds, a status
 * the store does not know, a journal row it cannot read). Every read still works; the bad row is an `unreadable`
 * record that says why, is never applied and can be discarded; the session opens and its healthy actions are
 * listed, applied and discarded as usual.
 */
import * as Reactivity from "@effect/experimental/Reactivity"
import * as LibsqlClient from "@effect/sql-libsql/LibsqlClient"
import * as PgClient from "@effect/sql-pg/PgClient"
import type * as SqlClient from "@effect/sql/SqlClient"
import { describe, it } from "@effect/vitest"
import { Effect, Exit, Layer, Option, Redacted, Schema, Scope } from "effect"
import { deepStrictEqual, strictEqual } from "node:assert/strict"
import * as path from "node:path"
import * as NodeUrl from "node:url"
import { afterAll } from "vitest"
import type { PendingRecord } from "../../src/domain/PendingRecord.js"
import {
  ActionKind,
  PendingActionNotPending,
  PendingActions,
  PendingStore,
  ResolveRuntime,
  ResolveTool,
  stageKind,
  ToolResult
} from "../../src/index.js"
import * as PostgresStore from "../../src/stores/PostgresStore.js"
import * as SqliteStore from "../../src/stores/SqliteStore.js"
import { postgresForTests, postgresSuiteName } from "../support/pgTest.js"
import { freshSchema } from "../support/postgres.js"
import { tempDir } from "./subjects.js"

const pg = await postgresForTests()
const tmp = tempDir()
afterAll(() => tmp.cleanup())

const T0 = 1_700_000_000_000

const record = (id: string, overrides: Partial<PendingRecord> = {}): PendingRecord => ({
  id,
  session: "s1",
  kind: "note",
  label: `Note: ${id}`,
  sourceToolName: "note",
  stager: null,
  preview: `+ ${id}`,
  payload: { text: id },
  status: "pending",
  attempts: 0,
  owner: null,
  leaseUntil: null,
  createdAt: T0,
  updatedAt: T0,
  expiresAt: null,
  outcome: null,
  ...overrides
})

/** A database both the store and raw SQL reach: the store's layer and a scoped raw client. */
interface Database {
  readonly store: Layer.Layer<PendingStore, unknown>
  readonly raw: Effect.Effect<SqlClient.SqlClient, unknown, Scope.Scope>
  /** Lets a status outside the store's list be written (the table checks it). */
  readonly allowAnyStatus: ReadonlyArray<string>
  /** A value of `created_at` the store cannot read as epoch milliseconds. */
  readonly badTime: string
}

let files = 0

const databases: ReadonlyArray<
  { readonly name: string; readonly skip: string | undefined; readonly make: () => Effect.Effect<Database> }
> = [
  {
    name: "sqlite",
    skip: undefined,
    make: () =>
      Effect.sync(() => {
        const filename = path.join(tmp.dir, `unreadable-${++files}.db`)
        return {
          store: SqliteStore.layer({ filename }),
          raw: LibsqlClient.make({ url: NodeUrl.pathToFileURL(filename).href }).pipe(Effect.provide(Reactivity.layer)),
          allowAnyStatus: ["PRAGMA ignore_check_constraints = ON"],
          badTime: "'yesterday'"
        }
      })
  },
  {
    name: "postgres",
    skip: pg._tag === "Available" ? undefined : pg.reason,
    make: () =>
      pg._tag === "Available" ?
        Effect.map(Effect.orDie(freshSchema(pg.url)), (url) => ({
          store: PostgresStore.layer({ url }),
          raw: PgClient.make({ url: Redacted.make(url), maxConnections: 1 }).pipe(Effect.provide(Reactivity.layer)),
          allowAnyStatus: ["ALTER TABLE effect_resolve_pending DROP CONSTRAINT effect_resolve_pending_status_check"],
          // A bigint past 2^53: not a safe integer of milliseconds.
          badTime: "9007199254740993"
        })) :
        Effect.die("no postgres")
  }
]

const rawSql = (db: Database, statements: ReadonlyArray<string>) =>
  Effect.scoped(Effect.flatMap(db.raw, (sql) => Effect.forEach(statements, (s) => sql.unsafe(s).raw)))

const Note = ActionKind.make({
  name: "note",
  payload: Schema.Struct({ text: Schema.String }),
  apply: ({ text }) => Effect.succeed(ToolResult.text(`noted ${text}`))
})

const withStore = <A, E>(db: Database, body: (store: PendingStore.Service) => Effect.Effect<A, E>) =>
  Effect.flatMap(PendingStore, body).pipe(Effect.provide(db.store))

for (const subject of databases) {
  const name = subject.name === "postgres" ? postgresSuiteName("postgres", pg) : subject.name
  describe.skipIf(subject.skip !== undefined)(`unreadable rows: ${name}`, () => {
    it.live("each corruption is an unreadable record with its reason; every read of the store still works", () =>
      Effect.gen(function*() {
        const db = yield* subject.make()
        yield* withStore(db, (store) =>
          Effect.gen(function*() {
            for (const id of ["good", "payload", "time", "status", "settled"]) yield* store.insert(record(id))
            yield* store.claim({ id: "settled", owner: "o", leaseUntil: T0 + 100, now: T0 + 1 })
            yield* store.settle({ id: "settled", owner: "o", to: "applied", outcome: Option.some("done"), now: T0 + 2 })
          }))
        yield* rawSql(db, [
          ...db.allowAnyStatus,
          "UPDATE effect_resolve_pending SET payload = '{not json' WHERE id IN ('payload', 'settled')",
          `UPDATE effect_resolve_pending SET created_at = ${db.badTime} WHERE id = 'time'`,
          "UPDATE effect_resolve_pending SET status = 'approved-ish' WHERE id = 'status'",
          "UPDATE effect_resolve_events SET to_status = 'bogus' WHERE action_id = 'good'"
        ])
        yield* withStore(db, (store) =>
          Effect.gen(function*() {
            const all = yield* store.list("s1")
            const byId = new Map(all.map((r) => [r.id, r]))
            deepStrictEqual([...byId.keys()].sort(), ["good", "payload", "settled", "status", "time"])
            deepStrictEqual(byId.get("good")!.status, "pending")
            deepStrictEqual(byId.get("good")!.payload, { text: "good" })
            for (
              const [id, reason] of [
                ["payload", "payload is not JSON"],
                ["time", "created_at"],
                ["status", "status \"approved-ish\" is not a status"]
              ] as const
            ) {
              const bad = byId.get(id)!
              strictEqual(bad.status, "unreadable", id)
              strictEqual(bad.outcome?.includes(reason), true, `${id}: ${bad.outcome}`)
              strictEqual(bad.outcome?.includes("can be discarded"), true)
              strictEqual(bad.label, `Note: ${id}`)
            }
            // A settled row keeps its status whatever else it holds: nothing more happens to it.
            strictEqual(byId.get("settled")!.status, "applied")
            strictEqual(byId.get("settled")!.outcome, "done")
            // listOpen, get, listPage, stale and history all answer.
            deepStrictEqual((yield* store.listOpen("s1")).map((r) => [r.id, r.status]).sort(), [
              ["good", "pending"],
              ["payload", "unreadable"],
              ["time", "unreadable"]
            ])
            strictEqual(Option.getOrThrow(yield* store.get("payload")).status, "unreadable")
            strictEqual((yield* store.listPage("s1", { limit: 2 })).items.length, 2)
            deepStrictEqual(yield* store.stale(T0 + 10_000), [])
            const history = yield* store.history("good")
            deepStrictEqual(history.map((e) => e.to), ["unreadable"])
          }))
      }))

    it.live("an unreadable record is never claimed for good, and is discarded or cleared only while unreadable", () =>
      Effect.gen(function*() {
        const db = yield* subject.make()
        yield* withStore(db, (store) =>
          Effect.gen(function*() {
            for (const id of ["a", "b", "c"]) yield* store.insert(record(id))
          }))
        yield* rawSql(db, ["UPDATE effect_resolve_pending SET payload = 'nope' WHERE id IN ('a', 'b')"])
        yield* withStore(db, (store) =>
          Effect.gen(function*() {
            // A readable record is not "unreadable": the guard refuses it.
            strictEqual(yield* store.transition({ id: "c", from: ["unreadable"], to: "discarded", now: T0 + 1 }), false)
            strictEqual(Option.getOrThrow(yield* store.get("c")).status, "pending")
            strictEqual(yield* store.transition({ id: "a", from: ["unreadable"], to: "discarded", now: T0 + 2 }), true)
            strictEqual(yield* store.transition({ id: "a", from: ["unreadable"], to: "discarded", now: T0 + 3 }), false)
            const a = Option.getOrThrow(yield* store.get("a"))
            strictEqual(a.status, "discarded")
            deepStrictEqual((yield* store.history("a")).map((e) => [e.from, e.to]), [[null, "pending"], [
              "pending",
              "discarded"
            ]])
            // A claim of an unreadable row says so; it can be given back.
            const claimed = Option.getOrThrow(yield* store.claim({ id: "b", owner: "o", leaseUntil: T0 + 50, now: T0 }))
            strictEqual(claimed.status, "unreadable")
            // Claimed under a lease that holds: not discarded from under its owner.
            strictEqual(
              yield* store.transition({ id: "b", from: ["unreadable"], to: "discarded", now: T0 + 10 }),
              false
            )
            strictEqual(yield* store.transition({ id: "b", from: ["unreadable"], to: "cleared", now: T0 + 60 }), true)
          }))
      }))

    it.live("a session with an unreadable row opens; its healthy actions work; the bad one is listed and discarded", () =>
      Effect.gen(function*() {
        const db = yield* subject.make()
        const session = (run: Effect.Effect<void, unknown, ResolveRuntime.Services | PendingStore>) =>
          Effect.gen(function*() {
            const scope = yield* Scope.make()
            const context = yield* Layer.buildWithScope(
              ResolveRuntime.durable({ session: "s1", store: db.store, kinds: [Note] }),
              scope
            )
            yield* Effect.provide(run, context)
            yield* Scope.close(scope, Exit.void)
          })
        let ids: ReadonlyArray<string> = []
        yield* session(Effect.gen(function*() {
          const handles = yield* Effect.forEach(
            ["one", "two", "three"],
            (text) => stageKind(Note, { text }, { label: `Note: ${text}`, sourceToolName: "note" })
          )
          ids = handles.map((h) => h.id)
        }))
        yield* rawSql(db, [`UPDATE effect_resolve_pending SET payload = '{"text":' WHERE id = '${ids[1]}'`])
        yield* session(Effect.gen(function*() {
          const pending = yield* PendingActions
          const listed = yield* pending.list
          deepStrictEqual(listed.map((info) => [info.id, info.status]), [
            [ids[2], "pending"],
            [ids[1], "unreadable"],
            [ids[0], "pending"]
          ])
          // Without an id, resolve takes the most recent runnable action; the unreadable one is never applied.
          strictEqual(
            ToolResult.textOf(yield* ResolveTool.execute({ action: "apply", reason: "ok", extra: null, id: null })),
            "noted three"
          )
          const refused = yield* Effect.flip(
            ResolveTool.execute({ action: "apply", reason: "ok", extra: null, id: ids[1]! })
          )
          strictEqual(refused instanceof PendingActionNotPending, true)
          strictEqual((refused as PendingActionNotPending).status, "unreadable")
          strictEqual(refused.message.includes("discard it"), true)
          const discarded = yield* ResolveTool.execute({
            action: "discard",
            reason: "corrupt",
            extra: null,
            id: ids[1]!
          })
          strictEqual(ToolResult.textOf(discarded).startsWith("Discarded: Note: two"), true)
          strictEqual(
            ToolResult.textOf(yield* ResolveTool.execute({ action: "apply", reason: "ok", extra: null, id: null })),
            "noted one"
          )
          deepStrictEqual((yield* pending.list).map((info) => info.status), ["applied", "discarded", "applied"])
        }))
      }))
  })
}
