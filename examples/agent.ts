/**
 * The agent walk-through: a complete scripted agent session on `@effect/ai` (no network, no keys). The agent
 * stages three edits as previews, applies one, survives a failing apply by retrying it, discards the third, and
 * gets distracted once. The same script then runs under `"force"` and `"soft"` enforcement, and a table compares
 * what each cost: requests, forced turns and `tool_choice` changes (each one can invalidate a prompt cache). Part 3
 * of `npm run demo`; run it alone with `npx tsx examples/agent.ts`.
 */
import type { AiError } from "@effect/ai"
import { Tool, Toolkit } from "@effect/ai"
import { NodeRuntime } from "@effect/platform-node"
import { Console, Effect, Layer, Option, Ref, Schema } from "effect"
import {
  type InvalidOptions,
  PendingActions,
  PendingStoreError,
  Preview,
  ResolveConfig,
  stage,
  ToolResult
} from "effect-resolve"
import {
  type ResolveMetrics,
  ScriptedModel,
  TurnDriver,
  type TurnDriverError,
  type TurnRecord
} from "effect-resolve/ai"
import { fileURLToPath } from "node:url"

const banner = `${"=".repeat(100)}
3. The agent loop
(the code: examples/agent.ts; examples/turn-driver.ts)
${"=".repeat(100)}`

// ---- The app's tools ------------------------------------------------------------------------------------------

const Edit = Tool.make("edit", {
  description: "Replace the content of a file. Shows a preview; call resolve to apply or discard it.",
  parameters: { file: Schema.String, content: Schema.String },
  success: Schema.String,
  failure: PendingStoreError, // staging fails only when a durable store does
  dependencies: [PendingActions]
})

const Search = Tool.make("search", {
  description: "Find usages of a symbol.",
  parameters: { query: Schema.String },
  success: Schema.String
})

const AgentTools = Toolkit.make(Edit, Search)

/** The "disk", and one write that fails the first time (the disk is full). */
const handlers = (disk: Ref.Ref<Record<string, string>>, failOnce: Ref.Ref<ReadonlySet<string>>) =>
  AgentTools.toLayer({
    edit: ({ content, file }) =>
      Effect.gen(function*() {
        const before = (yield* Ref.get(disk))[file] ?? ""
        yield* stage({
          label: `Edit: 1 file (${file})`,
          sourceToolName: "edit",
          apply: () =>
            Effect.gen(function*() {
              const failing = yield* Ref.modify(failOnce, (set) => {
                const next = new Set(set)
                return [next.delete(file), next]
              })
              if (failing) {
                return yield* Effect.fail(new Error(`(simulated) ENOSPC: no space left on device, write '${file}'`))
              }
              yield* Preview.commit(Ref.update(disk, (files) => ({ ...files, [file]: content })))
              return ToolResult.text(`Wrote ${file}.`)
            })
        })
        return `Preview of ${file}: ${JSON.stringify(before)} -> ${JSON.stringify(content)}`
      }),
    search: ({ query }) => Effect.succeed(`2 usages of ${query}`)
  })

// ---- The scripted model ---------------------------------------------------------------------------------------

type Step =
  | { readonly kind: "call"; readonly name: string; readonly params: unknown }
  | { readonly kind: "distract"; readonly name: string; readonly params: unknown }
  | { readonly kind: "text"; readonly text: string }

const plan: ReadonlyArray<Step> = [
  { kind: "call", name: "edit", params: { file: "greet.ts", content: "export const greet = 'hello'" } },
  { kind: "call", name: "resolve", params: { action: "apply", reason: "The greeting matches the request." } },
  { kind: "call", name: "edit", params: { file: "farewell.ts", content: "export const bye = 'goodbye'" } },
  { kind: "call", name: "resolve", params: { action: "apply", reason: "Add the farewell." } },
  { kind: "call", name: "resolve", params: { action: "apply", reason: "Space was freed; retry." } },
  { kind: "call", name: "edit", params: { file: "index.ts", content: "export * from './everything'" } },
  // A distracted model looks something up before resolving; a forced turn leaves it no choice.
  { kind: "distract", name: "search", params: { query: "everything" } },
  { kind: "call", name: "resolve", params: { action: "discard", reason: "Too broad; keep explicit exports." } },
  { kind: "call", name: "search", params: { query: "everything" } },
  { kind: "text", text: "Done: greet.ts and farewell.ts written, index.ts left as it was." }
]

/** The same model for every run: it follows `plan`, but honours a forced `resolve`. */
const agentScript = (): ScriptedModel.Script => {
  let step = 0
  return (request) => {
    const forced = typeof request.toolChoice === "object"
    let next = plan[step++]
    if (next?.kind === "distract" && forced) next = plan[step++]
    if (next === undefined) return ScriptedModel.text("(nothing left to do)")
    return next.kind === "text" ? ScriptedModel.text(next.text) : ScriptedModel.toolCall(next.name, next.params)
  }
}

// ---- Printing -------------------------------------------------------------------------------------------------

const show = (value: unknown): string => {
  const text = JSON.stringify(value)
  return text.length > 90 ? `${text.slice(0, 87)}...` : text
}

const resultText = (result: unknown): string => {
  if (typeof result === "string") return result
  if (typeof result === "object" && result !== null && "content" in result) {
    return ToolResult.textOf(result as ToolResult.ToolResult)
  }
  if (typeof result === "object" && result !== null && "message" in result) return String(result.message)
  return show(result)
}

const printTurn = (turn: TurnRecord) =>
  Effect.gen(function*() {
    const choice = show(turn.toolChoice)
    yield* Console.log(`#${turn.turn} tool_choice ${choice}${turn.forced ? "  (forced)" : ""}`)
    for (const message of turn.steering) yield* Console.log(`   + steering [${message.customType}]`)
    for (const call of turn.toolCalls) {
      const mark = call.outcome === "skipped" ? "skipped" : call.isFailure ? "failed" : "ok"
      yield* Console.log(`   -> ${call.name} ${show(call.params)}`)
      yield* Console.log(`      [${mark}] ${resultText(call.result)}`)
    }
    if (turn.text !== "") yield* Console.log(`   model: ${turn.text}`)
  })

// ---- One session ------------------------------------------------------------------------------------------------

interface SessionReport {
  readonly enforcement: "force" | "soft"
  readonly transcript: ReadonlyArray<TurnRecord>
  readonly metrics: ResolveMetrics.Snapshot
  readonly disk: Record<string, string>
  readonly requests: number
}

const session = (enforcement: "force" | "soft") =>
  Effect.gen(function*() {
    const disk = yield* Ref.make<Record<string, string>>({ "index.ts": "export { greet } from './greet'" })
    const failOnce = yield* Ref.make<ReadonlySet<string>>(new Set(["farewell.ts"]))
    return yield* Effect.gen(function*() {
      const driver = yield* TurnDriver
      yield* driver.run("Add greet.ts and farewell.ts, and simplify index.ts.", { toolkit: AgentTools })
      return {
        enforcement,
        transcript: yield* driver.transcript,
        metrics: yield* driver.metrics,
        disk: yield* Ref.get(disk),
        requests: (yield* ScriptedModel.requests).length
      } satisfies SessionReport
    }).pipe(
      Effect.provide(Layer.mergeAll(
        TurnDriver.layer({ system: "You are a careful coding agent.", sessionId: `agent-demo-${enforcement}` }),
        ScriptedModel.layer(agentScript()),
        handlers(disk, failOnce),
        ResolveConfig.layer({ enforcement })
      ))
    )
  })

const pad = (text: string | number, width: number) => String(text).padEnd(width)

/** What the walk-through can fail with (`InvalidOptions`: the layers' options are checked when they are built). */
type WalkthroughError = AiError.AiError | TurnDriverError | InvalidOptions

/** The walk-through: the soft session's transcript, then the force/soft comparison. */
export const agentWalkthrough: Effect.Effect<void, WalkthroughError> = Effect.gen(function*() {
  yield* Console.log(banner)
  const force = yield* session("force")
  const soft = yield* session("soft")

  yield* Console.log("\n-- Transcript (enforcement \"soft\")")
  for (const turn of soft.transcript) yield* printTurn(turn)
  yield* Console.log("\n   files after the session:")
  for (const [file, content] of Object.entries(soft.disk)) yield* Console.log(`     ${pad(file, 13)}${content}`)
  yield* Console.log(`   previews: ${show(soft.metrics.previews)}`)

  yield* Console.log("\n-- The same script under both enforcement strategies")
  const header = `   ${pad("enforcement", 13)}${pad("requests", 10)}${pad("forced turns", 14)}tool_choice changes`
  yield* Console.log(header)
  for (const report of [force, soft]) {
    yield* Console.log(
      `   ${pad(report.enforcement, 13)}${pad(report.requests, 10)}${
        pad(report.metrics.forcedTurns, 14)
      }${report.metrics.toolChoiceChanges}`
    )
  }
  const sameDisk = JSON.stringify(force.disk) === JSON.stringify(soft.disk)
  yield* Console.log(`   same files written either way: ${sameDisk ? "yes" : "NO"}`)
  const skipped = soft.transcript.flatMap((t) => t.toolCalls).filter((c) => c.outcome === "skipped").length
  yield* Console.log(`   calls skipped until a preview was resolved (soft): ${skipped}`)
  yield* Console.log(
    `   requeues (force): ${show(force.metrics.requeues)}; first forced turn (soft): #${
      Option.getOrElse(Option.fromNullable(soft.transcript.find((t) => t.forced)?.turn), () => 0)
    }`
  )
})

if (process.argv[1] === fileURLToPath(import.meta.url)) NodeRuntime.runMain(agentWalkthrough)
