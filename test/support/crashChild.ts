/**
 * The process the crash test kills: a durable session (SQLite file or Postgres) over a workspace of real files. It
 * stages edits that add a unique marker line to one or two files, and resolves pending ones (apply or discard, by
 * id), in a loop, until it is killed. Every step is printed once it returned:
 *
 *   ready
 *   staged <id> <marker> <file>[,<file>]
 *   resolved <id> <applied|discarded|stale|...>
 *
 * Usage: node --import tsx test/support/crashChild.ts <sqlite|postgres> <file or url> <workspace> <seed>
 */
import { NodeContext } from "@effect/platform-node"
import { Effect, Layer } from "effect"
import { writeSync } from "node:fs"
import { FileEditPreview } from "../../src/edit.js"
import { PendingActions, ResolveRuntime, ResolveTool } from "../../src/index.js"
import { PostgresStore } from "../../src/postgres.js"
import { SqliteStore } from "../../src/sqlite.js"

const [storeKind, target, workspace, seedText] = process.argv.slice(2) as [string, string, string, string]
const files = ["a.md", "b.md", "c.md"]

// A small deterministic generator (mulberry32), so that a failing run can be replayed from its seed.
let seed = Number(seedText) >>> 0
const random = () => {
  seed = (seed + 0x6D2B79F5) >>> 0
  let t = seed
  t = Math.imul(t ^ (t >>> 15), t | 1)
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296
}

// Written synchronously: what is printed is what had happened when the process died.
const say = (line: string) => writeSync(1, `${line}\n`)

const store = storeKind === "postgres" ? PostgresStore.layer({ url: target }) : SqliteStore.layer({ filename: target })
const layer = ResolveRuntime.durable({ session: "crash", store, kinds: [FileEditPreview.kind] }).pipe(
  Layer.provideMerge(Layer.mergeAll(FileEditPreview.layer({ root: workspace }), NodeContext.layer))
)

const program = Effect.gen(function*() {
  const pending = yield* PendingActions
  say("ready")
  for (let step = 0;; step++) {
    const open = (yield* pending.list).filter((action) => action.status === "pending")
    if (open.length > 0 && random() < 0.6) {
      const action = open[Math.floor(random() * open.length)]!
      const verb = random() < 0.8 ? "apply" : "discard"
      const exit = yield* Effect.exit(
        ResolveTool.execute({ action: verb, reason: "crash test", extra: null, id: action.id })
      )
      say(`resolved ${action.id} ${exit._tag === "Success" ? (verb === "apply" ? "applied" : "discarded") : "failed"}`)
    } else {
      const marker = `m${process.pid}-${step}`
      const chosen = random() < 0.5 ? [files[step % 3]!] : [files[step % 3]!, files[(step + 1) % 3]!]
      const result = yield* Effect.either(FileEditPreview.tool.execute({
        files: chosen.map((path) => ({
          path,
          edits: [{ oldText: "markers:\n", newText: `markers:\n- ${marker}\n`, replaceAll: null }]
        }))
      }))
      if (result._tag === "Right") {
        const id = (result.right.details as { pendingActionId: string }).pendingActionId
        say(`staged ${id} ${marker} ${chosen.join(",")}`)
      }
    }
  }
})

Effect.runPromise(program.pipe(Effect.provide(layer))).catch((error) => {
  say(`error ${String(error)}`)
  process.exitCode = 1
})
