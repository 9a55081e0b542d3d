/**
 * The `resolve` tool as an `@effect/ai` `Tool` and `Toolkit`, for apps that build their own loop on
 * `LanguageModel`. Its parameters accept any value when a response is decoded (so a bad call, even a string, `null`
 * or an array instead of an object, reaches the handler and becomes a typed `InvalidResolveParams` result for the
 * model, instead of failing the whole response) while the JSON Schema the provider sees is exactly
 * `ResolveTool.parameters`.
 *
 * @example
 * ```ts
 * import { LanguageModel } from "@effect/ai"
 * import { Effect } from "effect"
 * import { ResolveRuntime } from "effect-resolve"
 * import { AiResolveTool } from "effect-resolve/ai"
 *
 * const turn = LanguageModel.generateText({
 *   prompt: "Apply the pending preview if it is right.",
 *   toolkit: AiResolveTool.ResolveToolkit
 * }).pipe(Effect.provide(AiResolveTool.layer), Effect.provide(ResolveRuntime.layer))
 * ```
 *
 * @since 0.1.0
 */
import * as Tool from "@effect/ai/Tool"
import * as Toolkit from "@effect/ai/Toolkit"
import * as Effect from "effect/Effect"
import type * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import { ToolResult } from "../domain/ToolResult.js"
import { capText, messageOf, stringProperty } from "../internal/render.js"
import { PendingActions } from "../services/PendingActions.js"
import { StandingResolveHandler } from "../services/StandingResolveHandler.js"
import { ToolChoiceQueue } from "../services/ToolChoiceQueue.js"
import { type ResolveServices, ResolveTool } from "../tools/Resolve.js"
import { permissiveParameters } from "./internal/permissive.js"

/**
 * What the model sent to `resolve`, undecoded: any value (typed as an empty struct, as `@effect/ai`'s tools
 * require). Its JSON Schema is `ResolveTool.parameters`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const RawResolveParams: Schema.Struct<{}> = permissiveParameters(ResolveTool.parameters)

/**
 * What a failed `resolve` call returns to the model: the error's tag and message.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ResolveFailure = Schema.Struct({ error: Schema.String, message: Schema.String })

/**
 * @since 0.1.0
 * @category models
 */
export type ResolveFailure = typeof ResolveFailure.Type

/**
 * Turns any failure into what the model reads: its `_tag` (when a string, else `"Error"`) and its message (see
 * `messageOf` in `internal/render`: never throws, whatever the value; at most 2 000 characters).
 *
 * @since 0.1.0
 * @category constructors
 */
export const toFailure = (error: unknown): ResolveFailure => {
  const tag = stringProperty(error, "_tag")
  return { error: tag === undefined ? "Error" : capText(tag, 200), message: messageOf(error) }
}

/**
 * The `resolve` tool: failures are returned to the model (`failureMode: "return"`).
 *
 * @since 0.3.0
 * @category tools
 */
export const tool = Tool.make("resolve", {
  description: ResolveTool.description,
  success: ToolResult,
  failure: ResolveFailure,
  failureMode: "return",
  dependencies: [PendingActions, ToolChoiceQueue, StandingResolveHandler]
}).setParameters(RawResolveParams)

/**
 * A toolkit holding only `resolve`; merge it with the app's toolkit (`Toolkit.merge`).
 *
 * @since 0.3.0
 * @category tools
 */
export const toolkit = Toolkit.make(tool)

/**
 * @deprecated Renamed `tool` in 0.3.0 (`AiResolveTool.tool`); this alias goes in 0.4.0.
 * @since 0.1.0
 * @category tools
 */
export const ResolveAiTool = tool

/**
 * @deprecated Renamed `toolkit` in 0.3.0 (`AiResolveTool.toolkit`); this alias goes in 0.4.0.
 * @since 0.1.0
 * @category tools
 */
export const ResolveToolkit = toolkit

/**
 * Runs one `resolve` call from raw model input: the result, or the failure the model reads.
 *
 * @since 0.1.0
 * @category handlers
 */
export const handle = (
  params: unknown
): Effect.Effect<ToolResult, ResolveFailure, ResolveServices> => Effect.mapError(ResolveTool.execute(params), toFailure)

/**
 * The handler layer of `toolkit`; the handler runs the `resolve` program.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<Tool.Handler<"resolve">> = toolkit.toLayer({ resolve: handle })
