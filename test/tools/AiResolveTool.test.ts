import { LanguageModel, Tool } from "@effect/ai"
import { assert, describe, it } from "@effect/vitest"
import { deepStrictEqual } from "@effect/vitest/utils"
import { Effect, Layer } from "effect"
import { queueResolveHandler, ResolveRuntime, ResolveTool, ToolChoiceQueue, ToolResult } from "../../src/index.js"
import * as ScriptedModel from "../../src/layers/ScriptedModel.js"
import * as AiResolveTool from "../../src/tools/AiResolveTool.js"

const session = (script: ScriptedModel.Script) =>
  Layer.mergeAll(ScriptedModel.layer(script), AiResolveTool.layer, ResolveRuntime.layer)

describe("AiResolveTool", () => {
  it("the provider sees exactly ResolveTool's JSON Schema", () => {
    const { $schema: _, ...expected } = ResolveTool.parameters
    const sent = Tool.getJsonSchemaFromSchemaAst(AiResolveTool.ResolveAiTool.parametersSchema.ast)
    deepStrictEqual(sent, expected)
    deepStrictEqual((sent as { required?: unknown }).required, ["action", "reason"])
  })

  it.effect("in a plain generateText turn, resolve applies the in-flight preview", () =>
    Effect.gen(function*() {
      const queue = yield* ToolChoiceQueue
      const handle = yield* queueResolveHandler({
        label: "Edit: 1 file",
        sourceToolName: "edit",
        apply: () => Effect.succeed(ToolResult.text("written"))
      })
      yield* queue.nextToolChoice
      const response = yield* LanguageModel.generateText({
        prompt: "apply it",
        toolkit: AiResolveTool.ResolveToolkit,
        toolChoice: { tool: "resolve" }
      })
      yield* queue.resolve
      assert.strictEqual(response.toolResults[0]!.isFailure, false)
      assert.strictEqual(ToolResult.textOf(response.toolResults[0]!.result as ToolResult.ToolResult), "written")
      assert.strictEqual(yield* handle.status, "applied")
    }).pipe(Effect.provide(session([ScriptedModel.toolCall("resolve", { action: "apply", reason: "ok" })]))))

  it.effect("bad input does not break the response: the model gets InvalidResolveParams", () =>
    Effect.gen(function*() {
      const response = yield* LanguageModel.generateText({
        prompt: "resolve",
        toolkit: AiResolveTool.ResolveToolkit
      })
      const result = response.toolResults[0]!
      assert.isTrue(result.isFailure)
      assert.strictEqual((result.result as AiResolveTool.ResolveFailure).error, "InvalidResolveParams")
      assert.isTrue((result.result as AiResolveTool.ResolveFailure).message.includes("action"))
    }).pipe(Effect.provide(session([ScriptedModel.toolCall("resolve", { action: 42, reason: "x" })]))))
})
