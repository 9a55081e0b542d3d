/**
 * The turn driver on a real provider: the OpenAI layer (Responses API) and the Anthropic layer (Messages API, with
 * extended thinking). The README's "With a real provider" section shows this file; `npm test` type-checks it.
 *
 *   OPENAI_API_KEY=... npx tsx examples/real-provider.ts openai
 *   ANTHROPIC_API_KEY=... npx tsx examples/real-provider.ts anthropic
 */
import { Tool, Toolkit } from "@effect/ai"
import { AnthropicClient, AnthropicLanguageModel } from "@effect/ai-anthropic"
import { OpenAiClient, OpenAiLanguageModel } from "@effect/ai-openai"
import { FetchHttpClient } from "@effect/platform"
import { Config, Console, Effect, Layer, Ref, Schema } from "effect"
import { ProviderToolChoice, TurnDriver } from "../src/ai.js"
import { PendingActions, PendingStoreError, queueResolveHandler, ResolveConfig, ToolResult } from "../src/index.js"

// OpenAI: strict function calling is the client's default; every schema effect-resolve sends is strict.
const OpenAi = OpenAiLanguageModel.layer({ model: "gpt-4.1" }).pipe(
  Layer.provide(OpenAiClient.layerConfig({ apiKey: Config.redacted("OPENAI_API_KEY") })),
  Layer.provide(FetchHttpClient.layer)
)

// Anthropic with extended thinking, which refuses a forced tool_choice. Declaring it starts the session on the
// soft path; without it, the driver learns it from the first refusal and forces less from then on.
const Anthropic = Layer.merge(
  AnthropicLanguageModel.layer({
    model: "claude-sonnet-4-5",
    config: { max_tokens: 8192, thinking: { type: "enabled", budget_tokens: 2048 } }
  }).pipe(
    Layer.provide(AnthropicClient.layerConfig({ apiKey: Config.redacted("ANTHROPIC_API_KEY") })),
    Layer.provide(FetchHttpClient.layer)
  ),
  ResolveConfig.layer({ modelCapabilities: ProviderToolChoice.anthropicExtendedThinking })
)

// The app's tool: `edit` stages a preview; the model applies or discards it with `resolve`.
const Edit = Tool.make("edit", {
  description: "Replace the content of a file. Shows a preview; call resolve to apply or discard it.",
  parameters: { file: Schema.String, content: Schema.String },
  success: Schema.String,
  failure: PendingStoreError, // staging fails only when a durable store does
  dependencies: [PendingActions]
})
const Tools = Toolkit.make(Edit)

const program = Effect.gen(function*() {
  const files = yield* Ref.make<Record<string, string>>({})
  const handlers = Tools.toLayer({
    edit: ({ content, file }) =>
      Effect.as(
        queueResolveHandler({
          label: `Edit: 1 file (${file})`,
          sourceToolName: "edit",
          apply: () => Effect.as(Ref.update(files, (all) => ({ ...all, [file]: content })), ToolResult.text("Written."))
        }),
        `Preview: ${file} would become ${JSON.stringify(content)}`
      )
  })
  const model = process.argv[2] === "anthropic" ? Anthropic : OpenAi
  const result = yield* Effect.flatMap(
    TurnDriver,
    (driver) => driver.run("Create greet.ts exporting a greet function.", { toolkit: Tools })
  ).pipe(
    Effect.provide(Layer.mergeAll(TurnDriver.layer({ system: "You are a careful coding agent." }), handlers, model))
  )
  yield* Console.log(result.text, yield* Ref.get(files))
})

Effect.runPromise(program).catch((error) => {
  console.error(String(error))
  process.exitCode = 1
})
