/**
 * What one `edit` call stages and what the model reads of it: the `preview` program checks the limits, has its files
 * found, confined and read, computes every replacement in memory, builds a unified diff per file (with a warning
 * for each added line that holds a Unicode bidirectional control), stages the pending action under its label and
 * returns the preview text. It writes nothing, and any error stages nothing.
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
import { type PendingActions, stageKind } from "../services/PendingActions.js"
import * as EditDiff from "./EditDiff.js"
import {
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

/** Most bidirectional-control warnings listed per file; the rest are counted. */
const maxBidiWarnings = 10

/** The preview's warning lines about bidirectional controls in the added lines of `file`. */
const bidiWarnings = (displayPath: string, lines: ReadonlyArray<EditDiff.BidiLine>): Array<string> => {
  const shown = lines.slice(0, maxBidiWarnings).map(({ controls, line }) =>
    `Warning: ${displayPath} line ${line} holds Unicode bidirectional control character(s) ${controls.join(", ")}: ` +
    `the line may display in an order other than the one its characters are written in.`
  )
  if (lines.length > maxBidiWarnings) {
    shown.push(`Warning: ${displayPath}: ${lines.length - maxBidiWarnings} more line(s) hold such characters.`)
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
    warnings.push(...bidiWarnings(displayPath, diff.bidiLines))
  }

  const summary = summaryOf(staged)
  const label = editLabel(summary.replacements, summary.fileCount)
  const counts = summary.files.map((f) => `${f.path}: ${count(f.replacements, "replacement")}`)
  const shown = [
    ...(warnings.length === 0 ? [] : [...warnings, ""]),
    ...diffs,
    "",
    `${label}:`,
    ...counts.map((line) => `  ${line}`)
  ].join("\n")
  const handle = yield* stageKind(kind, { givenRoot, realRoot, label, files: staged }, {
    label,
    sourceToolName: "edit",
    preview: shown
  })
  // The model reads the action's id, to resolve this preview by id when several are pending.
  const text = `${previewHeadline}\nPending action id: ${handle.id}\n\n${shown}`
  return ToolResult.text(text, { ...summary, pendingActionId: handle.id })
})
