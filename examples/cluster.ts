// Sessions on a cluster: two runner processes and a client, on Postgres. The client runs four sessions; the cluster
// places each on one runner. Runner A is killed (SIGKILL) mid-run: its sessions continue on runner B, and every note
// is written exactly once. Needs a Postgres server: EFFECT_RESOLVE_PG_URL=postgres://user@host:port/db.
import { Tool, Toolkit } from "@effect/ai"
import { Effect, Fiber, Layer, Schema } from "effect"
import { ActionKind, PendingActions, PendingStoreError, stageKind, ToolResult } from "effect-resolve"
import { ScriptedModel } from "effect-resolve/ai"
import { SessionAgent, SessionClient, SessionCluster } from "effect-resolve/cluster"
import { PostgresStore } from "effect-resolve/postgres"
import { type ChildProcess, spawn } from "node:child_process"
import { appendFileSync, existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs"
import { createServer } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"

const url = process.env.EFFECT_RESOLVE_PG_URL
// Every node agrees on this; the failure-detection times are seconds here (the defaults fail over in about 35 s).
const sharding = {
  shardsPerGroup: 30,
  shardLockRefreshInterval: "1 second",
  shardLockExpiration: "6 seconds",
  runnerHealthCheckInterval: "2 seconds",
  refreshAssignmentsInterval: "500 millis",
  entityMessagePollInterval: "500 millis"
} as const

// ---- A runner: `cluster.ts runner <port> <dir>` ---------------------------------------------------------------

const runner = (port: number, dir: string) => {
  // The app's durable kind: a note appended to the session's file (a restarted runner can apply it).
  const Note = ActionKind.make({
    name: "note",
    payload: Schema.Struct({ file: Schema.String, line: Schema.String }),
    apply: ({ file, line }) =>
      Effect.sync(() => (appendFileSync(join(dir, file), `${line}\n`), ToolResult.text(`Wrote ${file}.`))),
    recover: ({ file, line }) =>
      Effect.sync(() =>
        existsSync(join(dir, file)) && readFileSync(join(dir, file), "utf8").includes(line) ?
          "applied" as const :
          "pending" as const
      )
  })
  const NoteTool = Tool.make("note", {
    parameters: { file: Schema.String, line: Schema.String },
    success: Schema.String,
    failure: PendingStoreError,
    dependencies: [PendingActions]
  })
  const Tools = Toolkit.make(NoteTool)
  const handlers = Tools.toLayer({
    note: ({ file, line }) =>
      Effect.as(stageKind(Note, { file, line }, { label: `Note: ${file}`, sourceToolName: "note" }), `Preview: ${line}`)
  })
  // A scripted model (swap in a real provider): note, then (a second later) apply, then answer.
  const model = ScriptedModel.layer((request) => {
    const session = /session (\S+)\./.exec(JSON.stringify(request.prompt.content[0]))?.[1] ?? "unknown"
    const done = request.prompt.content.filter((message) => message.role === "tool").length
    if (ScriptedModel.isForced(request)) {
      const apply = ScriptedModel.toolCall("resolve", { action: "apply", reason: "Noted.", extra: null, id: null })
      return Effect.as(Effect.sleep("1 second"), apply)
    }
    return done === 0 ?
      ScriptedModel.toolCall("note", { file: `${session}.md`, line: "- release v0.3" }) :
      `Noted the release in ${session}.md.`
  })
  const Agent = SessionAgent.layer({
    system: (session) => `You keep the notes of session ${session}.`,
    toolkit: Tools,
    kinds: [Note]
  }).pipe(Layer.provide(handlers), Layer.provide(model))
  const Runner = SessionCluster.layerRunner({ runner: { host: "127.0.0.1", port }, sharding }).pipe(
    Layer.provide(Agent),
    Layer.provideMerge(PostgresStore.layerClient({ url: url! }))
  )
  Effect.runFork(Layer.launch(Layer.merge(Runner, Layer.effectDiscard(Effect.sync(() => console.log("ready"))))))
}

// ---- The client, on another node: starts the runners, runs the sessions, kills runner A -------------------------

const freePort = () =>
  new Promise<number>((resolve) => {
    const server = createServer().listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number }
      server.close(() => resolve(port))
    })
  })

const start = (name: string, port: number, dir: string) =>
  new Promise<ChildProcess>((resolve, reject) => {
    const child = spawn(process.execPath, [
      ...process.execArgv,
      fileURLToPath(import.meta.url),
      "runner",
      `${port}`,
      dir
    ])
    child.stdout!.on("data", (chunk: Buffer) => String(chunk).includes("ready\n") && resolve(child))
    child.once("exit", () => reject(new Error(`runner ${name} exited before it was ready`)))
  })

const client = Effect.gen(function*() {
  const dir = mkdtempSync(join(tmpdir(), "cluster-example-"))
  const a = yield* Effect.promise(async () => start("A", await freePort(), dir))
  const b = yield* Effect.promise(async () => start("B", await freePort(), dir))
  yield* Effect.addFinalizer(() =>
    Effect.sync(() => {
      for (const child of [a, b]) child.kill("SIGKILL")
      rmSync(dir, { recursive: true, force: true })
    })
  )
  const sessions = yield* SessionClient
  const run = Math.random().toString(36).slice(2, 8) // fresh session ids: this database may hold earlier runs
  const ids = [1, 2, 3, 4].map((n) => `demo-${run}-${n}`)
  const runs = yield* Effect.fork(
    Effect.forEach(ids, (id) => sessions.run(id, `Note the release of v0.3 in session ${id}.`), { concurrency: 4 })
  )
  yield* Effect.sleep("1500 millis")
  a.kill("SIGKILL") // mid-run: its sessions are paused, not lost
  console.log("Runner A was killed while the runs were in progress.")
  const replies = yield* Fiber.join(runs)
  replies.forEach((reply, i) => {
    const notes = readFileSync(join(dir, `${ids[i]}.md`), "utf8")
    console.log(`session ${i + 1}: ${reply.text.replace(ids[i]!, "<id>")} Notes: ${JSON.stringify(notes)}`)
  })
})

if (process.argv[2] === "runner") runner(Number(process.argv[3]), process.argv[4]!)
else if (url === undefined || url === "") {
  console.log("This example needs a Postgres server: set EFFECT_RESOLVE_PG_URL=postgres://user@host:port/db and run")
  console.log("it again. Nothing was run.")
} else {
  const Client = SessionCluster.layerClient({ sharding }).pipe(Layer.provideMerge(PostgresStore.layerClient({ url })))
  Effect.runPromise(client.pipe(Effect.scoped, Effect.provide(Client))).then(() => process.exit(0))
}
