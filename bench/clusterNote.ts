/**
 * The durable kind the cluster bench decides: a note whose apply does nothing, so that a decision measures the
 * runtime (message, claim, settle, reply), not an app's work.
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { ActionKind, ToolResult } from "../dist/index.js"

/** The `note` kind: staged as data, applied as a no-op. */
export const Note = ActionKind.make({
  name: "note",
  payload: Schema.Struct({ n: Schema.Number }),
  apply: ({ n }) => Effect.succeed(ToolResult.text(`note ${n}`))
})
