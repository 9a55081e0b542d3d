/**
 * The parameters of a `resolve` call, what a handler receives, and the details it returns.
 *
 * @since 0.1.0
 */
import type * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { loneSurrogate, utf8Length } from "../internal/untrusted.js"
import type {
  ApplyFailed,
  NoPendingAction,
  PendingActionElsewhere,
  PendingActionNotPending,
  PendingStoreError,
  ToolError,
  UnknownPendingAction
} from "./Errors.js"
import type { ToolResult } from "./ToolResult.js"

/**
 * Keys that could rewrite an object's prototype when copied; `extra` may not use them.
 *
 * @since 0.1.0
 * @category constants
 */
export const forbiddenKeys: ReadonlySet<string> = new Set(["__proto__", "constructor", "prototype"])

/**
 * Bounds on what a model may pass to `resolve`.
 *
 * @since 0.1.0
 * @category constants
 */
export const limits = {
  /** Longest `reason`, in UTF-16 code units. */
  reasonMaxLength: 4_000,
  /** Deepest nesting of objects and arrays inside `extra`. */
  extraMaxDepth: 8,
  /** Largest `extra`: the UTF-8 bytes of its JSON text. */
  extraMaxBytes: 16_384,
  /** Longest pending-action `id`, in UTF-16 code units. */
  idMaxLength: 200
} as const

const jsonShape = (value: unknown, depth: number): string | undefined => {
  if (typeof value === "string") {
    return loneSurrogate.test(value)
      ? "strings must be valid UTF-8 (lone surrogate)"
      : undefined
  }
  if (value === null || typeof value === "boolean") return undefined
  if (typeof value === "number") return Number.isFinite(value) ? undefined : "numbers must be finite"
  if (typeof value !== "object") return `${typeof value} values are not JSON`
  if (depth >= limits.extraMaxDepth) return `nested deeper than ${limits.extraMaxDepth} levels`
  const entries = Array.isArray(value) ? value.map((v, i) => [String(i), v] as const) : Object.entries(value)
  for (const [key, item] of entries) {
    if (forbiddenKeys.has(key)) return `key "${key}" is not allowed`
    if (loneSurrogate.test(key)) return "keys must be valid UTF-8 (lone surrogate)"
    const problem = jsonShape(item, depth + 1)
    if (problem !== undefined) return `${key}: ${problem}`
  }
  return undefined
}

const ExtraKey = Schema.String.pipe(
  Schema.filter((key) => !forbiddenKeys.has(key) || `key "${key}" is not allowed (it could rewrite a prototype)`)
)

/**
 * Free-form JSON metadata passed through to the handler (plan approval reads `extra.title`).
 *
 * @since 0.1.0
 * @category schemas
 */
export const Extra = Schema.Record({ key: ExtraKey, value: Schema.Unknown }).pipe(
  Schema.filter((extra) => {
    const problem = jsonShape(extra, 0)
    if (problem !== undefined) return problem
    const size = utf8Length(JSON.stringify(extra))
    return size <= limits.extraMaxBytes ||
      `is ${size} bytes as JSON (UTF-8); at most ${limits.extraMaxBytes} bytes (16 KiB) are allowed`
  }),
  Schema.annotations({
    description: "Optional metadata for the handler, such as { \"title\": \"my-plan\" } for a plan approval.",
    jsonSchema: {
      type: "object",
      description: "Optional metadata for the handler, such as { \"title\": \"my-plan\" } for a plan approval."
    }
  })
)

/**
 * @since 0.1.0
 * @category models
 */
export type Extra = typeof Extra.Type

/**
 * `apply` commits the pending action; `discard` drops it.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ResolveAction = Schema.Literal("apply", "discard").annotations({
  description: "\"apply\" to commit the pending action, \"discard\" to drop it."
})

/**
 * @since 0.1.0
 * @category models
 */
export type ResolveAction = typeof ResolveAction.Type

const fields = {
  action: ResolveAction,
  reason: Schema.String.pipe(
    Schema.filter((s) => s.trim().length > 0 || "must not be empty: give one sentence saying why"),
    Schema.filter((s) => !loneSurrogate.test(s) || "must be valid UTF-8 text (it contains a lone surrogate)"),
    Schema.maxLength(limits.reasonMaxLength, {
      message: () => `must be at most ${limits.reasonMaxLength} characters: one sentence is enough`
    })
  ).annotations({
    title: "reason",
    description: "One sentence saying why you apply or discard."
  }),
  extra: Schema.optional(Extra),
  id: Schema.optional(
    Schema.String.pipe(
      Schema.minLength(1, { message: () => "must not be empty: leave it out to resolve the most recent preview" }),
      Schema.maxLength(limits.idMaxLength, { message: () => `must be at most ${limits.idMaxLength} characters` }),
      Schema.filter((s) => !loneSurrogate.test(s) || "must be valid UTF-8 text (it contains a lone surrogate)")
    ).annotations({
      title: "id",
      description: "The id of the pending action to resolve (the preview names it); leave it out for the most recent."
    })
  )
}

/**
 * The decoded parameters of a `resolve` call: `action` and `reason`, and optionally `extra` and the `id` of the
 * pending action to resolve (without it, the most recent pending one). The model-facing JSON Schema is
 * `ResolveTool.parameters`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ResolveParams = Schema.Struct(fields).annotations({ identifier: "ResolveParams" })

/**
 * @since 0.1.0
 * @category models
 */
export type ResolveParams = typeof ResolveParams.Type

/**
 * What a handler is invoked with: the decoded `resolve` parameters.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ResolveInvocation = Schema.Struct(fields).annotations({ identifier: "ResolveInvocation" })

/**
 * @since 0.1.0
 * @category models
 */
export type ResolveInvocation = typeof ResolveInvocation.Type

/**
 * The `details` of every `resolve` result: the call's parameters, where the action came from, and the producer's
 * own details under `sourceResultDetails`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ResolveDetails = Schema.Struct({
  action: ResolveAction,
  reason: Schema.String,
  extra: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.Unknown })),
  sourceToolName: Schema.optional(Schema.String),
  label: Schema.optional(Schema.String),
  sourceResultDetails: Schema.optional(Schema.Unknown)
})

/**
 * @since 0.1.0
 * @category models
 */
export type ResolveDetails = typeof ResolveDetails.Type

/**
 * What `resolve` and its handlers can fail with.
 *
 * @since 0.1.0
 * @category models
 */
export type ResolveError =
  | ToolError
  | ApplyFailed
  | NoPendingAction
  | UnknownPendingAction
  | PendingActionNotPending
  | PendingActionElsewhere
  | PendingStoreError

/**
 * A handler `resolve` calls: the in-flight directive's `onInvoked` or the standing handler.
 *
 * @since 0.1.0
 * @category models
 */
export type Invoker = (invocation: ResolveInvocation) => Effect.Effect<ToolResult, ResolveError>
