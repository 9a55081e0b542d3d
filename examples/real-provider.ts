// The turn driver on a real provider: OpenAI (the Responses API) or Anthropic (the Messages API, with extended
// thinking, which refuses a forced tool_choice). Run it with a key:
//   OPENAI_API_KEY=... npx tsx examples/real-provider.ts openai
//   ANTHROPIC_API_KEY=... npx tsx examples/real-provider.ts anthropic
// OPENAI_API_URL / ANTHROPIC_API_URL point the client elsewhere (a gateway; the tests' local emulator).
import { Tool, Toolkit } from "@effect/ai"
import { AnthropicClient, AnthropicLanguageModel } from "@effect/ai-anthropic"
import { OpenAiClient, OpenAiLanguageModel } from "@effect/ai-openai"
import { FetchHttpClient } from "@effect/platform"
import { Config, Effect, Layer, Schema } from "effect"
import { PendingActions, PendingStoreError, ResolveConfig, stage, ToolResult } from "effect-resolve"
import { ProviderToolChoice, TurnDriver } from "effect-resolve/ai"

// OpenAI: strict function calling is the client's default; every schema effect-resolve sends is strict.
const OpenAi = OpenAiLanguageModel.layer({ model: "gpt-4.1" }).pipe(
  Layer.provide(OpenAiClient.layerConfig({
    apiKey: Config.redacted("OPENAI_API_KEY"),
    apiUrl: Config.option(Config.string("OPENAI_API_URL")).pipe(
      Config.map((url) => url._tag === "Some" ? url.value : undefined)
    )
  })),
  Layer.provide(FetchHttpClient.layer)
)

// Anthropic with extended thinking: declaring what it cannot force starts the session on the soft path (without
// it, the driver learns it from the first refusal and forces less from then on).
const Anthropic = Layer.merge(
  AnthropicLanguageModel.layer({
    model: "claude-sonnet-4-5",
    config: { max_tokens: 8192, thinking: { type: "enabled", budget_tokens: 2048 } }
  }).pipe(
    Layer.provide(AnthropicClient.layerConfig({
      apiKey: Config.redacted("ANTHROPIC_API_KEY"),
      apiUrl: Config.option(Config.string("ANTHROPIC_API_URL")).pipe(
        Config.map((url) => url._tag === "Some" ? url.value : undefined)
      )
    })),
    Layer.provide(FetchHttpClient.layer)
  ),
  ResolveConfig.layer({ modelCapabilities: ProviderToolChoice.anthropicExtendedThinking })
)

// The app's tool: `edit` stages a preview; the model applies or discards it with `resolve`.
const files = new Map<string, string>()
const Edit = Tool.make("edit", {
  description: "Replace the content of a file. Shows a preview; call resolve to apply or discard it.",
  parameters: { file: Schema.String, content: Schema.String },
  success: Schema.String,
  failure: PendingStoreError, // staging fails only when a durable store does
  dependencies: [PendingActions]
})
const Tools = Toolkit.make(Edit)
const Handlers = Tools.toLayer({
  edit: ({ content, file }) =>
    Effect.map(
      stage({
        label: `Edit: ${file}`,
        sourceToolName: "edit",
        preview: `${file} would become ${JSON.stringify(content)}`,
        apply: () => Effect.sync(() => (files.set(file, content), ToolResult.text(`Wrote ${file}.`)))
      }),
      (handle) => `Preview (resolve id ${handle.id}): ${file} would become ${JSON.stringify(content)}`
    )
})

const program = Effect.gen(function*() {
  const driver = yield* TurnDriver
  const result = yield* driver.run("Create greet.ts exporting a greet function.", { toolkit: Tools })
  console.log(result.text)
  console.log("greet.ts:", files.get("greet.ts"))
})

const model = process.argv[2] === "anthropic" ? Anthropic : OpenAi
Effect.runPromise(program.pipe(Effect.provide(Layer.mergeAll(
  TurnDriver.layer({ system: "You are a careful coding agent." }),
  Handlers,
  model
)))).catch((error) => {
  console.error(String(error))
  process.exitCode = 1
})
