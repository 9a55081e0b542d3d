// The agent loop on @effect/ai: the app's toolkit plus the hidden `resolve` tool, one session, a scripted model
// (swap in a real provider layer: see examples/real-provider.ts).
import { Tool, Toolkit } from "@effect/ai"
import { Effect, Layer, Schema } from "effect"
import { PendingActions, PendingStoreError, ResolveConfig, stage, ToolResult } from "effect-resolve"
import { ScriptedModel, TurnDriver } from "effect-resolve/ai"

const files = new Map<string, string>()

const Edit = Tool.make("edit", {
  description: "Replace a file's content, as a preview: call resolve to apply or discard it.",
  parameters: { file: Schema.String, content: Schema.String },
  success: Schema.String,
  failure: PendingStoreError, // staging fails only when a durable store does
  dependencies: [PendingActions] // the handler stages a preview
})
const Tools = Toolkit.make(Edit)
const Handlers = Tools.toLayer({
  edit: ({ content, file }) =>
    Effect.map(
      stage({
        label: `Edit: ${file}`,
        sourceToolName: "edit",
        preview: `${file} would become: ${content}`,
        apply: () => Effect.sync(() => (files.set(file, content), ToolResult.text(`Wrote ${file}.`)))
      }),
      (handle) => `Preview (resolve id ${handle.id}): ${file} would become: ${content}`
    )
})

const program = Effect.gen(function*() {
  const driver = yield* TurnDriver
  const result = yield* driver.run("Say hello in greet.ts", { toolkit: Tools })
  console.log("answer:", result.text)
  for (const turn of result.turns) {
    console.log(
      `turn ${turn.turn}: tool_choice ${JSON.stringify(turn.toolChoice)}, calls ${
        turn.toolCalls.map((call) => call.name).join(", ") || "none"
      }`
    )
  }
  const metrics = yield* driver.metrics
  console.log(
    `requests ${metrics.turns}, forced ${metrics.forcedTurns}, tool_choice changes ${metrics.toolChoiceChanges}`
  )
  console.log("greet.ts:", files.get("greet.ts"))
})

Effect.runPromise(program.pipe(Effect.provide(Layer.mergeAll(
  TurnDriver.layer({ system: "You are a careful coding agent." }), // one session: a fresh queue, bus, pending set
  Handlers,
  ScriptedModel.layer([ // or a real @effect/ai provider layer
    ScriptedModel.toolCall("edit", { file: "greet.ts", content: "export const greet = 'hello'" }),
    ScriptedModel.toolCall("resolve", { action: "apply", reason: "Matches the request.", extra: null, id: null }),
    "Done: greet.ts says hello."
  ]),
  ResolveConfig.layer({ enforcement: "force" }) // or "soft": remind first, force only when ignored
))))
