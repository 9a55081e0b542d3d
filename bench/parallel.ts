/**
 * Parallel tool calls (issue 18): what an N-file change costs in model requests and `tool_choice` changes when the
 * model sends its calls in parallel, for N = 1, 3, 10, under `"force"` and `"soft"`, through the turn driver with a
 * scripted model (as an app would write it). The model sends the N previews in one response, then resolves every
 * pending id it was shown in one response. The reference, measured in the same run, is the same change made one
 * call per response (a preview, then its resolve: 2N requests, what every change cost before 0.3, when the later
 * previews of a response were skipped and re-sent). Requests count those of the change, not the closing answer.
 */
import { Tool, Toolkit } from "@effect/ai"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import { ScriptedModel, TurnDriver } from "../dist/ai.js"
import { PendingActions, PendingStoreError, ResolveConfig, stage, ToolResult } from "../dist/index.js"
import type { Row } from "./harness.js"

const Edit = Tool.make("edit", {
  description: "Preview an edit of one file; call resolve to apply or discard it.",
  parameters: { file: Schema.String },
  success: Schema.String,
  failure: PendingStoreError,
  dependencies: [PendingActions]
})
const Tools = Toolkit.make(Edit)

const toolLayer = (applied: Array<string>) =>
  Tools.toLayer({
    edit: ({ file }) =>
      Effect.map(
        stage({
          label: `Edit: ${file}`,
          sourceToolName: "edit",
          apply: () => Effect.sync(() => (applied.push(file), ToolResult.text(`Wrote ${file}.`)))
        }),
        (handle) => `Preview of ${file} (pending action id: ${handle.id}); nothing is written yet.`
      )
  })

const idsIn = (request: ScriptedModel.ScriptedRequest): ReadonlyArray<string> => [
  ...new Set([...JSON.stringify(request.prompt).matchAll(/pending action id: (pa_[A-Za-z0-9_-]+)/g)].map((m) => m[1]!))
]

const resolvePart = (id: string | null) =>
  ScriptedModel.toolCallPart("resolve", { action: "apply", reason: "Right.", extra: null, id })

/** Parallel: N previews in one response, then every id shown in one response, then text. */
const parallel = (n: number): ScriptedModel.Script => (request) =>
  request.index === 0 ?
    ScriptedModel.respond(
      ...Array.from({ length: n }, (_, i) => ScriptedModel.toolCallPart("edit", { file: `f${i}` }))
    ) :
    request.index === 1 ?
    ScriptedModel.respond(...idsIn(request).map(resolvePart)) :
    ScriptedModel.text("Done.")

/** One call per response: a preview, then its resolve, N times, then text. */
const oneByOne = (n: number): ScriptedModel.Script => (request) =>
  request.index >= 2 * n ?
    ScriptedModel.text("Done.") :
    request.index % 2 === 0 ?
    ScriptedModel.toolCall("edit", { file: `f${request.index / 2}` }) :
    ScriptedModel.respond(resolvePart(null))

interface Change {
  readonly requests: number
  readonly toolChoiceChanges: number
}

const change = (script: ScriptedModel.Script, n: number, enforcement: "force" | "soft"): Promise<Change> => {
  const applied: Array<string> = []
  return Effect.runPromise(
    Effect.gen(function*() {
      const driver = yield* TurnDriver
      yield* driver.run(`Change ${n} files.`, { toolkit: Tools, maxTurns: 4 * n + 10 })
      if (applied.length !== n) return yield* Effect.dieMessage(`${applied.length} of ${n} files written`)
      const requests = (yield* ScriptedModel.requests).length - 1 // the closing answer is not the change's
      return { requests, toolChoiceChanges: (yield* driver.metrics).toolChoiceChanges }
    }).pipe(Effect.provide(Layer.mergeAll(
      TurnDriver.layer(),
      ScriptedModel.layer(script),
      toolLayer(applied),
      ResolveConfig.layer({ enforcement })
    )))
  )
}

/** The rows: per N and enforcement, requests and tool_choice changes of the change, against one call per response. */
export const parallelFigures = async (): Promise<
  { readonly rows: ReadonlyArray<Row>; readonly missed: Array<string> }
> => {
  const rows: Array<Row> = []
  const missed: Array<string> = []
  for (const enforcement of ["force", "soft"] as const) {
    for (const n of [1, 3, 10]) {
      const p = await change(parallel(n), n, enforcement)
      const one = await change(oneByOne(n), n, enforcement)
      const ok = p.requests === 2
      if (!ok) missed.push(`parallel N=${n} ${enforcement}`)
      rows.push({
        name: `parallel N=${n}, ${enforcement}`,
        figure: `a ${n}-file change, "${enforcement}", the model's calls in parallel: ${p.requests} model requests ` +
          `and ${p.toolChoiceChanges} tool_choice changes (closing answer excluded from requests; changes counted ` +
          `over the run); one call per response: ${one.requests} requests, ${one.toolChoiceChanges} changes`,
        value: `${p.requests} req`,
        floor: `${one.requests} req (one call per response)`,
        plain: "—",
        vsFloor: `${(p.requests / one.requests).toFixed(2)}×`,
        vsPlain: "—",
        target: `2 requests for every N: ${ok ? "ok" : "MISSED"}`
      })
    }
  }
  return { rows, missed }
}
