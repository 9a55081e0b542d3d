/**
 * What the turn driver forces, and how hard it can: the directives it treats as previews (those it pushes the
 * model to `resolve`), the forcing levels a session has (a named tool choice, `"required"`, or only the reminder
 * again), and the failures that mean the provider refused a forced `tool_choice`. A session starts at the level of
 * `ResolveConfig.modelCapabilities` and goes down, never up, when its provider refuses forcing.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { forcingLevel, ProviderToolChoice, TurnDriver } from "effect-resolve/ai"
 *
 * forcingLevel(ProviderToolChoice.anthropicExtendedThinking) // "reminder"
 * const level = Effect.map(Effect.flatMap(TurnDriver, (driver) => driver.capabilities), forcingLevel)
 * ```
 *
 * @since 0.3.0
 */
import type * as AiError from "@effect/ai/AiError"
import { directiveLabel } from "../services/Preview.js"
import type { ModelCapabilities } from "../services/ResolveConfig.js"

const previewPrefix = directiveLabel("")

/**
 * Whether a directive label is the one `stage` gives a preview.
 *
 * @since 0.1.0
 * @category guards
 */
export const isPreviewLabel = (label: string): boolean => label.startsWith(previewPrefix)

/**
 * How hard a session can force `resolve`: a named tool choice, `"required"` with only `resolve` offered, or
 * `"auto"` with the reminder again.
 *
 * @since 0.2.0
 * @category models
 */
export type ForcingLevel = "named" | "required" | "reminder"

/**
 * The forcing level of a model with these capabilities.
 *
 * @since 0.2.0
 * @category constructors
 */
export const forcingLevel = (capabilities: ModelCapabilities): ForcingLevel =>
  capabilities.supportsNamedToolChoice ? "named" : capabilities.supportsRequiredToolChoice ? "required" : "reminder"

/**
 * Whether a failed request is the provider refusing a forced `tool_choice` (the rule the turn driver applies to a
 * request that forced a tool): an HTTP 400 whose body mentions `tool_choice`, such as Anthropic's "Thinking may
 * not be enabled when tool_choice forces tool use." or OpenAI's errors with `"param": "tool_choice"`.
 *
 * @since 0.2.0
 * @category guards
 */
export const isForcingRefusal = (error: AiError.AiError): boolean =>
  error._tag === "HttpResponseError" && error.response.status === 400 &&
  /tool_choice/i.test(`${error.body ?? ""}\n${error.description ?? ""}`)
