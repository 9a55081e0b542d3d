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
import * as Migrator from "@effect/sql/Migrator"
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import type { Decision } from "../domain/Decision.js"
import type { PendingEvent, PendingRecord, PendingStatus } from "../domain/PendingRecord.js"
import { isTerminal, openStatuses, storedStatuses, terminalStatuses } from "../domain/PendingRecord.js"
import { capText, innerMessageOf, messageOf } from "../internal/render.js"
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
import {
  amendmentJson,
  checkActionQuery,
  checkComplete,
  checkCountQuery,
  checkDecision,
  checkFeed,
  checkIds,
  checkRequested,
  checkSnooze,
  maxNotesPrune
} from "../services/internal/pendingStore.js"
import {
  checkConversationSave,
  checkPrevious,
  checkSessionLogEntry,
  duplicateDecision,
  duplicateId,
  invalidInput,
  isDecidable,
  PendingStore,
  PendingStoreError,
  tally
} from "../services/PendingStore.js"

/**
 * The table `migrate` records applied migrations in.
 *
 * @since 0.2.0
 * @category constants
 */
export const migrationsTable = "effect_resolve_migrations"

/** `status IN ('a', 'b', ...)`, for the constant lists of statuses. */
const statusIn = (list: ReadonlyArray<PendingStatus>) => `status IN (${list.map((status) => `'${status}'`).join(", ")})`

const statusCheck = statusIn(storedStatuses)

/** The records not yet settled: what `listOpen` reads, through a partial index, so its cost follows their number. */
const openCondition = statusIn(openStatuses)

/** The settled records: what `prune` removes, through a partial index on when they settled. */
const settledCondition = statusIn(terminalStatuses)

const sqliteSchema: ReadonlyArray<string> = [
  `CREATE TABLE effect_resolve_pending (
  seq INTEGER PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  session TEXT NOT NULL,
  kind TEXT NOT NULL,
  label TEXT NOT NULL,
  source_tool_name TEXT NOT NULL,
  preview TEXT NOT NULL,
  payload TEXT NOT NULL,
  status TEXT NOT NULL CHECK (${statusCheck}),
  attempts INTEGER NOT NULL,
  owner TEXT,
  lease_until INTEGER,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  expires_at INTEGER,
  outcome TEXT
)`,
  "CREATE INDEX effect_resolve_pending_by_session ON effect_resolve_pending (session, created_at, seq)",
  `CREATE INDEX effect_resolve_pending_open ON effect_resolve_pending (session, created_at, seq) WHERE ${openCondition}`,
  "CREATE INDEX effect_resolve_pending_by_lease ON effect_resolve_pending (lease_until) WHERE status = 'resolving'",
  `CREATE TABLE effect_resolve_events (
  seq INTEGER PRIMARY KEY,
  action_id TEXT NOT NULL,
  at INTEGER NOT NULL,
  from_status TEXT,
  to_status TEXT NOT NULL,
  owner TEXT,
  attempt INTEGER NOT NULL
)`,
  "CREATE INDEX effect_resolve_events_by_action ON effect_resolve_events (action_id, seq)",
  `CREATE TABLE effect_resolve_sessions (
  session TEXT PRIMARY KEY,
  state TEXT NOT NULL,
  updated_at INTEGER NOT NULL
)`,
  `CREATE TRIGGER effect_resolve_pending_inserted AFTER INSERT ON effect_resolve_pending
BEGIN
  INSERT INTO effect_resolve_events (action_id, at, from_status, to_status, owner, attempt)
  VALUES (NEW.id, NEW.updated_at, NULL, NEW.status, NEW.owner, NEW.attempts);
END`,
  `CREATE TRIGGER effect_resolve_pending_transition AFTER UPDATE OF status ON effect_resolve_pending
BEGIN
  INSERT INTO effect_resolve_events (action_id, at, from_status, to_status, owner, attempt)
  VALUES (NEW.id, NEW.updated_at, OLD.status, NEW.status, COALESCE(NEW.owner, OLD.owner), NEW.attempts);
END`
]

const pgSchema: ReadonlyArray<string> = [
  `CREATE TABLE effect_resolve_pending (
  seq bigint GENERATED ALWAYS AS IDENTITY,
  id text PRIMARY KEY,
  session text NOT NULL,
  kind text NOT NULL,
  label text NOT NULL,
  source_tool_name text NOT NULL,
  preview text NOT NULL,
  payload text NOT NULL,
  status text NOT NULL CHECK (${statusCheck}),
  attempts integer NOT NULL,
  owner text,
  lease_until bigint,
  created_at bigint NOT NULL,
  updated_at bigint NOT NULL,
  expires_at bigint,
  outcome text
)`,
  "CREATE INDEX effect_resolve_pending_by_session ON effect_resolve_pending (session, created_at, seq)",
  `CREATE INDEX effect_resolve_pending_open ON effect_resolve_pending (session, created_at, seq) WHERE ${openCondition}`,
  "CREATE INDEX effect_resolve_pending_by_lease ON effect_resolve_pending (lease_until) WHERE status = 'resolving'",
  `CREATE TABLE effect_resolve_events (
  seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  action_id text NOT NULL,
  at bigint NOT NULL,
  from_status text,
  to_status text NOT NULL,
  owner text,
  attempt integer NOT NULL
)`,
  "CREATE INDEX effect_resolve_events_by_action ON effect_resolve_events (action_id, seq)",
  `CREATE TABLE effect_resolve_sessions (
  session text PRIMARY KEY,
  state text NOT NULL,
  updated_at bigint NOT NULL
)`,
  // The journal is written by the database in the statement that changes the record. The function keeps the
  // search_path it was created with, so it writes to the schema of the table it journals.
  `CREATE FUNCTION effect_resolve_journal() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $body$
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO effect_resolve_events (action_id, at, from_status, to_status, owner, attempt)
    VALUES (NEW.id, NEW.updated_at, NULL, NEW.status, NEW.owner, NEW.attempts);
  ELSE
    INSERT INTO effect_resolve_events (action_id, at, from_status, to_status, owner, attempt)
    VALUES (NEW.id, NEW.updated_at, OLD.status, NEW.status, COALESCE(NEW.owner, OLD.owner), NEW.attempts);
  END IF;
  RETURN NULL;
END
$body$`,
  `CREATE TRIGGER effect_resolve_pending_journal AFTER INSERT OR UPDATE OF status ON effect_resolve_pending
FOR EACH ROW EXECUTE FUNCTION effect_resolve_journal()`
]

// 0.3: who staged each record, the leases of runtime instances, and pruning of settled records.
const sharedSessionsCommon: ReadonlyArray<string> = [
  "ALTER TABLE effect_resolve_pending ADD COLUMN stager TEXT",
  `CREATE TABLE effect_resolve_instances (
  id TEXT PRIMARY KEY,
  lease_until BIGINT NOT NULL
)`,
  `CREATE INDEX effect_resolve_pending_settled ON effect_resolve_pending (session, updated_at, seq)
WHERE ${settledCondition}`
]

const sqliteSharedSessions: ReadonlyArray<string> = [
  ...sharedSessionsCommon,
  `CREATE TRIGGER effect_resolve_pending_deleted AFTER DELETE ON effect_resolve_pending
BEGIN
  DELETE FROM effect_resolve_events WHERE action_id = OLD.id;
END`
]

const pgSharedSessions: ReadonlyArray<string> = [
  ...sharedSessionsCommon,
  `CREATE FUNCTION effect_resolve_forget() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $body$
BEGIN
  DELETE FROM effect_resolve_events WHERE action_id = OLD.id;
  RETURN NULL;
END
$body$`,
  `CREATE TRIGGER effect_resolve_pending_deleted AFTER DELETE ON effect_resolve_pending
FOR EACH ROW EXECUTE FUNCTION effect_resolve_forget()`
]

// 0.3, the approval inbox: snoozes, decisions, a feed of what the inbox changed, and indexes for listing across
// sessions a page at a time.
/** The records a reviewer ever snoozed (the snooze may be over). */
const snoozedCondition = "snoozed_until IS NOT NULL"

const inboxCommon: ReadonlyArray<string> = [
  "ALTER TABLE effect_resolve_pending ADD COLUMN snoozed_until BIGINT",
  // The default listing: what is not yet settled, every session, most recent first.
  `CREATE INDEX effect_resolve_pending_open_all ON effect_resolve_pending (created_at, seq) WHERE ${openCondition}`,
  // A listing by status (one index range per status asked for).
  "CREATE INDEX effect_resolve_pending_by_status ON effect_resolve_pending (status, created_at, seq)",
  // The snoozed listing: open records that were ever snoozed (few), most recent first.
  `CREATE INDEX effect_resolve_pending_snoozed ON effect_resolve_pending (created_at, seq)
WHERE ${snoozedCondition} AND ${openCondition}`,
  // At most one requested decision per action; also how a record finds its requested decision.
  `CREATE UNIQUE INDEX effect_resolve_decisions_requested ON effect_resolve_decisions (action_id)
WHERE state = 'requested'`,
  "CREATE INDEX effect_resolve_decisions_by_action ON effect_resolve_decisions (action_id, seq)",
  `CREATE INDEX effect_resolve_decisions_waiting ON effect_resolve_decisions (session, seq)
WHERE state = 'requested'`
]

const decisionsTable = (seq: string, millis: string) =>
  `CREATE TABLE effect_resolve_decisions (
  seq ${seq},
  id TEXT NOT NULL UNIQUE,
  action_id TEXT NOT NULL,
  session TEXT NOT NULL,
  reviewer TEXT NOT NULL,
  action TEXT NOT NULL CHECK (action IN ('apply', 'discard')),
  reason TEXT NOT NULL,
  amendment TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('requested', 'done', 'failed')),
  outcome TEXT,
  requested_at ${millis} NOT NULL,
  settled_at ${millis},
  settled_by TEXT
)`

const sqliteInbox: ReadonlyArray<string> = [
  decisionsTable("INTEGER PRIMARY KEY", "INTEGER"),
  // AUTOINCREMENT: a note's number is never reused, even after the last notes were pruned.
  "CREATE TABLE effect_resolve_notes (seq INTEGER PRIMARY KEY AUTOINCREMENT, action_id TEXT NOT NULL)",
  ...inboxCommon,
  `CREATE TRIGGER effect_resolve_decisions_noted AFTER INSERT ON effect_resolve_decisions
BEGIN
  INSERT INTO effect_resolve_notes (action_id) VALUES (NEW.action_id);
END`,
  `CREATE TRIGGER effect_resolve_decisions_completed AFTER UPDATE OF state ON effect_resolve_decisions
BEGIN
  INSERT INTO effect_resolve_notes (action_id) VALUES (NEW.action_id);
END`,
  `CREATE TRIGGER effect_resolve_pending_snoozed AFTER UPDATE OF snoozed_until ON effect_resolve_pending
BEGIN
  INSERT INTO effect_resolve_notes (action_id) VALUES (NEW.id);
END`,
  `CREATE TRIGGER effect_resolve_pending_decisions_deleted AFTER DELETE ON effect_resolve_pending
BEGIN
  DELETE FROM effect_resolve_decisions WHERE action_id = OLD.id;
END`
]

const pgInbox: ReadonlyArray<string> = [
  decisionsTable("bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY", "bigint"),
  "CREATE TABLE effect_resolve_notes (seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, action_id text NOT NULL)",
  ...inboxCommon,
  `CREATE FUNCTION effect_resolve_note() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $body$
BEGIN
  IF TG_TABLE_NAME = 'effect_resolve_decisions' THEN
    INSERT INTO effect_resolve_notes (action_id) VALUES (NEW.action_id);
  ELSE
    INSERT INTO effect_resolve_notes (action_id) VALUES (NEW.id);
  END IF;
  RETURN NULL;
END
$body$`,
  `CREATE TRIGGER effect_resolve_decisions_noted AFTER INSERT OR UPDATE OF state ON effect_resolve_decisions
FOR EACH ROW EXECUTE FUNCTION effect_resolve_note()`,
  `CREATE TRIGGER effect_resolve_pending_snoozed AFTER UPDATE OF snoozed_until ON effect_resolve_pending
FOR EACH ROW EXECUTE FUNCTION effect_resolve_note()`,
  `CREATE FUNCTION effect_resolve_forget_decisions() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT
AS $body$
BEGIN
  DELETE FROM effect_resolve_decisions WHERE action_id = OLD.id;
  RETURN NULL;
END
$body$`,
  `CREATE TRIGGER effect_resolve_pending_decisions_deleted AFTER DELETE ON effect_resolve_pending
FOR EACH ROW EXECUTE FUNCTION effect_resolve_forget_decisions()`
]

// 0.3, for cluster runners: the owner log of a session (who opened, saved and closed it, and when).
const clusterCommon = (types: { readonly seq: string; readonly millis: string }): ReadonlyArray<string> => [
  `CREATE TABLE effect_resolve_session_log (
  seq ${types.seq},
  session TEXT NOT NULL,
  owner TEXT NOT NULL,
  event TEXT NOT NULL,
  at ${types.millis} NOT NULL
)`,
  "CREATE INDEX effect_resolve_session_log_by_session ON effect_resolve_session_log (session, seq)"
]

/** 0.3: a session's conversation, one row per message, so that a turn writes only the messages it added. */
const conversationSchema = (types: { readonly int: string }): ReadonlyArray<string> => [
  `CREATE TABLE effect_resolve_conversation (
  session TEXT NOT NULL,
  seq ${types.int} NOT NULL,
  message TEXT NOT NULL,
  PRIMARY KEY (session, seq)
)`
]

const runStatements = (statements: { readonly pg: ReadonlyArray<string>; readonly sqlite: ReadonlyArray<string> }) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) => {
    const schema = sql.onDialectOrElse({
      pg: () => statements.pg,
      sqlite: () => statements.sqlite,
      orElse: () => undefined
    })
    // Another dialect must not be recorded as migrated with no table made.
    return schema === undefined ?
      Effect.fail(new Error("the SQL pending store supports SQLite and Postgres only")) :
      Effect.forEach(schema, (statement) => sql.unsafe(statement).raw, { discard: true })
  })

/**
 * The migrations of the store, for `@effect/sql`'s `Migrator` (what `migrate` runs).
 *
 * @since 0.2.0
 * @category migrations
 */
export const migrations: Migrator.Loader = Migrator.fromRecord({
  "1_pending_store": runStatements({ pg: pgSchema, sqlite: sqliteSchema }),
  "2_shared_sessions": runStatements({ pg: pgSharedSessions, sqlite: sqliteSharedSessions }),
  "3_inbox": runStatements({ pg: pgInbox, sqlite: sqliteInbox }),
  "4_cluster": runStatements({
    pg: clusterCommon({ seq: "bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY", millis: "bigint" }),
    sqlite: clusterCommon({ seq: "INTEGER PRIMARY KEY", millis: "INTEGER" })
  }),
  "5_conversation": runStatements({
    pg: conversationSchema({ int: "integer" }),
    sqlite: conversationSchema({ int: "INTEGER" })
  })
})

const runMigrator = Migrator.make({})

/**
 * Creates or upgrades the store's tables (SQLite and Postgres; other dialects fail). Safe to run from several
 * processes at once: Postgres serialises migrators with a table lock, SQLite with its write lock.
 *
 * @since 0.2.0
 * @category migrations
 */
export const migrate: Effect.Effect<void, PendingStoreError, SqlClient.SqlClient> = Effect.flatMap(
  SqlClient.SqlClient,
  (sql) =>
    sql.onDialectOrElse({
        pg: () => true,
        sqlite: () => true,
        orElse: () => false
      }) ?
      runMigrator({ loader: migrations, table: migrationsTable }).pipe(
        // The Migrator turns a failed migration into a defect (after rolling it back): a typed failure here.
        Effect.catchSomeDefect((defect) =>
          defect instanceof Migrator.MigrationError ? Option.some(Effect.fail(defect)) : Option.none()
        ),
        // Two processes creating the migrations table at the same moment: one fails; its retry finds the table.
        Effect.retry({ times: 3, schedule: Schedule.spaced("50 millis") }),
        Effect.mapError((cause) =>
          new PendingStoreError({
            operation: "migrate",
            detail: `the store's tables could not be created or upgraded (${innerMessageOf(cause)}); nothing was ` +
              "changed. Check that the database is reachable and writable.",
            cause
          })
        ),
        Effect.asVoid
      ) :
      Effect.fail(
        new PendingStoreError({
          operation: "migrate",
          detail: "the SQL pending store supports SQLite and Postgres only; nothing was changed."
        })
      )
)

const recordColumns = "id, session, kind, label, source_tool_name, stager, preview, payload, status, attempts, " +
  "owner, lease_until, created_at, updated_at, expires_at, outcome"

/** A row as the driver gives it: its values are whatever the table holds, so nothing is trusted. */
interface RecordRow {
  readonly id: unknown
  readonly session: unknown
  readonly kind: unknown
  readonly label: unknown
  readonly source_tool_name: unknown
  readonly stager: unknown
  readonly preview: unknown
  readonly payload: unknown
  readonly status: unknown
  readonly attempts: unknown
  readonly owner: unknown
  readonly lease_until: unknown
  readonly created_at: unknown
  readonly updated_at: unknown
  readonly expires_at: unknown
  readonly outcome: unknown
}

/** A row of the owner log. */
interface LogRow {
  readonly session: unknown
  readonly owner: unknown
  readonly event: unknown
  readonly at: unknown
}

interface EventRow {
  readonly seq: unknown
  readonly action_id: unknown
  readonly at: unknown
  readonly from_status: unknown
  readonly to_status: unknown
  readonly owner: unknown
  readonly attempt: unknown
}

const quoted = (u: unknown): string => {
  try {
    return capText(typeof u === "string" ? JSON.stringify(u) : String(u), 80)
  } catch {
    return "a value that cannot be shown"
  }
}

/**
 * Reads the columns of one row, collecting what cannot be read instead of throwing: each reader returns a usable
 * value (a fallback when the column is bad) and notes the problem.
 */
const rowReader = () => {
  const problems: Array<string> = []
  const note = <A>(problem: string, fallback: A): A => {
    problems.push(problem)
    return fallback
  }
  const text = (name: string, u: unknown): string => typeof u === "string" ? u : note(`${name} is not text`, String(u))
  const nullableText = (name: string, u: unknown): string | null => u === null ? null : text(name, u)
  const millis = (name: string, u: unknown): number => {
    const n = typeof u === "number" || typeof u === "bigint" ?
      Number(u) :
      typeof u === "string" && /^\d{1,16}$/.test(u) ?
      Number(u) :
      Number.NaN
    return Number.isSafeInteger(n) && n >= 0 ? n : note(`${name} ${quoted(u)} is not epoch milliseconds`, 0)
  }
  const nullableMillis = (name: string, u: unknown): number | null => u === null ? null : millis(name, u)
  const status = (name: string, u: unknown): PendingStatus | undefined =>
    storedStatuses.includes(u as PendingStatus) ?
      u as PendingStatus :
      note(`${name} ${quoted(u)} is not a status`, undefined)
  const json = (name: string, u: unknown): unknown => {
    if (typeof u !== "string") return note(`${name} is not JSON text`, null)
    try {
      return JSON.parse(u)
    } catch (error) {
      return note(`${name} is not JSON (${messageOf(error)})`, null)
    }
  }
  return { problems, text, nullableText, millis, nullableMillis, status, json }
}

/**
 * One row as a record. A row that cannot be wholly read is an `unreadable` record that says why, unless its status
 * says it is settled (nothing more happens to it, so it keeps that status).
 */
const toRecord = (row: RecordRow): PendingRecord => {
  const read = rowReader()
  const record = {
    id: read.text("id", row.id),
    session: read.text("session", row.session),
    kind: read.text("kind", row.kind),
    label: read.text("label", row.label),
    sourceToolName: read.text("source_tool_name", row.source_tool_name),
    stager: read.nullableText("stager", row.stager),
    preview: read.text("preview", row.preview),
    payload: read.json("payload", row.payload),
    attempts: read.millis("attempts", row.attempts),
    owner: read.nullableText("owner", row.owner),
    leaseUntil: read.nullableMillis("lease_until", row.lease_until),
    createdAt: read.millis("created_at", row.created_at),
    updatedAt: read.millis("updated_at", row.updated_at),
    expiresAt: read.nullableMillis("expires_at", row.expires_at),
    outcome: read.nullableText("outcome", row.outcome)
  }
  const status = read.status("status", row.status)
  if (read.problems.length === 0 && status !== undefined) return { ...record, status }
  if (status !== undefined && isTerminal(status)) return { ...record, status }
  return {
    ...record,
    status: "unreadable",
    owner: null,
    leaseUntil: null,
    outcome: capText(
      `The stored row cannot be read: ${read.problems.join("; ")}. It was changed outside the store; it is never ` +
        "applied, and can be discarded.",
      2_000
    )
  }
}

/** One journal row as an event; a row that cannot be read is an event to `unreadable`. */
const toEvent = (row: EventRow): PendingEvent => {
  const read = rowReader()
  const to = read.status("to_status", row.to_status)
  const from = row.from_status === null ? null : read.status("from_status", row.from_status)
  const event = {
    actionId: read.text("action_id", row.action_id),
    at: read.millis("at", row.at),
    owner: read.nullableText("owner", row.owner),
    attempt: read.millis("attempt", row.attempt)
  }
  return read.problems.length === 0 ?
    { ...event, from: from ?? null, to: to! } :
    { ...event, from: from ?? null, to: "unreadable" }
}

const readFailed = (operation: string) => (cause: SqlError) =>
  new PendingStoreError({
    operation,
    detail: `the database failed (${
      innerMessageOf(cause)
    }); nothing was changed. Retry, or check the store's database.`,
    cause
  })

const writeFailed = (operation: string) => (cause: SqlError) =>
  new PendingStoreError({
    operation,
    detail: `the database failed (${innerMessageOf(cause)}). The change is one statement, so it happened wholly or ` +
      "not at all: read the record with get before retrying.",
    cause
  })

/** SQLite reports a locked database as SQLITE_BUSY (after its busy timeout); the statement did not run. */
const isBusy = (error: SqlError) => {
  const code = (error.cause as { code?: unknown } | null | undefined)?.code
  return typeof code === "string" && code.startsWith("SQLITE_BUSY")
}

/** Postgres returns `bigint` columns as text: a sequence number as a number. */
const seqOf = (u: unknown): number => typeof u === "number" ? u : Number(u)

/** A raw `created_at` for a cursor: a number when it is one, else the text a corrupted SQLite row holds. */
const rawMillis = (u: unknown): number | string =>
  typeof u === "number" || typeof u === "bigint" ?
    Number(u) :
    typeof u === "string" && /^\d{1,16}$/.test(u) ?
    Number(u) :
    String(u)

/**
 * A page from the rows of a query that asked for one more than `limit`: the first `limit` as items, and when the
 * extra row came back, the cursor after the last item.
 */
const pageOf = <Row, A>(
  rows: ReadonlyArray<Row>,
  limit: number,
  item: (row: Row) => A,
  cursorAfter: (last: Row) => string
): PendingStore.Page<A> => {
  const page = rows.slice(0, limit)
  const last = page[page.length - 1]
  return {
    items: page.map(item),
    next: rows.length > limit && last !== undefined ? Option.some(cursorAfter(last)) : Option.none()
  }
}

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
  (sql) => {
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
        const statement = sql<{ readonly id: string }>`INSERT INTO effect_resolve_pending (${columns})
          VALUES (${record.id}, ${record.session}, ${record.kind}, ${record.label}, ${record.sourceToolName},
            ${record.stager}, ${record.preview}, ${payload}, ${record.status}, ${record.attempts}, NULL, NULL,
            ${record.createdAt}, ${record.updatedAt}, ${record.expiresAt}, ${record.outcome})
          ON CONFLICT (id) DO NOTHING RETURNING id`
        return Effect.flatMap(
          write("insert", statement.withoutTransform),
          (rows) => rows.length === 1 ? Effect.void : Effect.fail(duplicateId(record.id))
        )
      })

    const claim = (input: PendingStore.ClaimInput) =>
      Effect.suspend(() => {
        const problem = checkClaim(input)
        if (problem !== undefined) return Effect.fail(invalidInput("claim", problem))
        const statement = sql<RecordRow>`UPDATE effect_resolve_pending
          SET status = 'resolving', attempts = attempts + 1, owner = ${input.owner},
            lease_until = ${input.leaseUntil}, updated_at = ${input.now}
          WHERE id = ${input.id} AND status = 'pending' AND (expires_at IS NULL OR expires_at > ${input.now})
          RETURNING ${columns}`
        return Effect.map(
          write("claim", statement.withoutTransform),
          (rows) => rows.length === 0 ? Option.none<PendingRecord>() : Option.some(toRecord(rows[0]!))
        )
      })

    const settle = (input: PendingStore.SettleInput) =>
      Effect.suspend(() => {
        const problem = checkSettle(input)
        if (problem !== undefined) return Effect.fail(invalidInput("settle", problem))
        const statement = sql<{ readonly id: string }>`UPDATE effect_resolve_pending
          SET status = ${input.to}, owner = NULL, lease_until = NULL, updated_at = ${input.now},
            outcome = ${Option.getOrNull(input.outcome)}
          WHERE id = ${input.id} AND status = 'resolving' AND owner = ${input.owner}
          RETURNING id`
        return Effect.map(write("settle", statement.withoutTransform), (rows) => rows.length > 0)
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
              WHERE id = ${input.id} AND status IN ${sql.in(from)} ${guard}
              RETURNING id`.withoutTransform
          ),
          (rows) => rows.length > 0
        )
        if (from.length === input.from.length) return usual
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
            if (input.owner !== undefined && row.owner !== Option.getOrNull(input.owner)) return Effect.succeed(false)
            return Effect.map(
              write(
                "transition",
                sql<{ readonly id: string }>`UPDATE effect_resolve_pending ${set}
                  WHERE id = ${input.id} AND status = ${row.status as string} AND payload = ${row.payload as string}
                    AND (status <> 'resolving' OR lease_until <= ${input.now})
                  RETURNING id`.withoutTransform
              ),
              (rows) => rows.length > 0
            )
          }
        )
        return Effect.flatMap(usual, (done) => done ? Effect.succeed(true) : unreadable)
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
          ) RETURNING id`
          return Effect.map(write("prune", statement.withoutTransform), (rows) => rows.length)
        })
      })

    const heartbeat = (input: PendingStore.HeartbeatInput) =>
      Effect.suspend(() => {
        const problem = checkHeartbeat(input)
        if (problem !== undefined) return Effect.fail(invalidInput("heartbeat", problem))
        return Effect.all([
          write(
            "heartbeat",
            sql`DELETE FROM effect_resolve_instances WHERE lease_until <= ${input.now}`.withoutTransform
          ),
          write(
            "heartbeat",
            sql`INSERT INTO effect_resolve_instances (id, lease_until) VALUES (${input.instance}, ${input.leaseUntil})
              ON CONFLICT (id) DO UPDATE SET lease_until = excluded.lease_until`.withoutTransform
          ),
          write(
            "heartbeat",
            sql`UPDATE effect_resolve_pending SET lease_until = ${input.leaseUntil}
              WHERE status = 'resolving' AND owner = ${input.instance}`.withoutTransform
          )
        ], { discard: true })
      })

    const saveSession = (session: string, state: string) =>
      Effect.suspend(() => {
        const problem = checkSession(session, state)
        if (problem !== undefined) return Effect.fail(invalidInput("saveSession", problem))
        return Effect.flatMap(Clock.currentTimeMillis, (now) => {
          const statement = sql`INSERT INTO effect_resolve_sessions (session, state, updated_at)
            VALUES (${session}, ${state}, ${now})
            ON CONFLICT (session) DO UPDATE SET state = excluded.state, updated_at = excluded.updated_at`
          return Effect.asVoid(write("saveSession", statement.withoutTransform))
        })
      })

    const saveConversation = (session: string, save: PendingStore.ConversationSave) =>
      Effect.suspend(() => {
        const problem = checkSession(session, save.state) ?? checkConversationSave(save, Number.MAX_SAFE_INTEGER)
        if (problem !== undefined) return Effect.fail(invalidInput("saveConversation", problem))
        return Effect.flatMap(Clock.currentTimeMillis, (now) => {
          // One transaction: the messages from `from` on, then the state that counts them.
          const transaction = sql.withTransaction(Effect.gen(function*() {
            const counted = yield* sql<{ readonly n: unknown }>`SELECT count(*) AS n FROM effect_resolve_conversation
              WHERE session = ${session}`.withoutTransform
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
              onSome: (problem) => Effect.fail(invalidInput("saveConversation", problem))
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
          (row) => row.state
        )
        const state = states[0]
        if (state === undefined) return Option.none<PendingStore.Conversation>()
        const messages = yield* read(
          "loadConversation",
          sql<{ readonly message: string }>`SELECT message FROM effect_resolve_conversation
            WHERE session = ${session} ORDER BY seq`.withoutTransform,
          (row) => row.message
        )
        return Option.some({ state, messages })
      })

    return PendingStore.of({
      ...makeInbox(sql, { run, read, write }),
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
          write("release", sql`DELETE FROM effect_resolve_instances WHERE id = ${instance}`.withoutTransform)
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
                if (typeof row.id === "string" && Number.isSafeInteger(until)) found.set(row.id, until)
              }
              return found
            }
          ),
      saveSession,
      loadSession: (session) => {
        const statement = sql<{ readonly state: string }>`SELECT state FROM effect_resolve_sessions
          WHERE session = ${session}`
        return Effect.map(
          read("loadSession", statement.withoutTransform, (row) => row.state),
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
          const statement = sql`INSERT INTO effect_resolve_session_log (session, owner, event, at)
            VALUES (${entry.session}, ${entry.owner}, ${entry.event}, ${entry.at})`
          return Effect.asVoid(write("logSession", statement.withoutTransform))
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
              session: String(row.session),
              owner: String(row.owner),
              event: row.event as PendingStore.SessionLogEntry["event"],
              at: seqOf(row.at)
            }))
            return last === undefined ? entries : entries.reverse()
          }
        )
      }
    })
  }
)

/**
 * The store on the `SqlClient` in context, after `migrate`.
 *
 * @since 0.2.0
 * @category layers
 */
export const layer: Layer.Layer<PendingStore, PendingStoreError, SqlClient.SqlClient> = Layer.effect(
  PendingStore,
  Effect.zipRight(migrate, make)
)

// ---- the approval inbox (0.3) ----------------------------------------------------------------------------------

const decisionColumns = "id, action_id, session, reviewer, action, reason, amendment, state, outcome, requested_at, " +
  "settled_at, settled_by"

/** The decision columns of `d`, as `d_<column>`, for a join. */
const joinedDecisionColumns = decisionColumns.split(", ").map((column) => `d.${column} AS d_${column}`).join(", ")

/** The record columns of `p`, for a join. */
const joinedRecordColumns = recordColumns.split(", ").map((column) => `p.${column}`).join(", ")

/** The join of a record's requested decision (at most one: a unique partial index). */
const requestedJoin = "LEFT JOIN effect_resolve_decisions d ON d.action_id = p.id AND d.state = 'requested'"

interface DecisionRow {
  readonly id: unknown
  readonly action_id: unknown
  readonly session: unknown
  readonly reviewer: unknown
  readonly action: unknown
  readonly reason: unknown
  readonly amendment: unknown
  readonly state: unknown
  readonly outcome: unknown
  readonly requested_at: unknown
  readonly settled_at: unknown
  readonly settled_by: unknown
}

type Prefixed<Row, P extends string> = { readonly [K in keyof Row & string as `${P}${K}`]: Row[K] }

type ListedRow = RecordRow & Prefixed<DecisionRow, "d_"> & { readonly seq: unknown; readonly snoozed_until: unknown }

/** A decision row; a column a decision cannot hold is read as best it can be (the row was changed outside the store). */
const toDecision = (row: DecisionRow): Decision => {
  const read = rowReader()
  const action = row.action === "discard" ? "discard" : "apply"
  const state = row.state === "done" || row.state === "failed" ? row.state : "requested"
  let amendment: unknown = null
  try {
    amendment = typeof row.amendment === "string" ? JSON.parse(row.amendment) : null
  } catch {
    amendment = row.amendment
  }
  return {
    id: read.text("id", row.id),
    actionId: read.text("action_id", row.action_id),
    session: read.text("session", row.session),
    reviewer: read.text("reviewer", row.reviewer),
    action,
    reason: read.text("reason", row.reason),
    amendment,
    state,
    outcome: read.nullableText("outcome", row.outcome),
    requestedAt: read.millis("requested_at", row.requested_at),
    settledAt: read.nullableMillis("settled_at", row.settled_at),
    settledBy: read.nullableText("settled_by", row.settled_by)
  }
}

const joinedDecision = (row: Prefixed<DecisionRow, "d_">): Option.Option<Decision> =>
  row.d_id === null || row.d_id === undefined ? Option.none() : Option.some(toDecision({
    id: row.d_id,
    action_id: row.d_action_id,
    session: row.d_session,
    reviewer: row.d_reviewer,
    action: row.d_action,
    reason: row.d_reason,
    amendment: row.d_amendment,
    state: row.d_state,
    outcome: row.d_outcome,
    requested_at: row.d_requested_at,
    settled_at: row.d_settled_at,
    settled_by: row.d_settled_by
  }))

const toListed = (row: ListedRow): PendingStore.ListedAction => {
  const snoozed = seqOf(row.snoozed_until)
  return {
    record: toRecord(row),
    snoozedUntil: row.snoozed_until === null || !Number.isSafeInteger(snoozed) ? Option.none() : Option.some(snoozed),
    requested: joinedDecision(row)
  }
}

interface Helpers {
  readonly run: <Row extends object>(
    operation: string,
    statement: Effect.Effect<ReadonlyArray<Row>, SqlError>
  ) => Effect.Effect<ReadonlyArray<Row>, PendingStoreError>
  readonly read: <Row extends object, A>(
    operation: string,
    statement: Effect.Effect<ReadonlyArray<Row>, SqlError>,
    f: (row: Row) => A
  ) => Effect.Effect<ReadonlyArray<A>, PendingStoreError>
  readonly write: <Row extends object>(
    operation: string,
    statement: Effect.Effect<ReadonlyArray<Row>, SqlError>
  ) => Effect.Effect<ReadonlyArray<Row>, PendingStoreError>
}

const openSet: ReadonlySet<PendingStatus> = new Set(openStatuses)

/**
 * The inbox's methods of the SQL store. A listing is a union of index ranges, each read in order and cut at the
 * page's size: the open records ever snoozed for `snoozed: "only"`, else one per session asked for (the session's
 * open index when only open statuses are asked for), else one per status asked for, else the open records of every
 * session; so its cost follows the page, not the table.
 */
const makeInbox = (sql: SqlClient.SqlClient, { read, run, write }: Helpers): Pick<
  PendingStore.Service,
  | "listActions"
  | "getActions"
  | "countActions"
  | "snooze"
  | "recordDecision"
  | "getDecision"
  | "decisions"
  | "requestedDecisions"
  | "completeDecision"
  | "feedHead"
  | "feed"
  | "pruneNotes"
> => {
  const recordCols = sql.literal(recordColumns)
  const joinedCols = sql.literal(`p.seq, ${joinedRecordColumns}, p.snoozed_until, ${joinedDecisionColumns}`)
  const open = sql.literal(openCondition)
  const join = sql.literal(requestedJoin)
  const newestFirst = sql.literal("ORDER BY created_at DESC, seq DESC")

  const listActions = (query: PendingStore.ActionQuery) =>
    Effect.suspend(() => {
      const problem = checkActionQuery(query)
      if (problem !== undefined) return Effect.fail(invalidInput("listActions", problem))
      const after = query.cursor === undefined ? undefined : recordCursor.decode(query.cursor)
      if (query.cursor !== undefined && after === undefined) return Effect.fail(invalidInput("listActions", badCursor))
      const statuses = [...new Set(query.statuses ?? openStatuses)]
      const openOnly = statuses.every((status) => openSet.has(status))
      const snoozed = query.snoozed ?? "hide"
      const residual = [
        ...(openOnly ? [open] : []),
        ...(query.kinds === undefined ? [] : [sql`kind IN ${sql.in([...new Set(query.kinds)])}`]),
        ...(snoozed === "hide" ?
          [sql`(snoozed_until IS NULL OR snoozed_until <= ${query.now})`] :
          snoozed === "only" ?
          [sql`snoozed_until > ${query.now}`] :
          []),
        ...(after === undefined ? [] : [sql`(created_at, seq) < (${after.createdAt}, ${after.seq})`])
      ]
      const byStatus = query.statuses === undefined ? [] : [sql`status IN ${sql.in(statuses)}`]
      const bySession = query.sessions === undefined ? [] : [sql`session IN ${sql.in([...new Set(query.sessions)])}`]
      const branches = snoozed === "only" && openOnly ?
        [[sql.literal(snoozedCondition), ...byStatus, ...bySession]] :
        query.sessions !== undefined ?
        [...new Set(query.sessions)].map((session) => [sql`session = ${session}`, ...byStatus]) :
        query.statuses !== undefined ?
        statuses.map((status) => [sql`status = ${status}`]) :
        [[]]
      const limit = query.limit + 1
      const selects = branches.map((key) =>
        sql`SELECT seq, ${recordCols}, snoozed_until FROM effect_resolve_pending
          WHERE ${sql.and([...key, ...residual])} ${newestFirst} LIMIT ${limit}`
      )
      const page = selects.length === 1 ?
        selects[0]! :
        sql`${
          sql.join(" UNION ALL ", false)(
            selects.map((select, i) => sql`SELECT * FROM (${select}) ${sql.literal(`b${i}`)}`)
          )
        } ${newestFirst} LIMIT ${limit}`
      const statement = sql<ListedRow>`SELECT ${joinedCols} FROM (${page}) p ${join}
        ORDER BY p.created_at DESC, p.seq DESC`
      return Effect.map(run("listActions", statement.withoutTransform), (rows) => {
        const items = rows.slice(0, query.limit)
        const last = items[items.length - 1]
        return {
          items: items.map(toListed),
          next: rows.length > query.limit && last !== undefined ?
            Option.some(recordCursor.encode(rawMillis(last.created_at), seqOf(last.seq))) :
            Option.none()
        }
      })
    })

  const countActions = (query: PendingStore.CountQuery) =>
    Effect.suspend(() => {
      const problem = checkCountQuery(query)
      if (problem !== undefined) return Effect.fail(invalidInput("countActions", problem))
      const conditions = [
        open,
        ...(query.sessions === undefined ? [] : [sql`p.session IN ${sql.in([...new Set(query.sessions)])}`]),
        ...(query.kinds === undefined ? [] : [sql`p.kind IN ${sql.in([...new Set(query.kinds)])}`])
      ]
      const statement = sql<
        { readonly status: unknown; readonly snoozed: unknown; readonly requested: unknown; readonly n: unknown }
      >`SELECT p.status AS status,
          CASE WHEN p.snoozed_until > ${query.now} THEN 1 ELSE 0 END AS snoozed,
          CASE WHEN d.id IS NULL THEN 0 ELSE 1 END AS requested,
          count(*) AS n
        FROM effect_resolve_pending p ${join}
        WHERE ${sql.and(conditions)}
        GROUP BY 1, 2, 3`
      return Effect.map(run("countActions", statement.withoutTransform), (rows) => {
        const counts = { pending: 0, requested: 0, snoozed: 0, resolving: 0, orphaned: 0, conflict: 0 }
        for (const row of rows) {
          tally(counts, row.status as PendingStatus, seqOf(row.snoozed) === 1, seqOf(row.requested) === 1, seqOf(row.n))
        }
        return counts
      })
    })

  const decisionCols = sql.literal(decisionColumns)

  const readDecision = (id: string) =>
    Effect.map(
      read(
        "getDecision",
        sql<DecisionRow>`SELECT ${decisionCols} FROM effect_resolve_decisions WHERE id = ${id}`.withoutTransform,
        toDecision
      ),
      (found) => Option.fromNullable(found[0])
    )

  // Why nothing was recorded: the record and its requested decision, read after the insert found nothing to do.
  const whyNot = (input: PendingStore.DecisionInput) =>
    Effect.flatMap(
      run(
        "recordDecision",
        sql<ListedRow>`SELECT ${joinedCols} FROM effect_resolve_pending p ${join}
          WHERE p.id = ${input.actionId}`.withoutTransform
      ),
      ([row]): Effect.Effect<PendingStore.RecordDecisionResult, PendingStoreError> => {
        if (row === undefined) return Effect.succeed({ _tag: "UnknownAction" })
        const listed = toListed(row)
        if (Option.isSome(listed.requested)) {
          return Effect.succeed({ _tag: "AlreadyRequested", decision: listed.requested.value })
        }
        if (!isDecidable(listed.record, input.now)) {
          return Effect.succeed({ _tag: "NotDecidable", record: listed.record })
        }
        // Decidable, and no decision waits: the insert met a decision with the same id.
        return Effect.fail(duplicateDecision(input.id))
      }
    )

  const recordDecision = (input: PendingStore.DecisionInput) =>
    Effect.suspend(() => {
      const problem = checkDecision(input)
      if (problem !== undefined) return Effect.fail(invalidInput("recordDecision", problem))
      const amendment = amendmentJson(input.amendment)
      if ("problem" in amendment) return Effect.fail(invalidInput("recordDecision", amendment.problem))
      const statement = sql<DecisionRow>`INSERT INTO effect_resolve_decisions
          (id, action_id, session, reviewer, action, reason, amendment, state, requested_at)
        SELECT ${input.id}, id, session, ${input.reviewer}, ${input.action}, ${input.reason}, ${amendment.json},
          'requested', ${input.now}
        FROM effect_resolve_pending
        WHERE id = ${input.actionId} AND status IN ('pending', 'orphaned')
          AND (expires_at IS NULL OR expires_at > ${input.now})
        ON CONFLICT DO NOTHING
        RETURNING ${decisionCols}`
      return Effect.flatMap(
        write("recordDecision", statement.withoutTransform),
        ([row]): Effect.Effect<PendingStore.RecordDecisionResult, PendingStoreError> =>
          row === undefined ? whyNot(input) : Effect.succeed({ _tag: "Recorded", decision: toDecision(row) })
      )
    })

  const feedRow = sql.literal("seq, action_id")
  const feed = (input: PendingStore.FeedInput) =>
    Effect.suspend(() => {
      const problem = checkFeed(input)
      if (problem !== undefined) return Effect.fail(invalidInput("feed", problem))
      const parts = [
        sql`SELECT * FROM (SELECT 'journal' AS source, ${feedRow} FROM effect_resolve_events
          WHERE seq > ${input.after.journal} ORDER BY seq LIMIT ${input.limit}) j`,
        sql`SELECT * FROM (SELECT 'notes' AS source, ${feedRow} FROM effect_resolve_notes
          WHERE seq > ${input.after.notes} ORDER BY seq LIMIT ${input.limit}) n`,
        ...(input.missing === undefined || input.missing.journal.length === 0 ? [] : [
          sql`SELECT 'journal' AS source, ${feedRow} FROM effect_resolve_events
            WHERE seq IN ${sql.in([...input.missing.journal])}`
        ]),
        ...(input.missing === undefined || input.missing.notes.length === 0 ? [] : [
          sql`SELECT 'notes' AS source, ${feedRow} FROM effect_resolve_notes
            WHERE seq IN ${sql.in([...input.missing.notes])}`
        ])
      ]
      const statement = sql<{ readonly source: unknown; readonly seq: unknown; readonly action_id: unknown }>`${
        sql.join(" UNION ALL ", false)(parts)
      }`
      return Effect.map(run("feed", statement.withoutTransform), (rows) =>
        rows.flatMap((row): ReadonlyArray<PendingStore.FeedChange> => {
          const seq = seqOf(row.seq)
          return typeof row.action_id === "string" && Number.isSafeInteger(seq) ?
            [{ source: row.source === "notes" ? "notes" : "journal", seq, actionId: row.action_id }] :
            []
        }))
    })

  return {
    listActions,
    getActions: (ids) =>
      Effect.suspend(() => {
        const problem = checkIds(ids)
        if (problem !== undefined) return Effect.fail(invalidInput("getActions", problem))
        if (ids.length === 0) return Effect.succeed([])
        const statement = sql<ListedRow>`SELECT ${joinedCols} FROM effect_resolve_pending p ${join}
          WHERE p.id IN ${sql.in([...new Set(ids)])}`
        return read("getActions", statement.withoutTransform, toListed)
      }),
    countActions,
    snooze: (input) =>
      Effect.suspend(() => {
        const problem = checkSnooze(input)
        if (problem !== undefined) return Effect.fail(invalidInput("snooze", problem))
        const statement = sql<{ readonly id: string }>`UPDATE effect_resolve_pending
          SET snoozed_until = ${Option.getOrNull(input.until)}
          WHERE id = ${input.id} AND ${open} RETURNING id`
        return Effect.map(write("snooze", statement.withoutTransform), (rows) => rows.length > 0)
      }),
    recordDecision,
    getDecision: readDecision,
    decisions: (actionId) =>
      read(
        "decisions",
        sql<DecisionRow>`SELECT ${decisionCols} FROM effect_resolve_decisions
          WHERE action_id = ${actionId} ORDER BY seq`.withoutTransform,
        toDecision
      ),
    requestedDecisions: (query) =>
      Effect.suspend(() => {
        const problem = checkRequested(query)
        if (problem !== undefined) return Effect.fail(invalidInput("requestedDecisions", problem))
        const conditions = [
          sql.literal("d.state = 'requested'"),
          ...(query.sessions === undefined ? [] : [sql`d.session IN ${sql.in([...new Set(query.sessions)])}`]),
          ...(query.kinds === undefined ? [] : [sql`p.kind IN ${sql.in([...new Set(query.kinds)])}`])
        ]
        const statement = sql<ListedRow>`SELECT ${joinedCols} FROM effect_resolve_decisions d
          JOIN effect_resolve_pending p ON p.id = d.action_id
          WHERE ${sql.and(conditions)} ORDER BY d.requested_at, d.seq LIMIT ${query.limit}`
        return Effect.map(
          run("requestedDecisions", statement.withoutTransform),
          (rows) =>
            rows.flatMap((row) => {
              const listed = toListed(row)
              return Option.isSome(listed.requested)
                ? [{ decision: listed.requested.value, record: listed.record }]
                : []
            })
        )
      }),
    completeDecision: (input) =>
      Effect.suspend(() => {
        const problem = checkComplete(input)
        if (problem !== undefined) return Effect.fail(invalidInput("completeDecision", problem))
        const statement = sql<{ readonly id: string }>`UPDATE effect_resolve_decisions
          SET state = ${input.state}, outcome = ${input.outcome}, settled_at = ${input.now}, settled_by = ${input.by}
          WHERE id = ${input.id} AND state = 'requested' RETURNING id`
        return Effect.map(write("completeDecision", statement.withoutTransform), (rows) => rows.length > 0)
      }),
    feedHead: Effect.map(
      run(
        "feedHead",
        sql<{ readonly journal: unknown; readonly notes: unknown }>`SELECT
          (SELECT COALESCE(max(seq), 0) FROM effect_resolve_events) AS journal,
          (SELECT COALESCE(max(seq), 0) FROM effect_resolve_notes) AS notes`.withoutTransform
      ),
      ([row]) => ({ journal: seqOf(row?.journal ?? 0), notes: seqOf(row?.notes ?? 0) })
    ),
    feed,
    pruneNotes: (keepLast) =>
      Effect.suspend(() => {
        if (!(Number.isSafeInteger(keepLast) && keepLast >= 0)) {
          return Effect.fail(invalidInput("pruneNotes", "keepLast must be a whole number, 0 or more"))
        }
        const statement = sql<{ readonly seq: unknown }>`DELETE FROM effect_resolve_notes WHERE seq IN (
            SELECT seq FROM effect_resolve_notes
            WHERE seq <= (SELECT COALESCE(max(seq), 0) FROM effect_resolve_notes) - ${keepLast}
            ORDER BY seq LIMIT ${maxNotesPrune}
          ) RETURNING seq`
        return Effect.map(write("pruneNotes", statement.withoutTransform), (rows) => rows.length)
      })
  }
}
