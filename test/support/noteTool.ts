/**
 * A model tool for the agent-loop tests: `note` stages a closure preview of its text (label `Note: <text>`), whose
 * apply answers `Noted <text>.`; the tool's result names the preview's id. `Tools` is the toolkit, `Handlers` its
 * layer (it needs `PendingActions`).
 */
import { Tool, Toolkit } from "@effect/ai"
import { Effect, Schema } from "effect"
import { PendingActions, PendingStoreError, stage, ToolResult } from "../../src/index.js"

/** The `note` tool. */
export const Note = Tool.make("note", {
  parameters: { text: Schema.String },
  success: Schema.String,
  failure: PendingStoreError,
  dependencies: [PendingActions]
})

/** The toolkit of `note` alone. */
export const Tools = Toolkit.make(Note)

/** `note`'s handler: stages the preview. */
export const Handlers = Tools.toLayer({
  note: ({ text }) =>
    Effect.map(
      stage({
        label: `Note: ${text}`,
        sourceToolName: "note",
        preview: text,
        apply: () => Effect.succeed(ToolResult.text(`Noted ${text}.`))
      }),
      (handle) => `Preview ${handle.id}`
    )
})
