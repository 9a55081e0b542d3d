/**
 * The `edit` tool: a safe file-edit preview producer. A call computes every replacement in memory, writes nothing,
 * returns unified diffs (built from the replacement positions, in time linear in the file) and stages a pending
 * action (of the durable kind `kind`). `resolve apply` takes a per-file lock on every file (shared by every session of
 * the process, and across processes through a lock file next to each file), re-resolves every path and refuses the
 * preview as stale if a path now leads elsewhere or a file's bytes changed, before writing anything; otherwise it
 * writes all files or none (an exclusive temporary file with the target's mode in the same directory, each path
 * verified again right before its rename; renamed files are restored from the snapshot if a later step fails), in
 * one uninterruptible `Preview.commit`.
 *
 * This module is the tool the model calls (`tool`) and the entry to the producer: each part has its own module, and
 * every name is re-exported from here:
 *
 * - `EditWorkspace`: the `Workspace` service, its `layer` and `defaultLimits`;
 * - `EditParams`: the parameters (`EditParams`), `decodeEditParams` and the strict `parametersJsonSchema`;
 * - `EditErrors`: what a preview or an apply fails with;
 * - `EditPreview`: the `preview` program, `editLabel` and `previewHeadline`;
 * - `EditKind`: the payload of an edit action (`EditPayload`, `EditFile`) and its durable `kind` (apply, discard, amend (`EditAmendment`),
 *   recover);
 * - `EditDiff` (the replacements and the diff) and `FileLock` (the locks of an apply) underneath, and the
 *   implementation in `internal/`: `previewFiles` (finding, confining and reading a preview's files), `stagedFiles`
 *   (their bytes), `editApply` (locks, checks, the all-or-none write), `editRecover` (after a crash), `editSummary`
 *   (the counts and outcome texts).
 *
 * @example
 * ```ts
 * import { NodeContext } from "@effect/platform-node"
 * import { Effect, Layer } from "effect"
 * import { ResolveRuntime } from "effect-resolve"
 * import { FileEditPreview } from "effect-resolve/edit"
 *
 * const layer = Layer.mergeAll(
 *   ResolveRuntime.layer,
 *   NodeContext.layer,
 *   FileEditPreview.layer({ root: "/path/to/workspace" })
 * )
 * const preview = FileEditPreview.tool.execute({
 *   files: [{ path: "src/greeting.ts", edits: [{ oldText: "hello", newText: "hello, world" }] }]
 * }).pipe(Effect.provide(layer)) // "Nothing is written yet: ..." followed by the diff
 * ```
 *
 * @since 0.1.0
 */
import type * as FileSystem from "@effect/platform/FileSystem"
import type * as Path from "@effect/platform/Path"
import * as Effect from "effect/Effect"
import type { PendingStoreError } from "../domain/Errors.js"
import type { PendingActions } from "../services/PendingActions.js"
import type { ToolDefinition } from "../tools/ToolDefinition.js"
import type { FileEditError } from "./EditErrors.js"
import { decodeEditParams, parametersJsonSchema } from "./EditParams.js"
import { preview } from "./EditPreview.js"
import type { Workspace } from "./EditWorkspace.js"

export {
  EditFileHeld,
  EditFileLocked,
  EditFileMissing,
  EditFileNotText,
  EditFileUnreadable,
  EditLimitExceeded,
  EditPathOutsideWorkspace,
  EditTextAmbiguous,
  EditTextNotFound,
  EditWriteFailed,
  type FileEditError,
  InvalidEditParams
} from "./EditErrors.js"
export { amendPayload, contract, EditAmendment, EditFile, EditPayload, type EditSummary, kind } from "./EditKind.js"
export { decodeEditParams, EditParams, FileEdits, parametersJsonSchema, Replacement } from "./EditParams.js"
export { editLabel, preview, previewHeadline } from "./EditPreview.js"
export { defaultLimits, layer, Workspace, type WorkspaceConfig } from "./EditWorkspace.js"

const description = [
  "Replace exact text in one or more files of the workspace, as a preview.",
  "",
  "Nothing is written when you call this tool: it returns a unified diff and stages the change.",
  "Then call `resolve` with action \"apply\" to write every file (all or none), or \"discard\" to drop it.",
  "Each edit's oldText must occur exactly once in the file (after the file's earlier edits), unless replaceAll is",
  "true (false or null: exactly once). Copy oldText exactly, including whitespace and line breaks. List each file",
  "once.",
  "If a file changes after the preview, apply refuses it as stale: discard and preview again."
].join("\n")

/**
 * The model-facing `edit` tool: the strict JSON Schema `parametersJsonSchema`, and an `execute` that decodes
 * untrusted input strictly (`EditParams`; `replaceAll` may be absent or `null`) and runs `preview`.
 *
 * @since 0.1.0
 * @category tools
 */
export const tool = {
  name: "edit",
  label: "Edit",
  description,
  parameters: parametersJsonSchema,
  execute: (input: unknown) => Effect.flatMap(decodeEditParams(input), preview)
} as const satisfies ToolDefinition<
  FileEditError | PendingStoreError,
  FileSystem.FileSystem | Path.Path | Workspace | PendingActions
>
