/**
 * What one `edit` call stages and what the model reads of it: the `preview` program checks the limits, has its files
 * found, confined and read, computes every replacement in memory, builds a unified diff per file (with a warning
 * for each added line that holds a Unicode bidirectional control), stages the pending action under its label and
 * returns the preview text. It writes nothing, and any error stages nothing. A file that a pending preview of the
 * session already holds is refused (`EditFileHeld`, naming that preview's id).
 *
 * @example
 * ```ts
 * import { NodeContext } from "@effect/platform-node"
 * import { Effect, Layer } from "effect"
 * import { ResolveRuntime } from "effect-resolve"
 * import { FileEditPreview } from "effect-resolve/edit"
 *
 * const staged = FileEditPreview.preview({
 *   files: [{ path: "src/a.ts", edits: [{ oldText: "const b = 2", newText: "const b = 3" }] }]
 * }).pipe(
 *   Effect.provide(Layer.mergeAll(ResolveRuntime.layer, NodeContext.layer, FileEditPreview.layer({ root: "." })))
 * )
 * // Its text starts with `previewHeadline`; the action's label is `editLabel(1, 1)`: "Edit: 1 replacement in 1 file".
 * ```
 *
 * @since 0.3.0
 */
import type * as FileSystem from "@effect/platform/FileSystem"
import * as Path from "@effect/platform/Path"
import * as Effect from "effect/Effect"
import { isAscii, isUtf8 } from "node:buffer"
import type { PendingStoreError } from "../domain/Errors.js"
import * as ToolResult from "../domain/ToolResult.js"
import { count } from "../internal/plural.js"
import { PendingActions, stageKind } from "../services/PendingActions.js"
import * as EditDiff from "./EditDiff.js"
import {
  EditFileHeld,
  EditFileNotText,
  EditLimitExceeded,
  EditTextAmbiguous,
  EditTextNotFound,
  type FileEditError
} from "./EditErrors.js"
import { type EditFile, kind } from "./EditKind.js"
import type { EditParams } from "./EditParams.js"
import { Workspace } from "./EditWorkspace.js"
import { summaryOf } from "./internal/editSummary.js"
import { stageHolding } from "./internal/heldFiles.js"
import { readPreviewFiles } from "./internal/previewFiles.js"
import { asBuffer, spliceBytes, stagedFile } from "./internal/stagedFiles.js"
/**
 * The label of an edit preview: `Edit: <N> replacements in <M> files`, in the singular for one (`Edit: 1
 * replacement in 1 file`).
 *
 * @since 0.1.0
 * @category constructors
 */
export const editLabel = (replacements: number, files: number): string =>
  `Edit: ${count(replacements, "replacement")} in ${count(files, "file")}`

/**
 * The first line of every preview result.
 *
 * @since 0.1.0
 * @category constants
 */
export const previewHeadline = "Nothing is written yet: this is a preview. Call resolve with action \"apply\" to " +
  "write these changes, or \"discard\" to drop them."

/** Most warnings about invisible characters listed per file; the rest are counted. */
const maxControlWarnings = 10

/** The bidirectional formatting characters (controls and marks) among the code points `showInvisible` names. */
const bidiCodePoints: ReadonlySet<string> = new Set([
  "U+061C",
  "U+200E",
  "U+200F",
  "U+202A",
  "U+202B",
  "U+202C",
  "U+202D",
  "U+202E",
  "U+2066",
  "U+2067",
  "U+2068",
  "U+2069"
])

/**
 * The preview's warning lines about the diff lines of a file that hold characters a screen does not show as
 * themselves (which the diff shows as `<U+XXXX>`): one per line, bidirectional controls first.
 */
const controlWarnings = (shownPath: string, lines: ReadonlyArray<EditDiff.ControlLine>): Array<string> => {
  const shown = lines.slice(0, maxControlWarnings).map(({ controls, line, side }) => {
    const where = `${shownPath} ${side === "old" ? "old line" : "line"} ${line}`
    const bidi = controls.filter((c) => bidiCodePoints.has(c))
    const other = controls.filter((c) => !bidiCodePoints.has(c))
    const parts = [
      ...(bidi.length === 0 ? [] : [
        `Unicode bidirectional control character(s) ${bidi.join(", ")}: the line may display in an order other than ` +
        `the one its characters are written in`
      ]),
      ...(other.length === 0 ? [] : [
        `control or invisible character(s) ${other.join(", ")}, which a screen does not show`
      ])
    ]
    return `Warning: ${where} holds ${parts.join("; and ")}. The diff shows each as <U+XXXX>; an apply writes the ` +
      `character itself.`
  })
  if (lines.length > maxControlWarnings) {
    shown.push(`Warning: ${shownPath}: ${lines.length - maxControlWarnings} more line(s) hold such characters.`)
  }
  return shown
}

/**
 * The `edit` program on decoded parameters: validates paths and limits, computes every replacement in memory, stages
 * the pending action and returns the preview. Writes nothing; any error stages nothing.
 *
 * @since 0.1.0
 * @category programs
 */
export const preview: (
  params: EditParams
) => Effect.Effect<
  ToolResult.ToolResult,
  FileEditError | PendingStoreError,
  FileSystem.FileSystem | Path.Path | Workspace | PendingActions
> = Effect.fn("FileEditPreview.preview")(function*(params: EditParams) {
  const path = yield* Path.Path
  const workspace = yield* Workspace
  if (params.files.length > workspace.maxFiles) {
    return yield* new EditLimitExceeded({ limit: "files", max: workspace.maxFiles, actual: params.files.length })
  }
  const editCount = params.files.reduce((n, file) => n + file.edits.length, 0)
  if (editCount > workspace.maxEdits) {
    return yield* new EditLimitExceeded({ limit: "edits", max: workspace.maxEdits, actual: editCount })
  }
  const { contents, givenRoot, places, realRoot } = yield* readPreviewFiles(path, workspace, params.files)

  const staged: Array<EditFile> = []
  const diffs: Array<string> = []
  const warnings: Array<string> = []
  let readBytes = 0
  let editedBytes = 0
  for (let fileIndex = 0; fileIndex < params.files.length; fileIndex++) {
    const file = params.files[fileIndex]!
    const { lexical, real } = places[fileIndex]!
    const content = contents[fileIndex]!
    if (content._tag === "Left") return yield* content.left
    const original = content.right
    // A file `fstat` saw empty is read to its end: it may have grown since.
    readBytes += original.byteLength
    if (readBytes > workspace.maxBytes) {
      return yield* new EditLimitExceeded({
        limit: "bytes",
        max: workspace.maxBytes,
        actual: readBytes,
        path: file.path
      })
    }
    const displayPath = path.relative(realRoot, real).split(path.sep).join("/")
    // ASCII (most source files) decodes and re-encodes by copying bytes; other UTF-8 is decoded in full. Decoding
    // keeps a byte-order mark in the text, so it is written back unchanged.
    const ascii = isAscii(original)
    if (!ascii && !isUtf8(original)) return yield* new EditFileNotText({ path: file.path })
    const text = asBuffer(original).toString(ascii ? "latin1" : "utf8")
    const edited = EditDiff.replaceTracked(text, original.byteLength, file.edits, workspace.maxBytes - editedBytes)
    switch (edited._tag) {
      case "NotFound":
        return yield* new EditTextNotFound({ path: file.path, editIndex: edited.editIndex })
      case "Ambiguous":
        return yield* new EditTextAmbiguous({
          path: file.path,
          editIndex: edited.editIndex,
          occurrences: edited.occurrences
        })
      case "TooLarge":
        return yield* new EditLimitExceeded({
          limit: "editedBytes",
          max: workspace.maxBytes,
          actual: editedBytes + edited.bytes,
          path: file.path
        })
    }
    editedBytes += edited.bytes
    const diff = EditDiff.unifiedDiff(`a/${displayPath}`, `b/${displayPath}`, text, edited)
    staged.push(stagedFile(
      { inputPath: file.path, displayPath, lexicalPath: lexical, realPath: real, replacements: edited.replacements },
      original,
      () => ascii ? spliceBytes(original, edited, edited.bytes) : Buffer.from(edited.text, "utf8")
    ))
    diffs.push(diff.patch)
    warnings.push(...controlWarnings(EditDiff.quoteFileName(displayPath), diff.controlLines))
  }

  const summary = summaryOf(staged)
  const label = editLabel(summary.replacements, summary.fileCount)
  // Names as the diff headers show them: a line break or a bidirectional control in a name cannot forge or hide text.
  const counts = summary.files.map((f) => `${EditDiff.quoteFileName(f.path)}: ${count(f.replacements, "replacement")}`)
  const shown = [
    ...(warnings.length === 0 ? [] : [...warnings, ""]),
    ...diffs,
    "",
    `${label}:`,
    ...counts.map((line) => `  ${line}`)
  ].join("\n")
  // Two pending previews never hold the same file: refused here, naming the preview that holds it.
  const held = new Map(staged.map((file) => [file.realPath, file.inputPath] as const))
  const handle = yield* stageHolding(
    yield* PendingActions,
    held,
    label,
    stageKind(kind, { givenRoot, realRoot, label, files: staged }, { label, sourceToolName: "edit", preview: shown }),
    (conflict) => new EditFileHeld(conflict)
  )
  // The model reads the action's id, to resolve this preview by id when several are pending.
  const text = `${previewHeadline}\nPending action id: ${handle.id}\n\n${shown}`
  return ToolResult.text(text, { ...summary, pendingActionId: handle.id })
})
