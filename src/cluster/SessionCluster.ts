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
import * as ShardingConfig from "@effect/cluster/ShardingConfig"
import * as SingleRunner from "@effect/cluster/SingleRunner"
import * as NodeClusterHttp from "@effect/platform-node/NodeClusterHttp"
import * as NodeClusterSocket from "@effect/platform-node/NodeClusterSocket"
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import { addressInUse } from "../internal/addressInUse.js"
import type { PendingStore } from "../services/PendingStore.js"
import type { SessionAgent } from "./SessionAgent.js"
import { SessionClient } from "./SessionClient.js"
import * as SessionEntity from "./SessionEntity.js"
import { SteeringJournal } from "./SteeringJournal.js"

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
    const inUse = addressInUse(this.cause)
    if (inUse !== undefined) {
      return `The cluster ${this.node} could not start: address in use (EADDRINUSE): ${inUse} is taken by another ` +
        "process, so this runner cannot listen on it. Stop that process, or give this runner a free port: " +
        "SessionCluster.layerRunner's `runner.port` option (`listen.port` when it listens on another address than " +
        "the one the other nodes reach), or the setting or environment variable your app maps to it."
    }
    const detail = typeof this.cause === "object" && this.cause !== null && "message" in this.cause ?
      String(this.cause.message) :
      String(this.cause)
    return `The cluster ${this.node} could not start (${detail}). Check that its address is free and reachable by ` +
      `the other nodes, that the database is reachable, and the ShardingConfig (environment variables such as ` +
      `PORT or SHARDS_PER_GROUP are read too; the layer's options win).`
  }
}

/**
 * A node was started with other shards than the cluster whose database it joins: another `shardsPerGroup`, or other
 * shard groups (`availableShardGroups`). Its sessions would hash to other shards than the other nodes', and the
 * messages of the shards it cannot see would never be processed, so it refuses to start. The cluster's values are
 * recorded in the table `effect_resolve_cluster_config` by the first node that starts on the database.
 *
 * @since 0.4.0
 * @category errors
 */
export class ClusterConfigMismatch
  extends Schema.TaggedError<ClusterConfigMismatch>("effect-resolve/ClusterConfigMismatch")("ClusterConfigMismatch", {
    /** The node that refused to start (`runner host:port`, `client`, `single runner`). */
    node: Schema.String,
    /** This node's `shardsPerGroup`. */
    shardsPerGroup: Schema.Number,
    /** This node's shard groups (sorted). */
    shardGroups: Schema.Array(Schema.String),
    /** The cluster's `shardsPerGroup`, as recorded. */
    clusterShardsPerGroup: Schema.Number,
    /** The cluster's shard groups, as recorded. */
    clusterShardGroups: Schema.Array(Schema.String),
    /** The node that recorded them, and when (epoch milliseconds). */
    recordedBy: Schema.String,
    recordedAt: Schema.Number
  })
{
  /**
   * @since 0.4.0
   */
  override get message(): string {
    const differences: Array<string> = []
    if (this.shardsPerGroup !== this.clusterShardsPerGroup) {
      differences.push(
        `shardsPerGroup ${this.shardsPerGroup}, but the cluster runs with shardsPerGroup ${this.clusterShardsPerGroup}`
      )
    }
    if (JSON.stringify(this.shardGroups) !== JSON.stringify(this.clusterShardGroups)) {
      differences.push(
        `shard groups ${JSON.stringify(this.shardGroups)}, but the cluster has ${
          JSON.stringify(this.clusterShardGroups)
        }`
      )
    }
    return `The cluster ${this.node} refuses to start: it was given ${differences.join("; and ")} (recorded in the ` +
      `database by the ${this.recordedBy} that first started the cluster, at ${
        new Date(this.recordedAt).toISOString()
      }). Its sessions would be placed on other shards than the other nodes', and the messages of shards it cannot ` +
      `see would never be processed. Start it with the cluster's values: the layer's option sharding: { ` +
      `shardsPerGroup: ${this.clusterShardsPerGroup}, availableShardGroups: ${
        JSON.stringify(this.clusterShardGroups)
      } } (or the environment variables SHARDS_PER_GROUP and AVAILABLE_SHARD_GROUPS, which the options override). ` +
      `To change the cluster's values instead, stop every node, let no message be in flight, and delete the row ` +
      `of effect_resolve_cluster_config.`
  }
}

/** The cluster's shard values as this node uses them: its `shardsPerGroup` and its sorted, distinct shard groups. */
const shardsOf = (config: ShardingConfig.ShardingConfig["Type"]) => ({
  shardsPerGroup: config.shardsPerGroup,
  shardGroups: [...new Set(config.availableShardGroups)].sort()
})

/**
 * Records the cluster's shard values in the database if no node did yet (table `effect_resolve_cluster_config`,
 * created here), and fails with `ClusterConfigMismatch` when the recorded ones differ from this node's.
 */
const checkShards = (
  node: string,
  config: ShardingConfig.ShardingConfig["Type"]
): Effect.Effect<void, ClusterConfigMismatch | SqlError, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const { shardGroups, shardsPerGroup } = shardsOf(config)
    yield* sql.onDialectOrElse({
      pg: () =>
        sql`CREATE TABLE IF NOT EXISTS effect_resolve_cluster_config (
          name text PRIMARY KEY,
          shards_per_group integer NOT NULL,
          shard_groups text NOT NULL,
          recorded_by text NOT NULL,
          recorded_at bigint NOT NULL
        )`,
      orElse: () =>
        sql`CREATE TABLE IF NOT EXISTS effect_resolve_cluster_config (
          name TEXT PRIMARY KEY,
          shards_per_group INTEGER NOT NULL,
          shard_groups TEXT NOT NULL,
          recorded_by TEXT NOT NULL,
          recorded_at INTEGER NOT NULL
        )`
    }).pipe(Effect.retry({ times: 3, schedule: Schedule.spaced("50 millis") }))
    const now = yield* Clock.currentTimeMillis
    yield* sql`INSERT INTO effect_resolve_cluster_config (name, shards_per_group, shard_groups, recorded_by, recorded_at)
      VALUES ('sharding', ${shardsPerGroup}, ${JSON.stringify(shardGroups)}, ${node}, ${now})
      ON CONFLICT (name) DO NOTHING`
    const [row] = yield* sql<{
      readonly shards_per_group: unknown
      readonly shard_groups: string
      readonly recorded_by: string
      readonly recorded_at: unknown
    }>`SELECT shards_per_group, shard_groups, recorded_by, recorded_at FROM effect_resolve_cluster_config
      WHERE name = 'sharding'`
    if (row === undefined) return
    const clusterShardsPerGroup = Number(row.shards_per_group)
    const clusterShardGroups = JSON.parse(row.shard_groups) as ReadonlyArray<string>
    if (
      clusterShardsPerGroup !== shardsPerGroup || JSON.stringify(clusterShardGroups) !== JSON.stringify(shardGroups)
    ) {
      return yield* new ClusterConfigMismatch({
        node,
        shardsPerGroup,
        shardGroups,
        clusterShardsPerGroup,
        clusterShardGroups,
        recordedBy: String(row.recorded_by),
        recordedAt: Number(row.recorded_at)
      })
    }
  })

/**
 * The `ShardingConfig` a node runs with, as `@effect/cluster` reads it (the environment, then the layer's options,
 * which win), once its shard values are checked against the cluster's (`checkShards`).
 */
const checkedConfig = (
  node: string,
  options: Partial<ShardingConfig.ShardingConfig["Type"]>
): Effect.Effect<ShardingConfig.ShardingConfig["Type"], unknown, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    const config = { ...(yield* ShardingConfig.configFromEnv), ...options }
    yield* checkShards(node, config)
    return config
  })

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
  node: string,
  options: CommonOptions,
  config: Partial<ShardingConfig.ShardingConfig["Type"]>,
  clientOnly: boolean
): Layer.Layer<Sharding, unknown, SqlClient.SqlClient> => {
  const transport = options.transport ?? "socket"
  return Layer.unwrapEffect(Effect.map(
    checkedConfig(node, { ...failoverDefaults, ...options.sharding, ...config }),
    (shardingConfig) =>
      (transport === "socket" ?
        NodeClusterSocket.layer({ storage: "sql", clientOnly, shardingConfig }) :
        NodeClusterHttp.layer({ transport, storage: "sql", clientOnly, shardingConfig })) as Layer.Layer<
          Sharding,
          unknown,
          SqlClient.SqlClient
        >
  ))
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

const failedAs = (node: string) => (cause: unknown): ClusterStartFailed | ClusterConfigMismatch =>
  cause instanceof ClusterConfigMismatch ? cause : new ClusterStartFailed({ node, cause })

/** The steering journal of the cluster's sessions, on its `SqlClient` (its table created if missing). */
const journalLayer = SteeringJournal.layerSql

/**
 * A runner on Postgres: runs the sessions of the shards it holds, and messages any session. Needs the `SqlClient`
 * and the `PendingStore` on the same database (`PostgresStore.layerClient`), and the app's `SessionAgent`. Fails with
 * `ClusterConfigMismatch` when the cluster on this database runs with other shards (`shardsPerGroup`, shard groups),
 * and with `ClusterStartFailed` when it cannot listen (its message says "address in use" when another process holds
 * the address) or reach the database.
 *
 * @since 0.3.0
 * @category layers
 */
export const layerRunner = (
  options: RunnerOptions
): Layer.Layer<
  SessionClient | Sharding,
  ClusterStartFailed | ClusterConfigMismatch,
  SqlClient.SqlClient | PendingStore | SessionAgent
> => {
  const node = `runner ${options.runner.host}:${options.runner.port}`
  return Layer.merge(SessionEntity.layer(options.entity), SessionClient.layer).pipe(
    Layer.provide(journalLayer),
    Layer.provideMerge(transportLayer(node, options, {
      runnerAddress: Option.some(RunnerAddress.make(options.runner.host, options.runner.port)),
      runnerListenAddress: Option.map(
        Option.fromNullable(options.listen),
        (listen) => RunnerAddress.make(listen.host, listen.port)
      )
    }, false)),
    Layer.mapError(failedAs(node))
  )
}

/**
 * One process, no cluster to run (`SingleRunner`): every session runs here, with durable messages in the database of
 * the `SqlClient`. On a SQLite file: `LibsqlClient.layer({ url: "file:app.db", intMode: "bigint" })` (the cluster's
 * message storage reads its 64-bit ids as `bigint`), with `SqlPendingStore.layer` on the same client. Only one
 * process may run it on a database at a time (the others wait for its shard locks). Fails with
 * `ClusterConfigMismatch` when the database's cluster ran with other shards (its stored messages would be stranded).
 *
 * @since 0.3.0
 * @category layers
 */
export const layerSingle = (
  options: {
    readonly sharding?: Partial<ShardingConfig.ShardingConfig["Type"]> | undefined
    readonly entity?: SessionEntity.Options | undefined
  } = {}
): Layer.Layer<
  SessionClient | Sharding,
  ClusterStartFailed | ClusterConfigMismatch,
  SqlClient.SqlClient | PendingStore | SessionAgent
> =>
  Layer.merge(SessionEntity.layer(options.entity), SessionClient.layer).pipe(
    Layer.provide(journalLayer),
    Layer.provideMerge(
      Layer.unwrapEffect(Effect.map(
        checkedConfig("single runner", { ...failoverDefaults, ...options.sharding }),
        (shardingConfig) => SingleRunner.layer({ runnerStorage: "sql", shardingConfig })
      ))
    ),
    Layer.mapError(failedAs("single runner"))
  )

/**
 * A node that only sends messages to sessions (an app, an approval inbox): it runs none. Needs a `SqlClient` on the
 * cluster's database, and the cluster's transport. Fails with `ClusterConfigMismatch` when the cluster runs with
 * other shards than this node's (it would send messages to shards no runner serves); the first node to start on a
 * database, client or runner, records the cluster's values.
 *
 * @since 0.3.0
 * @category layers
 */
export const layerClient = (
  options: CommonOptions = {}
): Layer.Layer<SessionClient | Sharding, ClusterStartFailed | ClusterConfigMismatch, SqlClient.SqlClient> =>
  SessionClient.layer.pipe(
    Layer.provideMerge(transportLayer("client", options, {}, true)),
    Layer.mapError(failedAs("client"))
  )
