/**
 * The provider-neutral `tool_choice` of a model request.
 *
 * @example
 * ```ts
 * import { ToolChoice } from "effect-resolve"
 *
 * const forced = ToolChoice.forceTool("resolve") // { type: "tool", name: "resolve" }
 * ```
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"

/**
 * A tool choice that forces the model to call the named tool on the next turn.
 *
 * @since 0.1.0
 * @category schemas
 */
export const NamedToolChoice = Schema.Struct({
  type: Schema.Literal("tool"),
  name: Schema.String.pipe(Schema.nonEmptyString())
})

/**
 * @since 0.1.0
 * @category models
 */
export type NamedToolChoice = typeof NamedToolChoice.Type

/**
 * What the next model request's `tool_choice` is: `"auto"`, `"none"`, `"required"` or a named tool.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ToolChoice = Schema.Union(Schema.Literal("auto", "none", "required"), NamedToolChoice)

/**
 * @since 0.1.0
 * @category models
 */
export type ToolChoice = typeof ToolChoice.Type

/**
 * Builds the tool choice that forces a call of `name`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const forceTool = (name: string): NamedToolChoice => ({ type: "tool", name })

/**
 * True when the choice forces one named tool.
 *
 * @since 0.1.0
 * @category guards
 */
export const isNamed = (choice: ToolChoice): choice is NamedToolChoice => typeof choice === "object"
