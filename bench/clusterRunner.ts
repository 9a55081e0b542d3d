/**
 * A runner process of the cluster bench (`bench/cluster.ts`), on the published build (`dist/`): a runner on Postgres
 * whose sessions register one durable kind, `note`, whose apply does nothing (so a decision measures the runtime, not
 * an app's work). Prints `ready` once it has joined the cluster.
 *
 *   node --import tsx bench/clusterRunner.ts <postgres url> <port> <sharding config as JSON>
 */
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Scope from "effect/Scope"
import { ScriptedModel } from "../dist/ai.js"
import { SessionAgent, SessionCluster } from "../dist/cluster.js"
import { PostgresStore } from "../dist/postgres.js"
import { Note } from "./clusterNote.js"

const [url, port, shardingText] = process.argv.slice(2) as [string, string, string]

const Agent = SessionAgent.layer({ kinds: [Note] }).pipe(Layer.provide(ScriptedModel.layer(["Nothing to do."])))
const Runner = SessionCluster.layerRunner({
  runner: { host: "127.0.0.1", port: Number(port) },
  sharding: JSON.parse(shardingText)
}).pipe(Layer.provide(Agent), Layer.provideMerge(PostgresStore.layerClient({ url })))

Effect.runPromise(Effect.gen(function*() {
  const scope = yield* Scope.make()
  yield* Layer.buildWithScope(Runner, scope)
  process.stdout.write("ready\n")
  return yield* Effect.never.pipe(Effect.ensuring(Scope.close(scope, Exit.void)))
})).catch((error) => {
  process.stdout.write(`error ${String(error)}\n`)
  process.exit(1)
})
