/**
 * What every part of the SQL store shares: the client, the fence (a fenced store's writes hold only while its epoch is
 * the session's latest), and the helpers each statement runs through (busy retries on SQLite, typed errors, writes
 * uninterruptible once started). One place, so that the parts run their statements alike.
 *
 * @internal
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import type * as Statement from "@effect/sql/Statement"
import * as Effect from "effect/Effect"
import * as Schedule from "effect/Schedule"
import { fencedOut, type PendingStoreError } from "../../services/PendingStore.js"
import type { SessionOwners } from "../../services/SessionOwners.js"
import { isBusy, readFailed, recordColumns, seqOf, writeFailed } from "./sqlRows.js"
import { settledCondition } from "./sqlSchema.js"

/** The SQL store's shared state and helpers, for one fence (or none). */
export interface SqlStore {
  readonly sql: SqlClient.SqlClient
  readonly fence: SessionOwners.Fence | undefined
  /** On SQLite, retries a statement that found the database locked by another process (it did not run). */
  readonly retryBusy: <A>(self: Effect.Effect<A, SqlError>) => Effect.Effect<A, SqlError>
  /** The record table's columns, in `toRecord`'s order. */
  readonly columns: Statement.Fragment
  /** The condition of a settled record. */
  readonly settled: Statement.Fragment
  /** `FOR SHARE` on Postgres (the owners row a fenced write reads), nothing on SQLite. */
  readonly forShare: Statement.Fragment
  /** The fence's condition, to AND into a write's WHERE (empty without a fence). */
  readonly owns: Statement.Fragment
  /** The fence's condition as a WHERE of its own (for `INSERT ... SELECT`). */
  readonly whereOwns: Statement.Fragment
  /** After a fenced write that changed nothing: refused if the fence's epoch is no longer the latest. */
  readonly unlessFenced: <A>(operation: string, value: A) => Effect.Effect<A, PendingStoreError>
  /** A read, its errors typed. */
  readonly run: <Row extends object>(
    operation: string,
    statement: Effect.Effect<ReadonlyArray<Row>, SqlError>
  ) => Effect.Effect<ReadonlyArray<Row>, PendingStoreError>
  /** A read, every row decoded on its own: one bad row never fails a read. */
  readonly read: <Row extends object, A>(
    operation: string,
    statement: Effect.Effect<ReadonlyArray<Row>, SqlError>,
    f: (row: Row) => A
  ) => Effect.Effect<ReadonlyArray<A>, PendingStoreError>
  /** A write: uninterruptible once started, its errors typed. */
  readonly write: <Row extends object>(
    operation: string,
    statement: Effect.Effect<ReadonlyArray<Row>, SqlError>
  ) => Effect.Effect<ReadonlyArray<Row>, PendingStoreError>
}

/**
 * The shared state of the store on `sql`; with `fence`, its writes for the session happen only while the fence's
 * epoch is the session's latest: an `EXISTS` on the owners table in each write's own statement (`FOR SHARE` on
 * Postgres, so that an `acquire` waits for a write that found the old epoch, and a write waits for an `acquire` under
 * way and then sees the new epoch). A write that changed nothing reads the owner to tell a refusal from a lost race.
 */
export const makeSqlStore = (sql: SqlClient.SqlClient, fence: SessionOwners.Fence | undefined): SqlStore => {
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
  return { sql, fence, retryBusy, columns, settled, forShare, owns, whereOwns, unlessFenced, run, read, write }
}

/** The number of rows a statement's raw result says it changed (libsql: `rowsAffected`; pg: `rowCount`). */
export const affected = (result: unknown): number => {
  const r = result as { readonly rowsAffected?: unknown; readonly rowCount?: unknown } | null
  return Number(r?.rowsAffected ?? r?.rowCount ?? 0)
}
