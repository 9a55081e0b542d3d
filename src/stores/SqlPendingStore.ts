/**
 * A `PendingStore` on `@effect/sql`, for SQLite (`@effect/sql-libsql`) and Postgres (`@effect/sql-pg`). Its tables
 * are created by `@effect/sql`'s `Migrator` (`migrate`, table `effect_resolve_migrations`); every table, trigger and
 * function it creates is prefixed `effect_resolve_`.
 *
 * Every transition is ONE statement, so one transaction and one round trip: a conditional
 * `UPDATE ... WHERE status = ... RETURNING`, whose journal event a trigger on the record table writes in the same
 * statement (on both dialects). `claim` is `UPDATE ... SET status = 'resolving' ... WHERE status = 'pending'`: of
 * any number of concurrent claims of one record, in one process or many, the database lets exactly one match.
 *
 * Columns are read without the client's name transforms, so a client configured with `transformResultNames` works,
 * and integers are read whether the driver returns them as numbers, text or `bigint` (libsql's `intMode`).
 * Epoch milliseconds are `INTEGER` (SQLite) / `bigint` (Postgres, which returns them as strings; they are decoded
 * back to numbers exactly). Every row is decoded on its own: a row changed outside the store (a payload that is not
 * JSON, a time or status it cannot read) comes back as an `unreadable` record with the reason, and the others as
 * usual.
 *
 * @example
 * ```ts
 * import { LibsqlClient } from "@effect/sql-libsql"
 * import { Layer } from "effect"
 * import { SqlPendingStore } from "effect-resolve/sql"
 *
 * // The store on an app's own client (migrates first).
 * const StoreLive = SqlPendingStore.layer.pipe(Layer.provide(LibsqlClient.layer({ url: "file:app.db" })))
 * ```
 *
 * @since 0.2.0
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as PubSub from "effect/PubSub"
import * as Schedule from "effect/Schedule"
import * as Stream from "effect/Stream"
import type { PendingRecord } from "../domain/PendingRecord.js"
import {
  badCursor,
  checkClaim,
  checkHeartbeat,
  checkPage,
  checkPrune,
  checkRecord,
  checkSession,
  checkSettle,
  checkTransition,
  eventCursor,
  payloadJson,
  recordCursor
} from "../services/internal/pendingStore.js"
import { signalling } from "../services/internal/storeSignals.js"
import {
  checkAcquire,
  checkConversationSave,
  checkPrevious,
  checkSessionLogEntry,
  duplicateId,
  fencedOut,
  invalidInput,
  leaseLapsed,
  PendingStore,
  PendingStoreError
} from "../services/PendingStore.js"
import { makeInbox } from "./internal/sqlInbox.js"
import {
  type EventRow,
  isBusy,
  type LogRow,
  pageOf,
  rawMillis,
  readFailed,
  recordColumns,
  type RecordRow,
  seqOf,
  toEvent,
  toRecord,
  writeFailed
} from "./internal/sqlRows.js"
import { changesChannel, migrate, openCondition, settledCondition } from "./internal/sqlSchema.js"
import { escapingClient, readText, Verbatim } from "./internal/sqlText.js"

export { migrate, migrations, migrationsTable } from "./internal/sqlSchema.js"

/**
 * Builds the store on the `SqlClient` in context (SQLite or Postgres). It does not create the tables: run
 * `migrate` first, or use `layer`.
 *
 * On SQLite, a statement that finds the database locked by another process past the connection's busy timeout is
 * retried (with growing, jittered pauses, for up to 10 seconds): the statement did not run, so retrying is safe.
 *
 * @since 0.2.0
 * @category constructors
 */
export const make: Effect.Effect<PendingStore.Service, never, SqlClient.SqlClient> = Effect.map(
  SqlClient.SqlClient,
  (client) => {
    // Every string bound is escaped losslessly (NUL, lone surrogates), every text column read is decoded: see sqlText.
    const sql = escapingClient(client)
    const listen = (client as unknown as { readonly listen?: (channel: string) => Stream.Stream<string, SqlError> })
      .listen
    if (sql.onDialectOrElse({ pg: () => true, orElse: () => false }) && typeof listen === "function") {
      // Postgres: every statement that adds to the feed notifies when it commits (migration 7_notify).
      const changed = Stream.mapError(Stream.as(listen.call(client, changesChannel), undefined), readFailed("changed"))
      return build(sql, undefined, changed)
    }
    // SQLite: this store's own writes signal (another process on the file signals nothing here).
    const changes = Effect.runSync(PubSub.sliding<void>(1))
    return signalling(build(sql, undefined, Stream.fromPubSub(changes)), changes)
  }
)

/**
 * The store on `sql`; with `fence`, its writes for the session happen only while the fence's epoch is the session's
 * latest: an `EXISTS` on the owners table in each write's own statement (`FOR SHARE` on Postgres, so that an `acquire`
 * waits for a write that found the old epoch, and a write waits for an `acquire` under way and then sees the new
 * epoch). A write that changed nothing reads the owner to tell a refusal from a lost race.
 */
const build = (
  sql: SqlClient.SqlClient,
  fence: PendingStore.Fence | undefined,
  changed: Stream.Stream<void, PendingStoreError>
): PendingStore.Service => {
  {
    const retryBusy: <A>(self: Effect.Effect<A, SqlError>) => Effect.Effect<A, SqlError> = sql.onDialectOrElse({
      sqlite: () => (self) =>
        Effect.retry(self, {
          while: isBusy,
          schedule: Schedule.exponential("2 millis", 1.5).pipe(
            Schedule.union(Schedule.spaced("100 millis")),
            Schedule.jittered,
            Schedule.upTo("10 seconds")
          )
        }),
      orElse: () => (self) => self
    })
    const columns = sql.literal(recordColumns)
    const settled = sql.literal(settledCondition)
    const forShare = sql.literal(sql.onDialectOrElse({ pg: () => " FOR SHARE", orElse: () => "" }))
    /** The fence's condition, to AND into a write's WHERE (empty without a fence). */
    const owns = fence === undefined ? sql.literal("") : sql`AND EXISTS (SELECT 1 FROM effect_resolve_owners
      WHERE session = ${fence.session} AND epoch = ${fence.epoch}${forShare})`
    /** The fence's condition as a WHERE of its own (for `INSERT ... SELECT`). */
    const whereOwns = fence === undefined ? sql.literal("WHERE 1 = 1") : sql`WHERE EXISTS (SELECT 1
      FROM effect_resolve_owners WHERE session = ${fence.session} AND epoch = ${fence.epoch}${forShare})`
    /** After a fenced write that changed nothing: refused if the fence's epoch is no longer the latest. */
    const unlessFenced = <A>(operation: string, value: A): Effect.Effect<A, PendingStoreError> =>
      fence === undefined ? Effect.succeed(value) : Effect.flatMap(
        run(
          operation,
          sql<{ readonly epoch: unknown }>`SELECT epoch FROM effect_resolve_owners
            WHERE session = ${fence.session}`.withoutTransform
        ),
        (rows) =>
          rows.length === 1 && seqOf(rows[0]!.epoch) === fence.epoch ?
            Effect.succeed(value) :
            Effect.fail(fencedOut(operation, fence))
      )

    const run = <Row extends object>(operation: string, statement: Effect.Effect<ReadonlyArray<Row>, SqlError>) =>
      Effect.mapError(retryBusy(statement), readFailed(operation))

    // Every row is decoded on its own: one bad row never fails a read.
    const read = <Row extends object, A>(
      operation: string,
      statement: Effect.Effect<ReadonlyArray<Row>, SqlError>,
      f: (row: Row) => A
    ) => Effect.map(run(operation, statement), (rows) => rows.map(f))

    const write = <Row extends object>(operation: string, statement: Effect.Effect<ReadonlyArray<Row>, SqlError>) =>
      Effect.uninterruptible(Effect.mapError(retryBusy(statement), writeFailed(operation)))

    const insert = (record: PendingRecord) =>
      Effect.suspend(() => {
        const problem = checkRecord(record)
        if (problem !== undefined) return Effect.fail(invalidInput("insert", problem))
        const payload = payloadJson(record.payload)
        if (payload === undefined) {
          return Effect.fail(invalidInput("insert", "payload must be a JSON value (null for closures)"))
        }
        const values = sql`${record.id}, ${record.session}, ${record.kind}, ${record.label},
            ${record.sourceToolName}, ${record.stager}, ${record.preview}, ${payload}, ${record.status},
            ${record.attempts}, NULL, NULL, ${record.createdAt}, ${record.updatedAt}, ${record.expiresAt},
            ${record.outcome}`
        const statement = fence === undefined ?
          sql<{ readonly id: string }>`INSERT INTO effect_resolve_pending (${columns}) VALUES (${values})
            ON CONFLICT (id) DO NOTHING RETURNING id` :
          sql<{ readonly id: string }>`INSERT INTO effect_resolve_pending (${columns}) SELECT ${values} ${whereOwns}
            ON CONFLICT (id) DO NOTHING RETURNING id`
        return Effect.flatMap(
          write("insert", statement.withoutTransform),
          (rows) =>
            rows.length === 1 ?
              Effect.void :
              Effect.zipRight(unlessFenced("insert", undefined), Effect.fail(duplicateId(record.id)))
        )
      })

    const claim = (input: PendingStore.ClaimInput) =>
      Effect.suspend(() => {
        const problem = checkClaim(input)
        if (problem !== undefined) return Effect.fail(invalidInput("claim", problem))
        const statement = sql<RecordRow>`UPDATE effect_resolve_pending
          SET status = 'resolving', attempts = attempts + 1, owner = ${input.owner},
            lease_until = ${input.leaseUntil}, updated_at = ${input.now}
          WHERE id = ${input.id} AND status = 'pending' AND (expires_at IS NULL OR expires_at > ${input.now}) ${owns}
          RETURNING ${columns}`
        return Effect.flatMap(
          write("claim", statement.withoutTransform),
          (rows) =>
            rows.length === 0 ?
              unlessFenced("claim", Option.none<PendingRecord>()) :
              Effect.succeed(Option.some(toRecord(rows[0]!)))
        )
      })

    const settle = (input: PendingStore.SettleInput) =>
      Effect.suspend(() => {
        const problem = checkSettle(input)
        if (problem !== undefined) return Effect.fail(invalidInput("settle", problem))
        const statement = sql<{ readonly id: string }>`UPDATE effect_resolve_pending
          SET status = ${input.to}, owner = NULL, lease_until = NULL, updated_at = ${input.now},
            outcome = ${Option.getOrNull(input.outcome)}
          WHERE id = ${input.id} AND status = 'resolving' AND owner = ${input.owner} ${owns}
          RETURNING id`
        return Effect.flatMap(
          write("settle", statement.withoutTransform),
          (rows) => rows.length > 0 ? Effect.succeed(true) : unlessFenced("settle", false)
        )
      })

    const transition = (input: PendingStore.TransitionInput) =>
      Effect.suspend(() => {
        const problem = checkTransition(input)
        if (problem !== undefined) return Effect.fail(invalidInput("transition", problem))
        const guard = input.owner === undefined ?
          sql.literal("") :
          Option.isSome(input.owner) ?
          sql`AND owner = ${input.owner.value}` :
          sql.literal("AND owner IS NULL")
        const stager = input.stager === undefined ? sql.literal("") : sql`, stager = ${input.stager}`
        const set = sql`SET status = ${input.to}, owner = NULL, lease_until = NULL, updated_at = ${input.now}${stager}`
        const from = input.from.filter((status) => status !== "unreadable")
        const usual = from.length === 0 ? Effect.succeed(false) : Effect.map(
          write(
            "transition",
            sql<{ readonly id: string }>`UPDATE effect_resolve_pending ${set}
              WHERE id = ${input.id} AND status IN ${sql.in(from)} ${guard} ${owns}
              RETURNING id`.withoutTransform
          ),
          (rows) => rows.length > 0
        )
        const refusedIfFenced = (done: boolean) => done ? Effect.succeed(true) : unlessFenced("transition", false)
        if (from.length === input.from.length) return Effect.flatMap(usual, refusedIfFenced)
        // From `unreadable`: the row is read first, and changed only if it is still the very row read as such (its
        // stored status and payload unchanged), and not claimed under a lease that still holds.
        const unreadable = Effect.flatMap(
          run(
            "transition",
            sql<RecordRow>`SELECT ${columns} FROM effect_resolve_pending
            WHERE id = ${input.id}`.withoutTransform
          ),
          ([row]) => {
            if (row === undefined || toRecord(row).status !== "unreadable") return Effect.succeed(false)
            if (input.owner !== undefined && readText(row.owner) !== Option.getOrNull(input.owner)) {
              return Effect.succeed(false)
            }
            return Effect.map(
              write(
                "transition",
                sql<{ readonly id: string }>`UPDATE effect_resolve_pending ${set}
                  WHERE id = ${input.id} AND status = ${new Verbatim(row.status)}
                    AND payload = ${new Verbatim(row.payload)}
                    AND (status <> 'resolving' OR lease_until <= ${input.now}) ${owns}
                  RETURNING id`.withoutTransform
              ),
              (rows) => rows.length > 0
            )
          }
        )
        return Effect.flatMap(
          Effect.flatMap(usual, (done) => done ? Effect.succeed(true) : unreadable),
          refusedIfFenced
        )
      })

    const listPage = (session: string, options: PendingStore.PageOptions) =>
      Effect.suspend(() => {
        const problem = checkPage(options)
        if (problem !== undefined) return Effect.fail(invalidInput("listPage", problem))
        const after = options.cursor === undefined ? undefined : recordCursor.decode(options.cursor)
        if (options.cursor !== undefined && after === undefined) {
          return Effect.fail(invalidInput("listPage", badCursor))
        }
        const from = after === undefined ?
          sql.literal("") :
          sql`AND (created_at < ${after.createdAt} OR (created_at = ${after.createdAt} AND seq < ${after.seq}))`
        const statement = sql<RecordRow & { readonly seq: unknown }>`SELECT seq, ${columns}
          FROM effect_resolve_pending WHERE session = ${session} ${from}
          ORDER BY created_at DESC, seq DESC LIMIT ${options.limit + 1}`
        return Effect.map(
          run("listPage", statement.withoutTransform),
          (rows) =>
            pageOf(rows, options.limit, toRecord, (last) =>
              recordCursor.encode(rawMillis(last.created_at), seqOf(last.seq)))
        )
      })

    const historyPage = (id: string, options: PendingStore.PageOptions) =>
      Effect.suspend(() => {
        const problem = checkPage(options)
        if (problem !== undefined) return Effect.fail(invalidInput("historyPage", problem))
        const after = options.cursor === undefined ? 0 : eventCursor.decode(options.cursor)
        if (after === undefined) return Effect.fail(invalidInput("historyPage", badCursor))
        const statement = sql<EventRow>`SELECT seq, action_id, at, from_status, to_status, owner, attempt
          FROM effect_resolve_events WHERE action_id = ${id} AND seq > ${after} ORDER BY seq
          LIMIT ${options.limit + 1}`
        return Effect.map(
          run("historyPage", statement.withoutTransform),
          (rows) => pageOf(rows, options.limit, toEvent, (last) => eventCursor.encode(seqOf(last.seq)))
        )
      })

    const prune = (input: PendingStore.PruneInput) =>
      Effect.suspend(() => {
        const problem = checkPrune(input)
        if (problem !== undefined) return Effect.fail(invalidInput("prune", problem))
        // The newest settled record past `keepLast`: it and every record settled before it go.
        const boundary = Option.match(input.keepLast, {
          onNone: () => Effect.succeed(Option.none<{ readonly updated_at: unknown; readonly seq: unknown }>()),
          onSome: (keep) =>
            Effect.map(
              run(
                "prune",
                sql<{ readonly updated_at: unknown; readonly seq: unknown }>`SELECT updated_at, seq
                  FROM effect_resolve_pending WHERE session = ${input.session} AND ${settled}
                  ORDER BY updated_at DESC, seq DESC LIMIT 1 OFFSET ${keep}`.withoutTransform
              ),
              (rows) => Option.fromNullable(rows[0])
            )
        })
        return Effect.flatMap(boundary, (past) => {
          const conditions = [
            ...Option.toArray(Option.map(past, (b) =>
              sql`(updated_at < ${b.updated_at as number} OR
                (updated_at = ${b.updated_at as number} AND seq <= ${b.seq as number}))`)),
            ...Option.toArray(Option.map(input.settledBefore, (before) => sql`updated_at < ${before}`))
          ]
          if (conditions.length === 0) return Effect.succeed(0)
          const statement = sql<{ readonly id: string }>`DELETE FROM effect_resolve_pending WHERE id IN (
            SELECT id FROM effect_resolve_pending
            WHERE session = ${input.session} AND ${settled} AND (${sql.or(conditions)})
            ORDER BY updated_at, seq LIMIT ${input.batch}
          ) ${owns} RETURNING id`
          return Effect.map(write("prune", statement.withoutTransform), (rows) => rows.length)
        })
      })

    const heartbeat = (input: PendingStore.HeartbeatInput) =>
      Effect.suspend(() => {
        const problem = checkHeartbeat(input)
        if (problem !== undefined) return Effect.fail(invalidInput("heartbeat", problem))
        // A renewal extends only a lease that still holds: one that lapsed is never taken again by its instance.
        const own = input.renew === true ?
          Effect.flatMap(
            write(
              "heartbeat",
              sql<{ readonly id: string }>`UPDATE effect_resolve_instances SET lease_until = ${input.leaseUntil}
                WHERE id = ${input.instance} AND lease_until > ${input.now} ${owns} RETURNING id`.withoutTransform
            ),
            (rows) =>
              rows.length > 0 ?
                Effect.void :
                Effect.zipRight(unlessFenced("heartbeat", undefined), Effect.fail(leaseLapsed(input.instance)))
          ) :
          Effect.flatMap(
            write(
              "heartbeat",
              sql<{ readonly id: string }>`INSERT INTO effect_resolve_instances (id, lease_until)
                SELECT ${input.instance}, ${input.leaseUntil} ${whereOwns}
                ON CONFLICT (id) DO UPDATE SET lease_until = excluded.lease_until RETURNING id`.withoutTransform
            ),
            (rows) => rows.length > 0 ? Effect.void : unlessFenced("heartbeat", undefined)
          )
        return Effect.all([
          own,
          write(
            "heartbeat",
            sql`DELETE FROM effect_resolve_instances WHERE lease_until <= ${input.now}`.withoutTransform
          ),
          write(
            "heartbeat",
            sql`UPDATE effect_resolve_pending SET lease_until = ${input.leaseUntil}
              WHERE status = 'resolving' AND owner = ${input.instance} ${owns}`.withoutTransform
          )
        ], { discard: true })
      })

    const saveSession = (session: string, state: string) =>
      Effect.suspend(() => {
        const problem = checkSession(session, state)
        if (problem !== undefined) return Effect.fail(invalidInput("saveSession", problem))
        return Effect.flatMap(Clock.currentTimeMillis, (now) => {
          const statement = sql<{ readonly session: string }>`INSERT INTO effect_resolve_sessions
            (session, state, updated_at) SELECT ${session}, ${state}, ${now} ${whereOwns}
            ON CONFLICT (session) DO UPDATE SET state = excluded.state, updated_at = excluded.updated_at
            RETURNING session`
          return Effect.flatMap(
            write("saveSession", statement.withoutTransform),
            (rows) => rows.length > 0 ? Effect.void : unlessFenced("saveSession", undefined)
          )
        })
      })

    /** The problem a fenced `saveConversation` reports from inside its transaction (rolled back). */
    const fenced = "fenced"
    const saveConversation = (session: string, save: PendingStore.ConversationSave) =>
      Effect.suspend(() => {
        const problem = checkSession(session, save.state) ?? checkConversationSave(save, Number.MAX_SAFE_INTEGER)
        if (problem !== undefined) return Effect.fail(invalidInput("saveConversation", problem))
        return Effect.flatMap(Clock.currentTimeMillis, (now) => {
          // One transaction: the messages from `from` on, then the state that counts them.
          const transaction = sql.withTransaction(Effect.gen(function*() {
            const counted = yield* sql<{ readonly n: unknown; readonly owns: unknown }>`SELECT
              (SELECT count(*) FROM effect_resolve_conversation WHERE session = ${session}) AS n,
              ${
              fence === undefined ? sql.literal("1") : sql`CASE WHEN EXISTS (SELECT 1 FROM effect_resolve_owners
                WHERE session = ${fence.session} AND epoch = ${fence.epoch}${forShare}) THEN 1 ELSE 0 END`
            } AS owns`
              .withoutTransform
            if (seqOf(counted[0]?.owns) !== 1) return Option.some(fenced)
            const stored = seqOf(counted[0]?.n)
            if (save.from > stored) return Option.some(checkConversationSave(save, stored) ?? "from is past the end")
            if (Option.isSome(save.previous)) {
              const current = yield* sql<{ readonly state: string }>`SELECT state FROM effect_resolve_sessions
                WHERE session = ${session}`.withoutTransform
              const problem = checkPrevious(save, current[0]?.state)
              if (problem !== undefined) return Option.some(problem)
            }
            yield* sql`DELETE FROM effect_resolve_conversation
              WHERE session = ${session} AND seq >= ${save.from}`.withoutTransform
            if (save.messages.length > 0) {
              yield* sql`INSERT INTO effect_resolve_conversation ${
                sql.insert(save.messages.map((message, i) => ({ session, seq: save.from + i, message })))
              }`.withoutTransform
            }
            yield* sql`INSERT INTO effect_resolve_sessions (session, state, updated_at)
              VALUES (${session}, ${save.state}, ${now})
              ON CONFLICT (session) DO UPDATE SET state = excluded.state, updated_at = excluded.updated_at`
              .withoutTransform
            return Option.none<string>()
          }))
          return Effect.flatMap(
            Effect.uninterruptible(Effect.mapError(retryBusy(transaction), writeFailed("saveConversation"))),
            Option.match({
              onNone: () => Effect.void,
              onSome: (problem) =>
                Effect.fail(
                  problem === fenced && fence !== undefined ?
                    fencedOut("saveConversation", fence) :
                    invalidInput("saveConversation", problem)
                )
            })
          )
        })
      })

    const loadConversation = (session: string) =>
      Effect.gen(function*() {
        const states = yield* read(
          "loadConversation",
          sql<{ readonly state: string }>`SELECT state FROM effect_resolve_sessions
            WHERE session = ${session}`.withoutTransform,
          (row) => readText(row.state) as string
        )
        const state = states[0]
        if (state === undefined) return Option.none<PendingStore.Conversation>()
        const messages = yield* read(
          "loadConversation",
          sql<{ readonly message: string }>`SELECT message FROM effect_resolve_conversation
            WHERE session = ${session} ORDER BY seq`.withoutTransform,
          (row) => readText(row.message) as string
        )
        return Option.some({ state, messages })
      })

    const inbox = makeInbox(sql, { run, read, write }, owns)
    return PendingStore.of({
      ...inbox,
      completeDecision: (input) =>
        Effect.flatMap(
          inbox.completeDecision(input),
          (done) => done ? Effect.succeed(true) : unlessFenced("completeDecision", false)
        ),
      acquire: (input) =>
        Effect.suspend(() => {
          const problem = checkAcquire(input)
          if (problem !== undefined) return Effect.fail(invalidInput("acquire", problem))
          const statement = sql<
            { readonly epoch: unknown }
          >`INSERT INTO effect_resolve_owners (session, epoch, owner, at)
            VALUES (${input.session}, 1, ${input.owner}, ${input.now})
            ON CONFLICT (session) DO UPDATE SET epoch = effect_resolve_owners.epoch + 1, owner = excluded.owner,
              at = excluded.at
            RETURNING epoch`
          return Effect.map(write("acquire", statement.withoutTransform), (rows) => seqOf(rows[0]?.epoch))
        }),
      owner: (session) =>
        Effect.map(
          run(
            "owner",
            sql<{ readonly epoch: unknown; readonly owner: unknown; readonly at: unknown }>`SELECT epoch, owner, at
              FROM effect_resolve_owners WHERE session = ${session}`.withoutTransform
          ),
          (rows) =>
            Option.map(Option.fromNullable(rows[0]), (row) => ({
              epoch: seqOf(row.epoch),
              owner: String(row.owner),
              at: seqOf(row.at)
            }))
        ),
      fenced: (other) => build(sql, other, changed),
      changed,
      insert,
      get: (id) => {
        const statement = sql<RecordRow>`SELECT ${columns} FROM effect_resolve_pending WHERE id = ${id}`
        return Effect.map(
          read("get", statement.withoutTransform, toRecord),
          (records) => Option.fromNullable(records[0])
        )
      },
      list: (session) => {
        const statement = sql<RecordRow>`SELECT ${columns} FROM effect_resolve_pending
          WHERE session = ${session} ORDER BY created_at DESC, seq DESC`
        return read("list", statement.withoutTransform, toRecord)
      },
      listPage,
      listOpen: (session) => {
        const statement = sql<RecordRow>`SELECT ${columns} FROM effect_resolve_pending
          WHERE session = ${session} AND ${sql.literal(openCondition)} ORDER BY created_at DESC, seq DESC`
        return read("listOpen", statement.withoutTransform, toRecord)
      },
      claim,
      settle,
      transition,
      stale: (now) => {
        const statement = sql<RecordRow>`SELECT ${columns} FROM effect_resolve_pending
          WHERE status = 'resolving' AND lease_until <= ${now} ORDER BY lease_until, seq`
        return read("stale", statement.withoutTransform, toRecord)
      },
      history: (id) => {
        const statement = sql<EventRow>`SELECT seq, action_id, at, from_status, to_status, owner, attempt
          FROM effect_resolve_events WHERE action_id = ${id} ORDER BY seq`
        return read("history", statement.withoutTransform, toEvent)
      },
      historyPage,
      prune,
      heartbeat,
      release: (instance) =>
        Effect.asVoid(
          write("release", sql`DELETE FROM effect_resolve_instances WHERE id = ${instance} ${owns}`.withoutTransform)
        ),
      leases: (instances) =>
        instances.length === 0 ?
          Effect.succeed(new Map<string, number>()) :
          Effect.map(
            run(
              "leases",
              sql<{ readonly id: unknown; readonly lease_until: unknown }>`SELECT id, lease_until
                FROM effect_resolve_instances WHERE id IN ${sql.in(instances)}`.withoutTransform
            ),
            (rows) => {
              const found = new Map<string, number>()
              for (const row of rows) {
                const until = seqOf(row.lease_until)
                const id = readText(row.id)
                if (typeof id === "string" && Number.isSafeInteger(until)) found.set(id, until)
              }
              return found
            }
          ),
      saveSession,
      loadSession: (session) => {
        const statement = sql<{ readonly state: string }>`SELECT state FROM effect_resolve_sessions
          WHERE session = ${session}`
        return Effect.map(
          read("loadSession", statement.withoutTransform, (row) => readText(row.state) as string),
          (states) => Option.fromNullable(states[0])
        )
      },
      saveConversation,
      loadConversation,
      // 0.3: the owner log of a session (cluster runners).
      logSession: (entry) =>
        Effect.suspend(() => {
          const problem = checkSessionLogEntry(entry)
          if (problem !== undefined) return Effect.fail(invalidInput("logSession", problem))
          const statement = fence === undefined ?
            sql`INSERT INTO effect_resolve_session_log (session, owner, event, at)
              VALUES (${entry.session}, ${entry.owner}, ${entry.event}, ${entry.at})` :
            sql`INSERT INTO effect_resolve_session_log (session, owner, event, at)
              SELECT ${entry.session}, ${entry.owner}, ${entry.event}, ${entry.at} ${whereOwns}`
          return Effect.flatMap(
            Effect.uninterruptible(Effect.mapError(retryBusy(statement.raw), writeFailed("logSession"))),
            (result) =>
              fence === undefined || affected(result) > 0 ? Effect.void : unlessFenced("logSession", undefined)
          )
        }),
      sessionLog: (session, options) => {
        const last = options?.last
        if (last !== undefined && !(Number.isSafeInteger(last) && last >= 1)) {
          return Effect.fail(invalidInput("sessionLog", "last must be a whole number, 1 or more"))
        }
        // The last entries: read newest first through the index, then put back in order.
        const statement = last === undefined ?
          sql<LogRow>`SELECT session, owner, event, at FROM effect_resolve_session_log
            WHERE session = ${session} ORDER BY seq` :
          sql<LogRow>`SELECT session, owner, event, at FROM effect_resolve_session_log
            WHERE session = ${session} ORDER BY seq DESC LIMIT ${last}`
        return Effect.map(
          run("sessionLog", statement.withoutTransform),
          (rows) => {
            const entries = rows.map((row): PendingStore.SessionLogEntry => ({
              session: String(readText(row.session)),
              owner: String(readText(row.owner)),
              event: readText(row.event) as PendingStore.SessionLogEntry["event"],
              at: seqOf(row.at)
            }))
            return last === undefined ? entries : entries.reverse()
          }
        )
      }
    })
  }
}

/** The number of rows a statement's raw result says it changed (libsql: `rowsAffected`; pg: `rowCount`). */
const affected = (result: unknown): number => {
  const r = result as { readonly rowsAffected?: unknown; readonly rowCount?: unknown } | null
  return Number(r?.rowsAffected ?? r?.rowCount ?? 0)
}

/**
 * The store on the `SqlClient` in context, after `migrate`: `PendingStore` and each of its parts (`ActionRecords`,
 * `InboxQueries`, ...), all on the one client.
 *
 * @since 0.2.0
 * @category layers
 */
export const layer: Layer.Layer<PendingStore | PendingStore.Parts, PendingStoreError, SqlClient.SqlClient> =
  PendingStore.layerFrom(Effect.zipRight(migrate, make))
