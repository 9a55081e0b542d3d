/**
 * A runner of the cluster test (test/cluster/ClusterSessions.test.ts): a real process that joins a cluster on
 * Postgres (`SessionCluster.layerRunner`, runners over sockets) and runs the sessions of the shards it holds, with a
 * scripted model that stages and resolves edits of real files (`FileEditPreview`). It is SIGKILLed at random moments
 * and restarted on the same address.
 *
 *   node --import tsx test/support/clusterRunner.ts <postgres url> <port> <workspace> <sharding config as JSON>
 *     [<options as JSON>]
 *
 * It prints `ready` once it has joined, then, synchronously (what is printed had happened when it died):
 *
 *   staged <session> <action id> <marker> <file>[,<file>]
 *
 * Its connections to Postgres carry the application name `effect-resolve-runner-<pid>` (`pg_stat_activity`), so a
 * test can find and terminate them. The options (`RunnerOptions`) set the sessions' lease, the model's delay before
 * a late resolve, and an event log: a file to which it appends, as JSON lines (`RunnerEvent`, written synchronously,
 * with `process.hrtime` times in milliseconds: one monotonic clock for every process of the host), every
 * acquisition of a session, every model request, every write to the store and every change to a file, each with the
 * owner epoch it was made under (test/cluster/PausedRunner.test.ts checks from it that a paused runner does nothing
 * once another owns its sessions).
 *
 * The model of session `s` (its system prompt names it) edits the files `<s>-a.md` and `<s>-b.md`, adding a
 * unique marker line to one or both, `EDITS` times per run (counted from the run's prompt in the conversation, so a
 * resumed run that lost a turn stages one more, never fewer), resolving each preview when the request forces
 * `resolve`: every fourth one is discarded (and one whose apply found it stale), and every third waits a few seconds
 * before answering, leaving a person (the test's client) time to decide it first. Then it answers "Done.".
 */
import { Tool, Toolkit } from "@effect/ai"
import type * as Prompt from "@effect/ai/Prompt"
import { FileSystem, Path } from "@effect/platform"
import { NodeContext } from "@effect/platform-node"
import { Context, type Duration, Effect, Exit, Layer, Logger, LogLevel, Option, Schema, Scope } from "effect"
import { openSync, writeSync } from "node:fs"
import { ScriptedModel } from "../../src/ai.js"
import { SessionAgent, SessionCluster } from "../../src/cluster.js"
import { FileEditPreview } from "../../src/edit.js"
import { PendingActions, PendingStore, ResolveConfig, SessionOwnership, ToolResult } from "../../src/index.js"
import { PostgresStore } from "../../src/postgres.js"
import { fencedWrites } from "../../src/services/internal/pendingStore.js"
import type { RunnerEvent, RunnerOptions } from "./clusterHarness.js"

const [url, portText, workspace, shardingText, optionsText] = process.argv.slice(2) as [
  string,
  string,
  string,
  string,
  string | undefined
]
const sharding = JSON.parse(shardingText) as Record<string, unknown>
const options = (optionsText === undefined ? {} : JSON.parse(optionsText)) as RunnerOptions

/** Edits per run. */
export const EDITS = 3
// Every third resolve waits this long, so that the client on another node, sweeping all 50 sessions (slowly, on a
// loaded machine), finds some actions still pending and decides them itself.
const decideDelayMs = options.decideDelayMs ?? 3_000

const say = (line: string) => writeSync(1, `${line}\n`)

// ---- The event log (options.events) -----------------------------------------------------------------------------

const eventsFd = options.events === undefined ? undefined : openSync(options.events, "a")
/** `process.hrtime` in milliseconds: monotonic, and the same clock in every process of the host. */
const now = () => Number(process.hrtime.bigint()) / 1e6
const event = (line: RunnerEvent) => {
  if (eventsFd !== undefined) writeSync(eventsFd, `${JSON.stringify(line)}\n`)
}
// Woken from a pause (SIGCONT): logged once the step that was running when the process was stopped has finished.
process.on("SIGCONT", () => event({ e: "woke", t: now() }))

/** The owner epoch of the session whose fiber this runs in (`null` outside an exclusive session's code). */
const currentEpoch = Effect.map(
  Effect.zip(Effect.serviceOption(SessionOwnership), Effect.serviceOption(PendingActions)),
  ([ownership, pending]) =>
    Option.getOrNull(
      Option.map(Option.orElse(ownership, () => Option.flatMap(pending, (p) => p.ownership)), (o) => o.epoch)
    )
)

/** The store (of every session), logging every acquisition and every write (with its fence's session and epoch, and its outcome). */
const loggedStore = (store: PendingStore.Service, fence?: PendingStore.Fence): PendingStore.Service => {
  const logged: Record<string, unknown> = { ...store }
  for (const op of fencedWrites) {
    const write = store[op] as (...args: ReadonlyArray<unknown>) => Effect.Effect<unknown, unknown>
    logged[op] = (...args: ReadonlyArray<unknown>) =>
      Effect.suspend(() => {
        const t0 = now()
        return Effect.onExit(write(...args), (exit) =>
          Effect.sync(() =>
            event({
              e: "write",
              op,
              s: fence?.session ?? null,
              epoch: fence?.epoch ?? null,
              t0,
              t1: now(),
              ok: Exit.isSuccess(exit),
              result: Exit.isSuccess(exit) && typeof exit.value !== "object" ? exit.value as number | boolean : null,
              reason: Exit.isFailure(exit) ? refusalOf(exit.cause) : null,
              ...concerns(args[0])
            })
          ))
      })
  }
  logged.acquire = (input: PendingStore.AcquireInput) =>
    Effect.suspend(() => {
      const t0 = now()
      return Effect.tap(store.acquire(input), (epoch) =>
        Effect.sync(() => event({ e: "acquire", s: input.session, epoch, owner: input.owner, t0, t1: now() })))
    })
  logged.fenced = (next: PendingStore.Fence) => loggedStore(store.fenced(next), next)
  return PendingStore.of(logged as unknown as PendingStore.Service)
}

/** The action a write's input names, and the status it moves it to (what a failure's report needs). */
const concerns = (input: unknown): { readonly id: string | null; readonly to: string | null } => {
  const fields = typeof input === "object" && input !== null ? input as Record<string, unknown> : {}
  return {
    id: typeof fields.id === "string" ? fields.id : null,
    to: typeof fields.to === "string" ? fields.to : null
  }
}

/** Why a write failed: a store error's `reason` (`fenced`, `leaseLapsed`) or its tag. */
const refusalOf = (cause: unknown): string => {
  const error = (cause as { readonly _tag?: string; readonly error?: unknown }).error as
    | { readonly reason?: unknown; readonly _tag?: unknown }
    | undefined
  return typeof error?.reason === "string" ? error.reason : String(error?._tag ?? "defect")
}

const LoggedStore = Layer.effect(PendingStore, Effect.map(PendingStore, (store) => loggedStore(store)))

/** The file system, logging every call that changes a file (its paths, its outcome, the epoch it ran under). */
const loggedFileSystem = (fs: FileSystem.FileSystem): FileSystem.FileSystem => {
  const logged: Record<string, unknown> = { ...fs }
  const changes = [
    "chmod",
    "chown",
    "copy",
    "copyFile",
    "link",
    "makeDirectory",
    "remove",
    "rename",
    "symlink",
    "truncate",
    "utimes",
    "writeFile",
    "writeFileString"
  ] as const
  for (const op of changes) {
    const call = fs[op] as (...args: ReadonlyArray<unknown>) => Effect.Effect<unknown, unknown>
    logged[op] = (...args: ReadonlyArray<unknown>) =>
      Effect.flatMap(currentEpoch, (epoch) => {
        const t0 = now()
        return Effect.onExit(call(...args), (exit) =>
          Effect.sync(() =>
            event({
              e: "fs",
              op,
              path: String(args[0]),
              to: op === "rename" || op === "copy" || op === "copyFile" || op === "link" || op === "symlink" ?
                String(args[1]) :
                null,
              epoch,
              t0,
              t1: now(),
              ok: Exit.isSuccess(exit)
            })
          ))
      })
  }
  const open = fs.open
  logged.open = (path: string, openOptions?: FileSystem.OpenFileOptions) =>
    openOptions?.flag === undefined || openOptions.flag.startsWith("r") && !openOptions.flag.includes("+") ?
      open(path, openOptions) :
      Effect.flatMap(currentEpoch, (epoch) => {
        const t0 = now()
        return Effect.onExit(
          open(path, openOptions),
          (exit) =>
            Effect.sync(() =>
              event({ e: "fs", op: "open", path, to: null, epoch, t0, t1: now(), ok: Exit.isSuccess(exit) })
            )
        )
      })
  return FileSystem.FileSystem.of(logged as unknown as FileSystem.FileSystem)
}

/** Node's context, its file system logged. */
const Platform = Layer.effectContext(Effect.map(
  Effect.context<NodeContext.NodeContext>(),
  (context) =>
    Context.add(context, FileSystem.FileSystem, loggedFileSystem(Context.get(context, FileSystem.FileSystem)))
)).pipe(Layer.provide(NodeContext.layer))

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
      event({ e: "staged", s: pending.session, id, marker, files, t: now() })
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

/** Whether the conversation's last tool result is a `resolve` that found its preview stale. */
const lastResolveFoundStale = (prompt: Prompt.Prompt): boolean => {
  const last = [...prompt.content].reverse().find((message) => message.role === "tool")
  return last !== undefined && last.role === "tool" &&
    last.content.some((part) =>
      part.type === "tool-result" && part.name === "resolve" && JSON.stringify(part.result).includes("Preview is stale")
    )
}

/** The script, logging each request (its session, and the epoch of the run that sent it) as it is answered. */
const loggedScript = (request: ScriptedModel.ScriptedRequest): ScriptedModel.ScriptedStep => {
  const t = now()
  const step = script(request)
  if (eventsFd === undefined) return step
  return Effect.flatMap(currentEpoch, (epoch) => {
    event({ e: "request", s: sessionOf(request), epoch, t })
    return Effect.isEffect(step) ? step : Effect.succeed(step)
  })
}

const sessionOf = (request: ScriptedModel.ScriptedRequest): string => {
  const system = request.prompt.content.find((message) => message.role === "system")
  return /session (\S+)\./.exec(system === undefined ? "" : textOf(system))?.[1] ?? "unknown"
}

const script = (request: ScriptedModel.ScriptedRequest): ScriptedModel.ScriptedStep => {
  const session = sessionOf(request)
  const staged = stagedSinceRun(request.prompt)
  if (ScriptedModel.isForced(request)) {
    const n = staged - 1
    const answer = ScriptedModel.toolCall("resolve", {
      // As the tool asks: a preview whose files changed since (another preview applied first) is discarded.
      action: n % 4 === 3 || lastResolveFoundStale(request.prompt) ? "discard" : "apply",
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
  maxTurns: 60,
  ...(options.lease === undefined ? {} : { lease: options.lease as Duration.DurationInput })
}).pipe(
  Layer.provide(Handlers),
  Layer.provide(ScriptedModel.layer(loggedScript)),
  // A lock file a killed runner left is taken over after 3 s (the default, 30 s, would stall a resumed session).
  Layer.provide(FileEditPreview.layer({ root: workspace, lockStaleAfter: "3 seconds", lockTimeout: "8 seconds" })),
  Layer.provide(Platform),
  Layer.provide(ResolveConfig.layer({ maxForcedTurns: 5 }))
)

const Runner = SessionCluster.layerRunner({
  runner: { host: "127.0.0.1", port: Number(portText) },
  sharding,
  entity: { logSaves: true }
}).pipe(
  Layer.provide(Agent),
  Layer.provide(LoggedStore),
  Layer.provideMerge(
    PostgresStore.layerClient({ url, maxConnections: 6, applicationName: `effect-resolve-runner-${process.pid}` })
  )
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
