/**
 * Every text a store keeps comes back exactly, on every store (memory, SQLite, Postgres): NUL (libsql returns TEXT
 * cut at the first NUL, Postgres refuses it), lone surrogates (both drivers turn them into U+FFFD), bidirectional
 * controls, `\r`, very long strings, and the store's own escape marker (U+FDD0) with text that looks like its
 * escapes. Through every method that writes or reads text: records (label, preview, names, outcome, and the keys:
 * id, session, kind, owner), listings filtered by those keys, decisions (reviewer, reason, outcome), session states
 * and conversations, the owner log, the journal and the feed. Also: rows written before the escape existed (raw SQL,
 * as 0.3 wrote them) read back unchanged, whatever they hold.
 */
import * as Reactivity from "@effect/experimental/Reactivity"
import * as LibsqlClient from "@effect/sql-libsql/LibsqlClient"
import * as PgClient from "@effect/sql-pg/PgClient"
import type * as SqlClient from "@effect/sql/SqlClient"
import { assert, describe, it } from "@effect/vitest"
import { Effect, FastCheck as fc, Layer, Option, Redacted, Scope } from "effect"
import * as path from "node:path"
import * as NodeUrl from "node:url"
import { afterAll } from "vitest"
import type { PendingRecord } from "../../src/domain/PendingRecord.js"
import { decode, encode } from "../../src/internal/storedText.js"
import { PendingStore } from "../../src/services/PendingStore.js"
import * as PostgresStore from "../../src/stores/PostgresStore.js"
import * as SqliteStore from "../../src/stores/SqliteStore.js"
import { postgresForTests, postgresSuiteName } from "../support/pgTest.js"
import { freshSchema } from "../support/postgres.js"
import { subjects, tempDir } from "./subjects.js"

const pg = await postgresForTests()
const tmp = tempDir()
afterAll(() => tmp.cleanup())

const T0 = 1_700_000_000_000

/** Texts that a driver or an escape could get wrong. */
const corpus: ReadonlyArray<string> = [
  "",
  "plain",
  "\u0000",
  "header\u0000\u0001\u0002\nkeep\nchange me\n",
  "a\u0000b\u0000",
  "\uD800",
  "x\uDC00y",
  "\uDBFF\uDFFF pair \u{1F600}",
  "\uDC00\uD800",
  "\uFDD0",
  "\uFDD0plain",
  "\uFDD0\uFDD00000",
  "\uFDD00000",
  "mid\uFDD0dle",
  "\uFDD0fdd0",
  "\uFFFD\uFFFE\uFFFF",
  "\u202Eevil\u202C \u2066iso\u2069",
  "a\rb\r\nc\n",
  "\t\u0007\u001b[31m\u007f\u0085",
  "'; DROP TABLE effect_resolve_pending; --",
  "%_\\",
  `${"long \u0000 ".repeat(50_000)}end`
]

/** Any UTF-16 code units (lone surrogates included), mixed with the texts above. */
const text = fc.oneof(
  fc.constantFrom(...corpus.filter((s) => s.length < 1_000)),
  fc.array(fc.integer({ min: 0, max: 0xFFFF }), { maxLength: 40 }).map((units) => String.fromCharCode(...units)),
  fc.array(
    fc.constantFrom(
      "\u0000",
      "\uD800",
      "\uDFFF",
      "\uFDD0",
      "0000",
      "d800",
      "fdd0",
      "\u202E",
      "\r",
      "a",
      "é",
      "\u{1F600}"
    ),
    { maxLength: 12 }
  ).map((parts) => parts.join(""))
)

const record = (id: string, session: string, fields: Partial<PendingRecord> = {}): PendingRecord => ({
  id,
  session,
  kind: "edit",
  label: "label",
  sourceToolName: "edit",
  stager: null,
  preview: "preview",
  payload: null,
  status: "pending",
  attempts: 0,
  owner: null,
  leaseUntil: null,
  createdAt: T0,
  updatedAt: T0,
  expiresAt: null,
  outcome: null,
  ...fields
})

let ids = 0

/** Every text through every method that keeps text: each must come back as it went in. */
const roundTrip = (store: PendingStore.Service, s: string) =>
  Effect.gen(function*() {
    const n = ++ids
    // Keys hold the text too (a non-empty id): equality and IN lists must find them. Their start only: a Postgres
    // index entry holds at most 2 704 bytes.
    const key = s.slice(0, 200)
    const id = `id${n}${key}`
    const session = `s${n}${key}`
    const kind = `k${key}`
    const owner = `o${n}${key}`
    const r = record(id, session, {
      kind,
      label: s,
      sourceToolName: s,
      stager: `st${s}`,
      preview: s,
      payload: { text: s },
      outcome: s
    })
    yield* store.insert(r)
    assert.deepStrictEqual(Option.getOrThrow(yield* store.get(id)), r)
    assert.deepStrictEqual(yield* store.list(session), [r])
    assert.deepStrictEqual(yield* store.listOpen(session), [r])
    const listed = yield* store.listActions({ limit: 10, now: T0, sessions: [session], kinds: [kind] })
    assert.deepStrictEqual(listed.items.map((item) => item.record), [r])
    assert.deepStrictEqual((yield* store.getActions([id])).map((item) => item.record), [r])

    const decision = yield* store.recordDecision({
      id: `dc_${n}`,
      actionId: id,
      reviewer: `rev${s}`.slice(0, 200),
      action: "apply",
      reason: `why ${s}`.slice(0, 4_000),
      amendment: { text: s },
      now: T0
    })
    assert.strictEqual(decision._tag, "Recorded")
    const recorded = Option.getOrThrow(yield* store.getDecision(`dc_${n}`))
    assert.strictEqual(recorded.actionId, id)
    assert.strictEqual(recorded.session, session)
    assert.strictEqual(recorded.reviewer, `rev${s}`.slice(0, 200))
    assert.strictEqual(recorded.reason, `why ${s}`.slice(0, 4_000))
    assert.deepStrictEqual(recorded.amendment, { text: s })
    const waiting = yield* store.requestedDecisions({ limit: 10, sessions: [session], kinds: [kind] })
    assert.deepStrictEqual(waiting.map((w) => w.record), [r])
    yield* store.completeDecision({ id: `dc_${n}`, state: "done", outcome: s, by: owner, now: T0 + 1 })
    const [done] = yield* store.decisions(id)
    assert.strictEqual(done?.outcome, s)
    assert.strictEqual(done?.settledBy, owner)

    const claimed = Option.getOrThrow(yield* store.claim({ id, owner, leaseUntil: T0 + 100, now: T0 + 1 }))
    assert.strictEqual(claimed.owner, owner)
    assert.deepStrictEqual(yield* store.leases([owner]), new Map())
    yield* store.heartbeat({ instance: owner, leaseUntil: T0 + 200, now: T0 + 2 })
    assert.deepStrictEqual(yield* store.leases([owner]), new Map([[owner, T0 + 200]]))
    assert.isTrue(yield* store.settle({ id, owner, to: "applied", outcome: Option.some(s), now: T0 + 3 }))
    const settled = Option.getOrThrow(yield* store.get(id))
    assert.strictEqual(settled.outcome, s)
    const history = yield* store.history(id)
    assert.deepStrictEqual(history.map((e) => [e.actionId, e.owner]), [[id, null], [id, owner], [id, owner]])
    const head = yield* store.feedHead
    const changes = yield* store.feed({ after: { journal: head.journal - 3, notes: head.notes - 2 }, limit: 10 })
    assert.isTrue(changes.length > 0 && changes.every((change) => change.actionId === id))

    yield* store.saveSession(session, s)
    assert.deepStrictEqual(yield* store.loadSession(session), Option.some(s))
    yield* store.saveConversation(session, { state: s, from: 0, messages: [s, `m${s}`], previous: Option.none() })
    assert.deepStrictEqual(
      yield* store.loadConversation(session),
      Option.some({ state: s, messages: [s, `m${s}`] })
    )
    yield* store.logSession({ session, owner, event: "open", at: T0 })
    assert.deepStrictEqual(yield* store.sessionLog(session), [{ session, owner, event: "open", at: T0 }])
  })

describe("the stored-text escape", () => {
  it.prop(
    "decode(encode(s)) is s, and encode is the identity on text without NUL or lone surrogates",
    [text],
    ([s]) => {
      assert.strictEqual(decode(encode(s)), s)
      const plain = !/\0|\p{Surrogate}/u.test(s) && !s.startsWith("\uFDD0")
      assert.strictEqual(encode(s) === s, plain)
      assert.isFalse(/\0|\p{Surrogate}/u.test(encode(s)))
    }
  )

  it("reads text that is not exactly an escape as it is (rows written before 0.4)", () => {
    for (const raw of ["\uFDD0", "\uFDD0plain", "\uFDD0\uFDD0zzzz", "\uFDD0\uFDD00041", "\uFDD0\uFDD0d83d\uFDD0de00"]) {
      assert.strictEqual(decode(raw), raw)
    }
  })
})

for (const subject of subjects(tmp.dir, pg)) {
  const name = subject.name === "postgres" ? postgresSuiteName("postgres", pg) : subject.name
  describe.skipIf(subject.skipReason !== undefined)(`byte-exact text: ${name}`, () => {
    const test = (title: string, body: (store: PendingStore.Service) => Effect.Effect<void, unknown>) =>
      it.live(title, () => Effect.flatMap(PendingStore, body).pipe(Effect.provide(subject.layer())), 60_000)

    test("the corpus round-trips through every method that keeps text", (store) =>
      Effect.forEach(corpus, (s) => roundTrip(store, s), { discard: true }))

    test("any text round-trips (property)", (store) =>
      Effect.promise(() =>
        fc.assert(
          fc.asyncProperty(text, (s) => Effect.runPromise(roundTrip(store, s))),
          { numRuns: 60 }
        )
      ))
  })
}

// ---- rows written by 0.3 -------------------------------------------------------------------------------------------

let files = 0

const databases: ReadonlyArray<{
  readonly name: string
  readonly skip: string | undefined
  readonly make: () => Effect.Effect<{
    readonly store: Layer.Layer<PendingStore, unknown>
    readonly raw: Effect.Effect<SqlClient.SqlClient, unknown, Scope.Scope>
  }>
}> = [
  {
    name: "sqlite",
    skip: undefined,
    make: () =>
      Effect.sync(() => {
        const filename = path.join(tmp.dir, `legacy-${++files}.db`)
        return {
          store: SqliteStore.layer({ filename }),
          raw: LibsqlClient.make({ url: NodeUrl.pathToFileURL(filename).href }).pipe(Effect.provide(Reactivity.layer))
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
          raw: PgClient.make({ url: Redacted.make(url), maxConnections: 1 }).pipe(Effect.provide(Reactivity.layer))
        })) :
        Effect.die("no postgres")
  }
]

for (const database of databases) {
  const name = database.name === "postgres" ? postgresSuiteName("postgres", pg) : database.name
  describe.skipIf(database.skip !== undefined)(`rows written before 0.4: ${name}`, () => {
    it.live("read back exactly as stored, even those that start with the marker", () =>
      Effect.gen(function*() {
        const db = yield* database.make()
        // Open the store once: it creates the tables.
        yield* Effect.provide(Effect.asVoid(PendingStore), db.store)
        const legacy = ["plain 0.3 label", "\uFDD0 starts with the marker", "\uFDD0\uFDD0zzzz", "\uFDD0\uFDD00041"]
        yield* Effect.scoped(Effect.flatMap(db.raw, (sql) =>
          Effect.forEach(legacy, (label, i) =>
            sql`INSERT INTO effect_resolve_pending (id, session, kind, label, source_tool_name, preview, payload,
              status, attempts, created_at, updated_at)
              VALUES (${`old${i}`}, 'legacy', 'edit', ${label}, 'edit', ${label}, 'null', 'pending', 0, ${T0},
                ${T0})`.raw)))
        yield* Effect.provide(
          Effect.gen(function*() {
            const store = yield* PendingStore
            for (const [i, label] of legacy.entries()) {
              const read = Option.getOrThrow(yield* store.get(`old${i}`))
              assert.strictEqual(read.label, label)
              assert.strictEqual(read.preview, label)
              assert.strictEqual(read.status, "pending")
            }
          }),
          db.store
        )
      }))
  })
}
