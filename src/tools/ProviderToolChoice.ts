/**
 * Pure mappings from the provider-neutral `ToolChoice` to the `tool_choice` wire formats of Anthropic Messages,
 * OpenAI Chat Completions, OpenAI Responses, Google Gemini and `@effect/ai`. What a provider (or a model, through
 * its `ModelCapabilities`) cannot express is `Option.none()`, so the caller can fall back to the soft path.
 *
 * @example
 * ```ts
 * import { ProviderToolChoice, ToolChoice } from "effect-resolve"
 *
 * ProviderToolChoice.toAnthropic(ToolChoice.forceTool("resolve"))
 * // Option.some({ type: "tool", name: "resolve" })
 * ProviderToolChoice.toAnthropic(ToolChoice.forceTool("resolve"), ProviderToolChoice.anthropicExtendedThinking)
 * // Option.none(): extended thinking cannot force a tool
 * ```
 *
 * @since 0.1.0
 */
import * as Option from "effect/Option"
import type { ToolChoice } from "../domain/ToolChoice.js"
import type { ModelCapabilities } from "../services/ResolveConfig.js"

/**
 * A model that can send every kind of `tool_choice`.
 *
 * @since 0.1.0
 * @category constants
 */
export const fullCapabilities: ModelCapabilities = {
  supportsNamedToolChoice: true,
  supportsRequiredToolChoice: true,
  supportsNoneToolChoice: true
}

/**
 * Anthropic with extended thinking: only `auto` and `none` are accepted (`any` and `tool` are rejected).
 *
 * @since 0.1.0
 * @category constants
 */
export const anthropicExtendedThinking: ModelCapabilities = {
  supportsNamedToolChoice: false,
  supportsRequiredToolChoice: false,
  supportsNoneToolChoice: true
}

/**
 * A model that accepts only `auto` (or no `tool_choice` at all).
 *
 * @since 0.1.0
 * @category constants
 */
export const autoOnly: ModelCapabilities = {
  supportsNamedToolChoice: false,
  supportsRequiredToolChoice: false,
  supportsNoneToolChoice: false
}

const allowed = (choice: ToolChoice, capabilities: ModelCapabilities): boolean =>
  choice === "auto" ||
  (choice === "none" && capabilities.supportsNoneToolChoice) ||
  (choice === "required" && capabilities.supportsRequiredToolChoice) ||
  (typeof choice === "object" && capabilities.supportsNamedToolChoice)

// Anthropic and OpenAI: `^[a-zA-Z0-9_-]{1,64}$`; Gemini also allows dots and colons, and must start with a letter or
// an underscore.
const openAiName = /^[a-zA-Z0-9_-]{1,64}$/
const anthropicName = /^[a-zA-Z0-9_-]{1,64}$/
const geminiName = /^[a-zA-Z_][a-zA-Z0-9_.:-]{0,63}$/

const map = <A>(
  choice: ToolChoice,
  capabilities: ModelCapabilities,
  name: RegExp | undefined,
  cases: {
    readonly auto: A
    readonly none: A
    readonly required: A
    readonly named: (name: string) => A
  }
): Option.Option<A> => {
  if (!allowed(choice, capabilities)) return Option.none()
  if (typeof choice === "object") {
    return name === undefined || name.test(choice.name) ? Option.some(cases.named(choice.name)) : Option.none()
  }
  return Option.some(cases[choice])
}

/**
 * Anthropic Messages `tool_choice`.
 *
 * @since 0.1.0
 * @category models
 */
export type AnthropicToolChoice =
  | { readonly type: "auto" }
  | { readonly type: "any" }
  | { readonly type: "none" }
  | { readonly type: "tool"; readonly name: string }

/**
 * To Anthropic Messages: `auto` → `{ type: "auto" }`, `required` → `{ type: "any" }`, `none` → `{ type: "none" }`,
 * a named tool → `{ type: "tool", name }`.
 *
 * @since 0.1.0
 * @category mappings
 */
export const toAnthropic = (
  choice: ToolChoice,
  capabilities: ModelCapabilities = fullCapabilities
): Option.Option<AnthropicToolChoice> =>
  map<AnthropicToolChoice>(choice, capabilities, anthropicName, {
    auto: { type: "auto" },
    none: { type: "none" },
    required: { type: "any" },
    named: (name) => ({ type: "tool", name })
  })

/**
 * OpenAI Chat Completions `tool_choice`.
 *
 * @since 0.1.0
 * @category models
 */
export type OpenAiChatToolChoice =
  | "auto"
  | "none"
  | "required"
  | { readonly type: "function"; readonly function: { readonly name: string } }

/**
 * To OpenAI Chat Completions: `"auto" | "none" | "required"` as is, a named tool →
 * `{ type: "function", function: { name } }`.
 *
 * @since 0.1.0
 * @category mappings
 */
export const toOpenAiChat = (
  choice: ToolChoice,
  capabilities: ModelCapabilities = fullCapabilities
): Option.Option<OpenAiChatToolChoice> =>
  map<OpenAiChatToolChoice>(choice, capabilities, openAiName, {
    auto: "auto",
    none: "none",
    required: "required",
    named: (name) => ({ type: "function", function: { name } })
  })

/**
 * OpenAI Responses `tool_choice`.
 *
 * @since 0.1.0
 * @category models
 */
export type OpenAiResponsesToolChoice =
  | "auto"
  | "none"
  | "required"
  | { readonly type: "function"; readonly name: string }

/**
 * To OpenAI Responses: `"auto" | "none" | "required"` as is, a named tool → `{ type: "function", name }`.
 *
 * @since 0.1.0
 * @category mappings
 */
export const toOpenAiResponses = (
  choice: ToolChoice,
  capabilities: ModelCapabilities = fullCapabilities
): Option.Option<OpenAiResponsesToolChoice> =>
  map<OpenAiResponsesToolChoice>(choice, capabilities, openAiName, {
    auto: "auto",
    none: "none",
    required: "required",
    named: (name) => ({ type: "function", name })
  })

/**
 * Google Gemini `toolConfig`.
 *
 * @since 0.1.0
 * @category models
 */
export interface GeminiToolConfig {
  readonly functionCallingConfig: {
    readonly mode: "AUTO" | "ANY" | "NONE"
    readonly allowedFunctionNames?: ReadonlyArray<string>
  }
}

/**
 * To Google Gemini: `auto` → mode `AUTO`, `none` → `NONE`, `required` → `ANY`, a named tool → `ANY` with
 * `allowedFunctionNames: [name]`.
 *
 * @since 0.1.0
 * @category mappings
 */
export const toGemini = (
  choice: ToolChoice,
  capabilities: ModelCapabilities = fullCapabilities
): Option.Option<GeminiToolConfig> =>
  map<GeminiToolConfig>(choice, capabilities, geminiName, {
    auto: { functionCallingConfig: { mode: "AUTO" } },
    none: { functionCallingConfig: { mode: "NONE" } },
    required: { functionCallingConfig: { mode: "ANY" } },
    named: (name) => ({ functionCallingConfig: { mode: "ANY", allowedFunctionNames: [name] } })
  })

/**
 * `@effect/ai`'s `LanguageModel` `toolChoice` (the subset this library sends).
 *
 * @since 0.1.0
 * @category models
 */
export type EffectAiToolChoice = "auto" | "none" | "required" | { readonly tool: string }

/**
 * To `@effect/ai`: `"auto" | "none" | "required"` as is, a named tool → `{ tool: name }`. `@effect/ai` checks
 * names against the toolkit itself, so any non-empty name is accepted here.
 *
 * @since 0.1.0
 * @category mappings
 */
export const toEffectAi = (
  choice: ToolChoice,
  capabilities: ModelCapabilities = fullCapabilities
): Option.Option<EffectAiToolChoice> =>
  map<EffectAiToolChoice>(choice, capabilities, undefined, {
    auto: "auto",
    none: "none",
    required: "required",
    named: (tool) => ({ tool })
  })
