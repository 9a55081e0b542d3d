/**
 * Pure mappings from the provider-neutral `ToolChoice` to the `tool_choice` wire formats of Anthropic Messages,
 * OpenAI Chat Completions, OpenAI Responses, Google Gemini and `@effect/ai`. What a provider (or a model, through
 * its `ModelCapabilities`) cannot express is `Option.none()`, so the caller can fall back to the soft path. Also
 * `toGeminiSchema`: a tool's JSON Schema in the OpenAPI 3.0 subset Gemini's function declarations take.
 *
 * @example
 * ```ts
 * import { ToolChoice } from "effect-resolve"
 * import { ProviderToolChoice } from "effect-resolve/ai"
 *
 * ProviderToolChoice.toAnthropic(ToolChoice.forceTool("resolve"))
 * // Option.some({ type: "tool", name: "resolve" })
 * ProviderToolChoice.toAnthropic(ToolChoice.forceTool("resolve"), ProviderToolChoice.anthropicExtendedThinking)
 * // Option.none(): extended thinking cannot force a tool
 * ```
 *
 * @since 0.1.0
 */
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import type { ToolChoice } from "../domain/ToolChoice.js"
import { defaultInlineLimits, definitionOf, inlineDefinitions } from "../internal/strictSchema.js"
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
 * Anthropic Messages `tool_choice`, or `{ type: "omit_tools" }` for `"none"`: the request then carries neither
 * `tools` nor `tool_choice`, which is what `@effect/ai-anthropic` sends for `"none"` (a model cannot call a tool it
 * is not given).
 *
 * @since 0.1.0
 * @category models
 */
export type AnthropicToolChoice =
  | { readonly type: "auto" }
  | { readonly type: "any" }
  | { readonly type: "tool"; readonly name: string }
  | { readonly type: "omit_tools" }

/**
 * To Anthropic Messages: `auto` → `{ type: "auto" }`, `required` → `{ type: "any" }`, a named tool →
 * `{ type: "tool", name }`, and `none` → `{ type: "omit_tools" }`: send no `tools` and no `tool_choice`, as
 * `@effect/ai-anthropic` does.
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
    none: { type: "omit_tools" },
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

// ---------------------------------------------------------------------------------------------------------------
// Gemini schemas
// ---------------------------------------------------------------------------------------------------------------

/**
 * A schema in the OpenAPI 3.0 subset of Gemini's function declarations: one `type` per schema, `nullable` instead of
 * a `null` type, no `additionalProperties`, `anyOf`, `$ref` or `const`, `enum` for strings only.
 *
 * @since 0.2.0
 * @category models
 */
export interface GeminiSchema {
  readonly type: "STRING" | "NUMBER" | "INTEGER" | "BOOLEAN" | "ARRAY" | "OBJECT"
  readonly format?: string
  readonly title?: string
  readonly description?: string
  readonly nullable?: boolean
  readonly enum?: ReadonlyArray<string>
  readonly properties?: Readonly<Record<string, GeminiSchema>>
  readonly required?: ReadonlyArray<string>
  readonly items?: GeminiSchema
  readonly minItems?: number
  readonly maxItems?: number
  readonly minLength?: number
  readonly maxLength?: number
  readonly pattern?: string
  readonly minimum?: number
  readonly maximum?: number
  readonly minProperties?: number
  readonly maxProperties?: number
}

/**
 * A JSON Schema uses something Gemini's schema subset cannot express; `path` is where (`(root)`, `properties.a`).
 *
 * @since 0.2.0
 * @category errors
 */
export class UnsupportedGeminiSchema
  extends Schema.TaggedError<UnsupportedGeminiSchema>("effect-resolve/UnsupportedGeminiSchema")(
    "UnsupportedGeminiSchema",
    { path: Schema.String, problem: Schema.String }
  )
{
  /**
   * @since 0.2.0
   */
  override get message(): string {
    return `This JSON Schema cannot be sent to Gemini: at ${this.path}, ${this.problem}.`
  }
}

const geminiTypes = {
  string: "STRING",
  number: "NUMBER",
  integer: "INTEGER",
  boolean: "BOOLEAN",
  array: "ARRAY",
  object: "OBJECT"
} as const

/** Keywords copied as they are (their meaning is the same in Gemini's subset). */
const geminiCopied = [
  "title",
  "description",
  "minItems",
  "maxItems",
  "minLength",
  "maxLength",
  "pattern",
  "minimum",
  "maximum",
  "minProperties",
  "maxProperties"
] as const

/** Keywords that carry no constraint and are dropped. */
const geminiDropped = new Set(["$schema", "$id", "$comment", "additionalProperties", "examples", "default"])

/** The formats Gemini documents; others are dropped (a format is a hint, not a constraint the model must meet). */
const geminiFormats = new Set(["date-time", "enum", "int32", "int64", "float", "double"])

/** Deepest nesting converted: a schema nested deeper than this is refused rather than walked. */
const geminiMaxDepth = 32

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)

class GeminiFailure {
  constructor(readonly path: string, readonly problem: string) {}
}

// A place named as `UnsupportedGeminiSchema.path` names it, from the keys `inlineDefinitions` reports: property
// names and `items` joined by dots, `anyOf` branches left out (a nullable union is one schema here), `(root)` alone.
const geminiPath = (at: ReadonlyArray<string | number>): string => {
  const names: Array<string> = []
  for (let i = 0; i < at.length; i++) {
    const key = at[i]!
    if (key === "properties" && i + 1 < at.length) names.push(String(at[++i]))
    else if (key === "anyOf") i++
    else names.push(String(key))
  }
  return names.length === 0 ? "(root)" : names.join(".")
}

// Converts a schema whose definitions are inlined (`inlineDefinitions` bounded its depth and size): a `$ref` still
// there is one it could not inline, recursive or pointing nowhere; `root` is the schema as given, with its `$defs`.
const convertGemini = (schema: unknown, path: string, root: Record<string, unknown>): GeminiSchema => {
  const fail = (problem: string): never => {
    throw new GeminiFailure(path, problem)
  }
  const failOnRef = (ref: string): never =>
    fail(
      definitionOf(root, ref) === undefined ?
        `the reference ${ref} does not point into $defs` :
        `${ref} is recursive, and Gemini's schema has no references`
    )
  if (!isRecord(schema)) return fail("a schema must be a JSON object")
  if (typeof schema.$ref === "string") failOnRef(schema.$ref)
  let nullable = schema.nullable === true
  let body: Record<string, unknown> = schema
  if (Array.isArray(schema.anyOf)) {
    const variants = schema.anyOf.filter((variant) => !(isRecord(variant) && variant.type === "null"))
    if (variants.length !== 1 || schema.anyOf.length !== 2) {
      fail("anyOf is only supported as one schema or null (Gemini has no unions)")
    }
    nullable = true
    const { anyOf: _, ...rest } = schema
    const variant = variants[0]!
    if (isRecord(variant) && typeof variant.$ref === "string") failOnRef(variant.$ref)
    body = { ...(isRecord(variant) ? variant : {}), ...rest }
  }
  let type: unknown = body.type
  if (Array.isArray(type)) {
    const types = type.filter((t) => t !== "null")
    if (types.length !== 1) fail("a schema must have exactly one type besides null")
    if (types.length !== type.length) nullable = true
    type = types[0]
  }
  if (body.const !== undefined) {
    if (typeof body.const !== "string") fail("const is only supported for strings (as a one-value enum)")
    type = type ?? "string"
  }
  if (typeof type === "string" && /^[A-Z]+$/.test(type)) type = type.toLowerCase()
  if (typeof type !== "string" || !Object.hasOwn(geminiTypes, type)) {
    return fail(`the type ${JSON.stringify(type)} is not one of string, number, integer, boolean, array, object`)
  }
  const out: { -readonly [K in keyof GeminiSchema]?: GeminiSchema[K] } = {
    type: geminiTypes[type as keyof typeof geminiTypes]
  }
  for (const key of Object.keys(body)) {
    if (
      geminiDropped.has(key) || (geminiCopied as ReadonlyArray<string>).includes(key) ||
      ["type", "nullable", "format", "enum", "const", "properties", "required", "items", "$defs", "definitions"]
        .includes(key)
    ) continue
    fail(`the keyword ${JSON.stringify(key)} has no equivalent in Gemini's schema`)
  }
  for (const key of geminiCopied) {
    if (body[key] !== undefined) (out as Record<string, unknown>)[key] = body[key]
  }
  if (nullable) out.nullable = true
  if (typeof body.format === "string" && geminiFormats.has(body.format)) out.format = body.format
  const values = body.const !== undefined ? [body.const] : body.enum
  if (values !== undefined) {
    if (!Array.isArray(values) || out.type !== "STRING" || !values.every((v) => typeof v === "string")) {
      fail("enum is only supported for strings")
    }
    out.enum = values as ReadonlyArray<string>
  }
  if (out.type === "OBJECT") {
    const properties = isRecord(body.properties) ? body.properties : {}
    const names = Object.keys(properties)
    if (names.length === 0) fail("an object needs at least one property (omit `parameters` for a tool without any)")
    out.properties = Object.fromEntries(
      names.map((
        name
      ) => [name, convertGemini(properties[name], `${path === "(root)" ? "" : `${path}.`}${name}`, root)])
    )
    if (body.required !== undefined) {
      const required = body.required
      if (!Array.isArray(required) || !required.every((r) => typeof r === "string" && names.includes(r))) {
        fail("required must list properties of the object")
      }
      if ((required as ReadonlyArray<string>).length > 0) out.required = required as ReadonlyArray<string>
    }
  }
  if (out.type === "ARRAY") {
    if (!isRecord(body.items)) fail("an array needs one items schema (Gemini has no tuples)")
    out.items = convertGemini(body.items, `${path === "(root)" ? "" : `${path}.`}items`, root)
  }
  return out as GeminiSchema
}

/**
 * A tool's JSON Schema (as sent to OpenAI or Anthropic, `ResolveTool.parameters` for instance) in the OpenAPI 3.0
 * subset Gemini's function declarations take: `anyOf` with `null` and `type: [T, "null"]` become `nullable: true`,
 * local `$ref`s are inlined, `const` becomes a one-value `enum`, types are upper case, `additionalProperties`,
 * `$schema` and `default` are dropped, and so are formats Gemini does not document. What has no equivalent (a
 * union, a recursive reference, a non-string enum, an object without properties, `oneOf`, `allOf`, ...) fails with
 * `UnsupportedGeminiSchema` naming where. Pure, and bounded: a schema nested deeper than 32 levels, or larger than
 * 100 000 objects once its references are inlined, is refused rather than walked (a deep schema, one that contains
 * itself, or definitions that use each other many times cannot overflow the stack or run without end).
 *
 * @example
 * ```ts
 * import { ResolveTool } from "effect-resolve"
 * import { ProviderToolChoice } from "effect-resolve/ai"
 *
 * ProviderToolChoice.toGeminiSchema(ResolveTool.parameters)
 * // Either.right({ type: "OBJECT", properties: { ..., extra: { type: "STRING", nullable: true, ... } }, required: [...] })
 * ```
 *
 * @since 0.2.0
 * @category mappings
 */
export const toGeminiSchema = (schema: object): Either.Either<GeminiSchema, UnsupportedGeminiSchema> => {
  const root = isRecord(schema) ? schema : {}
  const inlined = isRecord(schema) ?
    inlineDefinitions(schema, { ...defaultInlineLimits, maxDepth: geminiMaxDepth }) :
    Either.right(schema)
  if (Either.isLeft(inlined)) {
    const { at, problem } = inlined.left
    return Either.left(new UnsupportedGeminiSchema({ path: geminiPath(at), problem: `it ${problem}` }))
  }
  try {
    return Either.right(convertGemini(inlined.right, "(root)", root))
  } catch (failure) {
    if (failure instanceof GeminiFailure) {
      return Either.left(new UnsupportedGeminiSchema({ path: failure.path, problem: failure.problem }))
    }
    throw failure
  }
}
