/**
 * Scripted agent-session figures: one session of N previews (1 000 in a full run) through the turn driver, under
 * `"force"` and `"soft"` enforcement, written as an app would write it (one `driver.run` with the app's toolkit on
 * `TurnDriver.layer` + `ScriptedModel.layer`). The model is a function of the request: it stages a preview with a
 * small in-memory tool, then resolves it (`apply`) on the next turn — the same behaviour under both strategies, so
 * the rows differ only by what the enforcement costs. Per preview: model requests, forced turns and `tool_choice`
 * changes (from `driver.metrics`; each change can invalidate a provider's prompt cache), and wall time.
 */
import { Tool, Toolkit } from "@effect/ai"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import { performance } from "node:perf_hooks"
import { ScriptedModel, TurnDriver } from "../dist/ai.js"
import { PendingActions, PendingStoreError, ResolveConfig, stage, ToolResult } from "../dist/index.js"
import { median, type Row } from "./harness.js"

const Stage = Tool.make("stage", {
  description: "Stage change n as a preview; call resolve to apply or discard it.",
  parameters: { n: Schema.Number },
  success: Schema.String,
  failure: PendingStoreError,
  dependencies: [PendingActions]
})

const Tools = Toolkit.make(Stage)

/** The in-memory tool: a preview is a pending action whose apply records `n`. */
const toolLayer = (applied: Array<number>) =>
  Tools.toLayer({
    stage: ({ n }) =>
      Effect.as(
        stage({
          label: `Change ${n}`,
          sourceToolName: "stage",
          apply: () => Effect.sync(() => (applied.push(n), ToolResult.text(`Applied change ${n}.`)))
        }),
        `Preview of change ${n}: nothing is written yet.`
      )
  })

/**
 * The model: stages preview n, then resolves it on the next request (forced or not), `previews` times, then
 * answers with text.
 */
const script = (previews: number): ScriptedModel.Script => {
  let staged = 0
  let pending = false
  return (request) => {
    const choice = request.toolChoice
    const forcedResolve = typeof choice === "object" && "tool" in choice && choice.tool === "resolve"
    if (pending || forcedResolve) {
      pending = false
      return ScriptedModel.toolCall("resolve", { action: "apply", reason: `Change ${staged} is right.` })
    }
    if (staged === previews) return ScriptedModel.text(`Done: ${previews} changes applied.`)
    pending = true
    return ScriptedModel.toolCall("stage", { n: ++staged })
  }
}

interface SessionRun {
  readonly ms: number
  readonly requests: number
  readonly forcedTurns: number
  readonly toolChoiceChanges: number
  readonly applied: number
}

let sessions = 0

/** One session of `previews` previews under `enforcement`, timed from building the layer to the end of the run. */
const session = (enforcement: "force" | "soft", previews: number): Promise<SessionRun> => {
  const applied: Array<number> = []
  const program = Effect.gen(function*() {
    const driver = yield* TurnDriver
    yield* driver.run(`Make ${previews} changes, one preview at a time.`, {
      toolkit: Tools,
      maxTurns: 3 * previews + 10
    })
    const metrics = yield* driver.metrics
    const requests = (yield* ScriptedModel.requests).length
    return { requests, forcedTurns: metrics.forcedTurns, toolChoiceChanges: metrics.toolChoiceChanges }
  }).pipe(
    Effect.provide(Layer.mergeAll(
      TurnDriver.layer({ system: "You are a careful agent.", sessionId: `bench-${enforcement}-${++sessions}` }),
      ScriptedModel.layer(script(previews)),
      toolLayer(applied),
      ResolveConfig.layer({ enforcement })
    ))
  )
  const t0 = performance.now()
  return Effect.runPromise(program).then((figures) => ({
    ...figures,
    ms: performance.now() - t0,
    applied: applied.length
  }))
}

const perPreview = (value: number, previews: number) => (value / previews).toFixed(2)

/**
 * The session rows: one per enforcement strategy (time per preview; requests, forced turns and `tool_choice`
 * changes per preview), measured interleaved, `repeats` times each (at most 5: a session is long).
 */
export const sessionFigures = async (previews: number, repeats: number): Promise<ReadonlyArray<Row>> => {
  const runs = Math.max(1, Math.min(repeats, 3))
  const samples = { force: [] as Array<SessionRun>, soft: [] as Array<SessionRun> }
  await session("force", Math.min(previews, 50)) // warm-up
  await session("soft", Math.min(previews, 50))
  for (let r = 0; r < runs; r++) {
    for (const enforcement of ["force", "soft"] as const) {
      const run = await session(enforcement, previews)
      if (run.applied !== previews) throw new Error(`${enforcement}: ${run.applied} of ${previews} previews applied`)
      samples[enforcement].push(run)
    }
  }
  const timeOf = (enforcement: "force" | "soft") =>
    median(samples[enforcement].map((run) => (run.ms * 1000) / previews))
  return (["force", "soft"] as const).map((enforcement): Row => {
    const run = samples[enforcement][0]!
    const time = timeOf(enforcement)
    return {
      name: `agent session, ${enforcement}`,
      figure: `agent session "${enforcement}", ${previews} previews: time per preview (per preview: ${
        perPreview(run.requests, previews)
      } requests, ${perPreview(run.forcedTurns, previews)} forced turns, ${
        perPreview(run.toolChoiceChanges, previews)
      } tool_choice changes)`,
      value: `${time < 10 ? time.toFixed(3) : time.toFixed(1)} µs`,
      floor: "—",
      plain: "—",
      vsFloor: "—",
      vsPlain: "—",
      target: enforcement === "force" ?
        "for information" :
        `for information (${(time / timeOf("force")).toFixed(2)}× the "force" session's time)`
    }
  })
}
