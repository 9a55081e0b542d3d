/**
 * The deployments of sessions on `@effect/cluster`, each a layer on a `SqlClient` and a `PendingStore` (the same
 * database holds the cluster's messages and runners, and the pending sets and conversations):
 *
 * - `layerRunner`: a runner of a cluster on Postgres (`SqlMessageStorage`, `SqlRunnerStorage` with shard locks as
 *   expiring rows: `failoverDefaults`), talking to the other runners over sockets (`NodeClusterSocket`) or HTTP
 *   (`NodeClusterHttp`). Each session runs on exactly one runner at a time, fenced by its owner epoch; when a runner
 *   dies or stops answering (paused, hung), its shards (and sessions) move to the others once the cluster sees it gone
 *   (`ShardingConfig`: its shard locks expire `shardLockExpiration` after its last refresh, or the health check fails
 *   to ping it), and come back when it returns.
 * - `layerSingle`: one process, no cluster to run (`SingleRunner`), on any SQL database the store runs on (a
 *   SQLite file): the same entity and client, durable messages included.
 * - `layerClient`: a node that only sends messages (an app, an approval inbox): no sessions run here.
 *
 * Each runner is built with the app's `SessionAgent` (its model, tools and kinds) and provides a `SessionClient`.
 *
 * @example
 * ```ts
 * import { Layer } from "effect"
 * import { PostgresStore } from "effect-resolve/postgres"
 * import { SessionAgent, SessionCluster } from "effect-resolve/cluster"
 *
 * declare const Agent: Layer.Layer<SessionAgent> // SessionAgent.layer({ toolkit, kinds, ... }) with its model
 *
 * // A runner: this process runs the sessions of its shards, and can message any session.
 * const Runner = SessionCluster.layerRunner({ runner: { host: "10.0.0.5", port: 34431 } }).pipe(
 *   Layer.provide(Agent),
 *   Layer.provideMerge(PostgresStore.layerClient({ url: "postgres://app@db/app" }))
 * )
 * ```
 *
 * @since 0.3.0
 */
import * as RunnerAddress from "@effect/cluster/RunnerAddress"
import type { Sharding } from "@effect/cluster/Sharding"
import type * as ShardingConfig from "@effect/cluster/ShardingConfig"
import * as SingleRunner from "@effect/cluster/SingleRunner"
import * as NodeClusterHttp from "@effect/platform-node/NodeClusterHttp"
import * as NodeClusterSocket from "@effect/platform-node/NodeClusterSocket"
import type * as SqlClient from "@effect/sql/SqlClient"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import type { PendingStore } from "../services/PendingStore.js"
import type { SessionAgent } from "./SessionAgent.js"
import { SessionClient } from "./SessionClient.js"
import * as SessionEntity from "./SessionEntity.js"

/**
 * A node of the cluster could not start: its configuration, its listening address, or its database.
 *
 * @since 0.3.0
 * @category errors
 */
export class ClusterStartFailed extends Schema.TaggedError<ClusterStartFailed>("effect-resolve/ClusterStartFailed")(
  "ClusterStartFailed",
  { node: Schema.String, cause: Schema.Defect }
) {
  /**
   * @since 0.3.0
   */
  override get message(): string {
    const detail = typeof this.cause === "object" && this.cause !== null && "message" in this.cause ?
      String(this.cause.message) :
      String(this.cause)
    return `The cluster ${this.node} could not start (${detail}). Check that its address is free and reachable by ` +
      `the other nodes, that the database is reachable, and the ShardingConfig (environment variables such as ` +
      `PORT or SHARDS_PER_GROUP are read too; the layer's options win).`
  }
}

/**
 * A host and a port.
 *
 * @since 0.3.0
 * @category models
 */
export interface Address {
  readonly host: string
  readonly port: number
}

/**
 * Options every node of a cluster shares.
 *
 * @since 0.3.0
 * @category models
 */
export interface CommonOptions {
  /**
   * How runners and clients talk: `"socket"` (default, `NodeClusterSocket`), `"http"` or `"websocket"`
   * (`NodeClusterHttp`). Every node of a cluster must use the same.
   */
  readonly transport?: "socket" | "http" | "websocket" | undefined
  /**
   * `@effect/cluster`'s configuration (shards, failure-detection times, poll intervals). Every node must agree on
   * `shardsPerGroup`. Failure detection: a runner that stops heartbeating is dropped after `shardLockExpiration`
   * (default 35 s), or sooner when the health check (every `runnerHealthCheckInterval`, default 1 minute) cannot
   * ping it.
   */
  readonly sharding?: Partial<ShardingConfig.ShardingConfig["Type"]> | undefined
}

/**
 * Options of a runner.
 *
 * @since 0.3.0
 * @category models
 */
export interface RunnerOptions extends CommonOptions {
  /** Where the other nodes reach this runner (unique in the cluster: it names the runner). */
  readonly runner: Address
  /** Where it listens, when that differs (a container's 0.0.0.0). */
  readonly listen?: Address | undefined
  /** The entity's options (`logSaves`, `maxIdleTime`, `handoffPoll`). */
  readonly entity?: SessionEntity.Options | undefined
}

const transportLayer = (
  options: CommonOptions,
  config: Partial<ShardingConfig.ShardingConfig["Type"]>,
  clientOnly: boolean
): Layer.Layer<Sharding, unknown, SqlClient.SqlClient> => {
  const transport = options.transport ?? "socket"
  const shardingConfig = { ...failoverDefaults, ...options.sharding, ...config }
  return (transport === "socket" ?
    NodeClusterSocket.layer({ storage: "sql", clientOnly, shardingConfig }) :
    NodeClusterHttp.layer({ transport, storage: "sql", clientOnly, shardingConfig })) as Layer.Layer<
      Sharding,
      unknown,
      SqlClient.SqlClient
    >
}

/**
 * What this package changes in `@effect/cluster`'s defaults: shard locks are rows with an expiry
 * (`shardLockDisableAdvisory: true`) instead of Postgres advisory locks held by a connection. An advisory lock lives
 * as long as its connection, so a runner that is paused, hung or partitioned while its connection stays open would
 * keep its shards, and its sessions would wait for it forever; a lock row expires `shardLockExpiration` after the
 * runner's last refresh, and another runner takes the shard. Fencing makes that safe: the paused runner, once woken,
 * writes nothing for the sessions it lost.
 *
 * @since 0.4.0
 * @category constants
 */
export const failoverDefaults: Partial<ShardingConfig.ShardingConfig["Type"]> = { shardLockDisableAdvisory: true }

const failedAs = (node: string) => (cause: unknown) => new ClusterStartFailed({ node, cause })

/**
 * A runner on Postgres: runs the sessions of the shards it holds, and messages any session. Needs the `SqlClient`
 * and the `PendingStore` on the same database (`PostgresStore.layerClient`), and the app's `SessionAgent`.
 *
 * @since 0.3.0
 * @category layers
 */
export const layerRunner = (
  options: RunnerOptions
): Layer.Layer<
  SessionClient | Sharding,
  ClusterStartFailed,
  SqlClient.SqlClient | PendingStore | SessionAgent
> =>
  Layer.merge(SessionEntity.layer(options.entity), SessionClient.layer).pipe(
    Layer.provideMerge(transportLayer(options, {
      runnerAddress: Option.some(RunnerAddress.make(options.runner.host, options.runner.port)),
      runnerListenAddress: Option.map(
        Option.fromNullable(options.listen),
        (listen) => RunnerAddress.make(listen.host, listen.port)
      )
    }, false)),
    Layer.mapError(failedAs(`runner ${options.runner.host}:${options.runner.port}`))
  )

/**
 * One process, no cluster to run (`SingleRunner`): every session runs here, with durable messages in the database of
 * the `SqlClient`. On a SQLite file: `LibsqlClient.layer({ url: "file:app.db", intMode: "bigint" })` (the cluster's
 * message storage reads its 64-bit ids as `bigint`), with `SqlPendingStore.layer` on the same client. Only one
 * process may run it on a database at a time (the others wait for its shard locks).
 *
 * @since 0.3.0
 * @category layers
 */
export const layerSingle = (
  options: {
    readonly sharding?: Partial<ShardingConfig.ShardingConfig["Type"]> | undefined
    readonly entity?: SessionEntity.Options | undefined
  } = {}
): Layer.Layer<SessionClient | Sharding, ClusterStartFailed, SqlClient.SqlClient | PendingStore | SessionAgent> =>
  Layer.merge(SessionEntity.layer(options.entity), SessionClient.layer).pipe(
    Layer.provideMerge(
      SingleRunner.layer({
        runnerStorage: "sql",
        shardingConfig: { ...failoverDefaults, ...options.sharding }
      })
    ),
    Layer.mapError(failedAs("single runner"))
  )

/**
 * A node that only sends messages to sessions (an app, an approval inbox): it runs none. Needs a `SqlClient` on the
 * cluster's database, and the cluster's transport.
 *
 * @since 0.3.0
 * @category layers
 */
export const layerClient = (
  options: CommonOptions = {}
): Layer.Layer<SessionClient | Sharding, ClusterStartFailed, SqlClient.SqlClient> =>
  SessionClient.layer.pipe(
    Layer.provideMerge(transportLayer(options, {}, true)),
    Layer.mapError(failedAs("client"))
  )
