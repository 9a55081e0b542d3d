/**
 * A node that does not fit its cluster refuses to start, saying why: a runner, a client or a single runner started
 * with another `shardsPerGroup` or other shard groups than the cluster recorded in its database (the first node to
 * start records them) fails with `ClusterConfigMismatch` naming both values and what to do; a runner whose address
 * another process holds fails with `ClusterStartFailed` saying "address in use". In this process on a SQLite file
 * (the layers are the real ones: sockets, SQL message and runner storage), and with real runner processes
 * (test/support/clusterRunner.ts) on the run's Postgres.
 */
import { LibsqlClient } from "@effect/sql-libsql"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Layer, Scope } from "effect"
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import { ScriptedModel } from "../../src/ai.js"
import { SessionAgent, SessionCluster } from "../../src/cluster.js"
import { SqlPendingStore } from "../../src/sqlite.js"
import { postgresForTests, postgresSuiteName } from "../support/pgTest.js"
import { freePort, freshSchema } from "../support/postgres.js"

const root = path.resolve(import.meta.dirname, "../..")
const pg = await postgresForTests()

// No tools: the agent needs only the model.
const Agent = SessionAgent.layer({}).pipe(Layer.provide(ScriptedModel.layer(["Done."]))) as Layer.Layer<SessionAgent>

/** A SQLite file's client and store (the cluster's tables and the store's on one database). */
const sqlite = (file: string) =>
  SqlPendingStore.layer.pipe(Layer.provideMerge(LibsqlClient.layer({ url: `file:${file}`, intMode: "bigint" })))

const quick = { entityMessagePollInterval: "200 millis", refreshAssignmentsInterval: "200 millis" } as const

/** Builds `layer` in a fresh scope: its exit, and the scope (closed by the caller). */
const start = <A, E>(layer: Layer.Layer<A, E>) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    const exit = yield* Effect.exit(Layer.buildWithScope(layer, scope))
    return { exit, scope }
  })

const failureOf = <A, E>(exit: Exit.Exit<A, E>): E => {
  assert.isTrue(Exit.isFailure(exit), "the node started")
  const failure = Exit.isFailure(exit) ? exit.cause : undefined
  const error = failure !== undefined && failure._tag === "Fail" ? failure.error : undefined
  assert.isDefined(error, `not a typed failure: ${String(failure)}`)
  return error!
}

const withFile = <A, E, R>(f: (file: string) => Effect.Effect<A, E, R>) =>
  Effect.acquireUseRelease(
    Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "effect-resolve-start-"))),
    (dir) => f(path.join(dir, "cluster.db")),
    (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
  )

describe("a node that does not fit its cluster refuses to start (SQLite file, this process)", () => {
  it.live(
    "a runner and a client with another shardsPerGroup or other shard groups fail, naming both values",
    () =>
      withFile((file) =>
        Effect.gen(function*() {
          const store = sqlite(file)
          const runner = (port: number, sharding: Record<string, unknown>) =>
            SessionCluster.layerRunner({ runner: { host: "127.0.0.1", port }, sharding: { ...quick, ...sharding } })
              .pipe(
                Layer.provide(Agent),
                Layer.provide(store)
              )
          const client = (sharding: Record<string, unknown>) =>
            SessionCluster.layerClient({ sharding: { ...quick, ...sharding } }).pipe(Layer.provide(store))

          const first = yield* start(runner(yield* Effect.promise(freePort), { shardsPerGroup: 60 }))
          assert.isTrue(Exit.isSuccess(first.exit), String(first.exit))
          try {
            const second = yield* start(runner(yield* Effect.promise(freePort), { shardsPerGroup: 30 }))
            yield* Scope.close(second.scope, Exit.void)
            const mismatch = failureOf(second.exit)
            assert.strictEqual(mismatch._tag, "ClusterConfigMismatch")
            assert.include(mismatch.message, "shardsPerGroup 30")
            assert.include(mismatch.message, "shardsPerGroup 60")
            assert.include(mismatch.message, "shardsPerGroup: 60")
            assert.include(mismatch.message, "effect_resolve_cluster_config")

            const groups = yield* start(
              runner(yield* Effect.promise(freePort), { shardsPerGroup: 60, availableShardGroups: ["default", "b"] })
            )
            yield* Scope.close(groups.scope, Exit.void)
            const otherGroups = failureOf(groups.exit)
            assert.strictEqual(otherGroups._tag, "ClusterConfigMismatch")
            assert.include(otherGroups.message, `shard groups ["b","default"], but the cluster has ["default"]`)

            const wrongClient = yield* start(client({ shardsPerGroup: 30 }))
            yield* Scope.close(wrongClient.scope, Exit.void)
            const clientMismatch = failureOf(wrongClient.exit)
            assert.strictEqual(clientMismatch._tag, "ClusterConfigMismatch")
            assert.include(clientMismatch.message, "The cluster client refuses to start")
            assert.include(clientMismatch.message, "shardsPerGroup 30, but the cluster runs with shardsPerGroup 60")

            const rightClient = yield* start(client({ shardsPerGroup: 60 }))
            assert.isTrue(Exit.isSuccess(rightClient.exit), String(rightClient.exit))
            yield* Scope.close(rightClient.scope, Exit.void)
          } finally {
            yield* Scope.close(first.scope, Exit.void)
          }
        })
      ),
    60_000
  )

  it.live(
    "a single runner restarted with another shardsPerGroup fails: its stored messages would be stranded",
    () =>
      withFile((file) =>
        Effect.gen(function*() {
          const single = (shardsPerGroup: number) =>
            SessionCluster.layerSingle({ sharding: { ...quick, shardsPerGroup } }).pipe(
              Layer.provide(Agent),
              Layer.provide(sqlite(file))
            )
          const first = yield* start(single(300))
          assert.isTrue(Exit.isSuccess(first.exit), String(first.exit))
          yield* Scope.close(first.scope, Exit.void)
          const again = yield* start(single(300))
          assert.isTrue(Exit.isSuccess(again.exit), String(again.exit))
          yield* Scope.close(again.scope, Exit.void)
          const other = yield* start(single(100))
          yield* Scope.close(other.scope, Exit.void)
          const mismatch = failureOf(other.exit)
          assert.strictEqual(mismatch._tag, "ClusterConfigMismatch")
          assert.include(mismatch.message, "The cluster single runner refuses to start")
          assert.include(mismatch.message, "shardsPerGroup 100, but the cluster runs with shardsPerGroup 300")
        })
      ),
    60_000
  )

  it.live.each(["socket", "http"] as const)(
    "a runner (%s) whose port another process holds says address in use, with the address and the option",
    (transport) =>
      withFile((file) =>
        Effect.gen(function*() {
          const taken = yield* Effect.acquireRelease(
            Effect.async<net.Server>((resume) => {
              const server = net.createServer()
              server.listen(0, "127.0.0.1", () => resume(Effect.succeed(server)))
            }),
            (server) => Effect.async<void>((resume) => void server.close(() => resume(Effect.void)))
          )
          const port = (taken.address() as net.AddressInfo).port
          const runner = SessionCluster.layerRunner({ runner: { host: "127.0.0.1", port }, sharding: quick, transport })
            .pipe(
              Layer.provide(Agent),
              Layer.provide(sqlite(file))
            )
          const attempt = yield* start(runner)
          yield* Scope.close(attempt.scope, Exit.void)
          const error = failureOf(attempt.exit)
          assert.strictEqual(error._tag, "ClusterStartFailed")
          assert.include(error.message, "address in use (EADDRINUSE)")
          assert.include(error.message, `127.0.0.1:${port} is taken by another process`)
          assert.include(error.message, "`runner.port`")
        }).pipe(Effect.scoped)
      ),
    60_000
  )
})

/** Starts a runner process; resolves with what it printed once it is ready or has exited. */
const runnerProcess = (url: string, port: number, workspace: string, sharding: Record<string, unknown>) =>
  new Promise<{ readonly ready: boolean; readonly output: string; readonly kill: () => Promise<void> }>(
    (resolve) => {
      const child = spawn(process.execPath, [
        "--import",
        "tsx",
        "test/support/clusterRunner.ts",
        url,
        String(port),
        workspace,
        JSON.stringify(sharding)
      ], { cwd: root, stdio: ["ignore", "pipe", "pipe"] })
      let output = ""
      const exited = new Promise<void>((done) => child.once("exit", () => done()))
      const kill = () => {
        if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL")
        return exited
      }
      child.stdout!.on("data", (chunk: Buffer) => {
        output += chunk.toString()
        if (output.split("\n").includes("ready")) resolve({ ready: true, output, kill })
      })
      child.stderr!.on("data", (chunk: Buffer) => (output += chunk.toString()))
      child.once("exit", () => resolve({ ready: false, output, kill }))
      setTimeout(() => void kill(), 90_000)
    }
  )

describe.skipIf(pg._tag !== "Available")(postgresSuiteName("runner processes on Postgres", pg), () => {
  it.live(
    "a second runner process with another shardsPerGroup exits at start, naming both values",
    () =>
      Effect.gen(function*() {
        const url = pg._tag === "Available" ? yield* freshSchema(pg.url) : ""
        const workspace = fs.mkdtempSync(path.join(os.tmpdir(), "effect-resolve-start-"))
        const first = yield* Effect.promise(async () =>
          runnerProcess(url, await freePort(), workspace, { shardsPerGroup: 60 })
        )
        try {
          assert.isTrue(first.ready, first.output)
          const second = yield* Effect.promise(async () =>
            runnerProcess(url, await freePort(), workspace, { shardsPerGroup: 30 })
          )
          yield* Effect.promise(second.kill)
          assert.isFalse(second.ready, "the mismatched runner started")
          assert.include(second.output, "ClusterConfigMismatch")
          assert.include(second.output, "shardsPerGroup 30, but the cluster runs with shardsPerGroup 60")
        } finally {
          yield* Effect.promise(first.kill)
          fs.rmSync(workspace, { recursive: true, force: true })
        }
      }),
    120_000
  )
})
