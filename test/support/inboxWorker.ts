/**
 * Agent sessions in their own process, for the approval inbox's browser tests:
 * `node --import tsx test/support/inboxWorker.ts <sqlite file> <workspace root> <note log>`.
 *
 * Each command names its `session`, which the process opens on first use: a durable session on the SQLite file with
 * the kinds `edit` (the real edit producer, on the workspace root) and `note` (appends its text to the note log).
 * It prints `{"ready":true,"pid":...}`, then answers each line of stdin (a JSON command with a `tag`) with one JSON
 * line carrying the same `tag`:
 * - `{"op":"edit","path":p,"oldText":o,"newText":n}` previews an edit (nothing written); answers `{"id":...}`;
 *   `{"op":"edit","files":[{ path, edits: [{ oldText, newText }] }]}` previews an edit of several files;
 * - `{"op":"note","text":t,"label":l,"preview":p}` stages a note with that label and preview; answers `{"id":...}`;
 * - `{"op":"open"}` answers `{"actions":[[id,status],...]}`: the session's actions not yet settled, read again;
 * - `{"op":"close"}` closes the sessions and exits.
 *
 * Stdout carries these JSON lines only: what the library logs (a lease renewal the busy SQLite file refused, say)
 * goes to stderr.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import { type Context, Effect, Exit, Layer, Scope } from "effect"
import * as readline from "node:readline"
import { FileEditPreview } from "../../src/edit.js"
import { PendingActions, ResolveRuntime, stageKind, track } from "../../src/index.js"
import * as SqliteStore from "../../src/stores/SqliteStore.js"
import { noteKind } from "./inbox.js"

// Effect's default logger writes with `console.log`: to stderr here, so that a log line never breaks the protocol.
console.log = (...args: ReadonlyArray<unknown>) => console.error(...args)

const [file, root, log] = process.argv.slice(2)
if (log === undefined) {
  process.stderr.write("usage: inboxWorker.ts <sqlite file> <workspace root> <note log>\n")
  process.exit(2)
}

const Note = noteKind(log)
const scope = Effect.runSync(Scope.make())
const store = await Effect.runPromise(Layer.memoize(SqliteStore.layer({ filename: file! })).pipe(Scope.extend(scope)))
const sessionLayer = (session: string) =>
  ResolveRuntime.layerDurable({ session, kinds: [FileEditPreview.kind, Note] }).pipe(
    Layer.provideMerge(store),
    Layer.provideMerge(Layer.mergeAll(FileEditPreview.layer({ root: root! }), NodeContext.layer))
  )
type Services = Layer.Layer.Success<ReturnType<typeof sessionLayer>>
const sessions = new Map<string, Promise<Context.Context<Services>>>()
const run = <A, E>(session: string, effect: Effect.Effect<A, E, Services>) => {
  let context = sessions.get(session)
  if (context === undefined) {
    context = Effect.runPromise(Layer.buildWithScope(sessionLayer(session), scope))
    sessions.set(session, context)
  }
  return context.then((built) => Effect.runPromiseExit(Effect.provide(effect, built)))
}

const say = (message: unknown) => process.stdout.write(JSON.stringify(message) + "\n")

const handle = async (command: any): Promise<unknown> => {
  switch (command.op) {
    case "edit": {
      const exit = await run(
        command.session,
        track(FileEditPreview.tool.execute({
          files: command.files ??
            [{ path: command.path, edits: [{ oldText: command.oldText, newText: command.newText }] }]
        }))
      )
      return Exit.isSuccess(exit) ? { id: exit.value[1][0]?.id } : { error: String(exit.cause) }
    }
    case "note": {
      const exit = await run(
        command.session,
        stageKind(Note, { text: command.text }, {
          label: command.label,
          sourceToolName: "note",
          preview: command.preview
        })
      )
      return Exit.isSuccess(exit) ? { id: exit.value.id } : { error: String(exit.cause) }
    }
    case "open": {
      const exit = await run(command.session, Effect.flatMap(PendingActions, (pending) => pending.listOpen))
      return Exit.isSuccess(exit) ?
        { actions: exit.value.map((info) => [info.id, info.status]) } :
        { error: String(exit.cause) }
    }
    case "close": {
      await Effect.runPromise(Scope.close(scope, Exit.void))
      return { closed: true }
    }
    default:
      return { error: `unknown op ${JSON.stringify(command.op)}` }
  }
}

say({ ready: true, pid: process.pid })
readline.createInterface({ input: process.stdin }).on("line", (line) => {
  if (line.trim() === "") return
  const command = JSON.parse(line)
  handle(command).then(
    (answer) => {
      say({ tag: command.tag, ...(answer as object) })
      if (command.op === "close") process.exit(0)
    },
    (error) => say({ tag: command.tag, error: String(error) })
  )
})
