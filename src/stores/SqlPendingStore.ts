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
 * Columns are read without the client's name transforms, so a client configured with `transformResultNames` works.
 * Epoch milliseconds are `INTEGER` (SQLite) / `bigint` (Postgres, which returns them as strings; they are decoded
 * back to numbers exactly).
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
import type { PendingEvent, PendingRecord } from "../domain/PendingRecord.js"
import { isPendingStatus } from "../domain/PendingRecord.js"
import {
  checkClaim,
  checkRecord,
  checkSession,
  checkSettle,
  checkTransition,
  payloadJson
} from "../services/internal/pendingStore.js"
import { duplicateId, invalidInput, PendingStore, PendingStoreError } from "../services/PendingStore.js"

/**
 * The table `migrate` records applied migrations in.
 *
 * @since 0.2.0
 * @category constants
 */
export const migrationsTable = "effect_resolve_migrations"

const statusCheck = "status IN ('pending', 'resolving', 'applied', 'discarded', 'cleared', 'expired', " +
  "'orphaned', 'conflict')"

/** The records not yet settled: what `listOpen` reads, through a partial index, so its cost follows their number. */
const openStatuses = "status IN ('pending', 'resolving', 'orphaned', 'conflict')"

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
  `CREATE INDEX effect_resolve_pending_open ON effect_resolve_pending (session, created_at, seq) WHERE ${openStatuses}`,
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
  `CREATE INDEX effect_resolve_pending_open ON effect_resolve_pending (session, created_at, seq) WHERE ${openStatuses}`,
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

const createTables = Effect.flatMap(SqlClient.SqlClient, (sql) => {
  const schema = sql.onDialectOrElse({
    pg: () => pgSchema,
    sqlite: () => sqliteSchema,
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
export const migrations: Migrator.Loader = Migrator.fromRecord({ "1_pending_store": createTables })

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
            detail: `the store's tables could not be created or upgraded (${describe(cause)}); nothing was ` +
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

const recordColumns = "id, session, kind, label, source_tool_name, preview, payload, status, attempts, owner, " +
  "lease_until, created_at, updated_at, expires_at, outcome"

interface RecordRow {
  readonly id: string
  readonly session: string
  readonly kind: string
  readonly label: string
  readonly source_tool_name: string
  readonly preview: string
  readonly payload: string
  readonly status: string
  readonly attempts: number | string
  readonly owner: string | null
  readonly lease_until: number | string | null
  readonly created_at: number | string
  readonly updated_at: number | string
  readonly expires_at: number | string | null
  readonly outcome: string | null
}

interface EventRow {
  readonly action_id: string
  readonly at: number | string
  readonly from_status: string | null
  readonly to_status: string
  readonly owner: string | null
  readonly attempt: number | string
}

const millis = (u: number | string): number => {
  const n = typeof u === "number" ? u : Number(u)
  if (!Number.isSafeInteger(n)) throw new Error(`${JSON.stringify(u)} is not an integer number of milliseconds`)
  return n
}

const nullableMillis = (u: number | string | null): number | null => u === null ? null : millis(u)

const toRecord = (row: RecordRow): PendingRecord => {
  if (!isPendingStatus(row.status)) throw new Error(`unknown status ${JSON.stringify(row.status)}`)
  return {
    id: row.id,
    session: row.session,
    kind: row.kind,
    label: row.label,
    sourceToolName: row.source_tool_name,
    preview: row.preview,
    payload: JSON.parse(row.payload),
    status: row.status,
    attempts: millis(row.attempts),
    owner: row.owner,
    leaseUntil: nullableMillis(row.lease_until),
    createdAt: millis(row.created_at),
    updatedAt: millis(row.updated_at),
    expiresAt: nullableMillis(row.expires_at),
    outcome: row.outcome
  }
}

const toEvent = (row: EventRow): PendingEvent => {
  if (!isPendingStatus(row.to_status) || !(row.from_status === null || isPendingStatus(row.from_status))) {
    throw new Error(`unknown status in ${JSON.stringify([row.from_status, row.to_status])}`)
  }
  return {
    actionId: row.action_id,
    at: millis(row.at),
    from: row.from_status,
    to: row.to_status,
    owner: row.owner,
    attempt: millis(row.attempt)
  }
}

const describe = (cause: unknown): string => {
  const inner = (cause as { cause?: { message?: unknown } } | null)?.cause?.message
  if (typeof inner === "string") return inner
  const message = (cause as { message?: unknown } | null)?.message
  return typeof message === "string" ? message : String(cause)
}

const readFailed = (operation: string) => (cause: SqlError) =>
  new PendingStoreError({
    operation,
    detail: `the database failed (${describe(cause)}); nothing was changed. Retry, or check the store's database.`,
    cause
  })

const writeFailed = (operation: string) => (cause: SqlError) =>
  new PendingStoreError({
    operation,
    detail: `the database failed (${describe(cause)}). The change is one statement, so it happened wholly or ` +
      "not at all: read the record with get before retrying.",
    cause
  })

const decode = <Row, A>(operation: string, rows: ReadonlyArray<Row>, f: (row: Row) => A) =>
  Effect.try({
    try: () => rows.map(f),
    catch: (cause) =>
      new PendingStoreError({
        operation,
        detail: `a stored row could not be read (${describe(cause)}); the store's tables may have been changed ` +
          "outside the store. Nothing was changed.",
        cause
      })
  })

/** SQLite reports a locked database as SQLITE_BUSY (after its busy timeout); the statement did not run. */
const isBusy = (error: SqlError) => {
  const code = (error.cause as { code?: unknown } | null | undefined)?.code
  return typeof code === "string" && code.startsWith("SQLITE_BUSY")
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

    const read = <Row extends object, A>(
      operation: string,
      statement: Effect.Effect<ReadonlyArray<Row>, SqlError>,
      f: (row: Row) => A
    ) =>
      Effect.flatMap(Effect.mapError(retryBusy(statement), readFailed(operation)), (rows) => decode(operation, rows, f))

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
            ${record.preview}, ${payload}, ${record.status}, ${record.attempts}, NULL, NULL, ${record.createdAt},
            ${record.updatedAt}, ${record.expiresAt}, ${record.outcome})
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
        return Effect.flatMap(
          write("claim", statement.withoutTransform),
          (rows) =>
            rows.length === 0 ?
              Effect.succeed(Option.none<PendingRecord>()) :
              Effect.map(decode("claim", rows, toRecord), (records) => Option.some(records[0]!))
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
        const statement = sql<{ readonly id: string }>`UPDATE effect_resolve_pending
          SET status = ${input.to}, owner = NULL, lease_until = NULL, updated_at = ${input.now}
          WHERE id = ${input.id} AND status IN ${sql.in(input.from)} ${guard}
          RETURNING id`
        return Effect.map(write("transition", statement.withoutTransform), (rows) => rows.length > 0)
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

    return PendingStore.of({
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
      listOpen: (session) => {
        const statement = sql<RecordRow>`SELECT ${columns} FROM effect_resolve_pending
          WHERE session = ${session} AND ${sql.literal(openStatuses)} ORDER BY created_at DESC, seq DESC`
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
        const statement = sql<EventRow>`SELECT action_id, at, from_status, to_status, owner, attempt
          FROM effect_resolve_events WHERE action_id = ${id} ORDER BY seq`
        return read("history", statement.withoutTransform, toEvent)
      },
      saveSession,
      loadSession: (session) => {
        const statement = sql<{ readonly state: string }>`SELECT state FROM effect_resolve_sessions
          WHERE session = ${session}`
        return Effect.map(
          read("loadSession", statement.withoutTransform, (row) => row.state),
          (states) => Option.fromNullable(states[0])
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
