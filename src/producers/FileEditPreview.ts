/**
 * The `edit` tool: a safe file-edit preview producer. A call computes every replacement in memory, writes nothing,
 * returns unified diffs (built from the replacement positions, in time linear in the file) and stages a pending
 * action with `queueResolveHandler`. `resolve apply` takes a per-file lock on every file (shared by every session of
 * the process, and across processes through a lock file next to each file), re-resolves every path and refuses the
 * preview as stale if a path now leads elsewhere or a file's bytes changed, before writing anything; otherwise it
 * writes all files or none (an exclusive temporary file with the target's mode in the same directory, each path
 * verified again right before its rename; renamed files are restored from the snapshot if a later step fails), in
 * one uninterruptible `PendingAction.commit`.
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
import type { PlatformError } from "@effect/platform/Error"
import * as FileSystem from "@effect/platform/FileSystem"
import * as Path from "@effect/platform/Path"
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import type * as JSONSchema from "effect/JSONSchema"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import { isAscii, isUtf8 } from "node:buffer"
import { createHash } from "node:crypto"
import * as FS from "node:fs"
import * as NFS from "node:fs/promises"
import * as NPath from "node:path"
import { type PendingStoreError, ToolError } from "../domain/Errors.js"
import * as ToolResult from "../domain/ToolResult.js"
import { count } from "../internal/plural.js"
import { loneSurrogate, show, tooDeepField, valueAt } from "../internal/untrusted.js"
import * as ActionKind from "../services/ActionKind.js"
import * as PendingAction from "../services/PendingAction.js"
import { type PendingActions, stageKind } from "../services/PendingActions.js"
import type { ToolDefinition } from "../tools/ToolDefinition.js"
import * as EditDiff from "./EditDiff.js"
import * as FileLock from "./FileLock.js"

// -----------------------------------------------------------------------------------------------------------------
// configuration
// -----------------------------------------------------------------------------------------------------------------

/**
 * Where the `edit` tool may read and write, how much one call may touch, and how applies wait for each other.
 *
 * @since 0.1.0
 * @category models
 */
export interface WorkspaceConfig {
  /** The workspace root. Paths are relative to it; nothing outside it (after resolving symlinks) is touched. */
  readonly root: string
  /** Most files one preview may edit. */
  readonly maxFiles: number
  /**
   * Largest total size, in bytes, of the files one preview reads; the files after the edits may total no more
   * either.
   */
  readonly maxBytes: number
  /** Most edits (replacements listed, over all files) one call may make. @since 0.2.0 */
  readonly maxEdits: number
  /** The longest an apply waits for the locks of its files before failing with `EditFileLocked`. @since 0.2.0 */
  readonly lockTimeout: Duration.Duration
  /** A lock file not refreshed for this long was left by a writer that is gone, and is taken over. @since 0.2.0 */
  readonly lockStaleAfter: Duration.Duration
}

/**
 * The default limits: 20 files, 4 MiB, 100 edits per call; an apply waits up to 10 seconds for its locks; a lock
 * file not refreshed for 30 seconds is taken over.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultLimits = {
  maxFiles: 20,
  maxBytes: 4 * 1024 * 1024,
  maxEdits: 100,
  lockTimeout: FileLock.defaultLockOptions.timeout,
  lockStaleAfter: FileLock.defaultLockOptions.staleAfter
} as const

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
 * The locks that make an apply the only writer of its files are not part of this layer: they are process-wide
 * (every session and every layer of the process shares them) and, across processes, lock files next to the files.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (
  options: {
    readonly root: string
    readonly maxFiles?: number
    readonly maxBytes?: number
    readonly maxEdits?: number
    readonly lockTimeout?: Duration.DurationInput
    readonly lockStaleAfter?: Duration.DurationInput
  }
): Layer.Layer<Workspace> =>
  Layer.succeed(Workspace, {
    root: options.root,
    maxFiles: options.maxFiles ?? defaultLimits.maxFiles,
    maxBytes: options.maxBytes ?? defaultLimits.maxBytes,
    maxEdits: options.maxEdits ?? defaultLimits.maxEdits,
    lockTimeout: Duration.decode(options.lockTimeout ?? defaultLimits.lockTimeout),
    lockStaleAfter: Duration.decode(options.lockStaleAfter ?? defaultLimits.lockStaleAfter)
  })

// -----------------------------------------------------------------------------------------------------------------
// parameters
// -----------------------------------------------------------------------------------------------------------------

const utf8Text = (s: string): true | string =>
  !loneSurrogate.test(s) || "must be valid UTF-8 text (it contains a lone surrogate)"

/**
 * One replacement: `oldText` (exact, non-empty) becomes `newText`. Without `replaceAll` (absent, `null` or
 * `false`), `oldText` must occur exactly once.
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
  // `null` (what a strict tool schema sends for "not set") decodes as absent.
  replaceAll: Schema.optionalWith(
    Schema.Boolean.annotations({
      description: "Replace every occurrence. Without it, oldText must occur exactly once."
    }),
    { nullable: true }
  )
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
    "must be an object { \"oldText\", \"newText\", \"replaceAll\" }" :
    last === "replaceAll" ?
    "must be true or false (or null: not set)" :
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

/**
 * One file of an edit action, as data: where it is (as the model wrote it, for humans, the path before and after
 * resolving symlinks), how many replacements, the SHA-256 of the bytes the preview read (`before`) and the bytes to
 * write (`after`, base64 when stored).
 *
 * @since 0.2.0
 * @category schemas
 */
export const EditFile = Schema.Struct({
  inputPath: Schema.String,
  displayPath: Schema.String,
  lexicalPath: Schema.String,
  realPath: Schema.String,
  replacements: Schema.Number,
  before: Schema.String,
  after: Schema.Uint8ArrayFromBase64
})

/**
 * @since 0.2.0
 * @category models
 */
export type EditFile = typeof EditFile.Type

/**
 * The payload of an edit action (the durable kind `kind`): the workspace root as given and as resolved at preview
 * time, the label, and every file.
 *
 * @since 0.2.0
 * @category schemas
 */
export const EditPayload = Schema.Struct({
  givenRoot: Schema.String,
  realRoot: Schema.String,
  label: Schema.String,
  files: Schema.Array(EditFile)
})

/**
 * @since 0.2.0
 * @category models
 */
export type EditPayload = typeof EditPayload.Type

/**
 * The bytes a preview read, kept for files staged in this process: apply compares them byte for byte, and a
 * rollback restores them. A file restored after a restart has none: apply compares SHA-256 (`before`), and the
 * bytes it read under the locks are the snapshot.
 */
const originals = new WeakMap<EditFile, Uint8Array>()

const sha256 = (bytes: Uint8Array): string => createHash("sha256").update(bytes).digest("hex")

/** The workspace root as given and as resolved at preview time. */
interface Place {
  readonly givenRoot: string
  readonly realRoot: string
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

const isNotFound = (error: PlatformError): boolean => error._tag === "SystemError" && error.reason === "NotFound"

const describe = (error: unknown): string =>
  error !== null && typeof error === "object" && "message" in error && typeof error.message === "string" ?
    error.message :
    String(error)

const asBuffer = (bytes: Uint8Array): Buffer => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)

const sameBytes = (a: Uint8Array, b: Uint8Array): boolean => asBuffer(a).equals(b)

/** `make`'s value, computed on the first call. */
const once = <A>(make: () => A): () => A => {
  let value: { readonly a: A } | undefined
  return () => (value ??= { a: make() }).a
}

/**
 * The edited file's bytes, from an ASCII original: its unchanged byte ranges (ASCII: character offsets are byte
 * offsets) and the encoded text of each changed region, copied into one buffer of `size` bytes.
 */
const spliceBytes = (
  original: Uint8Array,
  { regionText, regions }: {
    readonly regions: ReadonlyArray<number>
    readonly regionText: (index: number) => string
  },
  size: number
): Buffer => {
  const out = Buffer.allocUnsafe(size)
  const source = asBuffer(original)
  let at = 0
  let from = 0
  for (let r = 0; r < regions.length; r += 4) {
    at += source.copy(out, at, from, regions[r + 2]!)
    at += out.write(regionText(r / 4), at, "utf8")
    from = regions[r + 3]!
  }
  at += source.copy(out, at, from)
  if (at !== size) throw new Error(`spliceBytes: wrote ${at} of ${size} bytes`)
  return out
}

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

const summaryOf = (staged: ReadonlyArray<EditFile>): EditSummary => ({
  files: staged.map((f) => ({ path: f.displayPath, replacements: f.replacements })),
  fileCount: staged.length,
  replacements: staged.reduce((n, f) => n + f.replacements, 0)
})

const staleError = (entries: ReadonlyArray<string>, when: "after the preview" | "during the apply", tail = "") =>
  new ToolError({
    message: `Preview is stale: ${entries.join(", ")} changed ${when}. Nothing was written.${tail} ` +
      `Discard this preview (resolve with action "discard") and preview the edit again.`
  })

const movedNote = "(its path now leads elsewhere: a directory on the way was moved or replaced)"

/**
 * The real path of `path`, by the system's `realpath` (one call, where Node's JavaScript `fs.realpath`, which the
 * `FileSystem` service uses, makes one `lstat` round trip per path component). Like the lock files, it works on the
 * machine's file system, not through the `FileSystem` service.
 */
const realPathOf = (path: string): Effect.Effect<string, SystemFailure> =>
  Effect.tryPromise({ try: () => NFS.realpath(path), catch: systemFailure })

/** Why a system call failed: its code (`ENOENT`, ...) when it has one, and its message. */
interface SystemFailure {
  readonly code: string | undefined
  readonly message: string
}

const systemFailure = (error: unknown): SystemFailure => ({
  code: error !== null && typeof error === "object" && "code" in error && typeof error.code === "string" ?
    error.code :
    undefined,
  message: error instanceof Error ? error.message : String(error)
})

/** What a preview checks of a file before reading it. */
interface FileStat {
  /** As the `FileSystem` service names it. */
  readonly type: FileSystem.File.Type
  /** Device and inode: two names of one file (hard links) have the same. */
  readonly inode: string
  readonly size: number
}

const fileStatOf = (stats: FS.Stats): FileStat => ({
  type: stats.isFile() ?
    "File" :
    stats.isDirectory() ?
    "Directory" :
    stats.isSymbolicLink() ?
    "SymbolicLink" :
    stats.isBlockDevice() ?
    "BlockDevice" :
    stats.isCharacterDevice() ?
    "CharacterDevice" :
    stats.isFIFO() ?
    "FIFO" :
    stats.isSocket() ?
    "Socket" :
    "Unknown",
  inode: `${stats.dev}:${stats.ino}`,
  size: stats.size
})

/**
 * A file of a preview, opened: what `fstat` says of it, and its descriptor. A file that cannot be opened (a socket, a
 * file without read permission) is described by `stat` instead, and why it could not be opened is its read's
 * failure, so that every file's checks still come before any read's failure.
 */
interface Opened {
  readonly stat: FileStat
  /** The open file's descriptor, or the open's error. */
  readonly fd: Either.Either<number, unknown>
}

/** A callback of `node:fs` as a promise. */
const fsCall = <A>(call: (callback: (error: NodeJS.ErrnoException | null, value: A) => void) => void): Promise<A> =>
  new Promise((resolve, reject) => call((error, value) => error === null ? resolve(value) : reject(error)))

/** Where a path of a preview leads: its file, opened; or why not. */
type Located =
  | { readonly _tag: "Opened"; readonly real: string; readonly opened: Opened }
  /** `realpath` failed. */
  | { readonly _tag: "Unresolved"; readonly failure: SystemFailure }
  /** The real path is outside the workspace. */
  | { readonly _tag: "Outside" }

/**
 * The files one preview opens, on the machine's file system like `realPathOf` (with the callback API of `node:fs`,
 * cheaper per call than its `FileHandle`s). Each path is resolved (`locate`), confined to the workspace, then opened
 * and `fstat`ed before the checks, then read from its descriptor: the stat and the read share one open (one system
 * call fewer per file than `stat` and `readFile`) and see the same file. A file is closed once read; whatever is
 * still open when the preview ends (it failed, or was interrupted) is closed by `end`, and a file whose open
 * completes after that is closed at once. Each descriptor is closed once (its number may name another file
 * afterwards). A preview holds at most `maxFiles` files open.
 */
class PreviewFiles {
  private readonly fds = new Set<number>()
  private ended = false
  /** The real paths of the directories resolved so far (`undefined`: `realpath` failed). */
  private readonly realDirectories = new Map<string, Promise<string | undefined>>()

  /** `isInside`: whether a real path is inside the workspace. */
  constructor(private readonly isInside: (real: string) => boolean) {}

  /**
   * Where `lexical` leads (its real path, as `realpath` gives it), and the file there, opened: by its directory when
   * `openInDirectory` can, else by the `realpath` of the whole path, confined to the workspace before it is opened.
   */
  async locate(lexical: string): Promise<Located> {
    const inDirectory = await this.openInDirectory(lexical)
    if (inDirectory !== undefined) return inDirectory
    let real: string
    try {
      real = await NFS.realpath(lexical)
    } catch (error) {
      return { _tag: "Unresolved", failure: systemFailure(error) }
    }
    if (!this.isInside(real)) return { _tag: "Outside" }
    return { _tag: "Opened", real, opened: await this.open(real) }
  }

  /**
   * One `realpath` per directory rather than per file, on Linux: there, the real path of a file whose name is not a
   * symlink is its directory's real path joined with its name, which is what `realpath` gives for it. The name is
   * opened with `O_NOFOLLOW` (which refuses a symlink), once the joined path is known to be inside the workspace.
   * Anything else (a symlink, a missing file, a path leading outside, another platform, where `realpath` may rewrite
   * the name itself: macOS gives its case on disk) is `undefined`, for `locate` to resolve the whole path.
   */
  private async openInDirectory(lexical: string): Promise<Located | undefined> {
    if (process.platform !== "linux") return undefined
    const directory = NPath.dirname(lexical)
    let realDirectory = this.realDirectories.get(directory)
    if (realDirectory === undefined) {
      realDirectory = NFS.realpath(directory).catch(() => undefined)
      this.realDirectories.set(directory, realDirectory)
    }
    const realDirectoryPath = await realDirectory
    if (realDirectoryPath === undefined) return undefined
    const real = NPath.join(realDirectoryPath, NPath.basename(lexical))
    if (!this.isInside(real)) return undefined
    const flags = FS.constants.O_RDONLY | FS.constants.O_NONBLOCK | FS.constants.O_NOFOLLOW
    const fd = await fsCall<number>((callback) => FS.open(real, flags, callback)).catch(() => undefined)
    return fd === undefined ? undefined : { _tag: "Opened", real, opened: await this.opened(fd) }
  }

  /**
   * Opens `real` and `fstat`s it. `O_NONBLOCK`: opening a FIFO does not wait for a writer (it is refused unread,
   * as not a regular file; a regular file reads the same).
   */
  private async open(real: string): Promise<Opened> {
    let fd: number
    try {
      fd = await fsCall<number>((callback) => FS.open(real, FS.constants.O_RDONLY | FS.constants.O_NONBLOCK, callback))
    } catch (error) {
      const stats = await fsCall<FS.Stats>((callback) => FS.stat(real, callback))
      return { stat: fileStatOf(stats), fd: Either.left(error) }
    }
    return this.opened(fd)
  }

  /** Keeps `fd` for `end`, and `fstat`s it. */
  private async opened(fd: number): Promise<Opened> {
    this.fds.add(fd)
    if (this.ended) {
      await this.close(fd)
      throw new Error("the preview has ended")
    }
    const stats = await fsCall<FS.Stats>((callback) => FS.fstat(fd, callback))
    return { stat: fileStatOf(stats), fd: Either.right(fd) }
  }

  /**
   * The bytes of an opened file, read as `fs.readFile` reads them (the `size` bytes `fstat` reported, fewer if the
   * file shrank since; to its end if it reported none); then closes it.
   */
  async read({ fd, stat }: Opened): Promise<Uint8Array> {
    if (Either.isLeft(fd)) throw fd.left
    try {
      if (stat.size === 0) return await fsCall<Buffer>((callback) => FS.readFile(fd.right, callback))
      const bytes = Buffer.allocUnsafeSlow(stat.size)
      let length = 0
      while (length < stat.size) {
        const bytesRead = await fsCall<number>((callback) =>
          FS.read(fd.right, bytes, length, stat.size - length, length, callback)
        )
        if (bytesRead === 0) break
        length += bytesRead
      }
      return bytes.subarray(0, length)
    } finally {
      await this.close(fd.right)
    }
  }

  /** Closes every file still open; a later open closes its file at once. */
  async end(): Promise<void> {
    this.ended = true
    await Promise.all([...this.fds].map((fd) => this.close(fd).catch(() => undefined)))
  }

  private close(fd: number): Promise<void> {
    if (!this.fds.delete(fd)) return Promise.resolve()
    return fsCall<void>((callback) => FS.close(fd, (error) => callback(error, undefined)))
  }
}

const realPathOrUndefined = (path: string): Promise<string | undefined> => NFS.realpath(path).catch(() => undefined)

const rootNote = (place: Place, now: string | undefined): string | undefined =>
  now === undefined ?
    "the workspace root (now missing or unreadable)" :
    now === place.realRoot ?
    undefined :
    "the workspace root (it now resolves to another directory)"

const fileNote = (file: EditFile, now: string | undefined): string | undefined =>
  now === undefined ?
    `${file.displayPath} (now missing or unreadable)` :
    now === file.realPath ?
    undefined :
    `${file.displayPath} ${movedNote}`

/** Whether the workspace root still resolves to the directory the preview saw: `undefined`, else why not. */
const rootChange = (place: Place): Effect.Effect<string | undefined> =>
  Effect.promise(() => realPathOrUndefined(place.givenRoot).then((now) => rootNote(place, now)))

/** Whether the file's path still leads to the file the preview read: `undefined`, else why not. */
const fileChange = (file: EditFile): Effect.Effect<string | undefined> =>
  Effect.promise(() => realPathOrUndefined(file.lexicalPath).then((now) => fileNote(file, now)))

/**
 * Where the root and every file's path lead now, all resolved at once: what changed since the preview (nothing:
 * an empty list).
 */
const placeChanges = (place: Place, files: ReadonlyArray<EditFile>): Effect.Effect<ReadonlyArray<string>> =>
  Effect.promise(async () => {
    const [root, ...now] = await Promise.all([
      realPathOrUndefined(place.givenRoot),
      ...files.map((file) => realPathOrUndefined(file.lexicalPath))
    ])
    const rootChanged = rootNote(place, root)
    return rootChanged !== undefined ?
      [rootChanged] :
      files.flatMap((file, i) => {
        const note = fileNote(file, now[i])
        return note === undefined ? [] : [note]
      })
  })

/**
 * How many file operations of one preview or apply run at once (reads, checks, temporary files): one at a time for
 * a few files (forking fibers would cost more than it saves), up to 16 for more.
 */
const concurrencyFor = (files: number): number => files > 4 ? 16 : 1

/** A path changed between the check and its rename: the write stops and is rolled back. */
class PlaceChanged extends Data.TaggedError("PlaceChanged")<{ readonly entry: string }> {}

interface Checked {
  readonly file: EditFile
  /** The bytes read under the locks (the preview's, checked): what a rollback restores. */
  readonly original: Uint8Array
  /** The edited bytes to write. */
  readonly bytes: Uint8Array
  readonly mode: number
  /** The token of the file's lock: names its temporary file. */
  readonly token: string
}

const writeAll = (
  fs: FileSystem.FileSystem,
  place: Place,
  files: ReadonlyArray<Checked>
): Effect.Effect<void, EditWriteFailed | ToolError> =>
  Effect.suspend(() => {
    const temps = files.map(({ file, token }) => FileLock.tempFileOf(file.realPath, token))
    const renamed: Array<Checked> = []
    let failedAt = files[0]?.file.displayPath ?? "(none)"
    /**
     * `step` for every file: for a few, one at a time, stopping at the first failure; for more, 16 at a time, each
     * to its end (no failure cuts another short, so what happened is known). Fails with the first failure, by file.
     */
    const eachFile = <E>(step: (i: number) => Effect.Effect<void, E>): Effect.Effect<void, E> => {
      const concurrency = concurrencyFor(files.length)
      return concurrency === 1 ?
        Effect.forEach(files, (_, i) =>
          Effect.suspend(() => {
            failedAt = files[i]!.file.displayPath
            return step(i)
          }), { discard: true }) :
        Effect.flatMap(
          Effect.forEach(files, (_, i) => Effect.exit(step(i)), { concurrency }),
          (exits) => {
            const failed = exits.findIndex(Exit.isFailure)
            if (failed === -1) return Effect.void
            failedAt = files[failed]!.file.displayPath
            return exits[failed] as Exit.Failure<void, E>
          }
        )
    }
    const attempt = Effect.gen(function*() {
      // The temporary files. Each is created exclusively, never more readable than the target (the umask can only
      // take bits away), then given exactly the target's mode.
      yield* eachFile((i) => {
        const { bytes, mode } = files[i]!
        return Effect.zipRight(
          fs.writeFile(temps[i]!, bytes, { flag: "wx", mode: mode & 0o777 }),
          fs.chmod(temps[i]!, mode)
        )
      })
      const root = yield* rootChange(place)
      if (root !== undefined) return yield* new PlaceChanged({ entry: root })
      // The renames. Each path is verified right before its own rename (Node has no renameat; what is left is a swap
      // in the moment between that check and the rename).
      yield* eachFile((i): Effect.Effect<void, PlatformError | PlaceChanged> => {
        const { file } = files[i]!
        return Effect.flatMap(fileChange(file), (change): Effect.Effect<void, PlatformError | PlaceChanged> =>
          change !== undefined ?
            Effect.fail(new PlaceChanged({ entry: change })) :
            Effect.tap(fs.rename(temps[i]!, file.realPath), () => {
              renamed.push(files[i]!)
            }))
      })
    })
    const rollback = (cause: Cause.Cause<PlatformError | PlaceChanged>) =>
      Effect.gen(function*() {
        const restored: Array<string> = []
        const notRestored: Array<string> = []
        for (const { file, mode, original } of [...renamed].reverse()) {
          // Never restore through a path that now leads elsewhere.
          const exit = yield* Effect.exit(Effect.gen(function*() {
            const change = yield* fileChange(file)
            if (change !== undefined) {
              return yield* new PlaceChanged({ entry: change })
            }
            yield* fs.writeFile(file.realPath, original)
            yield* fs.chmod(file.realPath, mode)
          }))
          if (exit._tag === "Success") {
            restored.push(file.displayPath)
          } else notRestored.push(file.displayPath)
        }
        const done = new Set(renamed.map(({ file }) =>
          file.realPath
        ))
        for (let i = 0; i < files.length; i++) {
          // A temporary file that exists is removed even if the first attempts fail (a transient error).
          if (!done.has(files[i]!.file.realPath)) {
            yield* Effect.ignore(Effect.retry(fs.remove(temps[i]!), { times: 2, while: (e) => !isNotFound(e) }))
          }
        }
        const failure = Cause.failureOption(cause)
        if (Option.isSome(failure) && failure.value._tag === "PlaceChanged" && notRestored.length === 0) {
          return yield* staleError(
            [failure.value.entry],
            "during the apply",
            restored.length === 0 ? "" : ` Restored from the preview's snapshot: ${restored.join(", ")}.`
          )
        }
        return yield* new EditWriteFailed({
          path: failedAt,
          problem: Option.isSome(failure) && failure.value._tag === "PlaceChanged" ?
            failure.value.entry :
            describe(Cause.squash(cause)),
          restored,
          notRestored
        })
      })
    return Effect.catchAllCause(attempt, rollback)
  })

// The locks of `files` (one writer per file across sessions and processes), in the order of their real paths,
// released when the scope closes; a wait that times out is `EditFileLocked`.
const lockAll = (workspace: WorkspaceConfig, files: ReadonlyArray<EditFile>) => {
  const byRealPath = new Map(files.map((file) => [file.realPath, file]))
  const displayOf = (realPath: string) => byRealPath.get(realPath)?.displayPath ?? realPath
  return FileLock.lockFiles(files.map((file) => file.realPath), {
    timeout: workspace.lockTimeout,
    staleAfter: workspace.lockStaleAfter
  }).pipe(Effect.catchTags({
    LockWaitTimeout: (error) =>
      new EditFileLocked({
        path: displayOf(error.path),
        ...(error.holder === undefined ? {} : { holder: error.holder }),
        waitedMs: Duration.toMillis(workspace.lockTimeout)
      }),
    LockFileError: (error) =>
      error.missing ?
        staleError([`${displayOf(error.path)} (now missing or unreadable)`], "after the preview") :
        new ToolError({
          message: `Could not create the lock file next to ${displayOf(error.path)} (${error.problem}). Nothing was ` +
            `written; the preview is still pending. The edit tool needs write permission in that file's ` +
            `directory: fix that, then call resolve with action "apply" again, or discard the preview.`
        })
  }))
}

// Whether `bytes` are what the preview read: byte for byte when this process staged the file, else by SHA-256.
const isBefore = (file: EditFile, bytes: Uint8Array): boolean => {
  const original = originals.get(file)
  return original !== undefined ? sameBytes(bytes, original) : sha256(bytes) === file.before
}

/** Applies an edit action: locks, checks under the locks, then writes all files or none. */
const applyEdit = (
  payload: EditPayload,
  reason: string
): Effect.Effect<
  ToolResult.ToolResult,
  ToolError | EditWriteFailed | EditFileLocked,
  FileSystem.FileSystem | Workspace
> =>
  Effect.scoped(Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const workspace = yield* Workspace
    const staged = payload.files
    const place: Place = { givenRoot: payload.givenRoot, realRoot: payload.realRoot }
    // Lock phase (interruptible, bounded): one writer per file across sessions and processes; the locks are taken
    // in the order of the real paths and released when this scope closes.
    const held = yield* lockAll(workspace, staged)
    const tokens = new Map(held.map((lock) => [lock.target, lock.token]))
    // Check phase (interruptible), under the locks: every path leads where it did at preview time, and every file
    // is what the preview saw.
    const moved = yield* placeChanges(place, staged)
    if (moved.length > 0) return yield* staleError(moved, "after the preview")
    const results = yield* Effect.forEach(
      staged,
      (file): Effect.Effect<{ readonly stale: string } | { readonly checked: Checked }> =>
        Effect.match(Effect.zip(fs.readFile(file.realPath), fs.stat(file.realPath)), {
          onFailure: () => ({ stale: `${file.displayPath} (now missing or unreadable)` }),
          onSuccess: ([bytes, info]) =>
            isBefore(file, bytes) ?
              {
                checked: {
                  file,
                  original: bytes,
                  bytes: file.after,
                  mode: info.mode & 0o7777,
                  token: tokens.get(file.realPath)!
                }
              } :
              { stale: file.displayPath }
        }),
      { concurrency: concurrencyFor(staged.length) }
    )
    const stale = results.flatMap((result) => "stale" in result ? [result.stale] : [])
    if (stale.length > 0) return yield* staleError(stale, "after the preview")
    const checked = results.flatMap((result) => "checked" in result ? [result.checked] : [])
    // Write phase: all files or none, uninterruptible; the action counts as applied only if it succeeds.
    yield* PendingAction.commit(writeAll(fs, place, checked))
    const summary = summaryOf(staged)
    const written = summary.files.map((f) => `${f.path} (${f.replacements})`).join(", ")
    return ToolResult.text(`Applied ${payload.label}. Wrote ${written}. Reason: ${reason}`, summary)
  }))

/**
 * What became of an edit action a crashed process left `resolving`, from the files themselves, under their locks:
 *
 * - every file holds the new bytes: `applied`;
 * - none does: `pending`. The write had not begun (its renames come last, all or none), or, in a narrow case, its
 *   files were written and then changed again by another writer before this recovery; either way applying it
 *   again is safe, since an apply first checks every file against the bytes the preview read and refuses it as
 *   stale otherwise. (A file that merely changed since the preview, so that the interrupted apply was about to
 *   refuse it, ends here too.)
 * - some do and the others still hold the preview's bytes: the crash came between two renames, so the rest are
 *   written now (all or none) and the action is `applied`;
 * - anything else (some new, some changed by someone else), or a path that now leads elsewhere: `conflict`, for a
 *   person to look at.
 *
 * It fails (and the action stays `resolving` until the next start) when the files cannot be locked or read now.
 */
const recoverEdit = (
  payload: EditPayload
): Effect.Effect<ActionKind.Recovery, unknown, FileSystem.FileSystem | Workspace> =>
  Effect.scoped(Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const workspace = yield* Workspace
    const held = yield* lockAll(workspace, payload.files)
    const tokens = new Map(held.map((lock) => [lock.target, lock.token]))
    const place: Place = { givenRoot: payload.givenRoot, realRoot: payload.realRoot }
    if ((yield* placeChanges(place, payload.files)).length > 0) return "conflict" as const
    const states = yield* Effect.forEach(payload.files, (file) =>
      Effect.map(
        Effect.zip(fs.readFile(file.realPath), fs.stat(file.realPath)),
        ([bytes, info]) => ({
          file,
          bytes,
          mode: info.mode & 0o7777,
          state: sameBytes(bytes, file.after) ? "after" : sha256(bytes) === file.before ? "before" : "other"
        })
      ).pipe(
        // A file that is gone was changed by someone else: that is for a person to look at, not to retry.
        Effect.catchIf(isNotFound, () =>
          Effect.succeed({ file, bytes: new Uint8Array(0), mode: 0, state: "other" as const }))
      ))
    const written = states.filter((s) => s.state === "after").length
    if (written === 0) return "pending" as const
    if (written === states.length) return "applied" as const
    if (states.some((s) => s.state === "other")) return "conflict" as const
    const rest = states.filter((s) => s.state === "before")
    // Roll forward: the crash came between two renames.
    yield* writeAll(
      fs,
      place,
      rest.map((s) => ({
        file: s.file,
        original: s.bytes,
        bytes: s.file.after,
        mode: s.mode,
        token: tokens.get(s.file.realPath)!
      }))
    )
    return "applied" as const
  }))

/**
 * The durable kind of an edit: its payload holds the paths, the SHA-256 of the bytes the preview read and the bytes
 * to write, so a restarted process can apply it, and `recover` can tell from the files whether a crashed apply
 * wrote them. A durable session that stages edits registers it: `ResolveRuntime.durable({ kinds: [kind], ... })`,
 * with `FileEditPreview.layer(...)` and a `FileSystem` (`NodeContext.layer`) provided to it.
 *
 * @since 0.2.0
 * @category kinds
 */
export const kind = ActionKind.make({
  name: "edit",
  payload: EditPayload,
  apply: (payload, call) => applyEdit(payload, call.reason),
  reject: (payload, call) =>
    Effect.succeed(Option.some(ToolResult.text(
      `Discarded: ${payload.label}. Nothing was written to ${payload.files.map((f) => f.displayPath).join(", ")}. ` +
        `Reason: ${call.reason}`,
      summaryOf(payload.files)
    ))),
  recover: (payload) => recoverEdit(payload)
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
  const path = yield* Path.Path
  const workspace = yield* Workspace
  if (params.files.length > workspace.maxFiles) {
    return yield* new EditLimitExceeded({ limit: "files", max: workspace.maxFiles, actual: params.files.length })
  }
  const editCount = params.files.reduce((n, file) => n + file.edits.length, 0)
  if (editCount > workspace.maxEdits) {
    return yield* new EditLimitExceeded({ limit: "edits", max: workspace.maxEdits, actual: editCount })
  }
  const givenRoot = path.resolve(workspace.root)
  const realRoot = yield* Effect.mapError(
    realPathOf(givenRoot),
    (error) =>
      new EditFileUnreadable({ path: workspace.root, problem: `the workspace root is unavailable (${error.message})` })
  )
  const inside = (root: string, candidate: string) => {
    const relative = path.relative(root, candidate)
    return relative === "" || (relative !== ".." && !relative.startsWith(`..${path.sep}`) && !path.isAbsolute(relative))
  }

  const files = new PreviewFiles((real) => inside(realRoot, real))
  const locate = (input: string) =>
    Effect.gen(function*() {
      const absolute = path.isAbsolute(input) ? path.resolve(input) : path.resolve(realRoot, input)
      const lexical = inside(realRoot, absolute) ?
        absolute :
        inside(givenRoot, absolute) ?
        path.join(realRoot, path.relative(givenRoot, absolute)) :
        undefined
      if (lexical === undefined) return yield* new EditPathOutsideWorkspace({ path: input, viaSymlink: false })
      const located = yield* Effect.tryPromise({
        try: () => files.locate(lexical),
        catch: (error) => new EditFileUnreadable({ path: input, problem: systemFailure(error).message })
      })
      switch (located._tag) {
        case "Unresolved":
          return yield* located.failure.code === "ENOENT" ?
            new EditFileMissing({ path: input }) :
            new EditFileUnreadable({ path: input, problem: located.failure.message })
        case "Outside":
          return yield* new EditPathOutsideWorkspace({ path: input, viaSymlink: true })
        case "Opened":
          return { lexical, real: located.real, opened: located.opened }
      }
    })

  // Every path resolved, opened and stat-ed on its handle at once; then, in the order of the files, the checks that
  // name the first bad one; then every read, from the handles, at once; then, in order, the edits and the diffs.
  const { contents, places } = yield* Effect.ensuring(
    Effect.gen(function*() {
      const located = yield* Effect.forEach(
        params.files,
        (file) => Effect.either(locate(file.path)),
        { concurrency: concurrencyFor(params.files.length) }
      )
      const seen = new Map<string, number>()
      /** Files by device and inode: two names of one file (hard links) are one file. */
      const seenInodes = new Map<string, number>()
      const places: Array<{ readonly lexical: string; readonly real: string; readonly opened: Opened }> = []
      let bytes = 0
      for (let fileIndex = 0; fileIndex < params.files.length; fileIndex++) {
        const file = params.files[fileIndex]!
        const where = located[fileIndex]!
        if (where._tag === "Left") return yield* where.left
        const { opened, real } = where.right
        const { stat } = opened
        places.push(where.right)
        const earlier = seen.get(real)
        if (earlier !== undefined) {
          return yield* new InvalidEditParams({
            field: `files.${fileIndex}.path`,
            problem: `names the same file as files.${earlier}.path; list each file once with all its edits`
          })
        }
        seen.set(real, fileIndex)
        if (stat.type !== "File") {
          return yield* new EditFileUnreadable({ path: file.path, problem: `not a regular file (${stat.type})` })
        }
        const same = seenInodes.get(stat.inode)
        if (same !== undefined) {
          return yield* new InvalidEditParams({
            field: `files.${fileIndex}.path`,
            problem: `names the same file as files.${same}.path: ${JSON.stringify(file.path)} and ` +
              `${JSON.stringify(params.files[same]!.path)} are hard links to one file; list it once, under one ` +
              `name, with all its edits`
          })
        }
        seenInodes.set(stat.inode, fileIndex)
        bytes += stat.size
        if (bytes > workspace.maxBytes) {
          return yield* new EditLimitExceeded({
            limit: "bytes",
            max: workspace.maxBytes,
            actual: bytes,
            path: file.path
          })
        }
      }
      const contents = yield* Effect.forEach(
        params.files,
        (file, fileIndex) =>
          Effect.either(Effect.tryPromise({
            try: () => files.read(places[fileIndex]!.opened),
            catch: (cause) => {
              const error = systemFailure(cause)
              return error.code === "ENOENT" ?
                new EditFileMissing({ path: file.path }) :
                new EditFileUnreadable({ path: file.path, problem: error.message })
            }
          })),
        { concurrency: concurrencyFor(params.files.length) }
      )
      return { contents, places }
    }),
    Effect.promise(() => files.end())
  )

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
    // The bytes to write are built when they are needed (an apply, or a durable store keeping the payload), and
    // the hash of the bytes read likewise: a preview pays for neither.
    const after = once(() => ascii ? spliceBytes(original, edited, edited.bytes) : Buffer.from(edited.text, "utf8"))
    const before = once(() => sha256(original))
    const editFile: EditFile = {
      inputPath: file.path,
      displayPath,
      lexicalPath: lexical,
      realPath: real,
      replacements: edited.replacements,
      get before() {
        return before()
      },
      get after() {
        return after()
      }
    }
    originals.set(editFile, original)
    staged.push(editFile)
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
 * The JSON Schema of the `edit` tool's parameters, as the model sees it. Accepted by OpenAI's strict function
 * calling and by the other providers' schema subsets: every object closes its properties
 * (`additionalProperties: false`) and lists all of them as required; `replaceAll`, which may be left out, is
 * nullable instead (`null` means not set); no `$schema`, `$ref` or `$defs`, and no keyword a strict mode refuses
 * (the length and item-count rules are stated in the descriptions and checked when decoding).
 *
 * @since 0.2.0
 * @category schemas
 */
export const parametersJsonSchema: JSONSchema.JsonSchema7Root = {
  type: "object",
  properties: {
    files: {
      type: "array",
      description: "The files to edit (at least one), each listed once.",
      items: {
        type: "object",
        properties: {
          path: {
            type: "string",
            description: "The file, relative to the workspace root (not empty, at most 4096 characters)."
          },
          edits: {
            type: "array",
            description: "The replacements of this file (at least one), applied in order, each to the result of the " +
              "previous one.",
            items: {
              type: "object",
              properties: {
                oldText: {
                  type: "string",
                  description: "The exact text to replace (not empty), including whitespace and line breaks."
                },
                newText: { type: "string", description: "The text that replaces oldText." },
                replaceAll: {
                  anyOf: [{ type: "boolean" }, { type: "null" }],
                  description: "true: replace every occurrence. false or null: oldText must occur exactly once."
                }
              },
              required: ["oldText", "newText", "replaceAll"],
              additionalProperties: false
            }
          }
        },
        required: ["path", "edits"],
        additionalProperties: false
      }
    }
  },
  required: ["files"],
  additionalProperties: false
}

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
