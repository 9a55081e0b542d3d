/**
 * The `edit` tool: a safe file-edit preview producer. A call computes every replacement in memory, writes nothing,
 * returns unified diffs and stages a pending action with `queueResolveHandler`. `resolve apply` re-reads every file
 * and refuses a stale preview before writing anything; otherwise it writes all files or none (temporary file in the
 * same directory, then rename; renamed files are restored from the snapshot if a later step fails), keeping file
 * modes, in one uninterruptible `PendingAction.commit`.
 *
 * @example
 * ```ts
 * import { NodeContext } from "@effect/platform-node"
 * import { Effect, Layer } from "effect"
 * import { FileEditPreview, ResolveRuntime, ResolveTool } from "effect-resolve"
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
import type { PlatformError } from "@effect/platform/Error"
import * as FileSystem from "@effect/platform/FileSystem"
import * as Path from "@effect/platform/Path"
import { createTwoFilesPatch, FILE_HEADERS_ONLY } from "diff"
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as JSONSchema from "effect/JSONSchema"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import { createHash, randomBytes } from "node:crypto"
import { type PendingStoreError, ToolError } from "../domain/Errors.js"
import * as ToolResult from "../domain/ToolResult.js"
import { loneSurrogate, show, tooDeepField, valueAt } from "../internal/untrusted.js"
import * as PendingAction from "../services/PendingAction.js"
import { type PendingActions, queueResolveHandler } from "../services/PendingActions.js"
import type { ToolDefinition } from "./ToolDefinition.js"

// -----------------------------------------------------------------------------------------------------------------
// configuration
// -----------------------------------------------------------------------------------------------------------------

/**
 * Where the `edit` tool may read and write, and how much one preview may touch.
 *
 * @since 0.1.0
 * @category models
 */
export interface WorkspaceConfig {
  /** The workspace root. Paths are relative to it; nothing outside it (after resolving symlinks) is touched. */
  readonly root: string
  /** Most files one preview may edit. */
  readonly maxFiles: number
  /** Largest total size, in bytes, of the files one preview reads. */
  readonly maxBytes: number
}

/**
 * The default limits: 20 files, 4 MiB.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultLimits = { maxFiles: 20, maxBytes: 4 * 1024 * 1024 } as const

/**
 * The workspace of the `edit` tool.
 *
 * @since 0.1.0
 * @category tags
 */
export class Workspace extends Context.Tag("effect-resolve/FileEditPreview/Workspace")<Workspace, WorkspaceConfig>() {}

/**
 * Provides the workspace: `root` is required, the limits default to `defaultLimits`.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (
  options: { readonly root: string; readonly maxFiles?: number; readonly maxBytes?: number }
): Layer.Layer<Workspace> =>
  Layer.succeed(Workspace, {
    root: options.root,
    maxFiles: options.maxFiles ?? defaultLimits.maxFiles,
    maxBytes: options.maxBytes ?? defaultLimits.maxBytes
  })

// -----------------------------------------------------------------------------------------------------------------
// parameters
// -----------------------------------------------------------------------------------------------------------------

const utf8Text = (s: string): true | string =>
  !loneSurrogate.test(s) || "must be valid UTF-8 text (it contains a lone surrogate)"

/**
 * One replacement: `oldText` (exact, non-empty) becomes `newText`. Without `replaceAll`, `oldText` must occur
 * exactly once.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Replacement = Schema.Struct({
  oldText: Schema.String.pipe(
    Schema.minLength(1, { message: () => "must not be empty: copy the exact text to replace" }),
    Schema.filter(utf8Text)
  ).annotations({ title: "oldText", description: "The exact text to replace, including whitespace and line breaks." }),
  newText: Schema.String.pipe(Schema.filter(utf8Text)).annotations({ description: "The text that replaces oldText." }),
  replaceAll: Schema.optional(Schema.Boolean.annotations({
    description: "Replace every occurrence. Without it, oldText must occur exactly once."
  }))
})

/**
 * The replacements of one file, applied in order (each to the result of the previous one).
 *
 * @since 0.1.0
 * @category schemas
 */
export const FileEdits = Schema.Struct({
  path: Schema.String.pipe(
    Schema.minLength(1, { message: () => "must not be empty" }),
    Schema.maxLength(4096, { message: () => "must be at most 4096 characters" }),
    Schema.filter((s) => !s.includes("\u0000") || "must not contain a NUL byte"),
    Schema.filter(utf8Text)
  ).annotations({
    title: "path",
    description: "The file, relative to the workspace root."
  }),
  edits: Schema.NonEmptyArray(Replacement).annotations({ description: "The replacements, applied in order." })
})

/**
 * The parameters of the `edit` tool: one or more files, each listed once.
 *
 * @since 0.1.0
 * @category schemas
 */
export const EditParams = Schema.Struct({
  files: Schema.NonEmptyArray(FileEdits).annotations({ description: "The files to edit, each listed once." })
}).annotations({ identifier: "EditParams" })

/**
 * @since 0.1.0
 * @category models
 */
export type EditParams = typeof EditParams.Type

// -----------------------------------------------------------------------------------------------------------------
// errors
// -----------------------------------------------------------------------------------------------------------------

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
 * The preview would touch more files or bytes than the workspace allows.
 *
 * @since 0.1.0
 * @category errors
 */
export class EditLimitExceeded
  extends Schema.TaggedError<EditLimitExceeded>("effect-resolve/EditLimitExceeded")("EditLimitExceeded", {
    limit: Schema.Literal("files", "bytes"),
    max: Schema.Number,
    actual: Schema.Number,
    /** The file that crossed the limit (bytes only). */
    path: Schema.optional(Schema.String)
  })
{
  /**
   * @since 0.1.0
   */
  override get message(): string {
    return this.limit === "files" ?
      `Too many files: ${this.actual} in one edit, at most ${this.max} are allowed. Split the edit. Nothing was staged.` :
      `Too many bytes: reading ${this.path ?? "the files"} brings the edit to ${this.actual} bytes, at most ` +
      `${this.max} are allowed. Split the edit. Nothing was staged.`
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

// -----------------------------------------------------------------------------------------------------------------
// decoding
// -----------------------------------------------------------------------------------------------------------------

const decodeParams = Schema.decodeUnknown(EditParams, { onExcessProperty: "error", errors: "first" })

/**
 * Decodes untrusted `edit` input; a failure names the first bad field.
 *
 * @since 0.1.0
 * @category decoding
 */
export const decodeEditParams = (input: unknown): Effect.Effect<EditParams, InvalidEditParams> => {
  // Schema's error formatting prints the offending value recursively: a value nested thousands of levels deep would
  // overflow the stack (a defect instead of a typed error), so such values are refused first.
  const deep = tooDeepField(input, maxNesting)
  return deep !== undefined ?
    Effect.fail(new InvalidEditParams({ field: deep, problem: `is nested deeper than ${maxNesting} levels` })) :
    decodeChecked(input)
}

/** Deeper than any valid input (root, files, file, edits, edit: 4 levels). */
const maxNesting = 16

/** What each field must be, for type errors (Schema's own text names annotations and prints the whole value). */
const expected = (path: ReadonlyArray<PropertyKey>): string => {
  const last = path[path.length - 1]
  const parent = path[path.length - 2]
  return path.length === 0 ?
    "must be a JSON object { \"files\": [...] }" :
    last === "files" ?
    "must be a non-empty array of { \"path\", \"edits\" }" :
    parent === "files" ?
    "must be an object { \"path\", \"edits\" }" :
    last === "edits" ?
    "must be a non-empty array of { \"oldText\", \"newText\" }" :
    parent === "edits" ?
    "must be an object { \"oldText\", \"newText\", \"replaceAll\"? }" :
    last === "replaceAll" ?
    "must be true or false" :
    "must be a string"
}

const decodeChecked = (input: unknown): Effect.Effect<EditParams, InvalidEditParams> =>
  Effect.mapError(decodeParams(input), (error) => {
    const [issue] = ParseResult.ArrayFormatter.formatErrorSync(error)
    // An empty non-empty array is reported as its missing element 0: name the array instead.
    const emptyList = issue?._tag === "Missing" && typeof issue.path[issue.path.length - 1] === "number"
    const path = (emptyList ? issue!.path.slice(0, -1) : issue?.path) ?? []
    const field = path.length === 0 ? "(root)" : path.map(String).join(".")
    const problem = issue === undefined ?
      "could not be decoded" :
      emptyList ?
      "must not be empty: list at least one" :
      issue._tag === "Unexpected" ?
      "is not an edit parameter" :
      issue._tag === "Missing" ?
      "is required" :
      issue._tag === "Type" ?
      `${expected(path)}, got ${show(valueAt(input, path))}` :
      issue.message
    return new InvalidEditParams({ field, problem })
  })

// -----------------------------------------------------------------------------------------------------------------
// preview
// -----------------------------------------------------------------------------------------------------------------

interface StagedFile {
  /** As the model wrote it. */
  readonly inputPath: string
  /** Relative to the real workspace root, for humans. */
  readonly displayPath: string
  /** The resolved file that is written. */
  readonly realPath: string
  readonly original: Uint8Array
  readonly hash: string
  readonly updated: Uint8Array
  readonly replacements: number
}

/**
 * The per-file counts a preview's (and an apply's) `details` carry.
 *
 * @since 0.1.0
 * @category models
 */
export interface EditSummary {
  readonly files: ReadonlyArray<{ readonly path: string; readonly replacements: number }>
  readonly fileCount: number
  readonly replacements: number
}

const sha256 = (bytes: Uint8Array): string => createHash("sha256").update(bytes).digest("hex")

const isNotFound = (error: PlatformError): boolean => error._tag === "SystemError" && error.reason === "NotFound"

const describe = (error: unknown): string =>
  error !== null && typeof error === "object" && "message" in error && typeof error.message === "string" ?
    error.message :
    String(error)

const occurrences = (text: string, needle: string): number => {
  let count = 0
  for (let at = text.indexOf(needle); at !== -1; at = text.indexOf(needle, at + needle.length)) count++
  return count
}

const applyEdits = (
  displayPath: string,
  text: string,
  edits: EditParams["files"][number]["edits"]
): Effect.Effect<{ readonly text: string; readonly replacements: number }, EditTextNotFound | EditTextAmbiguous> =>
  Effect.suspend((): Effect.Effect<
    { readonly text: string; readonly replacements: number },
    EditTextNotFound | EditTextAmbiguous
  > => {
    let current = text
    let replacements = 0
    for (let editIndex = 0; editIndex < edits.length; editIndex++) {
      const edit = edits[editIndex]!
      const count = occurrences(current, edit.oldText)
      if (count === 0) return Effect.fail(new EditTextNotFound({ path: displayPath, editIndex }))
      if (count > 1 && edit.replaceAll !== true) {
        return Effect.fail(new EditTextAmbiguous({ path: displayPath, editIndex, occurrences: count }))
      }
      if (count > 1) {
        current = current.split(edit.oldText).join(edit.newText)
      } else {
        const at = current.indexOf(edit.oldText)
        current = current.slice(0, at) + edit.newText + current.slice(at + edit.oldText.length)
      }
      replacements += count
    }
    return Effect.succeed({ text: current, replacements })
  })

/**
 * The label of an edit preview: `Edit: <N> replacement(s) in <M> file(s)`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const editLabel = (replacements: number, files: number): string =>
  `Edit: ${replacements} replacement(s) in ${files} file(s)`

/**
 * The first line of every preview result.
 *
 * @since 0.1.0
 * @category constants
 */
export const previewHeadline = "Nothing is written yet: this is a preview. Call resolve with action \"apply\" to " +
  "write these changes, or \"discard\" to drop them."

const summaryOf = (staged: ReadonlyArray<StagedFile>): EditSummary => ({
  files: staged.map((f) => ({ path: f.displayPath, replacements: f.replacements })),
  fileCount: staged.length,
  replacements: staged.reduce((n, f) => n + f.replacements, 0)
})

const tempPathFor = (path: Path.Path, target: string): string =>
  path.join(path.dirname(target), `.${path.basename(target)}.${randomBytes(6).toString("hex")}.edit-tmp`)

const writeAll = (
  fs: FileSystem.FileSystem,
  path: Path.Path,
  files: ReadonlyArray<{ readonly file: StagedFile; readonly mode: number }>
): Effect.Effect<void, EditWriteFailed> =>
  Effect.suspend(() => {
    const temps = files.map(({ file }) => tempPathFor(path, file.realPath))
    const renamed: Array<{ readonly file: StagedFile; readonly mode: number }> = []
    let failedAt = files[0]?.file.displayPath ?? "(none)"
    const attempt = Effect.gen(function*() {
      for (let i = 0; i < files.length; i++) {
        const { file, mode } = files[i]!
        failedAt = file.displayPath
        yield* fs.writeFile(temps[i]!, file.updated)
        yield* fs.chmod(temps[i]!, mode)
      }
      for (let i = 0; i < files.length; i++) {
        failedAt = files[i]!.file.displayPath
        yield* fs.rename(temps[i]!, files[i]!.file.realPath)
        renamed.push(files[i]!)
      }
    })
    const rollback = (cause: Cause.Cause<unknown>) =>
      Effect.gen(function*() {
        const restored: Array<string> = []
        const notRestored: Array<string> = []
        for (const { file, mode } of [...renamed].reverse()) {
          const exit = yield* Effect.exit(
            Effect.zipRight(fs.writeFile(file.realPath, file.original), fs.chmod(file.realPath, mode))
          )
          if (exit._tag === "Success") restored.push(file.displayPath)
          else notRestored.push(file.displayPath)
        }
        const done = new Set(renamed.map(({ file }) => file.realPath))
        for (let i = 0; i < files.length; i++) {
          // A temporary file that exists is removed even if the first attempts fail (a transient error).
          if (!done.has(files[i]!.file.realPath)) {
            yield* Effect.ignore(Effect.retry(fs.remove(temps[i]!), { times: 2, while: (e) => !isNotFound(e) }))
          }
        }
        return yield* new EditWriteFailed({
          path: failedAt,
          problem: describe(Cause.squash(cause)),
          restored,
          notRestored
        })
      })
    return Effect.catchAllCause(attempt, rollback)
  })

const makeApply = (
  fs: FileSystem.FileSystem,
  path: Path.Path,
  staged: ReadonlyArray<StagedFile>,
  label: string
) =>
(reason: string): Effect.Effect<ToolResult.ToolResult, ToolError | EditWriteFailed> =>
  Effect.gen(function*() {
    // Check phase (interruptible): every file must be byte-identical to what the preview saw.
    const stale: Array<string> = []
    const checked: Array<{ readonly file: StagedFile; readonly mode: number }> = []
    for (const file of staged) {
      const current = yield* Effect.either(Effect.zip(fs.readFile(file.realPath), fs.stat(file.realPath)))
      if (current._tag === "Left") {
        stale.push(`${file.displayPath} (now missing or unreadable)`)
      } else if (sha256(current.right[0]) !== file.hash) {
        stale.push(file.displayPath)
      } else {
        checked.push({ file, mode: current.right[1].mode & 0o7777 })
      }
    }
    if (stale.length > 0) {
      return yield* new ToolError({
        message: `Preview is stale: ${stale.join(", ")} changed after the preview. Nothing was written. ` +
          `Discard this preview (resolve with action "discard") and preview the edit again.`
      })
    }
    // Write phase: all files or none, uninterruptible; the action counts as applied only if it succeeds.
    yield* PendingAction.commit(writeAll(fs, path, checked))
    const summary = summaryOf(staged)
    const written = summary.files.map((f) => `${f.path} (${f.replacements})`).join(", ")
    return ToolResult.text(`Applied ${label}. Wrote ${written}. Reason: ${reason}`, summary)
  })

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
  const fs = yield* FileSystem.FileSystem
  const path = yield* Path.Path
  const workspace = yield* Workspace
  if (params.files.length > workspace.maxFiles) {
    return yield* new EditLimitExceeded({ limit: "files", max: workspace.maxFiles, actual: params.files.length })
  }
  const givenRoot = path.resolve(workspace.root)
  const realRoot = yield* Effect.mapError(
    fs.realPath(givenRoot),
    (error) =>
      new EditFileUnreadable({ path: workspace.root, problem: `the workspace root is unavailable (${error.message})` })
  )
  const inside = (root: string, candidate: string) => {
    const relative = path.relative(root, candidate)
    return relative === "" || (relative !== ".." && !relative.startsWith(`..${path.sep}`) && !path.isAbsolute(relative))
  }

  const locate = (input: string) =>
    Effect.gen(function*() {
      const absolute = path.isAbsolute(input) ? path.resolve(input) : path.resolve(realRoot, input)
      const lexical = inside(realRoot, absolute) ?
        absolute :
        inside(givenRoot, absolute) ?
        path.join(realRoot, path.relative(givenRoot, absolute)) :
        undefined
      if (lexical === undefined) return yield* new EditPathOutsideWorkspace({ path: input, viaSymlink: false })
      const real = yield* Effect.mapError(fs.realPath(lexical), (error) =>
        isNotFound(error) ?
          new EditFileMissing({ path: input }) :
          new EditFileUnreadable({ path: input, problem: error.message }))
      if (!inside(realRoot, real)) return yield* new EditPathOutsideWorkspace({ path: input, viaSymlink: true })
      return real
    })

  const staged: Array<StagedFile> = []
  const seen = new Map<string, number>()
  let bytes = 0
  for (let fileIndex = 0; fileIndex < params.files.length; fileIndex++) {
    const file = params.files[fileIndex]!
    const real = yield* locate(file.path)
    const earlier = seen.get(real)
    if (earlier !== undefined) {
      return yield* new InvalidEditParams({
        field: `files.${fileIndex}.path`,
        problem: `names the same file as files.${earlier}.path; list each file once with all its edits`
      })
    }
    seen.set(real, fileIndex)
    const displayPath = path.relative(realRoot, real).split(path.sep).join("/")
    const info = yield* Effect.mapError(
      fs.stat(real),
      (error) => new EditFileUnreadable({ path: file.path, problem: error.message })
    )
    if (info.type !== "File") {
      return yield* new EditFileUnreadable({ path: file.path, problem: `not a regular file (${info.type})` })
    }
    if (bytes + Number(info.size) > workspace.maxBytes) {
      return yield* new EditLimitExceeded({
        limit: "bytes",
        max: workspace.maxBytes,
        actual: bytes + Number(info.size),
        path: file.path
      })
    }
    const original = yield* Effect.mapError(fs.readFile(real), (error) =>
      isNotFound(error) ?
        new EditFileMissing({ path: file.path }) :
        new EditFileUnreadable({ path: file.path, problem: error.message }))
    bytes += original.byteLength
    if (bytes > workspace.maxBytes) {
      return yield* new EditLimitExceeded({ limit: "bytes", max: workspace.maxBytes, actual: bytes, path: file.path })
    }
    const text = yield* Effect.try({
      // `ignoreBOM: true` keeps a byte-order mark in the text, so it is written back unchanged.
      try: () => new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(original),
      catch: () => new EditFileNotText({ path: file.path })
    })
    const edited = yield* applyEdits(file.path, text, file.edits)
    staged.push({
      inputPath: file.path,
      displayPath,
      realPath: real,
      original,
      hash: sha256(original),
      updated: new TextEncoder().encode(edited.text),
      replacements: edited.replacements
    })
  }

  const summary = summaryOf(staged)
  const label = editLabel(summary.replacements, summary.fileCount)
  const decoder = new TextDecoder("utf-8", { ignoreBOM: true })
  const diffs = staged.map((f) =>
    createTwoFilesPatch(
      `a/${f.displayPath}`,
      `b/${f.displayPath}`,
      decoder.decode(f.original),
      decoder.decode(f.updated),
      undefined,
      undefined,
      { context: 3, headerOptions: FILE_HEADERS_ONLY }
    ).trimEnd()
  )
  const counts = summary.files.map((f) => `${f.path}: ${f.replacements} replacement(s)`)
  const handle = yield* queueResolveHandler({
    label,
    sourceToolName: "edit",
    apply: makeApply(fs, path, staged, label),
    reject: (reason) =>
      Effect.succeed(Option.some(ToolResult.text(
        `Discarded: ${label}. Nothing was written to ${summary.files.map((f) => f.path).join(", ")}. Reason: ${reason}`,
        summary
      )))
  })
  const text = [previewHeadline, "", ...diffs, "", `${label}:`, ...counts.map((line) => `  ${line}`)].join("\n")
  return ToolResult.text(text, { ...summary, pendingActionId: handle.id })
})

const description = [
  "Replace exact text in one or more files of the workspace, as a preview.",
  "",
  "Nothing is written when you call this tool: it returns a unified diff and stages the change.",
  "Then call `resolve` with action \"apply\" to write every file (all or none), or \"discard\" to drop it.",
  "Each edit's oldText must occur exactly once in the file (after the file's earlier edits), unless replaceAll is",
  "true. Copy oldText exactly, including whitespace and line breaks. List each file once.",
  "If a file changes after the preview, apply refuses it as stale: discard and preview again."
].join("\n")

/**
 * The model-facing `edit` tool: JSON Schema parameters from `EditParams`, and an `execute` that decodes untrusted
 * input strictly and runs `preview`.
 *
 * @since 0.1.0
 * @category tools
 */
export const tool = {
  name: "edit",
  label: "Edit",
  description,
  parameters: JSONSchema.make(Schema.Struct(EditParams.fields)),
  execute: (input: unknown) => Effect.flatMap(decodeEditParams(input), preview)
} as const satisfies ToolDefinition<
  FileEditError | PendingStoreError,
  FileSystem.FileSystem | Path.Path | Workspace | PendingActions
>
