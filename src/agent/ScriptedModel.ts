/**
 * A scripted `LanguageModel` for tests and demos: no network, no keys. The script is a list of turns (one per
 * request) or a function of the request, and every request is recorded, so a test can assert what `toolChoice`,
 * tools and messages each one carried. Apps swap it in to test their own agents.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { ScriptedModel, TurnDriver } from "effect-resolve/ai"
 *
 * const model = ScriptedModel.layer([
 *   ScriptedModel.toolCall("resolve", { action: "apply", reason: "Looks right." }),
 *   ScriptedModel.text("Done.")
 * ])
 * const program = Effect.gen(function*() {
 *   const driver = yield* TurnDriver
 *   yield* driver.run("Rename greet to hello")
 *   const requests = yield* ScriptedModel.requests // what each request carried
 * }).pipe(Effect.provide([TurnDriver.layer(), model]))
 * ```
 *
 * @since 0.1.0
 */
import * as AiError from "@effect/ai/AiError"
import * as LanguageModel from "@effect/ai/LanguageModel"
import type * as Prompt from "@effect/ai/Prompt"
import type * as Response from "@effect/ai/Response"
import * as Tool from "@effect/ai/Tool"
import * as Chunk from "effect/Chunk"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import type * as JSONSchema from "effect/JSONSchema"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import * as Ref from "effect/Ref"
import * as Stream from "effect/Stream"

/**
 * What one request carried, as the provider would have seen it.
 *
 * @since 0.1.0
 * @category models
 */
export interface ScriptedRequest {
  /** 0-based position of the request in this model's life. */
  readonly index: number
  /** The whole prompt: history plus the new messages. */
  readonly prompt: Prompt.Prompt
  /** The `toolChoice` sent (`"none"` when the request had no tools, as `@effect/ai` sends it). */
  readonly toolChoice: LanguageModel.ToolChoice<string>
  /** The names of the tools sent, in order. */
  readonly tools: ReadonlyArray<string>
  /**
   * The JSON Schema of each user-defined tool sent, by name, as a provider client would send it
   * (`Tool.getJsonSchema`). Computed on first read.
   */
  readonly toolSchemas: Readonly<Record<string, JSONSchema.JsonSchema7>>
  /**
   * Every text of every user message in the prompt, oldest first (steering messages included). Computed on first
   * read, so a long scripted session does not pay a walk of the whole history per request.
   */
  readonly userTexts: ReadonlyArray<string>
}

/**
 * One scripted answer: response parts, text (one text part), or a failure with an `AiError`.
 *
 * @since 0.1.0
 * @category models
 */
export type ScriptedTurn =
  | string
  | ReadonlyArray<Response.PartEncoded>
  | { readonly _tag: "ScriptedFailure"; readonly error: AiError.AiError }

/**
 * A script step: a turn, or an Effect producing one (to wait, or to hang with `Effect.never`).
 *
 * @since 0.1.0
 * @category models
 */
export type ScriptedStep = ScriptedTurn | Effect.Effect<ScriptedTurn, AiError.AiError>

/**
 * A script: a list of steps, one per request, or a function of the request.
 *
 * @since 0.1.0
 * @category models
 */
export type Script = ReadonlyArray<ScriptedStep> | ((request: ScriptedRequest) => ScriptedStep)

/**
 * @since 0.1.0
 * @category tags
 */
export declare namespace ScriptedModel {
  /**
   * @since 0.1.0
   * @category models
   */
  export interface Service {
    /** Every request so far, oldest first. */
    readonly requests: Effect.Effect<ReadonlyArray<ScriptedRequest>>
  }
}

/**
 * The recorder of the scripted model.
 *
 * @since 0.1.0
 * @category tags
 */
export class ScriptedModel
  extends Context.Tag("effect-resolve/ScriptedModel")<ScriptedModel, ScriptedModel.Service>()
{}

/**
 * Every request the scripted model received.
 *
 * @since 0.1.0
 * @category accessors
 */
export const requests: Effect.Effect<ReadonlyArray<ScriptedRequest>, never, ScriptedModel> = Effect.flatMap(
  ScriptedModel,
  (model) => model.requests
)

/**
 * A text answer.
 *
 * @since 0.1.0
 * @category constructors
 */
export const text = (value: string): ReadonlyArray<Response.PartEncoded> => [{ type: "text", text: value }]

let callIds = 0

/**
 * A tool-call part; `id` defaults to a fresh `call-<n>`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const toolCallPart = (name: string, params: unknown, id?: string): Response.ToolCallPartEncoded => ({
  type: "tool-call",
  id: id ?? `call-${++callIds}`,
  name,
  params
})

/**
 * An answer with one tool call.
 *
 * @since 0.1.0
 * @category constructors
 */
export const toolCall = (name: string, params: unknown, id?: string): ReadonlyArray<Response.PartEncoded> => [
  toolCallPart(name, params, id)
]

/**
 * An answer made of several parts (text and tool calls), in order.
 *
 * @since 0.1.0
 * @category constructors
 */
export const respond = (
  ...parts: ReadonlyArray<Response.PartEncoded | string>
): ReadonlyArray<Response.PartEncoded> =>
  parts.map((part): Response.PartEncoded => typeof part === "string" ? { type: "text", text: part } : part)

/**
 * A request that fails with `error`, or with an `UnknownError` carrying `description`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const fail = (error: AiError.AiError | string): ScriptedTurn => ({
  _tag: "ScriptedFailure",
  error: typeof error === "string" ?
    new AiError.UnknownError({ module: "ScriptedModel", method: "generateText", description: error }) :
    error
})

/**
 * The error a provider client raises for an HTTP error status: an `HttpResponseError` with `status` and the
 * response `body` (for example a 400 refusing a forced `tool_choice`). Pass it to `fail`.
 *
 * @since 0.2.0
 * @category constructors
 */
export const httpError = (status: number, body: string): AiError.HttpResponseError =>
  new AiError.HttpResponseError({
    module: "ScriptedModel",
    method: "generateText",
    reason: "StatusCode",
    request: { method: "POST", url: "scripted://model", urlParams: [], hash: Option.none(), headers: {} },
    response: { status, headers: { "content-type": "application/json" } },
    body
  })

/**
 * Whether a request's `toolChoice` forces a tool call (`"required"`, a named tool, or `mode: "required"`): for
 * scripts that answer forced requests differently.
 *
 * @since 0.2.0
 * @category guards
 */
export const isForced = (request: ScriptedRequest): boolean =>
  request.toolChoice === "required" ||
  (typeof request.toolChoice === "object" && ("tool" in request.toolChoice || request.toolChoice.mode === "required"))

/**
 * A request that never answers (to test interruption).
 *
 * @since 0.1.0
 * @category constructors
 */
export const hang: ScriptedStep = Effect.never

const userTextsOf = (prompt: Prompt.Prompt): ReadonlyArray<string> =>
  prompt.content.flatMap((message) =>
    message.role === "user" ? message.content.flatMap((part) => part.type === "text" ? [part.text] : []) : []
  )

/** A recorded request whose `userTexts` and `toolSchemas` are computed on first read and then kept. */
const makeRequest = (index: number, options: LanguageModel.ProviderOptions): ScriptedRequest => {
  let userTexts: ReadonlyArray<string> | undefined
  let toolSchemas: Readonly<Record<string, JSONSchema.JsonSchema7>> | undefined
  return {
    index,
    prompt: options.prompt,
    toolChoice: options.toolChoice,
    tools: options.tools.map((tool) => tool.name),
    get toolSchemas() {
      return toolSchemas ??= Object.fromEntries(
        options.tools.flatMap((tool) => Tool.isUserDefined(tool) ? [[tool.name, Tool.getJsonSchema(tool as any)]] : [])
      )
    },
    get userTexts() {
      return userTexts ??= userTextsOf(options.prompt)
    }
  }
}

const isFailure = (turn: ScriptedTurn): turn is Extract<ScriptedTurn, { readonly _tag: "ScriptedFailure" }> =>
  Predicate.hasProperty(turn, "_tag")

const exhausted = (index: number) =>
  new AiError.UnknownError({
    module: "ScriptedModel",
    method: "generateText",
    description: `The script has no turn for request ${index + 1}; add a turn or end the conversation earlier.`
  })

const toStreamParts = (parts: ReadonlyArray<Response.PartEncoded>): Array<Response.StreamPartEncoded> =>
  parts.flatMap((part, i): Array<Response.StreamPartEncoded> => {
    const id = `part-${i}`
    if (part.type === "text") {
      return [{ type: "text-start", id }, { type: "text-delta", id, delta: part.text }, { type: "text-end", id }]
    }
    if (part.type === "reasoning") {
      return [{ type: "reasoning-start", id }, { type: "reasoning-delta", id, delta: part.text }, {
        type: "reasoning-end",
        id
      }]
    }
    return part.type === "reasoning-delta" || part.type === "reasoning-end" ? [] : [part]
  })

/**
 * Builds the scripted model and its recorder.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (
  script: Script
): Effect.Effect<{ readonly model: LanguageModel.Service; readonly recorder: ScriptedModel.Service }> =>
  Effect.gen(function*() {
    // A Chunk: appending does not copy the requests recorded so far (a long session makes thousands).
    const recorded = yield* Ref.make(Chunk.empty<ScriptedRequest>())
    const answer = (options: LanguageModel.ProviderOptions) =>
      Effect.gen(function*() {
        const request = yield* Ref.modify(recorded, (all): [ScriptedRequest, Chunk.Chunk<ScriptedRequest>] => {
          const request = makeRequest(Chunk.size(all), options)
          return [request, Chunk.append(all, request)]
        })
        const step = typeof script === "function" ? script(request) : script[request.index]
        if (step === undefined) return yield* Effect.fail(exhausted(request.index))
        const turn = Effect.isEffect(step) ? yield* step : step
        if (isFailure(turn)) return yield* Effect.fail(turn.error)
        return typeof turn === "string" ? [...text(turn)] : [...turn]
      })
    const model = yield* LanguageModel.make({
      generateText: answer,
      streamText: (options) => Stream.flatMap(answer(options), (parts) => Stream.fromIterable(toStreamParts(parts)))
    })
    return { model, recorder: ScriptedModel.of({ requests: Effect.map(Ref.get(recorded), Chunk.toReadonlyArray) }) }
  })

/**
 * A `LanguageModel` answering from `script`, plus its `ScriptedModel` recorder. Fresh per build.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (script: Script): Layer.Layer<LanguageModel.LanguageModel | ScriptedModel> =>
  Layer.effectContext(
    Effect.map(
      make(script),
      ({ model, recorder }) =>
        Context.make(LanguageModel.LanguageModel, model).pipe(Context.add(ScriptedModel, recorder))
    )
  )
