// A durable session on a SQLite file: what one process staged is still pending after a restart, and is applied
// exactly once, with every transition journaled. (Postgres: `effect-resolve/postgres`, same layers.)
import { Effect, Exit, Layer, Schema, Scope } from "effect"
import {
  ActionKind,
  PendingActions,
  PendingStore,
  ResolveRuntime,
  ResolveTool,
  stageKind,
  ToolResult
} from "effect-resolve"
import { SqliteStore } from "effect-resolve/sqlite"
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"

const dir = mkdtempSync(join(tmpdir(), "durable-example-"))
const notes = join(dir, "NOTES.md")

// A durable kind: the staged action is plain data (a payload with a Schema), so a restarted process can run it.
const AppendNote = ActionKind.make({
  name: "append-note",
  payload: Schema.Struct({ line: Schema.String }),
  apply: ({ line }, call) =>
    Effect.sync(() => {
      writeFileSync(notes, `${line}\n`, { flag: "a" })
      return ToolResult.text(`Appended (${call.reason}).`)
    }),
  // After a crash during apply: was the line written? The world tells.
  recover: ({ line }) =>
    Effect.sync(() => readFileSync(notes, "utf8").split("\n").includes(line) ? "applied" as const : "pending" as const)
})

// One process: a session named "notes" on the SQLite file, with the kinds it can run.
const session = ResolveRuntime.layerDurable({ session: "notes", kinds: [AppendNote] }).pipe(
  Layer.provideMerge(SqliteStore.layer({ filename: join(dir, "pending.db") }))
)

const inProcess = <A, E>(effect: Effect.Effect<A, E, Layer.Layer.Success<typeof session>>) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    const context = yield* Layer.buildWithScope(session, scope)
    const result = yield* Effect.provide(effect, context)
    yield* Scope.close(scope, Exit.void) // the process ends (a crash would not even get here)
    return result
  })

const program = Effect.gen(function*() {
  writeFileSync(notes, "# Notes\n")

  // Process 1 stages a preview and stops before anyone resolves it.
  yield* inProcess(stageKind(AppendNote, { line: "- ship v0.2" }, {
    label: "Note: ship v0.2",
    sourceToolName: "note",
    preview: "+ - ship v0.2"
  }))

  // Process 2 opens the same session: the action is still pending, and resolving applies it once.
  yield* inProcess(Effect.gen(function*() {
    const pending = yield* PendingActions
    const [action] = yield* pending.list
    console.log(`after the restart: ${action!.label} is ${action!.status}; preview ${JSON.stringify(action!.preview)}`)
    const result = yield* ResolveTool.execute({ action: "apply", reason: "Released.", extra: null, id: null })
    console.log(ToolResult.textOf(result))
    const again = yield* Effect.flip(
      ResolveTool.execute({ action: "apply", reason: "Again.", extra: null, id: action!.id })
    )
    console.log(`again: ${again._tag}`)
    const journal = yield* Effect.flatMap(PendingStore, (store) => store.history(action!.id))
    console.log("journal:", journal.map((event) => `${event.from ?? "new"} → ${event.to}`).join(", "))
  }))

  console.log(readFileSync(notes, "utf8").trim())
})

Effect.runPromise(program).finally(() => rmSync(dir, { recursive: true, force: true }))
