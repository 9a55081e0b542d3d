/**
 * Every tool schema the library emits is accepted by each provider's default mode (issue 11 §4), by the independent
 * checkers of `test/support/providerSchemas.ts` (OpenAI strict, Anthropic `input_schema`, the Gemini subset). Gemini
 * is sent `ProviderToolChoice.toGeminiSchema(schema)`.
 */
import { Tool, Toolkit } from "@effect/ai"
import { assert, describe, it } from "@effect/vitest"
import { deepStrictEqual } from "@effect/vitest/utils"
import { Effect, Either, Layer, Schema } from "effect"
import { AiResolveTool, ProviderToolChoice, ScriptedModel, TurnDriver } from "../../src/ai.js"
import { CustomTools } from "../../src/custom.js"
import { FileEditPreview } from "../../src/edit.js"
import { ResolveTool } from "../../src/index.js"
import { anthropic, gemini, openAiStrict } from "../support/providerSchemas.js"

/** Every provider accepts `schema` (Gemini after `toGeminiSchema`). */
const assertAccepted = (schema: unknown, providers: ReadonlyArray<"openai" | "anthropic" | "gemini">) => {
  const problems: Record<string, ReadonlyArray<string>> = {}
  if (providers.includes("openai")) problems.openai = openAiStrict(schema)
  if (providers.includes("anthropic")) problems.anthropic = anthropic(schema)
  if (providers.includes("gemini")) {
    problems.gemini = Either.match(ProviderToolChoice.toGeminiSchema(schema as object), {
      onLeft: (error) => [error.message],
      onRight: gemini
    })
  }
  deepStrictEqual(problems, Object.fromEntries(providers.map((p) => [p, []])))
}

const all = ["openai", "anthropic", "gemini"] as const

const SearchTools = Toolkit.make(
  Tool.make("search", { parameters: { q: Schema.String, limit: Schema.NullOr(Schema.Number) } })
)

describe("tool schemas against each provider's rules", () => {
  it("the checkers reject what each provider rejects (the old resolve schema, an optional field, a union)", () => {
    const oldResolve = {
      type: "object",
      required: ["action", "reason"],
      properties: {
        action: { type: "string", enum: ["apply", "discard"] },
        reason: { type: "string" },
        extra: { type: "object" }
      },
      additionalProperties: false
    }
    assert.include(openAiStrict(oldResolve).join("\n"), "Missing 'extra' in required")
    assert.include(openAiStrict(oldResolve).join("\n"), "(root).extra: additionalProperties must be false")
    assert.include(gemini(oldResolve).join("\n"), "unknown field \"additionalProperties\"")
    assert.include(gemini({ type: "object", properties: { e: { type: "object" } } }).join("\n"), "non-empty")
    assert.include(anthropic({ anyOf: [{ type: "object" }] }).join("\n"), "must be \"object\"")
    assert.include(anthropic({ type: "object", properties: { "a b": {} } }).join("\n"), "\"a b\" is not allowed")
    assert.include(
      openAiStrict({ type: "object", properties: {}, required: [], additionalProperties: false, default: 1 }).join(),
      "\"default\" is not permitted"
    )
  })

  it("ResolveTool.parameters", () => assertAccepted(ResolveTool.parameters, all))

  it("AiResolveTool's schema as @effect/ai sends it (Tool.getJsonSchema)", () =>
    assertAccepted(Tool.getJsonSchema(AiResolveTool.tool as Tool.Any as any), all))

  it.effect("what the turn driver sends: resolve, beside a strict app tool", () =>
    Effect.gen(function*() {
      const driver = yield* TurnDriver
      yield* driver.run("Hi", { toolkit: SearchTools })
      const [request] = yield* ScriptedModel.requests
      deepStrictEqual(Object.keys(request!.toolSchemas), ["search", "resolve"])
      for (const schema of Object.values(request!.toolSchemas)) assertAccepted(schema, all)
    }).pipe(Effect.provide(Layer.mergeAll(
      TurnDriver.layer(),
      ScriptedModel.layer(["Hello."]),
      SearchTools.toLayer({ search: () => Effect.void })
    ))))

  it("the edit tool (FileEditPreview.tool.parameters): Anthropic and Gemini", () =>
    assertAccepted(FileEditPreview.tool.parameters, ["anthropic", "gemini"]))

  it("the edit tool (FileEditPreview.tool.parameters): OpenAI strict", () =>
    assertAccepted(FileEditPreview.tool.parameters, ["openai"]))

  const customTools: ReadonlyArray<CustomTools.CustomTool> = [
    {
      name: "deploy",
      description: "Deploy a service.",
      parameters: {
        type: "object",
        properties: { service: { type: "string" }, dryRun: { type: "boolean" } },
        required: ["service", "dryRun"],
        additionalProperties: false
      },
      execute: () => "ok"
    },
    {
      name: "search",
      description: "Search the code.",
      parameters: {
        type: "object",
        properties: { query: { type: "string" }, limit: { type: "integer" } },
        required: ["query"]
      },
      execute: () => "ok"
    }
  ]

  it.effect("custom tools: each definition registerCustomTools accepts is accepted by Anthropic and Gemini", () =>
    Effect.gen(function*() {
      for (const tool of customTools) {
        const registered = yield* Effect.either(CustomTools.registerCustomTools([tool]))
        if (Either.isRight(registered)) assertAccepted(registered.right[0]!.parameters, ["anthropic", "gemini"])
      }
    }))

  it.effect("custom tools: each definition registerCustomTools accepts is accepted by OpenAI strict", () =>
    Effect.gen(function*() {
      const registered = yield* CustomTools.registerCustomTools(customTools)
      assert.strictEqual(registered.length, customTools.length)
      for (const tool of registered) assertAccepted(tool.parameters, ["openai"])
    }))
})
