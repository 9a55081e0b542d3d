/**
 * The turn driver through the real provider clients (issue 11 §5): `@effect/ai-openai` (Responses API,
 * `POST {apiUrl}/responses`, strict function calling by default) and `@effect/ai-anthropic`
 * (`POST {apiUrl}/v1/messages`), each talking HTTP to a local server that emulates the API and records every request
 * body. The assertions are on the wire: the forced `tool_choice` after a preview, `auto` throughout in soft mode,
 * the `resolve` schema as sent (checked against OpenAI's strict rules, which the emulator enforces like the real
 * API), where the reminder sits in the messages, a provider that refuses forcing, and malformed calls.
 */
import { Tool, Toolkit } from "@effect/ai"
import { LanguageModel } from "@effect/ai"
import { AnthropicClient, AnthropicLanguageModel } from "@effect/ai-anthropic"
import { OpenAiClient, OpenAiLanguageModel } from "@effect/ai-openai"
import { FetchHttpClient } from "@effect/platform"
import { assert, describe, it } from "@effect/vitest"
import { deepStrictEqual } from "@effect/vitest/utils"
import { Effect, Layer, Option, Redacted, Ref, Schema } from "effect"
import { ProviderToolChoice, TurnDriver } from "../../src/ai.js"
import {
  PendingActions,
  PendingStoreError,
  type Preview,
  ResolveConfig,
  type ResolveConfigShape,
  ResolveTool,
  stage,
  SteeringMessage,
  ToolChoice,
  ToolResult
} from "../../src/index.js"
import { anthropic as anthropicRules, openAiStrict } from "../support/providerSchemas.js"
import * as Server from "../support/ProviderServer.js"

const Edit = Tool.make("edit", {
  description: "Preview an edit of one file.",
  parameters: { file: Schema.String, text: Schema.String },
  success: Schema.String,
  failure: PendingStoreError, // staging fails only when a durable store does
  dependencies: [PendingActions]
})
const Tools = Toolkit.make(Edit)

interface World {
  readonly files: Ref.Ref<Record<string, string>>
  readonly handles: Ref.Ref<ReadonlyArray<Preview.Handle>>
}

const handlers = (world: World) =>
  Tools.toLayer({
    edit: ({ file, text }) =>
      Effect.gen(function*() {
        const handle = yield* stage({
          label: `Edit: 1 file (${file})`,
          sourceToolName: "edit",
          apply: () =>
            Effect.as(Ref.update(world.files, (files) => ({ ...files, [file]: text })), ToolResult.text("ok"))
        })
        yield* Ref.update(world.handles, (all) => [...all, handle])
        return `Preview: ${file} would become ${JSON.stringify(text)}`
      })
  })

const makeWorld = Effect.all({
  files: Ref.make<Record<string, string>>({}),
  handles: Ref.make<ReadonlyArray<Preview.Handle>>([])
})

const statusOf = (world: World) => Effect.flatMap(Ref.get(world.handles), (handles) => handles[0]!.status)

const openAiModel = "gpt-4.1"
const anthropicModel = "claude-sonnet-4-5"

const openAi = (url: string) =>
  OpenAiLanguageModel.layer({ model: openAiModel }).pipe(
    Layer.provide(OpenAiClient.layer({ apiKey: Redacted.make("sk-test"), apiUrl: `${url}/v1` })),
    Layer.provide(FetchHttpClient.layer)
  )

const anthropic = (url: string, config: AnthropicLanguageModel.Config.Service = {}) =>
  AnthropicLanguageModel.layer({ model: anthropicModel, config }).pipe(
    Layer.provide(AnthropicClient.layer({ apiKey: Redacted.make("sk-ant-test"), apiUrl: url })),
    Layer.provide(FetchHttpClient.layer)
  )

const session = (
  world: World,
  model: Layer.Layer<LanguageModel.LanguageModel>,
  config: Partial<ResolveConfigShape> = {}
) => Layer.mergeAll(TurnDriver.layer(), handlers(world), model, ResolveConfig.layer(config))

const editCall = { calls: [{ name: "edit", args: { file: "a.ts", text: "hello" } }] } as const
const applyCall = {
  calls: [{ name: "resolve", args: { action: "apply", reason: "Matches the request.", extra: null } }]
} as const

/** Emulates OpenAI: refuses a strict tool whose schema breaks the strict rules, as the real API does. */
const openAiAnswer = (replies: ReadonlyArray<Server.Reply>) => (request: Server.Received, index: number) => {
  if (request.path !== "/v1/responses") return Server.openAiError(404, `no route ${request.path}`)
  for (const tool of request.body.tools ?? []) {
    const problems = tool.strict === true ? openAiStrict(tool.parameters) : []
    if (problems.length > 0) {
      return Server.openAiError(
        400,
        `Invalid schema for function '${tool.name}': ${problems.join("; ")}.`,
        "tools[0].parameters"
      )
    }
  }
  const reply = replies[index]
  return reply === undefined ? Server.openAiError(500, "script exhausted") : Server.openAiResponse(openAiModel, reply)
}

/** The user texts of an OpenAI Responses `input`, in order. */
const isReminder = (text: unknown) => text === SteeringMessage.resolveReminderText

describe("the turn driver through the real OpenAI client (Responses API)", () => {
  it.live("force: the request after a preview forces resolve; the strict resolve schema is sent and accepted", () =>
    Effect.gen(function*() {
      const world = yield* makeWorld
      const server = yield* Server.start(openAiAnswer([editCall, applyCall, { text: "Done." }]))
      const result = yield* Effect.flatMap(TurnDriver, (driver) => driver.run("Say hello in a.ts", { toolkit: Tools }))
        .pipe(Effect.provide(session(world, openAi(server.url))))
      assert.strictEqual(result.text, "Done.")
      assert.strictEqual(yield* statusOf(world), "applied")
      deepStrictEqual(yield* Ref.get(world.files), { "a.ts": "hello" })

      const bodies = server.received.map((r) => r.body)
      deepStrictEqual(bodies.map((b) => b.tool_choice), ["auto", { type: "function", name: "resolve" }, "auto"])
      // The forced choice on the wire is the one ProviderToolChoice documents.
      deepStrictEqual(
        Option.some(bodies[1].tool_choice),
        ProviderToolChoice.toOpenAiResponses(ToolChoice.forceTool("resolve"))
      )
      // resolve goes out strict, exactly as ResolveTool.parameters, and passes the strict rules.
      for (const body of bodies) {
        const resolve = body.tools.find((t: any) => t.name === "resolve")
        assert.strictEqual(resolve.strict, true)
        deepStrictEqual(resolve.parameters, ResolveTool.parameters)
        deepStrictEqual(openAiStrict(resolve.parameters), [])
      }
      // The reminder is the last input item of the forced request, a user message after the edit's result.
      const input: ReadonlyArray<any> = bodies[1].input
      const last = input[input.length - 1]
      assert.strictEqual(last.role, "user")
      assert.isTrue(isReminder(last.content[0].text))
      assert.strictEqual(input[input.length - 2].type, "function_call_output")
      assert.strictEqual(input.filter((item) => item.role === "user" && isReminder(item.content[0]?.text)).length, 1)
    }).pipe(Effect.scoped))

  it.live("soft: tool_choice is auto on every request, the reminder is sent once", () =>
    Effect.gen(function*() {
      const world = yield* makeWorld
      const server = yield* Server.start(openAiAnswer([editCall, applyCall, { text: "Done." }]))
      yield* Effect.flatMap(TurnDriver, (driver) => driver.run("Say hello in a.ts", { toolkit: Tools })).pipe(
        Effect.provide(session(world, openAi(server.url), { enforcement: "soft" }))
      )
      assert.strictEqual(yield* statusOf(world), "applied")
      const bodies = server.received.map((r) => r.body)
      deepStrictEqual(bodies.map((b) => b.tool_choice), ["auto", "auto", "auto"])
      const reminders = (body: any) =>
        body.input.filter((item: any) => item.role === "user" && isReminder(item.content[0]?.text)).length
      deepStrictEqual(bodies.map(reminders), [0, 1, 1])
    }).pipe(Effect.scoped))

  it.live("malformed calls (an unknown tool, resolve with a JSON string) come back as failed results", () =>
    Effect.gen(function*() {
      const world = yield* makeWorld
      const server = yield* Server.start(openAiAnswer([
        editCall,
        { calls: [{ name: "apply_patch", args: { patch: "..." } }, { name: "resolve", arguments: "\"apply\"" }] },
        applyCall,
        { text: "Done." }
      ]))
      const result = yield* Effect.flatMap(TurnDriver, (driver) => driver.run("Edit", { toolkit: Tools })).pipe(
        Effect.provide(session(world, openAi(server.url), { maxErrorRequeues: 0 }))
      )
      assert.strictEqual(result.text, "Done.")
      assert.strictEqual(yield* statusOf(world), "applied")
      const outputs = server.received[2]!.body.input.filter((item: any) => item.type === "function_call_output")
      const [unknown, resolve] = outputs.slice(-2).map((item: any) => item.output as string)
      assert.include(unknown, "UnknownTool")
      assert.include(unknown, "Available tools: edit, resolve")
      assert.include(resolve, "InvalidResolveParams")
    }).pipe(Effect.scoped))
})

const thinking = { thinking: { type: "enabled", budget_tokens: 1024 } } as const

/** Emulates Anthropic; with `thinking` in the request, a forcing tool_choice is refused as the real API does. */
const anthropicAnswer = (replies: ReadonlyArray<Server.Reply>) => {
  let next = 0
  return (request: Server.Received) => {
    if (request.path.split("?")[0] !== "/v1/messages") return Server.anthropicError(404, `no route ${request.path}`)
    const forcing = request.body.tool_choice?.type === "tool" || request.body.tool_choice?.type === "any"
    if (request.body.thinking?.type === "enabled" && forcing) {
      return Server.anthropicError(400, "Thinking may not be enabled when tool_choice forces tool use.")
    }
    const reply = replies[next++]
    return reply === undefined ?
      Server.anthropicError(500, "script exhausted") :
      Server.anthropicMessage(anthropicModel, reply)
  }
}

describe("the turn driver through the real Anthropic client (Messages API)", () => {
  it.live("force: the forced tool_choice after a preview; the reminder follows the tool result in the user turn", () =>
    Effect.gen(function*() {
      const world = yield* makeWorld
      const server = yield* Server.start(anthropicAnswer([editCall, applyCall, { text: "Done." }]))
      const result = yield* Effect.flatMap(TurnDriver, (driver) => driver.run("Say hello in a.ts", { toolkit: Tools }))
        .pipe(Effect.provide(session(world, anthropic(server.url))))
      assert.strictEqual(result.text, "Done.")
      assert.strictEqual(yield* statusOf(world), "applied")
      const bodies = server.received.map((r) => r.body)
      deepStrictEqual(bodies.map((b) => b.tool_choice?.type), ["auto", "tool", "auto"])
      assert.strictEqual(bodies[1].tool_choice.name, "resolve")
      deepStrictEqual(
        Option.some<ProviderToolChoice.AnthropicToolChoice>({
          type: bodies[1].tool_choice.type,
          name: bodies[1].tool_choice.name
        }),
        ProviderToolChoice.toAnthropic(ToolChoice.forceTool("resolve"))
      )
      const resolve = bodies[0].tools.find((t: any) => t.name === "resolve")
      deepStrictEqual(resolve.input_schema, ResolveTool.parameters)
      deepStrictEqual(anthropicRules(resolve.input_schema), [])
      // Anthropic has no tool role: the tool result and the reminder are one user turn, the reminder last.
      const messages: ReadonlyArray<any> = bodies[1].messages
      const turn = messages[messages.length - 1]
      assert.strictEqual(turn.role, "user")
      deepStrictEqual(turn.content.map((block: any) => block.type), ["tool_result", "text"])
      assert.isTrue(isReminder(turn.content[1].text))
    }).pipe(Effect.scoped))

  it.live("soft: tool_choice is auto on every request", () =>
    Effect.gen(function*() {
      const world = yield* makeWorld
      const server = yield* Server.start(anthropicAnswer([editCall, applyCall, { text: "Done." }]))
      yield* Effect.flatMap(TurnDriver, (driver) => driver.run("Say hello in a.ts", { toolkit: Tools })).pipe(
        Effect.provide(session(world, anthropic(server.url), { enforcement: "soft" }))
      )
      assert.strictEqual(yield* statusOf(world), "applied")
      deepStrictEqual(server.received.map((r) => r.body.tool_choice?.type), ["auto", "auto", "auto"])
    }).pipe(Effect.scoped))

  it.live("extended thinking refuses forcing: named, then any, then auto with the reminder; the preview is applied", () =>
    Effect.gen(function*() {
      const world = yield* makeWorld
      const server = yield* Server.start(anthropicAnswer([editCall, applyCall, { text: "Done." }, editCall]))
      yield* Effect.gen(function*() {
        const driver = yield* TurnDriver
        const result = yield* driver.run("Say hello in a.ts", { toolkit: Tools })
        assert.strictEqual(result.text, "Done.")
        assert.strictEqual(yield* statusOf(world), "applied")
        deepStrictEqual(yield* Ref.get(world.files), { "a.ts": "hello" })
        const bodies = server.received.map((r) => r.body)
        deepStrictEqual(bodies.map((b) => b.tool_choice?.type), ["auto", "tool", "any", "auto", "auto"])
        // "any" offers resolve only; the request that applied it is not forced and carries the reminder again.
        deepStrictEqual(bodies[2].tools.map((t: any) => t.name), ["resolve"])
        const messages: ReadonlyArray<any> = bodies[3].messages
        const texts = messages[messages.length - 1].content.filter((b: any) => b.type === "text").map((b: any) =>
          b.text
        )
        deepStrictEqual(texts.map(isReminder), [true, true])
        deepStrictEqual(yield* driver.capabilities, ProviderToolChoice.anthropicExtendedThinking)
        const metrics = yield* driver.metrics
        deepStrictEqual(metrics.forcingDegraded, { required: 1, reminder: 1 })
        deepStrictEqual(metrics.requeues, { error: 0, aborted: 0, not_invoked: 0 })
        // Learned for the session: the next preview is not forced at all.
        yield* Effect.exit(driver.run("Again", { toolkit: Tools }))
        deepStrictEqual(server.received.slice(5).map((r) => r.body.tool_choice?.type), ["auto", "auto"])
      }).pipe(Effect.provide(session(world, anthropic(server.url, thinking))))
    }).pipe(Effect.scoped))

  it.live("\"none\" sends no tools and no tool_choice, as toAnthropic(\"none\") says", () =>
    Effect.gen(function*() {
      const server = yield* Server.start(anthropicAnswer([{ text: "Hi." }]))
      const Noop = Toolkit.make(Tool.make("noop"))
      yield* LanguageModel.generateText({ prompt: "Hi", toolkit: Noop, toolChoice: "none" }).pipe(
        Effect.provide(Noop.toLayer({ noop: () => Effect.void })),
        Effect.provide(anthropic(server.url))
      )
      const [body] = server.received.map((r) => r.body)
      assert.isFalse("tools" in body)
      assert.isFalse("tool_choice" in body)
      deepStrictEqual(ProviderToolChoice.toAnthropic("none"), Option.some({ type: "omit_tools" as const }))
    }).pipe(Effect.scoped))
})
