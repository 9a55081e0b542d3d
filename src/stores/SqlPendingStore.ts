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
import { SqlError } from "@effect/sql/SqlError"
import * as Effect from "effect/Effect"
import type * as Layer from "effect/Layer"
import * as PubSub from "effect/PubSub"
import * as Stream from "effect/Stream"
import { shared, signalling } from "../services/internal/storeSignals.js"
import { PendingStore, type PendingStoreError } from "../services/PendingStore.js"
import { makeSqlStore } from "./internal/sqlContext.js"
import { makeInbox, recordDone, settleDeciding } from "./internal/sqlInbox.js"
import { makeRecords } from "./internal/sqlRecords.js"
import { readFailed, writeFailed } from "./internal/sqlRows.js"
import { changesChannel, migrate } from "./internal/sqlSchema.js"
import { makeConversations, makeLeases, makeOwners } from "./internal/sqlSessions.js"
import { escapingClient } from "./internal/sqlText.js"

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
      // Postgres: every statement that adds to the feed notifies when it commits (migration 7_notify). One `LISTEN`
      // per store, shared by every subscriber (two on one connection would unlisten each other).
      const changed = shared(
        Stream.mapError(Stream.as(listen.call(client, changesChannel), undefined), readFailed("changed"))
      )
      return build(sql, undefined, changed)
    }
    // SQLite: this store's own writes signal (another process on the file signals nothing here).
    const changes = Effect.runSync(PubSub.sliding<void>(1))
    return signalling(build(sql, undefined, Stream.fromPubSub(changes)), changes)
  }
)

/**
 * The store on `sql`, its parts built apart on one shared state (`sqlContext`); with `fence`, its writes for the
 * session happen only while the fence's epoch is the session's latest (see `makeSqlStore`).
 */
const build = (
  sql: SqlClient.SqlClient,
  fence: PendingStore.Fence | undefined,
  changed: Stream.Stream<void, PendingStoreError>
): PendingStore.Service => {
  const store = makeSqlStore(sql, fence)
  const inbox = makeInbox(sql, store)
  const records = makeRecords(store)
  return PendingStore.of({
    ...records,
    ...makeLeases(store),
    ...makeConversations(store),
    ...makeOwners(store),
    ...inbox,
    completeDecision: (input) =>
      Effect.flatMap(
        inbox.completeDecision(input),
        (done) => done ? Effect.succeed(true) : store.unlessFenced("completeDecision", false)
      ),
    settleDeciding: settleDeciding(store, records, inbox),
    recordDone: recordDone(store, records),
    fenced: (other) => build(sql, other, changed),
    // Beginning or committing failed: nothing was committed.
    transaction: (effect) =>
      Effect.catchIf(
        sql.withTransaction(effect),
        (error): error is SqlError => error instanceof SqlError,
        (error) => Effect.fail(writeFailed("transaction")(error))
      ),
    changed
  })
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
