/**
 * A runner of the cluster test (test/cluster/ClusterSessions.test.ts): a real process that joins a cluster on
 * Postgres (`SessionCluster.layerRunner`, runners over sockets) and runs the sessions of the shards it holds, with a
 * scripted model that stages and resolves edits of real files (`FileEditPreview`). It is SIGKILLed at random moments
 * and restarted on the same address.
 *
 *   node --import tsx test/support/clusterRunner.ts <postgres url> <port> <workspace> <sharding config as JSON>
 *
 * It prints `ready` once it has joined, then, synchronously (what is printed had happened when it died):
 *
 *   staged <session> <action id> <marker> <file>[,<file>]
 *
 * The model of session `s` (its system prompt names it) edits the files `<s>-a.md` and `<s>-b.md`, adding a
 * unique marker line to one or both, `EDITS` times per run (counted from the run's prompt in the conversation, so a
 * resumed run that lost a turn stages one more, never fewer), resolving each preview when the request forces
 * `resolve`: every fourth one is discarded, and every third waits a second before answering, leaving a person
 * (the test's client) time to decide it first. Then it answers "Done.".
 */
import { Tool, Toolkit } from "@effect/ai"
import type * as Prompt from "@effect/ai/Prompt"
import { FileSystem, Path } from "@effect/platform"
import { NodeContext } from "@effect/platform-node"
import { Effect, Exit, Layer, Logger, LogLevel, Schema, Scope } from "effect"
import { writeSync } from "node:fs"
import { ScriptedModel } from "../../src/ai.js"
import { SessionAgent, SessionCluster } from "../../src/cluster.js"
import { FileEditPreview } from "../../src/edit.js"
import { PendingActions, ResolveConfig, ToolResult } from "../../src/index.js"
import { PostgresStore } from "../../src/postgres.js"

const [url, portText, workspace, shardingText] = process.argv.slice(2) as [string, string, string, string]
const sharding = JSON.parse(shardingText) as Record<string, unknown>

/** Edits per run. */
export const EDITS = 3
// Every third resolve waits this long, so that the client on another node, sweeping all 50 sessions (slowly, on a
// loaded machine), finds some actions still pending and decides them itself.
const decideDelayMs = 3_000

const say = (line: string) => writeSync(1, `${line}\n`)

/** The files of a session's `n`-th edit (0-based): one file, or both. */
export const filesOf = (session: string, n: number): ReadonlyArray<string> =>
  n % 2 === 0 ? [`${session}-a.md`] : [`${session}-a.md`, `${session}-b.md`]

const Edit = Tool.make("edit", {
  description: "Add a marker line to files, as a preview: call resolve to apply or discard it.",
  parameters: { files: Schema.Array(Schema.String), marker: Schema.String },
  success: Schema.String,
  failure: Schema.String,
  dependencies: [PendingActions, FileEditPreview.Workspace, FileSystem.FileSystem, Path.Path]
})
const Tools = Toolkit.make(Edit)

const Handlers = Tools.toLayer({
  edit: ({ files, marker }) =>
    Effect.gen(function*() {
      const pending = yield* PendingActions
      const params = yield* FileEditPreview.decodeEditParams({
        files: files.map((path) => ({
          path,
          edits: [{ oldText: "markers:\n", newText: `markers:\n- ${marker}\n`, replaceAll: null }]
        }))
      })
      const result = yield* FileEditPreview.preview(params)
      const id = (result.details as { readonly pendingActionId: string }).pendingActionId
      say(`staged ${pending.session} ${id} ${marker} ${files.join(",")}`)
      return ToolResult.textOf(result)
    }).pipe(Effect.mapError((error) => error.message))
})

const textOf = (message: Prompt.Message): string =>
  message.role === "system" ?
    message.content :
    message.role === "user" || message.role === "assistant" ?
    message.content.flatMap((part) => part.type === "text" ? [part.text] : []).join("") :
    ""

/** The edits staged since the run's prompt (its last message that starts with "Session "). */
const stagedSinceRun = (prompt: Prompt.Prompt): number => {
  const messages = prompt.content
  let start = 0
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = messages[i]!
    if (message.role === "user" && textOf(message).startsWith("Session ")) {
      start = i
      break
    }
  }
  let staged = 0
  for (const message of messages.slice(start)) {
    if (message.role !== "tool") continue
    for (const part of message.content) {
      if (part.type === "tool-result" && part.name === "edit" && !part.isFailure) staged++
    }
  }
  return staged
}

let markers = 0

const script = (request: ScriptedModel.ScriptedRequest): ScriptedModel.ScriptedStep => {
  const system = request.prompt.content.find((message) => message.role === "system")
  const session = /session (\S+)\./.exec(system === undefined ? "" : textOf(system))?.[1] ?? "unknown"
  const staged = stagedSinceRun(request.prompt)
  if (ScriptedModel.isForced(request)) {
    const n = staged - 1
    const answer = ScriptedModel.toolCall("resolve", {
      action: n % 4 === 3 ? "discard" : "apply",
      reason: "As asked.",
      extra: null,
      id: null
    })
    return n % 3 === 1 ? Effect.as(Effect.sleep(decideDelayMs), answer) : answer
  }
  if (staged < EDITS) {
    return ScriptedModel.toolCall("edit", {
      files: filesOf(session, staged),
      marker: `${session}-${process.pid}-${++markers}`
    })
  }
  return "Done."
}

const Agent = SessionAgent.layer({
  system: (session) => `You edit the files of session ${session}.`,
  toolkit: Tools,
  kinds: [FileEditPreview.kind],
  maxTurns: 60
}).pipe(
  Layer.provide(Handlers),
  Layer.provide(ScriptedModel.layer(script)),
  // A lock file a killed runner left is taken over after 3 s (the default, 30 s, would stall a resumed session).
  Layer.provide(FileEditPreview.layer({ root: workspace, lockStaleAfter: "3 seconds", lockTimeout: "8 seconds" })),
  Layer.provide(NodeContext.layer),
  Layer.provide(ResolveConfig.layer({ maxForcedTurns: 5 }))
)

const Runner = SessionCluster.layerRunner({
  runner: { host: "127.0.0.1", port: Number(portText) },
  sharding,
  entity: { logSaves: true }
}).pipe(
  Layer.provide(Agent),
  Layer.provideMerge(PostgresStore.layerClient({ url, maxConnections: 6 }))
)

// CLUSTER_RUNNER_DEBUG=1: the cluster's debug logs too (shard assignments, releases, lock retries).
const minimum = process.env.CLUSTER_RUNNER_DEBUG === "1" ? LogLevel.Debug : LogLevel.Info

Effect.runPromise(
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    yield* Layer.buildWithScope(Runner, scope)
    say("ready")
    return yield* Effect.never.pipe(Effect.ensuring(Scope.close(scope, Exit.void)))
  }).pipe(Logger.withMinimumLogLevel(minimum))
).catch((error) => {
  say(`error ${String(error)}`)
  process.exit(1)
})
