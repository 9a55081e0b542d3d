/**
 * The result a tool hands back to the model: text content, optional details for UIs, and an error flag.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"

/**
 * One block of text content.
 *
 * @since 0.1.0
 * @category schemas
 */
export const TextContent = Schema.Struct({
  type: Schema.Literal("text"),
  text: Schema.String
})

/**
 * @since 0.1.0
 * @category models
 */
export type TextContent = typeof TextContent.Type

/**
 * `{ content: [{ type: "text", text }], details?, isError? }`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ToolResult = Schema.Struct({
  content: Schema.Array(TextContent),
  details: Schema.optional(Schema.Unknown),
  isError: Schema.optional(Schema.Boolean)
})

/**
 * @since 0.1.0
 * @category models
 */
export type ToolResult = typeof ToolResult.Type

/**
 * Builds a text result, with `details` when given.
 *
 * @example
 * ```ts
 * import { ToolResult } from "effect-resolve"
 *
 * ToolResult.text("Applied 2 edits", { files: 1 })
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const text = (text: string, details?: unknown): ToolResult =>
  details === undefined ? { content: [{ type: "text", text }] } : { content: [{ type: "text", text }], details }

/**
 * The text of a result: its text blocks joined by newlines.
 *
 * @since 0.1.0
 * @category getters
 */
export const textOf = (result: ToolResult): string => result.content.map((block) => block.text).join("\n")
