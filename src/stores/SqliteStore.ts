/**
 * The durable `PendingStore` on a SQLite file, through `@effect/sql-libsql` (prebuilt binaries, no compilation on
 * install). The file is opened in WAL mode with a busy timeout, so several processes can share it: their claims of
 * one record still let exactly one win.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { PendingStore } from "effect-resolve"
 * import { SqliteStore } from "effect-resolve/sqlite"
 *
 * const program = Effect.gen(function*() {
 *   const store = yield* PendingStore
 *   return yield* store.list("session-1")
 * }).pipe(Effect.provide(SqliteStore.layer({ filename: "agent.db" })))
 * ```
 *
 * @since 0.2.0
 */
import * as Reactivity from "@effect/experimental/Reactivity"
import * as LibsqlClient from "@effect/sql-libsql/LibsqlClient"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Config from "effect/Config"
import type * as ConfigError from "effect/ConfigError"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as NodePath from "node:path"
import * as NodeUrl from "node:url"
import { innerMessageOf } from "../internal/render.js"
import { PendingStore, PendingStoreError } from "../services/PendingStore.js"
import * as SqlPendingStore from "./SqlPendingStore.js"

/**
 * @since 0.2.0
 * @category models
 */
export interface Options {
  /** The database file (created when missing; its directory must exist). Relative to the working directory. */
  readonly filename: string
  /**
   * How long a statement waits for another process's write to finish before the store retries it (default 5
   * seconds). A statement that found the file locked did not run, so the retry is safe.
   */
  readonly busyTimeout?: Duration.DurationInput
}

const openFailed = (filename: string, cause: unknown, what: string) =>
  new PendingStoreError({
    operation: "open",
    detail: `the SQLite file ${JSON.stringify(filename)} could not be ${what} (${
      innerMessageOf(cause)
    }); nothing was changed. Check that its directory exists and is writable.`,
    cause
  })

/**
 * Opens the file (WAL mode, busy timeout), migrates it and builds the store on it. The connection closes with the
 * layer's scope.
 *
 * @since 0.2.0
 * @category layers
 */
export const layer = (options: Options): Layer.Layer<PendingStore | PendingStore.Parts, PendingStoreError> =>
  Layer.scopedContext(
    Effect.gen(function*() {
      if (options.filename === "" || options.filename.startsWith(":memory:")) {
        return yield* new PendingStoreError({
          operation: "open",
          detail: "SqliteStore needs a file; for a store that lives in memory use PendingStore.layerMemory. " +
            "Nothing was changed."
        })
      }
      const url = NodeUrl.pathToFileURL(NodePath.resolve(options.filename)).href
      const client = yield* LibsqlClient.make({ url }).pipe(
        Effect.catchAllDefect((cause) => Effect.fail(openFailed(options.filename, cause, "opened")))
      )
      const timeout = Math.max(0, Math.round(Duration.toMillis(options.busyTimeout ?? Duration.seconds(5))))
      const busyTimeout = client.unsafe(`PRAGMA busy_timeout = ${timeout}`).raw
      const prepare = Effect.zipRight(busyTimeout, client.unsafe("PRAGMA journal_mode = WAL").raw).pipe(
        Effect.mapError((cause) => openFailed(options.filename, cause, "set up"))
      )
      yield* prepare
      const store = yield* Effect.provideService(
        Effect.zipRight(SqlPendingStore.migrate, SqlPendingStore.make),
        SqlClient.SqlClient,
        withBusyTimeout(client, busyTimeout)
      )
      yield* Effect.mapError(busyTimeout, (cause) => openFailed(options.filename, cause, "set up"))
      return PendingStore.contextWithParts(store)
    })
  ).pipe(Layer.provide(Reactivity.layer))

/**
 * The client with the busy timeout set again after every transaction. libsql's client opens a fresh connection
 * after each one (the busy timeout is a per-connection setting), which would start at SQLite's default of 0: its
 * next transaction's `BEGIN IMMEDIATE` would then fail at once while another process writes, and libsql leaves that
 * failed statement in progress, so that every later `COMMIT` on the connection fails ("cannot commit transaction -
 * SQL statements in progress", tursodatabase/libsql-client-ts#352) until the garbage collector finalizes it: a
 * settle or a save that cannot be recorded. With the timeout, the `BEGIN` waits for the other writer instead.
 */
const withBusyTimeout = (client: SqlClient.SqlClient, busyTimeout: Effect.Effect<unknown, unknown>) =>
  new Proxy(client, {
    get: (target, property, receiver) =>
      property === "withTransaction" ?
        <R, E, A>(effect: Effect.Effect<A, E, R>) =>
          Effect.ensuring(target.withTransaction(effect), Effect.ignore(busyTimeout)) :
        Reflect.get(target, property, receiver)
  })

/**
 * `layer` with its options read from `Config` (as `@effect/sql`'s `layerConfig` layers do): the file name from the
 * environment, say.
 *
 * @example
 * ```ts
 * import { Config } from "effect"
 * import { SqliteStore } from "effect-resolve/sqlite"
 *
 * const Store = SqliteStore.layerConfig({ filename: Config.string("AGENT_DB").pipe(Config.withDefault("agent.db")) })
 * ```
 *
 * @since 0.3.0
 * @category layers
 */
export const layerConfig = (
  config: Config.Config.Wrap<Options>
): Layer.Layer<PendingStore | PendingStore.Parts, PendingStoreError | ConfigError.ConfigError> =>
  Layer.unwrapEffect(Effect.map(Config.unwrap(config), layer))
