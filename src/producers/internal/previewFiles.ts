/**
 * How a preview finds, confines and reads its files: the workspace root and every path resolved to a real path
 * inside the workspace (a symlink resolving outside is refused), each file opened and `fstat`ed once, the checks
 * that name the first bad file (the same file twice, by path or by hard link; not a regular file; the byte limit),
 * then every read from the open descriptors. This is the preview's hot path: it works on the machine's file system
 * (`node:fs`) rather than the `FileSystem` service, with as few system calls per file as its checks allow (see
 * `PreviewFiles`).
 *
 * @internal
 */
import type * as FileSystem from "@effect/platform/FileSystem"
import type * as Path from "@effect/platform/Path"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as FS from "node:fs"
import * as NFS from "node:fs/promises"
import * as NPath from "node:path"
import {
  EditFileMissing,
  EditFileUnreadable,
  EditLimitExceeded,
  EditPathOutsideWorkspace,
  InvalidEditParams
} from "../EditErrors.js"
import type { WorkspaceConfig } from "../EditWorkspace.js"
import { concurrencyFor } from "./fileConcurrency.js"

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

/** A file of a preview: the path the model gave, made absolute inside the real root; its real path; the file, open. */
export interface PreviewPlace {
  readonly lexical: string
  readonly real: string
  readonly opened: Opened
}

/**
 * The files of one preview, found, checked and read: the root as given and as resolved, where each file is, and its
 * bytes or why they could not be read. A read's failure, like the byte limit on what was actually read, is for the
 * preview to report, in the order of the files: after the errors the files before it give.
 */
export interface PreviewRead {
  readonly givenRoot: string
  readonly realRoot: string
  readonly places: ReadonlyArray<PreviewPlace>
  readonly contents: ReadonlyArray<Either.Either<Uint8Array, EditFileMissing | EditFileUnreadable>>
}

/**
 * Resolves the workspace root, then finds, confines, opens, checks and reads the files `params` names (the paths as
 * the model wrote them). Fails with the first bad file's error, in the order of the files; every file it opened is
 * closed when it ends.
 */
export const readPreviewFiles = (
  path: Path.Path,
  workspace: WorkspaceConfig,
  params: ReadonlyArray<{ readonly path: string }>
): Effect.Effect<
  PreviewRead,
  EditFileMissing | EditFileUnreadable | EditLimitExceeded | EditPathOutsideWorkspace | InvalidEditParams
> =>
  Effect.gen(function*() {
    const givenRoot = path.resolve(workspace.root)
    const realRoot = yield* Effect.mapError(
      realPathOf(givenRoot),
      (error) =>
        new EditFileUnreadable({
          path: workspace.root,
          problem: `the workspace root is unavailable (${error.message})`
        })
    )
    const inside = (root: string, candidate: string) => {
      const relative = path.relative(root, candidate)
      return relative === "" ||
        (relative !== ".." && !relative.startsWith(`..${path.sep}`) && !path.isAbsolute(relative))
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
    // name the first bad one; then every read, from the handles, at once; then (in the preview), in order, the edits
    // and the diffs.
    const { contents, places } = yield* Effect.ensuring(
      Effect.gen(function*() {
        const located = yield* Effect.forEach(
          params,
          (file) => Effect.either(locate(file.path)),
          { concurrency: concurrencyFor(params.length) }
        )
        const seen = new Map<string, number>()
        /** Files by device and inode: two names of one file (hard links) are one file. */
        const seenInodes = new Map<string, number>()
        const places: Array<{ readonly lexical: string; readonly real: string; readonly opened: Opened }> = []
        let bytes = 0
        for (let fileIndex = 0; fileIndex < params.length; fileIndex++) {
          const file = params[fileIndex]!
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
                `${JSON.stringify(params[same]!.path)} are hard links to one file; list it once, under one ` +
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
          params,
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
          { concurrency: concurrencyFor(params.length) }
        )
        return { contents, places }
      }),
      Effect.promise(() => files.end())
    )
    return { givenRoot, realRoot, places, contents }
  })
