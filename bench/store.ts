/**
 * Durable store round trip: `insert → claim → settle(applied)` through the `PendingStore` (the published build,
 * `dist/`), on a SQLite file and on Postgres (when reachable), against two floors measured in the same run through
 * the same `SqlClient`:
 *
 * - `floorTransactions`: the row writes as an app would write them by hand, one transaction per transition
 *   (`BEGIN; INSERT/UPDATE ... RETURNING the record; INSERT its journal event; COMMIT`), on plain tables without
 *   triggers. This is the floor the design names (target: the store within 1.5× of it).
 * - `floorStatements`: the very statements the store sends (one trigger-journaled statement per transition),
 *   written by hand: what is left is the store's own cost (input checks, row decoding, error mapping).
 *
 * Postgres: the server `options.postgres` names (`bench/index.ts` passes the run's); without one, as
 * `bench/postgres.ts` finds it: `EFFECT_RESOLVE_PG_URL` when set, else, when Debian's binaries exist, a server started
 * for these figures in a temp directory with Postgres's default (durable) settings, stopped at the end; else the
 * figure is skipped with the reason. SQLite: a file in the OS temp directory, WAL mode, `synchronous` FULL (the
 * store's default): every commit is flushed to disk, on both sides.
 *
 * Returns the figures; prints nothing.
 */
import * as LibsqlClient from "@effect/sql-libsql/LibsqlClient"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import {
  ActionKind,
  PendingActions,
  ResolveTool,
  stageKind,
  SteeringBus,
  ToolChoiceQueue,
  ToolResult
} from "../dist/index.js"
import { PendingStore } from "../dist/services/PendingStore.js"
import { StandingResolveHandler } from "../dist/services/StandingResolveHandler.js"
import * as PostgresStore from "../dist/stores/PostgresStore.js"
import * as SqlPendingStore from "../dist/stores/SqlPendingStore.js"
import { type Availability, freshSchema } from "../test/support/postgres.js"
import { compareMediansAsync } from "./harness.js"
import { withPostgres } from "./postgres.js"

/** One store's figures: microseconds per round trip (medians). */
export interface StoreFigure {
  readonly store: "sqlite" | "postgres"
  /** Round trips per timed run, and timed runs per subject. */
  readonly roundTrips: number
  readonly repeats: number
  /** Through the PendingStore. */
  readonly value: number
  /**
   * The whole durable round trip as an app runs it: stage a preview of a durable kind (`stageKind`: the record, its
   * forcing directive, the reminder), serve the turn, `ResolveTool.execute` with its id (claim, no-op apply,
   * settle), end the turn.
   */
  readonly session: number
  /** By hand, one transaction per transition (record write + journal insert). */
  readonly floorTransactions: number
  /** By hand, the store's own statements. */
  readonly floorStatements: number
}

export interface StoreBench {
  readonly figures: ReadonlyArray<StoreFigure>
  /** Stores not measured, and why. */
  readonly skipped: ReadonlyArray<{ readonly store: "postgres"; readonly reason: string }>
}

export interface StoreBenchOptions {
  /** Round trips per timed run (default 50). */
  readonly roundTrips?: number
  /** Timed runs per subject, interleaved (default 5). */
  readonly repeats?: number
  /** The Postgres server to measure on (default: `EFFECT_RESOLVE_PG_URL`, else a server started for these figures). */
  readonly postgres?: Availability
}

const floorTables = {
  sqlite: [
    `CREATE TABLE bench_pending (seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, session TEXT NOT NULL,
      kind TEXT NOT NULL, label TEXT NOT NULL, source_tool_name TEXT NOT NULL, preview TEXT NOT NULL,
      payload TEXT NOT NULL, status TEXT NOT NULL, attempts INTEGER NOT NULL, owner TEXT, lease_until INTEGER,
      created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, expires_at INTEGER, outcome TEXT)`,
    `CREATE TABLE bench_events (seq INTEGER PRIMARY KEY, action_id TEXT NOT NULL, at INTEGER NOT NULL,
      from_status TEXT, to_status TEXT NOT NULL, owner TEXT, attempt INTEGER NOT NULL)`,
    "CREATE INDEX bench_events_by_action ON bench_events (action_id, seq)"
  ],
  pg: [
    `CREATE TABLE bench_pending (seq bigint GENERATED ALWAYS AS IDENTITY, id text PRIMARY KEY,
      session text NOT NULL, kind text NOT NULL, label text NOT NULL, source_tool_name text NOT NULL,
      preview text NOT NULL, payload text NOT NULL, status text NOT NULL, attempts integer NOT NULL, owner text,
      lease_until bigint, created_at bigint NOT NULL, updated_at bigint NOT NULL, expires_at bigint, outcome text)`,
    `CREATE TABLE bench_events (seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, action_id text NOT NULL,
      at bigint NOT NULL, from_status text, to_status text NOT NULL, owner text, attempt integer NOT NULL)`,
    "CREATE INDEX bench_events_by_action ON bench_events (action_id, seq)"
  ]
}

const columns = "id, session, kind, label, source_tool_name, preview, payload, status, attempts, owner, " +
  "lease_until, created_at, updated_at, expires_at, outcome"

const owner = `${os.hostname()}:${process.pid}:bench`
const payload = { paths: ["src/a.ts"], before: ["9f86d081884c7d65"], writes: [{ path: "src/a.ts", text: "x" }] }
const payloadText = JSON.stringify(payload)

const record = (id: string, now: number) => ({
  id,
  session: "bench",
  kind: "edit",
  label: "Edit: 1 replacement in 1 file",
  sourceToolName: "edit",
  stager: null,
  preview: "--- a/src/a.ts\n+++ b/src/a.ts\n@@ -1 +1 @@\n-a\n+x",
  payload,
  status: "pending" as const,
  attempts: 0,
  owner: null,
  leaseUntil: null,
  createdAt: now,
  updatedAt: now,
  expiresAt: null,
  outcome: null
})

let serial = 0

/** The three programs, each doing `n` round trips. */
const programs = (n: number) => {
  const viaStore = Effect.gen(function*() {
    const store = yield* PendingStore
    const run = ++serial
    for (let i = 0; i < n; i++) {
      const id = `s${run}-${i}`
      const now = Date.now()
      yield* store.insert(record(id, now))
      yield* store.claim({ id, owner, leaseUntil: now + 30_000, now })
      yield* store.settle({ id, owner, to: "applied", outcome: Option.some("Applied."), now })
    }
  })

  const byHandTransactions = Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const run = ++serial
    for (let i = 0; i < n; i++) {
      const id = `t${run}-${i}`
      const now = Date.now()
      const r = record(id, now)
      yield* sql.withTransaction(Effect.zipRight(
        sql`INSERT INTO bench_pending (${sql.literal(columns)}) VALUES (${r.id}, ${r.session}, ${r.kind}, ${r.label},
          ${r.sourceToolName}, ${r.preview}, ${payloadText}, 'pending', 0, NULL, NULL, ${now}, ${now}, NULL, NULL)`,
        sql`INSERT INTO bench_events (action_id, at, from_status, to_status, owner, attempt)
          VALUES (${id}, ${now}, NULL, 'pending', NULL, 0)`
      ))
      yield* sql.withTransaction(Effect.flatMap(
        sql`UPDATE bench_pending SET status = 'resolving', attempts = attempts + 1, owner = ${owner},
          lease_until = ${now + 30_000}, updated_at = ${now}
          WHERE id = ${id} AND status = 'pending' AND (expires_at IS NULL OR expires_at > ${now})
          RETURNING ${sql.literal(columns)}`.withoutTransform,
        (rows) =>
          sql`INSERT INTO bench_events (action_id, at, from_status, to_status, owner, attempt)
            VALUES (${id}, ${now}, 'pending', 'resolving', ${owner}, ${Number(rows[0]!.attempts)})`
      ))
      yield* sql.withTransaction(Effect.flatMap(
        sql`UPDATE bench_pending SET status = 'applied', owner = NULL, lease_until = NULL, updated_at = ${now},
          outcome = ${"Applied."} WHERE id = ${id} AND status = 'resolving' AND owner = ${owner}
          RETURNING attempts`.withoutTransform,
        (rows) =>
          sql`INSERT INTO bench_events (action_id, at, from_status, to_status, owner, attempt)
            VALUES (${id}, ${now}, 'resolving', 'applied', ${owner}, ${Number(rows[0]!.attempts)})`
      ))
    }
  })

  const byHandStatements = Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const run = ++serial
    for (let i = 0; i < n; i++) {
      const id = `h${run}-${i}`
      const now = Date.now()
      const r = record(id, now)
      yield* sql`INSERT INTO effect_resolve_pending (${sql.literal(columns)}) VALUES (${r.id}, ${r.session},
        ${r.kind}, ${r.label}, ${r.sourceToolName}, ${r.preview}, ${payloadText}, 'pending', 0, NULL, NULL, ${now},
        ${now}, NULL, NULL) ON CONFLICT (id) DO NOTHING RETURNING id`.withoutTransform
      yield* sql`UPDATE effect_resolve_pending SET status = 'resolving', attempts = attempts + 1, owner = ${owner},
        lease_until = ${now + 30_000}, updated_at = ${now}
        WHERE id = ${id} AND status = 'pending' AND (expires_at IS NULL OR expires_at > ${now})
        RETURNING ${sql.literal(columns)}`.withoutTransform
      yield* sql`UPDATE effect_resolve_pending SET status = 'applied', owner = NULL, lease_until = NULL,
        updated_at = ${now}, outcome = ${"Applied."} WHERE id = ${id} AND status = 'resolving' AND owner = ${owner}
        RETURNING id`.withoutTransform
    }
  })

  const viaSession = Effect.gen(function*() {
    const queue = yield* ToolChoiceQueue
    const bus = yield* SteeringBus
    for (let i = 0; i < n; i++) {
      const handle = yield* stageKind(Edit, payload, {
        label: "Edit: 1 replacement in 1 file",
        sourceToolName: "edit"
      })
      yield* bus.drain
      yield* queue.nextToolChoice
      yield* ResolveTool.execute({ action: "apply", reason: "The diff matches.", extra: null, id: handle.id })
      yield* queue.resolve
    }
  })

  return { viaStore, byHandTransactions, byHandStatements, viaSession }
}

/** A durable kind with the payload above and a no-op apply. */
const Edit = ActionKind.make({
  name: "edit",
  payload: Schema.Struct({
    paths: Schema.Array(Schema.String),
    before: Schema.Array(Schema.String),
    writes: Schema.Array(Schema.Struct({ path: Schema.String, text: Schema.String }))
  }),
  apply: () => Effect.succeed(ToolResult.text("Applied."))
})

/** One durable session on the store of the layer below it. */
const sessionLayer = PendingActions.layerDurable({ session: "bench", kinds: [Edit] }).pipe(
  Layer.provideMerge(Layer.mergeAll(ToolChoiceQueue.layer, SteeringBus.layer, StandingResolveHandler.layer))
)

const measure = async (
  store: "sqlite" | "postgres",
  layer: Layer.Layer<PendingStore | SqlClient.SqlClient, unknown>,
  roundTrips: number,
  repeats: number
): Promise<StoreFigure> => {
  const runtime = ManagedRuntime.make(Layer.provideMerge(sessionLayer, layer))
  try {
    await runtime.runPromise(Effect.flatMap(SqlClient.SqlClient, (sql) =>
      Effect.forEach(
        sql.onDialectOrElse({ pg: () => floorTables.pg, orElse: () => floorTables.sqlite }),
        (statement) => sql.unsafe(statement).raw,
        { discard: true }
      )))
    const p = programs(roundTrips)
    const subjects: ReadonlyArray<Effect.Effect<void, unknown, any>> = [
      p.viaStore,
      p.byHandTransactions,
      p.byHandStatements,
      p.viaSession
    ]
    const [value, floorTransactions, floorStatements, session] = await compareMediansAsync(
      subjects.map((program) => ({ run: () => runtime.runPromise(program) })),
      roundTrips,
      repeats
    )
    return {
      store,
      roundTrips,
      repeats,
      value: value!,
      session: session!,
      floorTransactions: floorTransactions!,
      floorStatements: floorStatements!
    }
  } finally {
    await runtime.dispose()
  }
}

/** Measures the SQLite store, and the Postgres one when a server is reachable or can be started. */
export const storeFigures = async (options: StoreBenchOptions = {}): Promise<StoreBench> => {
  const roundTrips = options.roundTrips ?? 50
  const repeats = options.repeats ?? 5
  const figures: Array<StoreFigure> = []
  const skipped: Array<{ readonly store: "postgres"; readonly reason: string }> = []

  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "effect-resolve-bench-"))
  try {
    const client = LibsqlClient.layer({ url: `file:${path.join(dir, "bench.db")}` })
    const wal = Layer.effectDiscard(
      Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe("PRAGMA journal_mode = WAL").raw)
    )
    const layer = Layer.provideMerge(SqlPendingStore.layer, Layer.provideMerge(wal, client))
    figures.push(await measure("sqlite", layer, roundTrips, repeats))
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }

  await withPostgres(options.postgres, async (postgres) => {
    if (postgres._tag === "Unavailable") {
      skipped.push({ store: "postgres", reason: postgres.reason })
      return
    }
    const schemaUrl = await Effect.runPromise(freshSchema(postgres.url))
    figures.push(await measure("postgres", PostgresStore.layerClient({ url: schemaUrl }), roundTrips, repeats))
  })
  return { figures, skipped }
}
