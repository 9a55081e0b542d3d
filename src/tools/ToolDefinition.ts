/**
 * The shape of a model-facing tool, and the helper that builds the tool list of a request.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import type * as JSONSchema from "effect/JSONSchema"
import { UnknownTool } from "../domain/Errors.js"
import type { ToolResult } from "../domain/ToolResult.js"

/**
 * A tool the model can call: a name, a description, JSON Schema parameters and an `execute` that takes the
 * model's raw (untrusted) input.
 *
 * @since 0.1.0
 * @category models
 */
export interface ToolDefinition<E = unknown, R = never> {
  readonly name: string
  readonly label: string
  readonly description: string
  /** Hidden tools are never selected by name; the runtime adds them itself. */
  readonly hidden?: boolean
  readonly parameters: JSONSchema.JsonSchema7Root
  readonly execute: (input: unknown) => Effect.Effect<ToolResult, E, R>
}

/**
 * Builds a request's tool list: the `requested` tools in order (duplicates once, hidden tools such as `resolve`
 * filtered out), then every `always` tool, last. An unknown name fails with `UnknownTool`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const selectTools = <T extends ToolDefinition<any, any>>(
  requested: Iterable<string>,
  available: Iterable<T>,
  always: ReadonlyArray<T>
): Effect.Effect<ReadonlyArray<T>, UnknownTool> =>
  Effect.suspend(() => {
    const byName = new Map<string, T>()
    for (const tool of available) byName.set(tool.name, tool)
    const alwaysNames = new Set(always.map((tool) => tool.name))
    const chosen = new Map<string, T>()
    for (const name of requested) {
      if (alwaysNames.has(name)) continue
      const tool = byName.get(name)
      if (tool === undefined) {
        return Effect.fail(new UnknownTool({ name, available: [...byName.keys()].filter((n) => !alwaysNames.has(n)) }))
      }
      if (tool.hidden !== true) chosen.set(name, tool)
    }
    return Effect.succeed([...chosen.values(), ...always])
  })
