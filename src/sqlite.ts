/**
 * The durable pending store on SQLite (a file, through `@effect/sql-libsql`): the embedded default. Needs
 * `@effect/sql` and `@effect/sql-libsql`.
 *
 * @since 0.2.0
 */

/** @since 0.2.0 */
export * as SqliteStore from "./stores/SqliteStore.js"
/** @since 0.2.0 */
export * as SqlPendingStore from "./stores/SqlPendingStore.js"
