/**
 * What an edit can fail with, and what each failure tells the model: the preview's errors (bad parameters, text not
 * found or ambiguous, a file missing, not text, unreadable or outside the workspace, a limit crossed; nothing is
 * staged) and the apply's (a file locked by another apply, a failed write; the action stays pending).
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { FileEditPreview } from "effect-resolve/edit"
 *
 * const preview = FileEditPreview.tool.execute({
 *   files: [{ path: "a.txt", edits: [{ oldText: "x", newText: "y" }] }]
 * }).pipe(
 *   Effect.catchTag("EditTextNotFound", (error) => Effect.succeed(`not found in ${error.path}`))
 * )
 * ```
 *
 * @since 0.3.0
 */
import * as Schema from "effect/Schema"

/**
 * The model's `edit` input does not decode (or lists a file twice). Nothing was staged.
 *
 * @since 0.1.0
 * @category errors
 */
export class InvalidEditParams
  extends Schema.TaggedError<InvalidEditParams>("effect-resolve/InvalidEditParams")("InvalidEditParams", {
    field: Schema.String,
    problem: Schema.String
  })
{
  /**
   * @since 0.1.0
   */
  override get message(): string {
    return `Invalid edit parameters: ${this.field}: ${this.problem}. Nothing was staged. ` +
      `Call edit with { "files": [{ "path": "...", "edits": [{ "oldText": "...", "newText": "..." }] }] }.`
  }
}

/**
 * `oldText` of `edits[editIndex]` does not occur in the file (after the file's earlier edits).
 *
 * @since 0.1.0
 * @category errors
 */
export class EditTextNotFound
  extends Schema.TaggedError<EditTextNotFound>("effect-resolve/EditTextNotFound")("EditTextNotFound", {
    path: Schema.String,
    editIndex: Schema.Number
  })
{
  /**
   * @since 0.1.0
   */
  override get message(): string {
    return `${this.path}, edits[${this.editIndex}]: oldText was not found (after the earlier edits of this file). ` +
      `Read the file again and copy oldText exactly, including whitespace. Nothing was staged.`
  }
}

/**
 * `oldText` of `edits[editIndex]` occurs more than once and `replaceAll` is not set.
 *
 * @since 0.1.0
 * @category errors
 */
export class EditTextAmbiguous
  extends Schema.TaggedError<EditTextAmbiguous>("effect-resolve/EditTextAmbiguous")("EditTextAmbiguous", {
    path: Schema.String,
    editIndex: Schema.Number,
    occurrences: Schema.Number
  })
{
  /**
   * @since 0.1.0
   */
  override get message(): string {
    return `${this.path}, edits[${this.editIndex}]: oldText occurs ${this.occurrences} times. ` +
      `Add surrounding lines to make it unique, or set "replaceAll": true. Nothing was staged.`
  }
}

/**
 * The file does not exist.
 *
 * @since 0.1.0
 * @category errors
 */
export class EditFileMissing
  extends Schema.TaggedError<EditFileMissing>("effect-resolve/EditFileMissing")("EditFileMissing", {
    path: Schema.String
  })
{
  /**
   * @since 0.1.0
   */
  override get message(): string {
    return `${this.path}: no such file in the workspace. The edit tool changes existing files only. Nothing was staged.`
  }
}

/**
 * The file is not UTF-8 text.
 *
 * @since 0.1.0
 * @category errors
 */
export class EditFileNotText
  extends Schema.TaggedError<EditFileNotText>("effect-resolve/EditFileNotText")("EditFileNotText", {
    path: Schema.String
  })
{
  /**
   * @since 0.1.0
   */
  override get message(): string {
    return `${this.path}: not UTF-8 text; the edit tool only edits text files. Nothing was staged.`
  }
}

/**
 * The path is not a readable regular file (a directory, a permission problem, ...).
 *
 * @since 0.1.0
 * @category errors
 */
export class EditFileUnreadable
  extends Schema.TaggedError<EditFileUnreadable>("effect-resolve/EditFileUnreadable")("EditFileUnreadable", {
    path: Schema.String,
    problem: Schema.String
  })
{
  /**
   * @since 0.1.0
   */
  override get message(): string {
    return `${this.path}: ${this.problem}. Nothing was staged.`
  }
}

/**
 * The path leaves the workspace: `..`, an absolute path elsewhere, or a symlink that resolves outside.
 *
 * @since 0.1.0
 * @category errors
 */
export class EditPathOutsideWorkspace extends Schema.TaggedError<EditPathOutsideWorkspace>(
  "effect-resolve/EditPathOutsideWorkspace"
)("EditPathOutsideWorkspace", {
  path: Schema.String,
  viaSymlink: Schema.Boolean
}) {
  /**
   * @since 0.1.0
   */
  override get message(): string {
    return `${this.path}: outside the workspace${this.viaSymlink ? " (a symlink resolves outside it)" : ""}. ` +
      `Use a path relative to the workspace root. Nothing was staged.`
  }
}

/**
 * The call would touch more than the workspace allows: more files, more bytes read, more bytes after the edits
 * (`editedBytes`), or more edits.
 *
 * @since 0.1.0
 * @category errors
 */
export class EditLimitExceeded
  extends Schema.TaggedError<EditLimitExceeded>("effect-resolve/EditLimitExceeded")("EditLimitExceeded", {
    limit: Schema.Literal("files", "bytes", "editedBytes", "edits"),
    max: Schema.Number,
    actual: Schema.Number,
    /** The file that crossed the limit (bytes and editedBytes only). */
    path: Schema.optional(Schema.String)
  })
{
  /**
   * @since 0.1.0
   */
  override get message(): string {
    switch (this.limit) {
      case "files":
        return `Too many files: ${this.actual} in one edit, at most ${this.max} are allowed. Split the edit. ` +
          `Nothing was staged.`
      case "edits":
        return `Too many edits: ${this.actual} in one call, at most ${this.max} are allowed. Split the edit, or use ` +
          `replaceAll for a text that occurs many times. Nothing was staged.`
      case "editedBytes":
        return `Too many bytes: the edits of ${this.path ?? "the files"} bring the edited files to ${this.actual} ` +
          `bytes, at most ${this.max} are allowed. Split the edit into calls with fewer files; a single file that ` +
          `would grow past ${this.max} bytes cannot be edited with this tool. Nothing was staged.`
      case "bytes":
        return `Too many bytes: reading ${this.path ?? "the files"} brings the edit to ${this.actual} bytes, at most ` +
          `${this.max} are allowed. Split the edit into calls with fewer files; a single file larger than ` +
          `${this.max} bytes cannot be edited with this tool. Nothing was staged.`
    }
  }
}

/**
 * Another apply (in this process or another one) kept a file locked for longer than the workspace's `lockTimeout`.
 * Nothing was written; the action stays pending.
 *
 * @since 0.2.0
 * @category errors
 */
export class EditFileLocked
  extends Schema.TaggedError<EditFileLocked>("effect-resolve/EditFileLocked")("EditFileLocked", {
    path: Schema.String,
    /** Who holds the lock, when known ("process 123 on host since ..."). */
    holder: Schema.optional(Schema.String),
    waitedMs: Schema.Number
  })
{
  /**
   * @since 0.2.0
   */
  override get message(): string {
    return `${this.path} is being written by another apply${this.holder === undefined ? "" : ` (${this.holder})`}; ` +
      `waited ${this.waitedMs} ms. Nothing was written. The preview is still pending: call resolve with action ` +
      `"apply" again in a moment, or discard it.`
  }
}

/**
 * The write phase of an apply failed. Every file is as it was before the apply (files already renamed were restored
 * from the preview's snapshot), unless `notRestored` lists some. The action stays pending.
 *
 * @since 0.1.0
 * @category errors
 */
export class EditWriteFailed
  extends Schema.TaggedError<EditWriteFailed>("effect-resolve/EditWriteFailed")("EditWriteFailed", {
    path: Schema.String,
    problem: Schema.String,
    restored: Schema.Array(Schema.String),
    notRestored: Schema.Array(Schema.String)
  })
{
  /**
   * @since 0.1.0
   */
  override get message(): string {
    const restored = this.restored.length === 0
      ? ""
      : ` Restored from the preview's snapshot: ${this.restored.join(", ")}.`
    return this.notRestored.length === 0 ?
      `writing ${this.path} failed (${this.problem}); no file was changed.${restored} ` +
      `The preview is still pending: apply again or discard it.` :
      `writing ${this.path} failed (${this.problem}) and ${this.notRestored.join(", ")} could not be restored; ` +
      `check them by hand.${restored}`
  }
}

/**
 * What a preview can fail with.
 *
 * @since 0.1.0
 * @category models
 */
export type FileEditError =
  | InvalidEditParams
  | EditTextNotFound
  | EditTextAmbiguous
  | EditFileMissing
  | EditFileNotText
  | EditFileUnreadable
  | EditPathOutsideWorkspace
  | EditLimitExceeded
