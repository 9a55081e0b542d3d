/**
 * What the `@effect/ai` forms of the tools share (`resolve`, and the producers' `edit` and `plan`): a parameters
 * schema that decodes any value while the provider is sent the tool's real JSON Schema, and the failure the model
 * reads (the error's tag and message). Only `effect` is imported here, so every layer may use it.
 *
 * @internal
 */
import * as Schema from "effect/Schema"
import { capText, messageOf, stringProperty } from "./render.js"

/**
 * A parameters schema that accepts any value when a response is decoded, while the provider is sent `jsonSchema`
 * (through the `jsonSchema` annotation, which `Tool.getJsonSchema` returns as it is). Typed as an empty struct,
 * which is what `@effect/ai`'s tool types require; its decoded values are `unknown` in truth.
 */
export const permissiveParameters = (jsonSchema: object): Schema.Struct<{}> =>
  Object.assign(Schema.Unknown.annotations({ jsonSchema }), { fields: {}, make: (value: unknown) => value }) as any

/** What a failed tool call returns to the model: the error's tag and message. */
export const ToolFailure = Schema.Struct({ error: Schema.String, message: Schema.String })

/**
 * Turns any failure into what the model reads: its `_tag` (when a string, else `"Error"`) and its message (never
 * throws, whatever the value; at most 2 000 characters).
 */
export const toFailure = (error: unknown): typeof ToolFailure.Type => {
  const tag = stringProperty(error, "_tag")
  return { error: tag === undefined ? "Error" : capText(tag, 200), message: messageOf(error) }
}
