/**
 * Where a cluster session's steering messages (each `steer`) are durable at once: the
 * `Session` entity records each one here, keyed by its id, *before* it answers the message, and only then queues it
 * for the session's next model request. The turn that carries it holds its id in the conversation (the request's user
 * message carries `{ "effect-resolve": { steerId } }` in its options, which no provider reads), so "delivered" is
 * whatever the saved conversation holds: a session that opens (on the runner that takes over after another died)
 * queues again every recorded message whose id its saved conversation and saved steering do not hold, and marks the
 * others delivered. A message is never sent twice (an id already recorded is not queued again, and a turn never
 * carries one id twice) and never lost once `steer` answered.
 *
 * - `layerSql`: the table `effect_resolve_cluster_steering` on the cluster's `SqlClient` (Postgres or SQLite),
 *   created by the cluster layers (`CREATE TABLE IF NOT EXISTS`, not a store migration). Delivered rows are kept:
 *   they make a `Steer` the cluster delivers again (its reply was not stored before the runner died) a no-op.
 * - `layerMemory`: in this process (tests, `Entity.makeTestClient`).
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { SteeringJournal } from "effect-resolve/cluster"
 *
 * const program = Effect.gen(function*() {
 *   const journal = yield* SteeringJournal
 *   const message = { customType: "note", content: "Use tabs.", display: false, attribution: "agent", timestamp: 0 }
 *   yield* journal.record("s-1", "st-1", message) // true: new
 *   yield* journal.record("s-1", "st-1", message) // false: recorded before
 *   yield* journal.undelivered("s-1") // [{ id: "st-1", message }]
 * }).pipe(Effect.provide(SteeringJournal.layerMemory))
 * ```
 *
 * @since 0.4.0
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { SqlError } from "@effect/sql/SqlError"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import { PendingStoreError } from "../domain/Errors.js"
import { SteeringMessage } from "../domain/SteeringMessage.js"
import { innerMessageOf } from "../internal/render.js"

/**
 * @since 0.4.0
 */
export declare namespace SteeringJournal {
  /**
   * One recorded message and its id.
   *
   * @since 0.4.0
   * @category models
   */
  export interface Entry {
    readonly id: string
    readonly message: SteeringMessage
  }

  /**
   * @since 0.4.0
   * @category models
   */
  export interface Service {
    /**
     * Records `message` for `session` under `id`, durably before it returns. `true` when it is new; `false` when a
     * message with this id was recorded before (the same steer sent again: it is queued or delivered already).
     */
    readonly record: (
      session: string,
      id: string,
      message: SteeringMessage
    ) => Effect.Effect<boolean, PendingStoreError>
    /** Whether a message with this id was recorded for the session. */
    readonly has: (session: string, id: string) => Effect.Effect<boolean, PendingStoreError>
    /** The session's messages not marked delivered, oldest first. */
    readonly undelivered: (session: string) => Effect.Effect<ReadonlyArray<Entry>, PendingStoreError>
    /** Marks these messages delivered: a saved turn of the session carried them. */
    readonly markDelivered: (session: string, ids: ReadonlyArray<string>) => Effect.Effect<void, PendingStoreError>
  }
}

/**
 * The journal of the cluster's steering messages.
 *
 * @since 0.4.0
 * @category tags
 */
export class SteeringJournal extends Context.Tag("effect-resolve/cluster/SteeringJournal")<
  SteeringJournal,
  SteeringJournal.Service
>() {
  /**
   * In this process: lost with it (for tests and `Entity.makeTestClient`).
   *
   * @since 0.4.0
   * @category layers
   */
  static readonly layerMemory: Layer.Layer<SteeringJournal> = Layer.sync(SteeringJournal, () => makeMemory())

  /**
   * A journal in this process (what `layerMemory` provides), to wrap in a test.
   *
   * @since 0.4.0
   * @category constructors
   */
  static readonly makeMemory = (): SteeringJournal.Service => makeMemory()

  /**
   * On the cluster's `SqlClient` (Postgres or SQLite): creates `effect_resolve_cluster_steering` if it is missing.
   *
   * @since 0.4.0
   * @category layers
   */
  static readonly layerSql: Layer.Layer<SteeringJournal, PendingStoreError, SqlClient.SqlClient> = Layer.effect(
    SteeringJournal,
    Effect.suspend(() => makeSql)
  )
}

/**
 * A journal in this process.
 *
 * @since 0.4.0
 * @category constructors
 */
export const makeMemory = (): SteeringJournal.Service => {
  const sessions = new Map<string, Map<string, { message: SteeringMessage; delivered: boolean }>>()
  const of = (session: string) => {
    let entries = sessions.get(session)
    if (entries === undefined) sessions.set(session, entries = new Map())
    return entries
  }
  return SteeringJournal.of({
    record: (session, id, message) =>
      Effect.sync(() => {
        const entries = of(session)
        if (entries.has(id)) return false
        entries.set(id, { message, delivered: false })
        return true
      }),
    has: (session, id) => Effect.sync(() => of(session).has(id)),
    undelivered: (session) =>
      Effect.sync(() => [...of(session)].flatMap(([id, e]) => e.delivered ? [] : [{ id, message: e.message }])),
    markDelivered: (session, ids) =>
      Effect.sync(() => {
        const entries = of(session)
        for (const id of ids) {
          const entry = entries.get(id)
          if (entry !== undefined) entry.delivered = true
        }
      })
  })
}

const MessageJson = Schema.parseJson(SteeringMessage)

const failed = (operation: string) => (cause: SqlError) =>
  new PendingStoreError({
    operation: `SteeringJournal.${operation}`,
    detail: `the database failed (${innerMessageOf(cause)}). Retry the message: a steer with the same id is ` +
      "recorded at most once.",
    cause
  })

/** SQLite's "database is locked": the statement is tried again. */
const isBusy = (error: SqlError) => {
  const code = (error.cause as { readonly code?: unknown } | null | undefined)?.code
  return typeof code === "string" && code.startsWith("SQLITE_BUSY")
}

const retryBusy = <A>(self: Effect.Effect<A, SqlError>): Effect.Effect<A, SqlError> =>
  Effect.retry(self, {
    while: isBusy,
    schedule: Schedule.exponential("2 millis", 1.5).pipe(
      Schedule.union(Schedule.spaced("100 millis")),
      Schedule.jittered,
      Schedule.upTo("10 seconds")
    )
  })

/**
 * Creates the table once (two runners starting together on Postgres can race on `CREATE TABLE IF NOT EXISTS`: the
 * loser tries again and finds it).
 */
const createTable = (sql: SqlClient.SqlClient) =>
  sql.onDialectOrElse({
    pg: () =>
      sql`CREATE TABLE IF NOT EXISTS effect_resolve_cluster_steering (
        seq bigint GENERATED ALWAYS AS IDENTITY,
        session text NOT NULL,
        steer_id text NOT NULL,
        message text NOT NULL,
        recorded_at bigint NOT NULL,
        delivered_at bigint,
        PRIMARY KEY (session, steer_id)
      )`,
    orElse: () =>
      sql`CREATE TABLE IF NOT EXISTS effect_resolve_cluster_steering (
        session TEXT NOT NULL,
        steer_id TEXT NOT NULL,
        message TEXT NOT NULL,
        recorded_at INTEGER NOT NULL,
        delivered_at INTEGER,
        PRIMARY KEY (session, steer_id)
      )`
  }).pipe(
    retryBusy,
    Effect.retry({ times: 3, schedule: Schedule.spaced("50 millis") }),
    Effect.mapError(failed("create"))
  )

/**
 * A journal on the current `SqlClient`, creating its table if it is missing.
 *
 * @since 0.4.0
 * @category constructors
 */
export const makeSql: Effect.Effect<SteeringJournal.Service, PendingStoreError, SqlClient.SqlClient> = Effect.gen(
  function*() {
    const sql = yield* SqlClient.SqlClient
    yield* createTable(sql)
    // SQLite orders by rowid (the insertion order); Postgres by its identity column.
    const order = sql.literal(sql.onDialectOrElse({ pg: () => "seq", orElse: () => "rowid" }))
    const run = <A>(operation: string, statement: Effect.Effect<A, SqlError>) =>
      Effect.mapError(retryBusy(statement), failed(operation))
    return SteeringJournal.of({
      record: (session, id, message) =>
        Effect.gen(function*() {
          const json = yield* Effect.orDie(Schema.encode(MessageJson)(message))
          const now = yield* Clock.currentTimeMillis
          const rows = yield* run(
            "record",
            sql<{ readonly steer_id: string }>`INSERT INTO effect_resolve_cluster_steering
              (session, steer_id, message, recorded_at) VALUES (${session}, ${id}, ${json}, ${now})
              ON CONFLICT (session, steer_id) DO NOTHING RETURNING steer_id`
          )
          return rows.length > 0
        }).pipe(Effect.uninterruptible),
      has: (session, id) =>
        Effect.map(
          run(
            "has",
            sql`SELECT 1 AS found FROM effect_resolve_cluster_steering WHERE session = ${session} AND steer_id = ${id}`
          ),
          (rows) => rows.length > 0
        ),
      undelivered: (session) =>
        Effect.gen(function*() {
          const rows = yield* run(
            "undelivered",
            sql<{ readonly steer_id: string; readonly message: string }>`SELECT steer_id, message
              FROM effect_resolve_cluster_steering WHERE session = ${session} AND delivered_at IS NULL
              ORDER BY ${order}`
          )
          const entries: Array<SteeringJournal.Entry> = []
          for (const row of rows) {
            const decoded = Schema.decodeUnknownEither(MessageJson)(row.message)
            if (decoded._tag === "Right") entries.push({ id: String(row.steer_id), message: decoded.right })
            else {
              yield* Effect.logError(
                `effect-resolve: the steering message ${row.steer_id} of session ${session} does not decode; skipped`,
                decoded.left
              )
            }
          }
          return entries
        }),
      markDelivered: (session, ids) =>
        ids.length === 0 ? Effect.void : Effect.flatMap(Clock.currentTimeMillis, (now) =>
          run(
            "markDelivered",
            sql`UPDATE effect_resolve_cluster_steering SET delivered_at = ${now}
              WHERE session = ${session} AND delivered_at IS NULL AND ${sql.in("steer_id", ids)}`
          ).pipe(Effect.asVoid))
    })
  }
)
