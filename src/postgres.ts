/**
 * The durable pending store on Postgres (through `@effect/sql-pg`), for sessions shared between processes and
 * machines. Needs `@effect/sql` and `@effect/sql-pg`.
 *
 * @since 0.2.0
 */

/** @since 0.2.0 */
export * as PostgresStore from "./stores/PostgresStore.js"
/** @since 0.2.0 */
export * as SqlPendingStore from "./stores/SqlPendingStore.js"
