/**
 * Event latency rows of `npm run bench` (issue 28 §5): how soon a reviewer's decision reaches a subscriber of the
 * store's change feed, pushed (`ChangeFeed.changed`) rather than polled, against the same path written by hand in the
 * same run on the same kind of connections.
 *
 * - Postgres: two store layers with their own pools, as two processes have (the writer records the decision with
 *   `DecisionRequests.recordDecision`; the reader holds `ChangeFeed.changed`, its `LISTEN`, and reads `feed` after
 *   each signal until it sees the decision's action). The floor: a table with a statement trigger that calls
 *   `pg_notify`, one `INSERT` by the writer, and the reader's `LISTEN` (the same `@effect/sql-pg` client) followed
 *   by one `SELECT` of the rows after the last it read.
 * - SQLite (one process, what `npm start` runs): one store layer on a file; the signal is the store's in-process
 *   `PubSub`. The floor: one `INSERT` on the same file, an Effect `PubSub` published after it, and the subscriber's
 *   `SELECT` of the rows after the last it read.
 *
 * Each sample is one decision on its own record: the time from the writer's call to the reader's feed read that
 * names the action. Medians over the samples, floor and subject interleaved.
 */
import * as LanguageModel from "@effect/ai/LanguageModel"
import * as Tool from "@effect/ai/Tool"
import * as Toolkit from "@effect/ai/Toolkit"
import * as LibsqlClient from "@effect/sql-libsql/LibsqlClient"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as PubSub from "effect/PubSub"
import * as Ref from "effect/Ref"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { ScriptedModel, TurnDriver } from "../dist/ai.js"
import {
  ChangeFeed,
  Decision,
  DecisionRequests,
  PendingActions,
  PendingStore,
  PendingStoreError,
  ResolveRuntime,
  stage,
  ToolResult
} from "../dist/index.js"
import { changesChannel } from "../dist/stores/internal/sqlSchema.js"
import * as PostgresStore from "../dist/stores/PostgresStore.js"
import * as SqliteStore from "../dist/stores/SqliteStore.js"
import { type Availability, freshSchema } from "../test/support/postgres.js"
import { median, type Row } from "./harness.js"
import { withPostgres } from "./postgres.js"

const ms = (value: number) => `${value < 10 ? value.toFixed(2) : value.toFixed(1)} ms`

/** A pending record to decide (a note: nothing runs it; the row measures the decision's way to a subscriber). */
const record = (id: string, now: number) => ({
  id,
  session: "events",
  kind: "note",
  label: `Note ${id}`,
  sourceToolName: "note",
  stager: null,
  preview: "a note",
  payload: { n: 1 },
  status: "pending" as const,
  attempts: 0,
  owner: null,
  leaseUntil: null,
  createdAt: now,
  updatedAt: now,
  expiresAt: null,
  outcome: null
})

/** A reader of the change feed: `heard(id)` resolves with the moment a feed read named the action `id`. */
const feedReader = Effect.gen(function*() {
  const feed = yield* ChangeFeed
  const position = yield* Ref.make(yield* feed.feedHead)
  const waiting = new Map<string, Deferred.Deferred<number>>()
  const readAll = Effect.gen(function*() {
    for (;;) {
      const after = yield* Ref.get(position)
      const changes = yield* feed.feed({ after, limit: 1_000 })
      if (changes.length === 0) return
      const at = performance.now()
      let { journal, notes } = after
      for (const change of changes) {
        if (change.source === "journal") journal = Math.max(journal, change.seq)
        else notes = Math.max(notes, change.seq)
        // The decision is a note; the record's own insert (a journal change, heard late) does not count.
        const deferred = change.source === "notes" ? waiting.get(change.actionId) : undefined
        if (deferred !== undefined) {
          waiting.delete(change.actionId)
          yield* Deferred.succeed(deferred, at)
        }
      }
      yield* Ref.set(position, { journal, notes })
    }
  })
  const fiber = yield* Effect.forkDaemon(Stream.runForEach(feed.changed, () => readAll))
  return {
    expect: (id: string) =>
      Effect.map(Deferred.make<number>(), (deferred) => {
        waiting.set(id, deferred)
        return Deferred.await(deferred)
      }),
    stop: Fiber.interrupt(fiber)
  }
})

/** The subject: `samples` decisions, each timed from `recordDecision` to the reader's feed read naming it. */
const subjectSample = (
  writer: ManagedRuntime.ManagedRuntime<PendingStore | DecisionRequests, unknown>,
  expect: (id: string) => Effect.Effect<Effect.Effect<number>>,
  id: string
) =>
  Effect.gen(function*() {
    const store = yield* PendingStore
    const decisions = yield* DecisionRequests
    yield* store.insert(record(id, Date.now()))
    const decisionId = yield* Decision.makeId
    const heard = yield* expect(id)
    const start = performance.now()
    const recorded = yield* decisions.recordDecision({
      id: decisionId,
      actionId: id,
      reviewer: "bench",
      action: "apply",
      reason: "Looks right.",
      amendment: null,
      now: Date.now()
    })
    if (recorded._tag !== "Recorded") return yield* Effect.die(new Error(`not recorded: ${recorded._tag}`))
    return (yield* heard) - start
  }).pipe(writer.runPromise)

export interface EventFigures {
  readonly rows: ReadonlyArray<Row>
  readonly missed: ReadonlyArray<string>
}

/** Interleaves `samples` runs of each of `runs` (the subject, then its floors), after a warm-up; their medians in ms. */
const interleave = async (
  samples: number,
  ...runs: ReadonlyArray<(i: number) => Promise<number>>
): Promise<ReadonlyArray<number>> => {
  const times = runs.map((): Array<number> => [])
  // Warm-up, not counted.
  for (let i = 0; i < 5; i++) for (const run of runs) await run(-1 - i)
  for (let i = 0; i < samples; i++) {
    for (const [k, run] of runs.entries()) times[k]!.push(await run(i))
  }
  return times.map(median)
}

const row = (
  short: string,
  figure: string,
  floorText: string,
  measured: { readonly value: number; readonly floor: number },
  bound: number,
  verdict: (ok: boolean) => string
): Row => ({
  name: short,
  figure,
  value: ms(measured.value),
  floor: `${ms(measured.floor)} (${floorText})`,
  plain: "—",
  vsFloor: `${(measured.value / measured.floor).toFixed(2)}×`,
  vsPlain: "—",
  target: `≤ ${bound}× floor: ${verdict(measured.value <= bound * measured.floor)}`
})

/** The floors' notification by hand: a statement trigger on `table` that notifies the channel of its name. */
const notifyOnInsert = (sql: SqlClient.SqlClient, table: string) =>
  Effect.zipRight(
    sql.unsafe(`CREATE FUNCTION ${table}_notify() RETURNS trigger LANGUAGE plpgsql AS $body$
BEGIN
  PERFORM pg_notify('${table}', 'new');
  RETURN NULL;
END
$body$`),
    sql.unsafe(`CREATE TRIGGER ${table}_notify AFTER INSERT ON ${table}
FOR EACH STATEMENT EXECUTE FUNCTION ${table}_notify()`)
  )

/** The floors' `LISTEN` on `channel`, through `@effect/sql-pg`'s client (its `listen`; an empty payload is dropped). */
const listenTo = (sql: SqlClient.SqlClient, channel: string) =>
  (sql as unknown as { readonly listen: (channel: string) => Stream.Stream<string, unknown> }).listen.call(
    sql,
    channel
  )

/** The Postgres figure: two pools, the decision through one, heard through the other's LISTEN. */
const postgresFigure = async (url: string, samples: number) => {
  const writer = ManagedRuntime.make(PostgresStore.layerClient({ url, maxConnections: 2 }))
  // Two LISTEN connections (the store's and the floor's) and room for the reads.
  const reader = ManagedRuntime.make(PostgresStore.layerClient({ url, maxConnections: 4 }))
  try {
    const subject = await reader.runPromise(feedReader)
    // The floor's table and trigger, and its reader: LISTEN, then the rows after the last one read.
    await writer.runPromise(Effect.flatMap(SqlClient.SqlClient, (sql) =>
      Effect.gen(function*() {
        yield* sql`CREATE TABLE bench_events (seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, action_id text NOT NULL)`
        yield* notifyOnInsert(sql, "bench_events")
      })))
    const floorWaiting = new Map<string, (at: number) => void>()
    let last = 0
    const floorReader = await reader.runPromise(Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const readRows = Effect.gen(function*() {
        const rows = yield* sql<{ readonly seq: string; readonly action_id: string }>`SELECT seq, action_id
          FROM bench_events WHERE seq > ${last} ORDER BY seq LIMIT 1000`
        const at = performance.now()
        for (const row of rows) {
          last = Math.max(last, Number(row.seq))
          floorWaiting.get(row.action_id)?.(at)
          floorWaiting.delete(row.action_id)
        }
      })
      const ready = yield* Deferred.make<void>()
      const fiber = yield* Effect.forkDaemon(
        Stream.runForEach(
          Stream.merge(Stream.fromEffect(Deferred.succeed(ready, undefined)), listenTo(sql, "bench_events")),
          () => readRows
        )
      )
      yield* Deferred.await(ready)
      // The LISTEN is in place once a notification round trip came back.
      yield* Effect.sleep("200 millis")
      return fiber
    }))
    const floor = (i: number) => {
      const id = `floor-${i}`
      const heard = new Promise<number>((resolve) => floorWaiting.set(id, resolve))
      const start = performance.now()
      return writer.runPromise(
        Effect.flatMap(SqlClient.SqlClient, (sql) => sql`INSERT INTO bench_events (action_id) VALUES (${id})`)
      ).then(() => heard).then((at) => at - start)
    }
    const [value, floorValue] = await interleave(
      samples,
      (i) => subjectSample(writer, subject.expect, `pg-${i}`),
      floor
    )
    await reader.runPromise(Effect.zipRight(subject.stop, Fiber.interrupt(floorReader)))
    return { value: value!, floor: floorValue! }
  } finally {
    await writer.dispose()
    await reader.dispose()
  }
}

const Note = Tool.make("note", {
  parameters: { text: Schema.String },
  success: Schema.String,
  failure: PendingStoreError,
  dependencies: [PendingActions]
})
const Tools = Toolkit.make(Note)
const Handlers = Tools.toLayer({
  note: ({ text }) =>
    Effect.map(
      stage({
        label: `Note: ${text}`,
        sourceToolName: "note",
        preview: text,
        apply: () => Effect.succeed(ToolResult.text(`Noted ${text}.`))
      }),
      (handle) => `Preview ${handle.id}`
    )
})

/**
 * The idle owner's figure, Postgres: a durable session (its own pool) stages a preview, then waits in
 * `TurnDriver.awaitDecision`; a decision recorded through another pool wakes it, and it runs again: the decision
 * (claim, apply, settle, complete) and the model request that tells the model. Timed from the reviewer's call to that
 * request. The floor, by hand on the same two pools and the store's own tables: the decision recorded by the
 * store's statement (its note notifies); the owner's `LISTEN` on the store's channel, then the statements the owner
 * sends (the feed, the watched record with its requested decision, the session's requested decisions, the claim,
 * the settle with the completion, the open records, the responses not yet delivered), then the request. A shorter
 * path on bare tables (four statements) is measured too and named in the row's figure.
 */
const idleOwnerFigure = async (url: string, samples: number) => {
  const turns = samples + 5
  let requestedAt = 0
  // The model: a tool call that stages a preview, then a text that ends the run, for every sample.
  const script: ScriptedModel.Script = Array.from(
    { length: turns },
    (_, i) => [ScriptedModel.toolCall("note", { text: `n${i}` }), "Thanks."] as const
  ).flat()
  const timedModel = Layer.effect(
    LanguageModel.LanguageModel,
    Effect.map(LanguageModel.LanguageModel, (model) => ({
      ...model,
      generateText: ((options: never) =>
        Effect.suspend(() => {
          requestedAt = performance.now()
          return model.generateText(options)
        })) as unknown as typeof model.generateText
    }))
  )
  const owner = ManagedRuntime.make(
    Layer.mergeAll(
      TurnDriver.layerWithoutDependencies({}),
      Handlers,
      Layer.provideMerge(timedModel, ScriptedModel.layer(script))
    ).pipe(
      Layer.provideMerge(ResolveRuntime.layerDurable({ session: "idle-owner" })),
      Layer.provideMerge(PostgresStore.layerClient({ url, maxConnections: 3 }))
    )
  )
  const reviewer = ManagedRuntime.make(PostgresStore.layerClient({ url, maxConnections: 2 }))
  // The same path by hand has a pool of its own, as the owner has (its LISTEN is its own).
  const sameOwner = ManagedRuntime.make(PostgresStore.layerClient({ url, maxConnections: 3 }))
  try {
    const subject = async () => {
      const { id, waiting } = await owner.runPromise(Effect.gen(function*() {
        const driver = yield* TurnDriver
        yield* Effect.either(driver.run("Take a note.", { toolkit: Tools, maxTurns: 1 }))
        const pending = yield* PendingActions
        const [open] = yield* pending.listOpen
        const waiting = yield* Effect.forkDaemon(
          Effect.zipRight(driver.awaitDecision, driver.run("Continue.", { toolkit: Tools }))
        )
        return { id: open!.id, waiting }
      }))
      await new Promise((resolve) => setTimeout(resolve, 20))
      const start = performance.now()
      await reviewer.runPromise(
        Effect.flatMap(
          DecisionRequests,
          (decisions) =>
            Effect.flatMap(Decision.makeId, (decisionId) =>
              decisions.recordDecision({
                id: decisionId,
                actionId: id,
                reviewer: "bench",
                action: "apply",
                reason: "Go ahead.",
                amendment: null,
                now: Date.now()
              }))
        )
      )
      await owner.runPromise(Fiber.join(waiting))
      return requestedAt - start
    }
    // The floor's tables (plain, as an app would have them) and the owner's listener.
    await reviewer.runPromise(Effect.flatMap(SqlClient.SqlClient, (sql) =>
      Effect.gen(function*() {
        yield* sql`CREATE TABLE bench_actions (id text PRIMARY KEY, status text NOT NULL, owner text)`
        yield* sql`CREATE TABLE bench_decisions (id text PRIMARY KEY, action_id text NOT NULL, state text NOT NULL)`
        yield* notifyOnInsert(sql, "bench_decisions")
      })))
    let heard: ((at: number) => void) | undefined
    const listener = await owner.runPromise(Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const runDecisions = Effect.gen(function*() {
        const requested = yield* sql<{ readonly id: string; readonly action_id: string }>`SELECT id, action_id
          FROM bench_decisions WHERE state = 'requested'`
        for (const decision of requested) {
          yield* sql`UPDATE bench_actions SET status = 'resolving', owner = 'bench' WHERE id = ${decision.action_id}
            AND status = 'pending'`
          yield* sql`UPDATE bench_actions SET status = 'applied', owner = NULL WHERE id = ${decision.action_id}
            AND status = 'resolving' AND owner = 'bench'`
          yield* sql`UPDATE bench_decisions SET state = 'done' WHERE id = ${decision.id} AND state = 'requested'`
          // The model request.
          heard?.(performance.now())
        }
      })
      const fiber = yield* Effect.forkDaemon(Stream.runForEach(listenTo(sql, "bench_decisions"), () => runDecisions))
      yield* Effect.sleep("200 millis")
      return fiber
    }))
    const floor = async (i: number) => {
      const id = `floor-${i}`
      await owner.runPromise(
        Effect.flatMap(
          SqlClient.SqlClient,
          (sql) => sql`INSERT INTO bench_actions (id, status) VALUES (${id}, 'pending')`
        )
      )
      const requested = new Promise<number>((resolve) => (heard = resolve))
      const start = performance.now()
      await reviewer.runPromise(
        Effect.flatMap(
          SqlClient.SqlClient,
          (sql) => sql`INSERT INTO bench_decisions (id, action_id, state) VALUES (${`d-${id}`}, ${id}, 'requested')`
        )
      )
      return (await requested) - start
    }
    // The same path by hand, on the store's own tables (their triggers, indexes and notification): the reviewer's
    // decision recorded by the store's statement; the owner's LISTEN on the store's channel, then the statements
    // the owner sends: the feed after its position, the watched record with its requested decision, the session's
    // requested decisions, the claim, the settle with the decision's completion (one statement), the open records
    // and the responses not yet delivered; then the request.
    let sameHeard: ((at: number) => void) | undefined
    let watched = ""
    // Only while its own sample runs: it reads nothing while the subject's runs (the same channel wakes it).
    let active = false
    const position = { journal: 0, notes: 0 }
    const open = "status IN ('pending', 'resolving', 'orphaned', 'conflict')"
    const sameListener = await sameOwner.runPromise(Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const [head] = yield* sql<{ readonly journal: unknown; readonly notes: unknown }>`SELECT
        (SELECT COALESCE(max(seq), 0) FROM effect_resolve_events) AS journal,
        (SELECT COALESCE(max(seq), 0) FROM effect_resolve_notes) AS notes`
      position.journal = Number(head!.journal)
      position.notes = Number(head!.notes)
      const wake = Effect.gen(function*() {
        if (!active) return
        const changes = yield* sql<{ readonly source: string; readonly seq: unknown; readonly action_id: string }>`
          SELECT * FROM (SELECT 'journal' AS source, seq, action_id FROM effect_resolve_events
            WHERE seq > ${position.journal} ORDER BY seq LIMIT 1000) j
          UNION ALL SELECT * FROM (SELECT 'notes' AS source, seq, action_id FROM effect_resolve_notes
            WHERE seq > ${position.notes} ORDER BY seq LIMIT 1000) n`
        let relevant = false
        for (const change of changes) {
          if (change.source === "journal") position.journal = Math.max(position.journal, Number(change.seq))
          else position.notes = Math.max(position.notes, Number(change.seq))
          if (change.action_id === watched) relevant = true
        }
        if (!relevant) return
        const [listed] = yield* sql<{ readonly d_id: string | null }>`SELECT p.*, d.id AS d_id, d.state AS d_state
          FROM effect_resolve_pending p LEFT JOIN effect_resolve_decisions d
            ON d.action_id = p.id AND d.state = 'requested' WHERE p.id IN (${watched})`
        if (listed?.d_id === null || listed === undefined) return
        const now = Date.now()
        const requested = yield* sql<{ readonly d_id: string; readonly id: string }>`SELECT p.*, d.id AS d_id
          FROM effect_resolve_decisions d JOIN effect_resolve_pending p ON p.id = d.action_id
          WHERE d.state = 'requested' AND d.session IN ('floor-owner') ORDER BY d.requested_at, d.seq LIMIT 20`
        for (const decision of requested) {
          yield* sql`UPDATE effect_resolve_pending SET status = 'resolving', attempts = attempts + 1,
            owner = 'floor', lease_until = ${now + 60_000}, updated_at = ${now}
            WHERE id = ${decision.id} AND status = 'pending' AND (expires_at IS NULL OR expires_at > ${now})
            RETURNING *`
          yield* sql`WITH s AS (
              UPDATE effect_resolve_pending SET status = 'applied', owner = NULL, lease_until = NULL,
                updated_at = ${now}, outcome = 'Noted.'
              WHERE id = ${decision.id} AND status = 'resolving' AND owner = 'floor' RETURNING id
            ), d AS (
              UPDATE effect_resolve_decisions SET state = 'done', outcome = 'Noted.', settled_at = ${now},
                settled_by = 'floor'
              WHERE id = ${decision.d_id} AND state = 'requested' AND EXISTS (SELECT 1 FROM s) RETURNING id
            )
            SELECT (SELECT count(*) FROM s) AS settled, (SELECT count(*) FROM d) AS completed`
        }
        yield* sql`SELECT * FROM effect_resolve_pending WHERE session = 'floor-owner' AND ${sql.literal(open)}
          ORDER BY created_at, seq`
        yield* sql`SELECT * FROM effect_resolve_responses WHERE session = 'floor-owner' AND delivered_at IS NULL
          ORDER BY seq LIMIT 20`
        // The model request.
        sameHeard?.(performance.now())
      })
      const fiber = yield* Effect.forkDaemon(Stream.runForEach(listenTo(sql, changesChannel), () => wake))
      yield* Effect.sleep("200 millis")
      return fiber
    }))
    const same = async (i: number) => {
      const id = `pa_floor_${i + 10}`
      watched = id
      const now = Date.now()
      await sameOwner.runPromise(
        Effect.flatMap(
          SqlClient.SqlClient,
          (sql) =>
            sql`INSERT INTO effect_resolve_pending (id, session, kind, label, source_tool_name, stager, preview, payload,
          status, attempts, created_at, updated_at) VALUES (${id}, 'floor-owner', 'closure', 'Note', 'note', NULL,
          'n', 'null', 'pending', 0, ${now}, ${now})`
        )
      )
      await new Promise((resolve) => setTimeout(resolve, 20))
      const requested = new Promise<number>((resolve) => (sameHeard = resolve))
      active = true
      const start = performance.now()
      await reviewer.runPromise(
        Effect.flatMap(
          SqlClient.SqlClient,
          (sql) =>
            sql`INSERT INTO effect_resolve_decisions (id, action_id, session, reviewer, action, reason, amendment, state,
            requested_at)
          SELECT ${`dc_floor_${i + 10}`}, id, session, 'bench', 'apply', 'Go ahead.', 'null', 'requested', ${now}
          FROM effect_resolve_pending WHERE id = ${id} AND status IN ('pending', 'orphaned')
          ON CONFLICT DO NOTHING RETURNING id`
        )
      )
      return (await requested) - start
    }
    const [value, sameFloor, bare] = await interleave(samples, subject, same, floor)
    await owner.runPromise(Fiber.interrupt(listener))
    await sameOwner.runPromise(Fiber.interrupt(sameListener))
    return { value: value!, floor: sameFloor!, other: bare! }
  } finally {
    await owner.dispose()
    await reviewer.dispose()
    await sameOwner.dispose()
  }
}

/** The SQLite figure: one store layer on a file, its in-process signal. */
const sqliteFigure = async (samples: number) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "effect-resolve-bench-events-"))
  const runtime = ManagedRuntime.make(SqliteStore.layer({ filename: path.join(dir, "events.db") }))
  const floorDb = ManagedRuntime.make(LibsqlClient.layer({ url: `file:${path.join(dir, "floor.db")}` }))
  try {
    const subject = await runtime.runPromise(feedReader)
    const floorWaiting = new Map<string, (at: number) => void>()
    let last = 0
    const { hub, fiber } = await floorDb.runPromise(Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* sql`CREATE TABLE bench_events (seq INTEGER PRIMARY KEY, action_id TEXT NOT NULL)`
      const hub = yield* PubSub.sliding<void>(1)
      const readRows = Effect.gen(function*() {
        const rows = yield* sql<{ readonly seq: number; readonly action_id: string }>`SELECT seq, action_id
          FROM bench_events WHERE seq > ${last} ORDER BY seq LIMIT 1000`
        const at = performance.now()
        for (const row of rows) {
          last = Math.max(last, Number(row.seq))
          floorWaiting.get(row.action_id)?.(at)
          floorWaiting.delete(row.action_id)
        }
      })
      const fiber = yield* Effect.forkDaemon(Stream.runForEach(Stream.fromPubSub(hub), () => readRows))
      yield* Effect.sleep("50 millis")
      return { hub, fiber }
    }))
    const floor = (i: number) => {
      const id = `floor-${i}`
      const heard = new Promise<number>((resolve) => floorWaiting.set(id, resolve))
      const start = performance.now()
      return floorDb.runPromise(
        Effect.flatMap(
          SqlClient.SqlClient,
          (sql) =>
            Effect.zipRight(sql`INSERT INTO bench_events (action_id) VALUES (${id})`, PubSub.publish(hub, undefined))
        )
      ).then(() => heard).then((at) => at - start)
    }
    const [value, floorValue] = await interleave(
      samples,
      (i) => subjectSample(runtime, subject.expect, `lite-${i}`),
      floor
    )
    await runtime.runPromise(subject.stop)
    await floorDb.runPromise(Fiber.interrupt(fiber))
    return { value: value!, floor: floorValue! }
  } finally {
    await runtime.dispose()
    await floorDb.dispose()
    fs.rmSync(dir, { recursive: true, force: true })
  }
}

/** The event latency rows: SQLite in one process, and Postgres across two pools when a server is there. */
export const eventFigures = async (options: {
  readonly quick: boolean
  readonly postgres?: Availability | undefined
}): Promise<EventFigures> => {
  const verdict = (ok: boolean) => options.quick ? "not judged (smoke run)" : ok ? "ok" : "MISSED"
  const samples = options.quick ? 10 : 60
  const bound = 2
  const rows: Array<Row> = []
  const missed: Array<string> = []
  const lite = await sqliteFigure(samples)
  rows.push(row(
    "decision → subscriber, SQLite",
    "a decision → a subscriber of the change feed hears it, SQLite file, one process (the store's signal)",
    "INSERT, PubSub, SELECT by hand",
    lite,
    bound,
    verdict
  ))
  if (lite.value > bound * lite.floor) missed.push("decision → subscriber, SQLite")
  await withPostgres(options.postgres, async (postgres) => {
    if (postgres._tag !== "Available") {
      rows.push({
        name: "decision → subscriber, Postgres",
        figure: `a decision → a subscriber in another pool, Postgres: skipped (${postgres.reason})`,
        value: "—",
        floor: "—",
        plain: "—",
        vsFloor: "—",
        vsPlain: "—",
        target: "skipped"
      })
      return
    }
    const url = await Effect.runPromise(freshSchema(postgres.url))
    const pg = await postgresFigure(url, samples)
    rows.push(row(
      "decision → subscriber, Postgres",
      "a decision → a subscriber in another pool hears it, Postgres (LISTEN/NOTIFY, then the feed read)",
      "INSERT with pg_notify, LISTEN, SELECT by hand",
      pg,
      bound,
      verdict
    ))
    if (pg.value > bound * pg.floor) missed.push("decision → subscriber, Postgres")
    const idle = await idleOwnerFigure(await Effect.runPromise(freshSchema(postgres.url)), samples)
    rows.push(row(
      "decision → idle owner's request",
      "a decision → the idle owner (TurnDriver.awaitDecision, another pool) wakes, runs it, and sends its next " +
        `model request, Postgres (a shorter path by hand, four statements on bare tables: ${ms(idle.other)})`,
      "LISTEN, then the owner's statements by hand",
      idle,
      bound,
      verdict
    ))
    if (idle.value > bound * idle.floor) missed.push("decision → idle owner's request, Postgres")
  })
  return { rows, missed }
}

// `tsx bench/events.ts`: these rows alone (after `npm run build`).
if (process.argv[1] !== undefined && path.resolve(process.argv[1]) === path.resolve(import.meta.filename)) {
  const { printTable } = await import("./harness.js")
  const result = await eventFigures({ quick: process.env.BENCH_QUICK !== undefined })
  printTable(result.rows)
  if (result.missed.length > 0) console.log(`missed: ${result.missed.join(", ")}`)
  process.exit(0)
}
