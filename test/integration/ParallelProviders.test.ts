/**
 * Parallel tool calls (issue 18) through the real provider clients, `@effect/ai-openai` (Responses API) and
 * `@effect/ai-anthropic` (Messages API), against the local emulator that records every request body, with the real
 * edit producer (`AiEditTool`) on a temp workspace. The emulated model edits three files in one response, then reads
 * the pending ids in the tool results it was sent and resolves them: all three in one response (two requests for the
 * change), or one per response without an id (four). The assertions are on the wire: the tool results, the one
 * reminder naming the ids, and `tool_choice`.
 */
import { AnthropicClient, AnthropicLanguageModel } from "@effect/ai-anthropic"
import { OpenAiClient, OpenAiLanguageModel } from "@effect/ai-openai"
import { FetchHttpClient } from "@effect/platform"
import { NodeContext } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { deepStrictEqual } from "@effect/vitest/utils"
import { Effect, Layer, Redacted } from "effect"
import { AiEditTool, TurnDriver } from "../../src/ai.js"
import { FileEditPreview } from "../../src/edit.js"
import { readText, tempDir, writeFiles } from "../support/editWorkspace.js"
import { openAiStrict } from "../support/providerSchemas.js"
import * as Server from "../support/ProviderServer.js"

const openAiModel = "gpt-4.1"
const anthropicModel = "claude-sonnet-4-5"

/** The pending ids the model was shown so far, oldest first (each preview's text names its id). */
const idsIn = (body: unknown): ReadonlyArray<string> => [
  ...new Set([...JSON.stringify(body).matchAll(/Pending action id: (pa_[A-Za-z0-9_-]+)/g)].map((m) => m[1]!))
]

const threeEdits: Server.Reply = {
  calls: ["a", "b", "c"].map((name) => ({
    name: "edit",
    args: {
      files: [{ path: `${name}.ts`, edits: [{ oldText: `${name} = 1`, newText: `${name} = 2`, replaceAll: null }] }]
    }
  }))
}

const resolveCall = (id: string | null) => ({
  name: "resolve",
  args: { action: "apply", reason: "The diff matches the request.", extra: null, id }
})

/**
 * The emulated model: three edits, then every pending id in one response (`batch`) or one resolve without id per
 * response (three times), then text.
 */
const model = (batch: boolean) => (body: unknown, index: number): Server.Reply =>
  index === 0 ?
    threeEdits :
    batch ?
    (index === 1 ? { calls: idsIn(body).map(resolveCall) } : { text: "Done." }) :
    index <= 3 ?
    { calls: [resolveCall(null)] } :
    { text: "Done." }

const openAi = (url: string) =>
  OpenAiLanguageModel.layer({ model: openAiModel }).pipe(
    Layer.provide(OpenAiClient.layer({ apiKey: Redacted.make("sk-test"), apiUrl: `${url}/v1` })),
    Layer.provide(FetchHttpClient.layer)
  )

const anthropic = (url: string) =>
  AnthropicLanguageModel.layer({ model: anthropicModel }).pipe(
    Layer.provide(AnthropicClient.layer({ apiKey: Redacted.make("sk-ant-test"), apiUrl: url })),
    Layer.provide(FetchHttpClient.layer)
  )

const openAiAnswer = (batch: boolean) => (request: Server.Received, index: number) => {
  if (request.path !== "/v1/responses") return Server.openAiError(404, `no route ${request.path}`)
  for (const tool of request.body.tools ?? []) {
    const problems = tool.strict === true ? openAiStrict(tool.parameters) : []
    if (problems.length > 0) return Server.openAiError(400, `Invalid schema for '${tool.name}': ${problems.join("; ")}`)
  }
  return Server.openAiResponse(openAiModel, model(batch)(request.body, index))
}

const anthropicAnswer = (batch: boolean) => (request: Server.Received, index: number) =>
  request.path.split("?")[0] !== "/v1/messages" ?
    Server.anthropicError(404, `no route ${request.path}`) :
    Server.anthropicMessage(anthropicModel, model(batch)(request.body, index))

/** Runs the change in a fresh workspace against `server`; the files after it. */
const runChange = (languageModel: (url: string) => Layer.Layer<any>, server: Server.ProviderServer, root: string) =>
  Effect.gen(function*() {
    yield* writeFiles(root, { "a.ts": "a = 1\n", "b.ts": "b = 1\n", "c.ts": "c = 1\n" })
    const result = yield* Effect.flatMap(
      TurnDriver,
      (driver) => driver.run("Set a, b and c to 2", { toolkit: AiEditTool.toolkit })
    ).pipe(
      Effect.provide(
        Layer.mergeAll(TurnDriver.layer(), AiEditTool.layerWorkspace({ root }), languageModel(server.url))
      ),
      Effect.provide(NodeContext.layer)
    )
    assert.strictEqual(result.text, "Done.")
    return [yield* readText(root, "a.ts"), yield* readText(root, "b.ts"), yield* readText(root, "c.ts")]
  })

const written = ["a = 2\n", "b = 2\n", "c = 2\n"]

describe("parallel tool calls through the real OpenAI client (Responses API)", () => {
  it.live("three edits, then three resolves in one response: two requests for the change, three files written", () =>
    Effect.gen(function*() {
      const root = yield* tempDir
      const server = yield* Server.start(openAiAnswer(true))
      deepStrictEqual(yield* runChange(openAi, server, root), written)
      const bodies = server.received.map((r) => r.body)
      // Two requests make the change; the third only carries the resolve results back (the model answers text).
      deepStrictEqual(bodies.map((b) => b.tool_choice), ["auto", { type: "function", name: "resolve" }, "auto"])
      const edit = bodies[0].tools.find((t: any) => t.name === "edit")
      assert.strictEqual(edit.strict, true)
      deepStrictEqual(edit.parameters, FileEditPreview.parametersJsonSchema)
      // The forced request carries three preview results, each naming its own id, and one reminder naming all.
      const input: ReadonlyArray<any> = bodies[1].input
      const previews = input.filter((item) => item.type === "function_call_output").map((item) => item.output)
      assert.lengthOf(previews, 3)
      const ids = idsIn(bodies[1])
      assert.lengthOf(ids, 3)
      previews.forEach((output: string, i: number) => assert.include(output, ids[i]!))
      const reminders = input.filter((item) => item.role === "user" && /system-reminder/.test(item.content[0]?.text))
      assert.lengthOf(reminders, 1)
      for (const id of ids) assert.include(reminders[0].content[0].text, id)
      // The three resolve results, none a failure.
      const results = bodies[2].input.filter((item: any) => item.type === "function_call_output").slice(-3)
      assert.lengthOf(results, 3)
      for (const r of results) assert.notInclude(r.output, "\"error\"")
    }).pipe(Effect.scoped))

  it.live("one resolve per response: four requests for the change, each forced", () =>
    Effect.gen(function*() {
      const root = yield* tempDir
      const server = yield* Server.start(openAiAnswer(false))
      deepStrictEqual(yield* runChange(openAi, server, root), written)
      const forced = { type: "function", name: "resolve" }
      deepStrictEqual(server.received.map((r) => r.body.tool_choice), ["auto", forced, forced, forced, "auto"])
    }).pipe(Effect.scoped))
})

describe("parallel tool calls through the real Anthropic client (Messages API)", () => {
  it.live("three edits, then three resolves in one response: two requests for the change, three files written", () =>
    Effect.gen(function*() {
      const root = yield* tempDir
      const server = yield* Server.start(anthropicAnswer(true))
      deepStrictEqual(yield* runChange(anthropic, server, root), written)
      const bodies = server.received.map((r) => r.body)
      deepStrictEqual(bodies.map((b) => b.tool_choice?.type), ["auto", "tool", "auto"])
      assert.strictEqual(bodies[1].tool_choice.name, "resolve")
      // One user turn: the three tool results (each naming its id), then one reminder naming all three.
      const messages: ReadonlyArray<any> = bodies[1].messages
      const turn = messages[messages.length - 1]
      deepStrictEqual(turn.content.map((block: any) => block.type), [
        "tool_result",
        "tool_result",
        "tool_result",
        "text"
      ])
      const ids = idsIn(turn)
      assert.lengthOf(ids, 3)
      for (const id of ids) assert.include(turn.content[3].text, id)
      const last: ReadonlyArray<any> = bodies[2].messages[bodies[2].messages.length - 1].content
      deepStrictEqual(last.map((block) => [block.type, block.is_error ?? false]), [
        ["tool_result", false],
        ["tool_result", false],
        ["tool_result", false]
      ])
    }).pipe(Effect.scoped))

  it.live("one resolve per response: four requests for the change, each forced", () =>
    Effect.gen(function*() {
      const root = yield* tempDir
      const server = yield* Server.start(anthropicAnswer(false))
      deepStrictEqual(yield* runChange(anthropic, server, root), written)
      deepStrictEqual(server.received.map((r) => r.body.tool_choice?.type), ["auto", "tool", "tool", "tool", "auto"])
    }).pipe(Effect.scoped))
})
