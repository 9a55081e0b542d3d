import { type AiError, Chat, LanguageModel, Tool, Toolkit } from "@effect/ai"
import { assert, describe, it } from "@effect/vitest"
import { deepStrictEqual } from "@effect/vitest/utils"
import { Chunk, Effect, Schema, Stream } from "effect"
import * as ScriptedModel from "../../src/agent/ScriptedModel.js"

const Echo = Tool.make("echo", { parameters: { text: Schema.String }, success: Schema.String })
const EchoToolkit = Toolkit.make(Echo)
const EchoHandlers = EchoToolkit.toLayer({ echo: ({ text }) => Effect.succeed(text) })

describe("ScriptedModel", () => {
  it.effect("answers from a list, one turn per request, and records each request", () =>
    Effect.gen(function*() {
      const chat = yield* Chat.empty
      const first = yield* chat.generateText({ prompt: "hi" })
      assert.strictEqual(first.text, "Hello.")
      const before = yield* ScriptedModel.requests
      const second = yield* chat.generateText({
        prompt: "echo this",
        toolkit: EchoToolkit,
        toolChoice: { tool: "echo" }
      })
      deepStrictEqual(second.toolResults.map((r) => r.result), ["this"])
      const requests = yield* ScriptedModel.requests
      assert.strictEqual(requests.length, 2)
      assert.strictEqual(requests[0]!.toolChoice, "none") // no toolkit: @effect/ai sends "none"
      deepStrictEqual(requests[1]!.toolChoice, { tool: "echo" })
      deepStrictEqual(requests[1]!.tools, ["echo"])
      deepStrictEqual(requests[1]!.userTexts, ["hi", "echo this"])
      deepStrictEqual(requests[1]!.userTexts, ["hi", "echo this"]) // computed once, then the same on every read
      deepStrictEqual(requests.map((r) => r.index), [0, 1])
      // What was read earlier is a snapshot: later requests do not show up in it.
      assert.strictEqual(before.length, 1)
      deepStrictEqual(before[0]!.userTexts, ["hi"])
    }).pipe(Effect.provide([
      ScriptedModel.layer(["Hello.", ScriptedModel.toolCall("echo", { text: "this" })]),
      EchoHandlers
    ])))

  it.effect("a function script sees the request; failures are AiErrors; an exhausted list fails", () =>
    Effect.gen(function*() {
      const answered = yield* LanguageModel.generateText({ prompt: "ping" })
      assert.strictEqual(answered.text, "You said: ping")
      const failed = yield* Effect.flip(LanguageModel.generateText({ prompt: "fail" }))
      assert.strictEqual(failed._tag, "UnknownError")
      assert.strictEqual(failed.message.includes("rate limited"), true)
    }).pipe(Effect.provide(ScriptedModel.layer((request) => {
      const last = request.userTexts[request.userTexts.length - 1]
      return last === "fail" ? ScriptedModel.fail("rate limited") : `You said: ${last}`
    }))))

  it.effect("a list script that runs out fails with a clear error", () =>
    Effect.gen(function*() {
      yield* LanguageModel.generateText({ prompt: "one" })
      const error = yield* Effect.flip(LanguageModel.generateText({ prompt: "two" }))
      assert.isTrue(error.message.includes("no turn for request 2"))
    }).pipe(Effect.provide(ScriptedModel.layer(["only one"]))))

  it.effect("streams the scripted parts", () =>
    Effect.gen(function*() {
      const parts = yield* LanguageModel.streamText({ prompt: "stream" }).pipe(Stream.runCollect)
      const text = Chunk.toArray(parts).flatMap((part) => part.type === "text-delta" ? [part.delta] : []).join("")
      assert.strictEqual(text, "streamed")
    }).pipe(Effect.provide(ScriptedModel.layer(["streamed"]))))

  it.effect("each layer build is a fresh script and a fresh record", () =>
    Effect.gen(function*() {
      const layer = ScriptedModel.layer(["a"])
      const run = Effect.gen(function*() {
        const response = yield* LanguageModel.generateText({ prompt: "x" })
        return [response.text, (yield* ScriptedModel.requests).length] as const
      }).pipe(Effect.provide(layer))
      deepStrictEqual(yield* run, ["a", 1])
      deepStrictEqual(yield* run, ["a", 1])
    }))

  it.effect("records each tool's JSON Schema; httpError and isForced script a provider that refuses forcing", () =>
    Effect.gen(function*() {
      const refused = yield* Effect.flip(
        LanguageModel.generateText({ prompt: "x", toolkit: EchoToolkit, toolChoice: { tool: "echo" } })
      )
      assert.strictEqual(refused._tag, "HttpResponseError")
      const http = refused as AiError.HttpResponseError
      assert.strictEqual(http.response.status, 400)
      assert.include(http.body, "tool_choice")
      const answered = yield* LanguageModel.generateText({ prompt: "y", toolkit: EchoToolkit })
      assert.strictEqual(answered.text, "fine")
      const requests = yield* ScriptedModel.requests
      deepStrictEqual(requests.map(ScriptedModel.isForced), [true, false])
      deepStrictEqual(requests[1]!.toolSchemas, { echo: Tool.getJsonSchema(Echo) })
    }).pipe(Effect.provide([
      ScriptedModel.layer((request) =>
        ScriptedModel.isForced(request) ?
          ScriptedModel.fail(
            ScriptedModel.httpError(400, "{\"error\":{\"message\":\"tool_choice is not supported\"}}")
          ) :
          "fine"
      ),
      EchoHandlers
    ])))
})
