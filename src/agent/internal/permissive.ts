/**
 * Decoding model output permissively on `@effect/ai` 0.37, so that a model's mistake in one tool call reaches the
 * turn driver (which answers it with a failure result) instead of failing the whole response.
 *
 * `@effect/ai` decodes a response against a union holding one tool-call schema per tool of the request: a call
 * whose arguments fail their tool's schema, or a call to a tool that is not in the request, fails the response with
 * `MalformedOutput`. Two measures, used together by the turn driver:
 * - each tool of the request is sent with its real JSON Schema but decodes its arguments as `unknown`
 *   (`permissiveTool`); the driver then decodes each call against the real schema itself;
 * - a call to a tool the request did not carry still fails `@effect/ai`'s decoding: the response's raw parts are in
 *   the `ParseError` it wraps, and `recoverResponse` decodes them again with a permissive tool for every name they
 *   call, through `@effect/ai`'s own `Response.Part` schema.
 *
 * @internal
 */
import type * as AiError from "@effect/ai/AiError"
import * as LanguageModel from "@effect/ai/LanguageModel"
import * as Response from "@effect/ai/Response"
import * as Tool from "@effect/ai/Tool"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import * as aiTools from "../../internal/aiTools.js"

/** See `internal/aiTools.ts`. */
export const permissiveParameters = aiTools.permissiveParameters

/** A user-defined tool sent with its real JSON Schema, whose arguments decode as `unknown`. */
export const permissiveTool = (tool: Tool.Any): Tool.Any =>
  (tool as any).setParameters(permissiveParameters(Tool.getJsonSchema(tool as any)))

/** The tool list of a request: every user-defined tool made permissive; provider-defined tools as they are. */
export const permissiveTools = (tools: Record<string, Tool.Any>): Record<string, Tool.Any> =>
  Object.fromEntries(
    Object.entries(tools).map(([name, tool]) => [name, Tool.isUserDefined(tool) ? permissiveTool(tool) : tool])
  )

/** The raw response parts inside a `MalformedOutput` raised by `LanguageModel`'s response decoding, if any. */
const rawContentOf = (error: AiError.MalformedOutput): ReadonlyArray<unknown> | undefined => {
  if (error.module !== "LanguageModel" || !ParseResult.isParseError(error.cause)) return undefined
  const actual: unknown = error.cause.issue.actual
  return Array.isArray(actual) ? actual : undefined
}

const calledNames = (raw: ReadonlyArray<unknown>): ReadonlySet<string> => {
  const names = new Set<string>()
  for (const part of raw) {
    if (typeof part !== "object" || part === null) continue
    const { name, type } = part as { readonly name?: unknown; readonly type?: unknown }
    if ((type === "tool-call" || type === "tool-result") && typeof name === "string") names.add(name)
  }
  return names
}

/**
 * Decodes the raw parts of a response that `@effect/ai` rejected because a call named a tool the request did not
 * carry: `tools` plus a permissive tool for every other name called. Fails with the original error when the
 * parts cannot be recovered (the response itself is malformed, not only a call).
 */
export const recoverResponse = (
  error: AiError.MalformedOutput,
  tools: Record<string, Tool.Any>
): Effect.Effect<LanguageModel.GenerateTextResponse<any>, AiError.MalformedOutput> => {
  const raw = rawContentOf(error)
  if (raw === undefined) return Effect.fail(error)
  const all: Record<string, Tool.Any> = { ...tools }
  for (const name of calledNames(raw)) {
    if (!Object.hasOwn(all, name)) all[name] = permissiveTool(Tool.make(name))
  }
  const decoded = Schema.decodeUnknownEither(Schema.mutable(Schema.Array(Response.Part({ tools: all } as any))))(raw)
  return Either.isRight(decoded) ?
    Effect.succeed(new LanguageModel.GenerateTextResponse(decoded.right as Array<any>)) :
    Effect.fail(error)
}
