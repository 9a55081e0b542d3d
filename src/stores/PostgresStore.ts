/**
 * The durable `PendingStore` on Postgres, through `@effect/sql-pg`, for deployments where several processes or
 * machines share the pending set. Each transition is one statement (one round trip), prepared on a connection that
 * ran it before (`Options.prepare`).
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { PendingStore } from "effect-resolve"
 * import { PostgresStore } from "effect-resolve/postgres"
 *
 * const program = Effect.gen(function*() {
 *   const store = yield* PendingStore
 *   return yield* store.stale(Date.now())
 * }).pipe(Effect.provide(PostgresStore.layer({ url: "postgres://app@127.0.0.1:5432/app" })))
 * ```
 *
 * @since 0.2.0
 */
import * as PgClient from "@effect/sql-pg/PgClient"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Config from "effect/Config"
import type * as ConfigError from "effect/ConfigError"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import { innerMessageOf } from "../internal/render.js"
import { PendingStore, PendingStoreError } from "../services/PendingStore.js"
import * as PgPool from "./internal/pgPool.js"
import * as SqlPendingStore from "./SqlPendingStore.js"

/**
 * The connection: a `postgres://` URL (plain or `Redacted`), and any other `PgClient` option (pool size,
 * timeouts, ...).
 *
 * @since 0.2.0
 * @category models
 */
export interface Options extends Omit<PgClient.PgClientConfig, "url"> {
  readonly url: string | Redacted.Redacted
  /**
   * Whether a connection runs a statement it ran before as a named prepared statement, so that Postgres parses and
   * plans it once per connection instead of on every call (default `true`; 0.4). Every statement on the pool is
   * concerned, the app's own too (`layerClient`): one with parameters, from its second run on a connection, at most
   * 256 per connection. Set `false` behind a pooler that cannot carry prepared statements between its clients
   * (PgBouncer before 1.21 in transaction mode).
   *
   * @since 0.4.0
   */
  readonly prepare?: boolean | undefined
}

const clientLayer = (options: Options): Layer.Layer<PgClient.PgClient | SqlClient.SqlClient, PendingStoreError> => {
  const { prepare, ...config } = options
  const url = Redacted.isRedacted(config.url) ? config.url : Redacted.make(config.url)
  return (prepare === false ? PgClient.layer({ ...config, url }) : PgPool.layer({ ...config, url })).pipe(
    Layer.mapError((cause) =>
      new PendingStoreError({
        operation: "connect",
        detail: `Postgres could not be reached (${
          innerMessageOf(cause)
        }); nothing was changed. Check the URL and that the server is running.`,
        cause
      })
    )
  )
}

/**
 * The store and the client it runs on (`PgClient` and `SqlClient`), for an app that uses the same pool for its
 * own queries. The pool closes with the layer's scope.
 *
 * @since 0.2.0
 * @category layers
 */
export const layerClient = (
  options: Options
): Layer.Layer<PendingStore | PendingStore.Parts | PgClient.PgClient | SqlClient.SqlClient, PendingStoreError> =>
  Layer.provideMerge(SqlPendingStore.layer, clientLayer(options))

/**
 * Connects (a pool), migrates and builds the store. The pool closes with the layer's scope.
 *
 * @since 0.2.0
 * @category layers
 */
export const layer = (options: Options): Layer.Layer<PendingStore | PendingStore.Parts, PendingStoreError> =>
  Layer.provide(SqlPendingStore.layer, clientLayer(options))

/**
 * `layer` with its options read from `Config` (as `PgClient.layerConfig` does): the URL from the environment, kept
 * `Redacted`, say.
 *
 * @example
 * ```ts
 * import { Config } from "effect"
 * import { PostgresStore } from "effect-resolve/postgres"
 *
 * const Store = PostgresStore.layerConfig({ url: Config.redacted("DATABASE_URL") })
 * ```
 *
 * @since 0.3.0
 * @category layers
 */
export const layerConfig = (
  config: Config.Config.Wrap<Options>
): Layer.Layer<PendingStore | PendingStore.Parts, PendingStoreError | ConfigError.ConfigError> =>
  Layer.unwrapEffect(Effect.map(Config.unwrap(config), layer))
