/**
 * The SQL store's tables: the statements of each migration, for SQLite and Postgres, and `migrate`.
 *
 * @internal
 */
import * as Migrator from "@effect/sql/Migrator"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import type { PendingStatus } from "../../domain/PendingRecord.js"
import { openStatuses, storedStatuses, terminalStatuses } from "../../domain/PendingRecord.js"
import { innerMessageOf } from "../../internal/render.js"
import { PendingStoreError } from "../../services/PendingStore.js"

/**
 * The table `migrate` records applied migrations in.
 *
 * @since 0.2.0
 * @category constants
 */
export const migrationsTable = "effect_resolve_migrations"

/** `status IN ('a', 'b', ...)`, for the constant lists of statuses. */
export const statusIn = (list: ReadonlyArray<PendingStatus>) =>
  `status IN (${list.map((status) => `'${status}'`).join(", ")})`

export const statusCheck = statusIn(storedStatuses)

/** The records not yet settled: what `listOpen` reads, through a partial index, so its cost follows their number. */
export const openCondition = statusIn(openStatuses)

/** The settled records: what `prune` removes, through a partial index on when they settled. */
export const settledCondition = statusIn(terminalStatuses)

export const sqliteSchema: ReadonlyArray<string> = [
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

export const pgSchema: ReadonlyArray<string> = [
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
export const sharedSessionsCommon: ReadonlyArray<string> = [
  "ALTER TABLE effect_resolve_pending ADD COLUMN stager TEXT",
  `CREATE TABLE effect_resolve_instances (
  id TEXT PRIMARY KEY,
  lease_until BIGINT NOT NULL
)`,
  `CREATE INDEX effect_resolve_pending_settled ON effect_resolve_pending (session, updated_at, seq)
WHERE ${settledCondition}`
]

export const sqliteSharedSessions: ReadonlyArray<string> = [
  ...sharedSessionsCommon,
  `CREATE TRIGGER effect_resolve_pending_deleted AFTER DELETE ON effect_resolve_pending
BEGIN
  DELETE FROM effect_resolve_events WHERE action_id = OLD.id;
END`
]

export const pgSharedSessions: ReadonlyArray<string> = [
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
export const snoozedCondition = "snoozed_until IS NOT NULL"

export const inboxCommon: ReadonlyArray<string> = [
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

export const decisionsTable = (seq: string, millis: string) =>
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

export const sqliteInbox: ReadonlyArray<string> = [
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

export const pgInbox: ReadonlyArray<string> = [
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
export const clusterCommon = (types: { readonly seq: string; readonly millis: string }): ReadonlyArray<string> => [
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
export const conversationSchema = (types: { readonly int: string }): ReadonlyArray<string> => [
  `CREATE TABLE effect_resolve_conversation (
  session TEXT NOT NULL,
  seq ${types.int} NOT NULL,
  message TEXT NOT NULL,
  PRIMARY KEY (session, seq)
)`
]

/**
 * 0.4: the owner of each session (fencing): its latest epoch, the runtime instance that acquired it, and when. A
 * fenced store's writes check the epoch here in their own statement.
 */
export const fencingSchema = (types: { readonly int: string }): ReadonlyArray<string> => [
  `CREATE TABLE effect_resolve_owners (
  session TEXT PRIMARY KEY,
  epoch ${types.int} NOT NULL,
  owner TEXT NOT NULL,
  at ${types.int} NOT NULL
)`
]

/** The channel on which Postgres notifies that the store's feed has something new (migration `7_notify`). */
export const changesChannel = "effect_resolve_changes"

/**
 * 0.4, Postgres only: every statement that adds to the feed (the journal, the inbox's notes) notifies
 * `changesChannel` when its transaction commits, so that listeners in any process read the feed at once instead of
 * at their next poll. Postgres folds the notifications of one transaction into one. The payload, the schema's name,
 * is not empty (a listener drops an empty one).
 */
export const pgNotify: ReadonlyArray<string> = [
  `CREATE FUNCTION effect_resolve_notify() RETURNS trigger LANGUAGE plpgsql AS $body$
BEGIN
  PERFORM pg_notify('${changesChannel}', current_schema());
  RETURN NULL;
END
$body$`,
  `CREATE TRIGGER effect_resolve_events_notify AFTER INSERT ON effect_resolve_events
  FOR EACH STATEMENT EXECUTE FUNCTION effect_resolve_notify()`,
  `CREATE TRIGGER effect_resolve_notes_notify AFTER INSERT ON effect_resolve_notes
  FOR EACH STATEMENT EXECUTE FUNCTION effect_resolve_notify()`
]

/**
 * 0.4: reviewers' responses, a message to the agent about a pending action that leaves it pending. Recording one
 * and marking it delivered each add a note to the inbox's feed (and so notify, on Postgres); a record's responses go
 * when it is pruned.
 */
export const responsesSchema = (types: { readonly seq: string; readonly millis: string }): ReadonlyArray<string> => [
  `CREATE TABLE effect_resolve_responses (
  seq ${types.seq},
  id TEXT NOT NULL UNIQUE,
  action_id TEXT NOT NULL,
  session TEXT NOT NULL,
  reviewer TEXT NOT NULL,
  message TEXT NOT NULL,
  responded_at ${types.millis} NOT NULL,
  delivered_at ${types.millis}
)`,
  "CREATE INDEX effect_resolve_responses_by_action ON effect_resolve_responses (action_id, seq)",
  `CREATE INDEX effect_resolve_responses_waiting ON effect_resolve_responses (session, seq)
WHERE delivered_at IS NULL`
]

export const sqliteResponses: ReadonlyArray<string> = [
  ...responsesSchema({ seq: "INTEGER PRIMARY KEY", millis: "INTEGER" }),
  `CREATE TRIGGER effect_resolve_responses_noted AFTER INSERT ON effect_resolve_responses
BEGIN
  INSERT INTO effect_resolve_notes (action_id) VALUES (NEW.action_id);
END`,
  `CREATE TRIGGER effect_resolve_responses_delivered AFTER UPDATE OF delivered_at ON effect_resolve_responses
BEGIN
  INSERT INTO effect_resolve_notes (action_id) VALUES (NEW.action_id);
END`,
  `CREATE TRIGGER effect_resolve_pending_responses_deleted AFTER DELETE ON effect_resolve_pending
BEGIN
  DELETE FROM effect_resolve_responses WHERE action_id = OLD.id;
END`
]

export const pgResponses: ReadonlyArray<string> = [
  ...responsesSchema({ seq: "bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY", millis: "bigint" }),
  `CREATE FUNCTION effect_resolve_note_response() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT
AS $body$
BEGIN
  INSERT INTO effect_resolve_notes (action_id) VALUES (NEW.action_id);
  RETURN NULL;
END
$body$`,
  `CREATE TRIGGER effect_resolve_responses_noted AFTER INSERT OR UPDATE OF delivered_at ON effect_resolve_responses
FOR EACH ROW EXECUTE FUNCTION effect_resolve_note_response()`,
  `CREATE FUNCTION effect_resolve_forget_responses() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT
AS $body$
BEGIN
  DELETE FROM effect_resolve_responses WHERE action_id = OLD.id;
  RETURN NULL;
END
$body$`,
  `CREATE TRIGGER effect_resolve_pending_responses_deleted AFTER DELETE ON effect_resolve_pending
FOR EACH ROW EXECUTE FUNCTION effect_resolve_forget_responses()`
]

export const runStatements = (
  statements: { readonly pg: ReadonlyArray<string>; readonly sqlite: ReadonlyArray<string> }
) =>
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
  }),
  "6_fencing": runStatements({
    pg: fencingSchema({ int: "bigint" }),
    sqlite: fencingSchema({ int: "INTEGER" })
  }),
  "7_notify": runStatements({ pg: pgNotify, sqlite: [] }),
  "8_responses": runStatements({ pg: pgResponses, sqlite: sqliteResponses })
})

export const runMigrator = Migrator.make({})

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
