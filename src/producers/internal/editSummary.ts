/**
 * What the model reads of an edit action besides its diff: the per-file counts its `details` carry, and the text of
 * its outcome when it is applied or discarded.
 *
 * @internal
 */
import * as ToolResult from "../../domain/ToolResult.js"
import { quoteFileName } from "../EditDiff.js"
import type { EditFile, EditPayload, EditSummary } from "../EditKind.js"

/** The counts of `staged`, per file and in all. */
export const summaryOf = (staged: ReadonlyArray<EditFile>): EditSummary => ({
  files: staged.map((f) => ({ path: f.displayPath, replacements: f.replacements })),
  fileCount: staged.length,
  replacements: staged.reduce((n, f) => n + f.replacements, 0)
})

/** What an apply that wrote every file returns. */
export const appliedResult = (payload: EditPayload, reason: string): ToolResult.ToolResult => {
  const summary = summaryOf(payload.files)
  // Names quoted as the diff headers show them (a control or bidirectional character in a name stays visible).
  const written = summary.files.map((f) => `${quoteFileName(f.path)} (${f.replacements})`).join(", ")
  return ToolResult.text(`Applied ${payload.label}. Wrote ${written}. Reason: ${reason}`, summary)
}

/** What a discard returns. */
export const discardedResult = (payload: EditPayload, reason: string): ToolResult.ToolResult =>
  ToolResult.text(
    `Discarded: ${payload.label}. Nothing was written to ${
      payload.files.map((f) => quoteFileName(f.displayPath)).join(", ")
    }. ` +
      `Reason: ${reason}`,
    summaryOf(payload.files)
  )
