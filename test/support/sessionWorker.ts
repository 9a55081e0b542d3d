/**
 * A process that opens a durable session, for the shared-session tests:
 * `node --import tsx test/support/sessionWorker.ts <sqlite|postgres> <file|url> <session> <kinds> <leaseMs> <log>`.
 *
 * `kinds` is a comma-separated list of the kinds it registers (`note`, `slow`, or `-` for none). `note` appends
 * `<text> <pid>` to the file `log`; `slow` does the same once the file `gate` exists (its apply runs until the
 * test opens the gate). It prints `{"ready":true,"pid":...}` once the session is open, then answers every line of stdin (a JSON
 * command with a `tag`) with one JSON line carrying the same `tag`. Commands run concurrently:
 * - `{"op":"closure","text":t}` stages a closure that appends `t` to `log`; answers `{"id":...}`;
 * - `{"op":"kind","kind":"note"|"slow","text":t,"gate"?:path}` stages an action of that kind; answers `{"id":...}`;
 * - `{"op":"list"}` answers `{"actions":[[id,status,runnable],...]}`;
 * - `{"op":"resolve","id":id,"action":"apply"|"discard"}` answers `{"text":...}` or `{"error":tag,"status"?:s}`;
 * - `{"op":"close"}` closes the session (its lease is released) and exits.
 */
import { Effect, Exit, Layer, Schema, Scope } from "effect"
import * as fs from "node:fs"
import * as readline from "node:readline"
import {
  ActionKind,
  PendingActions,
  ResolveRuntime,
  ResolveTool,
  stage,
  stageKind,
  ToolResult
} from "../../src/index.js"

const [storeKind, target, session, kindList, leaseText, log] = process.argv.slice(2)
if ((storeKind !== "sqlite" && storeKind !== "postgres") || log === undefined) {
  process.stderr.write("usage: sessionWorker.ts <sqlite|postgres> <file|url> <session> <kinds> <leaseMs> <log>\n")
  process.exit(2)
}

const append = (text: string) => Effect.sync(() => fs.appendFileSync(log, `${text} ${process.pid}\n`))

const Note = ActionKind.make({
  name: "note",
  payload: Schema.Struct({ text: Schema.String }),
  apply: ({ text }) => Effect.as(append(text), ToolResult.text(`noted ${text}`))
})

// A long apply: it waits (without blocking the event loop) until the test creates the gate file.
const waitFor = (gate: string): Effect.Effect<void> =>
  Effect.suspend(() => fs.existsSync(gate) ? Effect.void : Effect.zipRight(Effect.sleep(50), waitFor(gate)))

const Slow = ActionKind.make({
  name: "slow",
  payload: Schema.Struct({ text: Schema.String, gate: Schema.String }),
  apply: ({ gate, text }) => Effect.as(Effect.zipRight(waitFor(gate), append(text)), ToolResult.text(`slow ${text}`)),
  recover: ({ text }) =>
    Effect.sync(() =>
      fs.existsSync(log) && fs.readFileSync(log, "utf8").split("\n").some((line) => line.startsWith(`${text} `)) ?
        "applied" as const :
        "pending" as const
    )
})

const kinds = kindList === "-" ? [] : kindList!.split(",").map((name) => name === "note" ? Note : Slow)

const store = storeKind === "sqlite" ?
  (await import("../../src/stores/SqliteStore.js")).layer({ filename: target! }) :
  (await import("../../src/stores/PostgresStore.js")).layer({ url: target! })

const scope = Effect.runSync(Scope.make())
const context = await Effect.runPromise(Layer.buildWithScope(
  ResolveRuntime.durable({ session: session!, store, kinds, lease: Number(leaseText) }),
  scope
))
const run = <A, E>(effect: Effect.Effect<A, E, ResolveRuntime.Services>) =>
  Effect.runPromiseExit(Effect.provide(effect, context))

const say = (message: unknown) => process.stdout.write(JSON.stringify(message) + "\n")

const handle = async (command: any): Promise<unknown> => {
  switch (command.op) {
    case "closure": {
      const exit = await run(stage({
        label: `Closure: ${command.text}`,
        sourceToolName: "edit",
        apply: () => Effect.as(append(command.text), ToolResult.text(`closure ${command.text}`))
      }))
      return Exit.isSuccess(exit) ? { id: exit.value.id } : { error: String(exit.cause) }
    }
    case "kind": {
      const exit = command.kind === "slow" ?
        await run(stageKind(Slow, { text: command.text, gate: command.gate ?? "" }, {
          label: `Slow: ${command.text}`,
          sourceToolName: "slow"
        })) :
        await run(stageKind(Note, { text: command.text }, { label: `Note: ${command.text}`, sourceToolName: "note" }))
      return Exit.isSuccess(exit) ? { id: exit.value.id } : { error: String(exit.cause) }
    }
    case "list": {
      const exit = await run(Effect.flatMap(PendingActions, (pending) => pending.list))
      return Exit.isSuccess(exit) ?
        { actions: exit.value.map((info) => [info.id, info.status, info.runnable]) } :
        { error: String(exit.cause) }
    }
    case "resolve": {
      const exit = await run(
        ResolveTool.execute({ action: command.action, reason: "test", extra: null, id: command.id })
      )
      if (Exit.isSuccess(exit)) return { text: ToolResult.textOf(exit.value) }
      const failure = exit.cause._tag === "Fail" ? exit.cause.error as { _tag: string; status?: string } : undefined
      return failure === undefined ?
        { error: String(exit.cause) } :
        { error: failure._tag, ...(failure.status === undefined ? {} : { status: failure.status }) }
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
const input = readline.createInterface({ input: process.stdin })
input.on("line", (line) => {
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
