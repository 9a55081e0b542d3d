/**
 * How an apply writes an edit action's files, all or none, and only as the preview saw them: the locks of every file
 * (one writer per file across sessions and processes), then, under them, the checks that every path still leads
 * where it did and every file still holds the bytes the preview read (else the preview is stale), then the write:
 * temporary files, each path verified again right before its rename, and a rollback from the snapshot if a step
 * fails. A recovery after a crash takes the same locks and reads the files the same way (`lockAndRead`), and rolls
 * an interrupted write forward with the same `writeAll`.
 *
 * @internal
 */
import type { PlatformError } from "@effect/platform/Error"
import * as FileSystem from "@effect/platform/FileSystem"
import * as Cause from "effect/Cause"
import * as Data from "effect/Data"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import * as NFS from "node:fs/promises"
import { type PendingStoreError, ToolError } from "../../domain/Errors.js"
import type * as ToolResult from "../../domain/ToolResult.js"
import { messageOf } from "../../internal/render.js"
import * as Preview from "../../services/Preview.js"
import { SessionOwnership } from "../../services/SessionOwnership.js"
import { EditFileLocked, EditWriteFailed } from "../EditErrors.js"
import type { EditFile, EditPayload } from "../EditKind.js"
import { Workspace, type WorkspaceConfig } from "../EditWorkspace.js"
import * as FileLock from "../FileLock.js"
import { appliedResult } from "./editSummary.js"
import { concurrencyFor } from "./fileConcurrency.js"
import { isBefore } from "./stagedFiles.js"

/** Whether a `FileSystem` call failed because the file is not there. */
export const isNotFound = (error: PlatformError): boolean => error._tag === "SystemError" && error.reason === "NotFound"

const staleError = (entries: ReadonlyArray<string>, when: "after the preview" | "during the apply", tail = "") =>
  new ToolError({
    message: `Preview is stale: ${entries.join(", ")} changed ${when}. Nothing was written.${tail} ` +
      `Discard this preview (resolve with action "discard") and preview the edit again.`
  })

const movedNote = "(its path now leads elsewhere: a directory on the way was moved or replaced)"

// -----------------------------------------------------------------------------------------------------------------
// where the root and the paths lead now
// -----------------------------------------------------------------------------------------------------------------

/** The workspace root as given and as resolved at preview time. */
export interface Place {
  readonly givenRoot: string
  readonly realRoot: string
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

// -----------------------------------------------------------------------------------------------------------------
// the write: all files or none
// -----------------------------------------------------------------------------------------------------------------

/** A path changed between the check and its rename: the write stops and is rolled back. */
class PlaceChanged extends Data.TaggedError("PlaceChanged")<{ readonly entry: string }> {}

/** A file of an apply, checked under its lock: what to write, and what a rollback restores. */
export interface Checked {
  readonly file: EditFile
  /** The bytes read under the locks (the preview's, checked): what a rollback restores. */
  readonly original: Uint8Array
  /** The edited bytes to write. */
  readonly bytes: Uint8Array
  readonly mode: number
  /** The token of the file's lock: names its temporary file. */
  readonly token: string
}

/**
 * Writes `files` all or none: a temporary file per file, then (the root resolved again) each path verified right
 * before its rename; if a step fails, the files already renamed are restored from the bytes read under the locks
 * and the temporary files removed. A path that changed is the stale error; any other failure `EditWriteFailed`.
 */
export const writeAll = (
  fs: FileSystem.FileSystem,
  place: Place,
  files: ReadonlyArray<Checked>
): Effect.Effect<void, EditWriteFailed | ToolError> =>
  Effect.gen(function*() {
    const ownership = yield* Effect.serviceOption(SessionOwnership)
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
      // An exclusive session writes only while it still owns the session (one read, under the file locks, right
      // before the first rename): a runner paused past its lease and woken after another took over writes nothing.
      if (Option.isSome(ownership)) yield* ownership.value.check
      // The renames. Each path is verified right before its own rename (Node has no renameat; what is left is a swap
      // in the moment between that check and the rename), and so is the lease, by this process's clock (no round trip
      // while it is fresh): a process paused between two renames, woken after another owner took over, stops there.
      yield* eachFile((i): Effect.Effect<void, PlatformError | PlaceChanged | PendingStoreError> => {
        const { file } = files[i]!
        return Effect.flatMap(
          fileChange(file),
          (change): Effect.Effect<void, PlatformError | PlaceChanged | PendingStoreError> =>
            change !== undefined ?
              Effect.fail(new PlaceChanged({ entry: change })) :
              Effect.zipRight(
                Option.isSome(ownership) ? ownership.value.guard : Effect.void,
                Effect.tap(fs.rename(temps[i]!, file.realPath), () => {
                  renamed.push(files[i]!)
                })
              )
        )
      })
    })
    const rollback = (cause: Cause.Cause<PlatformError | PlaceChanged | PendingStoreError>) =>
      Effect.gen(function*() {
        const restored: Array<string> = []
        const notRestored: Array<string> = []
        // An exclusive session restores only while it still owns the session (one read): a process woken after
        // another owner took over leaves the files to that owner, which recovered the action when it opened.
        const owned = renamed.length === 0 || Option.isNone(ownership) ||
          Either.isRight(yield* Effect.either(ownership.value.check))
        if (!owned) notRestored.push(...renamed.map(({ file }) => file.displayPath))
        for (const { file, mode, original } of owned ? [...renamed].reverse() : []) {
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
        const done = new Set(renamed.map(({ file }) => file.realPath))
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
            messageOf(Cause.squash(cause)),
          restored,
          notRestored
        })
      })
    return yield* Effect.catchAllCause(attempt, rollback)
  })

// -----------------------------------------------------------------------------------------------------------------
// the locks, and what the files hold under them
// -----------------------------------------------------------------------------------------------------------------

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

/** A file of an edit action as it is now, read under its lock. */
export interface Current {
  readonly file: EditFile
  /** The token of the file's lock: names its temporary file. */
  readonly token: string
  /** Its bytes and permission bits now, or why they could not be read. */
  readonly now: Either.Either<{ readonly bytes: Uint8Array; readonly mode: number }, PlatformError>
}

/**
 * The steps an apply and a recovery share: the locks of every file of `payload`, taken in the order of the real
 * paths and held until the scope closes; then, under them, whether the root and every path still lead where they
 * did at preview time (`Moved`, with what changed), and else every file as it is now (`Read`).
 */
export const lockAndRead = (payload: EditPayload): Effect.Effect<
  | { readonly _tag: "Moved"; readonly place: Place; readonly changes: ReadonlyArray<string> }
  | { readonly _tag: "Read"; readonly place: Place; readonly files: ReadonlyArray<Current> },
  ToolError | EditFileLocked,
  FileSystem.FileSystem | Workspace | Scope.Scope
> =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const workspace = yield* Workspace
    const place: Place = { givenRoot: payload.givenRoot, realRoot: payload.realRoot }
    // Lock phase (interruptible, bounded): one writer per file across sessions and processes; the locks are taken
    // in the order of the real paths and released when the scope closes.
    const held = yield* lockAll(workspace, payload.files)
    const tokens = new Map(held.map((lock) => [lock.target, lock.token]))
    // Under the locks: every path leads where it did at preview time, and what every file holds now.
    const changes = yield* placeChanges(place, payload.files)
    if (changes.length > 0) return { _tag: "Moved", place, changes } as const
    const files = yield* Effect.forEach(
      payload.files,
      (file): Effect.Effect<Current> =>
        Effect.map(
          Effect.either(Effect.zip(fs.readFile(file.realPath), fs.stat(file.realPath))),
          (now) => ({
            file,
            token: tokens.get(file.realPath)!,
            now: Either.map(now, ([bytes, info]) => ({ bytes, mode: info.mode & 0o7777 }))
          })
        ),
      { concurrency: concurrencyFor(payload.files.length) }
    )
    return { _tag: "Read", place, files } as const
  })

// -----------------------------------------------------------------------------------------------------------------
// the apply
// -----------------------------------------------------------------------------------------------------------------

/** Applies an edit action: locks, checks under the locks, then writes all files or none. */
export const applyEdit = (
  payload: EditPayload,
  reason: string
): Effect.Effect<
  ToolResult.ToolResult,
  ToolError | EditWriteFailed | EditFileLocked,
  FileSystem.FileSystem | Workspace
> =>
  Effect.scoped(Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    // Lock phase, then check phase (both interruptible), under the locks: every path leads where it did at preview
    // time, and every file is what the preview saw.
    const locked = yield* lockAndRead(payload)
    if (locked._tag === "Moved") return yield* staleError(locked.changes, "after the preview")
    const stale: Array<string> = []
    const checked: Array<Checked> = []
    for (const { file, now, token } of locked.files) {
      if (Either.isLeft(now)) stale.push(`${file.displayPath} (now missing or unreadable)`)
      else if (!isBefore(file, now.right.bytes)) stale.push(file.displayPath)
      else checked.push({ file, original: now.right.bytes, bytes: file.after, mode: now.right.mode, token })
    }
    if (stale.length > 0) return yield* staleError(stale, "after the preview")
    // Write phase: all files or none, uninterruptible; the action counts as applied only if it succeeds.
    yield* Preview.commit(writeAll(fs, locked.place, checked))
    return appliedResult(payload, reason)
  }))
