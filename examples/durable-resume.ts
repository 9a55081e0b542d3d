// A durable session across real restarts: run this file, then run it again. Each run is a new process on the same
// SQLite file. The first run stages an action and exits without resolving it; the second finds it still pending
// and applies it; the third finds nothing pending and removes the files the example made.
//
//   npx tsx examples/durable-resume.ts [directory]     (default: effect-resolve-durable-resume in the temp directory)
import { Effect, Layer, Schema } from "effect"
import { ActionKind, PendingActions, ResolveRuntime, ResolveTool, stageKind, ToolResult } from "effect-resolve"
import { SqliteStore } from "effect-resolve/sqlite"
import { appendFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"

const dir = process.argv[2] ?? join(tmpdir(), "effect-resolve-durable-resume")
const notes = join(dir, "NOTES.md")
mkdirSync(dir, { recursive: true })

// A durable kind: the action is plain data (a payload with a Schema), so whichever process resolves it can run it.
const AppendNote = ActionKind.make({
  name: "append-note",
  payload: Schema.Struct({ line: Schema.String }),
  apply: ({ line }, call) =>
    Effect.sync(() => {
      appendFileSync(notes, `${line}\n`)
      return ToolResult.text(`Appended "${line}" to NOTES.md (${call.reason}).`)
    }),
  // A process killed in the middle of apply: the next one to open the session asks the file what happened.
  recover: ({ line }) =>
    Effect.sync(() =>
      existsSync(notes) && readFileSync(notes, "utf8").split("\n").includes(line)
        ? "applied" as const
        : "pending" as const
    )
})

// The session "notes" on a SQLite file: every process that opens it sees the same actions.
const session = ResolveRuntime.layerDurable({ session: "notes", kinds: [AppendNote] }).pipe(
  Layer.provideMerge(SqliteStore.layer({ filename: join(dir, "pending.db") }))
)

const program = Effect.gen(function*() {
  const actions = yield* (yield* PendingActions).list
  const pending = actions.filter((action) => action.status === "pending")

  if (actions.length === 0) {
    const action = yield* stageKind(AppendNote, { line: "- ship v0.2" }, {
      label: "Note: ship v0.2",
      sourceToolName: "note",
      preview: "+ - ship v0.2"
    })
    console.log(`Staged "${action.label}" in ${join(dir, "pending.db")}; it is ${yield* action.status}.`)
    console.log("This process exits without resolving it. Run this file again: the next process finds it pending.")
    return false
  }

  for (const action of pending) {
    console.log(
      `Found "${action.label}" ${action.status}, staged by an earlier process; preview ${
        JSON.stringify(action.preview)
      }`
    )
    const result = yield* ResolveTool.execute({ action: "apply", reason: "Resumed.", extra: null, id: action.id })
    console.log(ToolResult.textOf(result))
    console.log(`NOTES.md now: ${JSON.stringify(readFileSync(notes, "utf8"))}`)
  }
  if (pending.length > 0) {
    console.log("Run this file once more: nothing is pending then, and it cleans up.")
    return false
  }

  console.log(`Nothing is pending: ${actions.map((action) => `"${action.label}" is ${action.status}`).join(", ")}.`)
  return true
})

Effect.runPromise(Effect.provide(program, session)).then((done) => {
  if (!done) return
  // Only what this example made: the SQLite file (and its journal files) and NOTES.md, then the directory if empty.
  for (const name of readdirSync(dir)) {
    if (name === "NOTES.md" || name.startsWith("pending.db")) rmSync(join(dir, name), { force: true })
  }
  if (readdirSync(dir).length === 0) rmdirSync(dir)
  console.log("Removed the session's files; the next run starts over.")
})
