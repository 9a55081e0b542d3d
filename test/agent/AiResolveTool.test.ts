import { LanguageModel, Tool } from "@effect/ai"
import { assert, describe, it } from "@effect/vitest"
import { deepStrictEqual } from "@effect/vitest/utils"
import { Effect, Layer } from "effect"
import * as AiResolveTool from "../../src/agent/AiResolveTool.js"
import * as ScriptedModel from "../../src/agent/ScriptedModel.js"
import { ResolveRuntime, ResolveTool, stage, ToolChoiceQueue, ToolResult } from "../../src/index.js"

const session = (script: ScriptedModel.Script) =>
  Layer.mergeAll(ScriptedModel.layer(script), AiResolveTool.layer, ResolveRuntime.layer)

describe("AiResolveTool", () => {
  it("the provider sees exactly ResolveTool's JSON Schema: every property required, extra nullable text", () => {
    const sent = Tool.getJsonSchema(AiResolveTool.tool as Tool.Any as any)
    deepStrictEqual(sent, ResolveTool.parameters)
    deepStrictEqual((sent as { required?: unknown }).required, ["action", "reason", "extra", "id"])
  })

  it.effect("in a plain generateText turn, resolve applies the in-flight preview", () =>
    Effect.gen(function*() {
      const queue = yield* ToolChoiceQueue
      const handle = yield* stage({
        label: "Edit: 1 file",
        sourceToolName: "edit",
        apply: () => Effect.succeed(ToolResult.text("written"))
      })
      yield* queue.nextToolChoice
      const response = yield* LanguageModel.generateText({
        prompt: "apply it",
        toolkit: AiResolveTool.toolkit,
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
        toolkit: AiResolveTool.toolkit
      })
      const result = response.toolResults[0]!
      assert.isTrue(result.isFailure)
      assert.strictEqual((result.result as AiResolveTool.ResolveFailure).error, "InvalidResolveParams")
      assert.isTrue((result.result as AiResolveTool.ResolveFailure).message.includes("action"))
    }).pipe(Effect.provide(session([ScriptedModel.toolCall("resolve", { action: 42, reason: "x" })]))))

  it.effect("arguments that are not an object (a string, null, an array) come back as InvalidResolveParams too", () =>
    Effect.gen(function*() {
      const response = yield* LanguageModel.generateText({
        prompt: "resolve",
        toolkit: AiResolveTool.toolkit
      })
      deepStrictEqual(
        response.toolResults.map((result) => [result.isFailure, (result.result as AiResolveTool.ResolveFailure).error]),
        [[true, "InvalidResolveParams"], [true, "InvalidResolveParams"], [true, "InvalidResolveParams"]]
      )
    }).pipe(Effect.provide(session([
      ScriptedModel.respond(
        ScriptedModel.toolCallPart("resolve", "apply"),
        ScriptedModel.toolCallPart("resolve", null),
        ScriptedModel.toolCallPart("resolve", [{ action: "apply", reason: "ok" }])
      )
    ]))))

  it.effect("the strict wire form applies: extra as JSON text reaches the handler as an object, null as none", () =>
    Effect.gen(function*() {
      const queue = yield* ToolChoiceQueue
      const seen: Array<unknown> = []
      yield* stage({
        label: "Plan: 1",
        sourceToolName: "plan",
        apply: (_reason, extra) => Effect.sync(() => (seen.push(extra), ToolResult.text("approved")))
      })
      yield* queue.nextToolChoice
      const response = yield* LanguageModel.generateText({ prompt: "apply", toolkit: AiResolveTool.toolkit })
      yield* queue.resolve
      assert.isFalse(response.toolResults[0]!.isFailure)
      deepStrictEqual(seen, [{ title: "my-plan" }])
    }).pipe(Effect.provide(session([
      ScriptedModel.toolCall("resolve", { action: "apply", reason: "ok", extra: "{\"title\": \"my-plan\"}" })
    ]))))
})
