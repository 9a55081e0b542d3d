/**
 * Where the `edit` tool may read and write, how much one call may touch, and how long an apply waits for the locks
 * of its files: the `Workspace` service and its layer.
 *
 * @example
 * ```ts
 * import { FileEditPreview } from "effect-resolve/edit"
 *
 * // Every limit but the root defaults to `defaultLimits`.
 * const workspace = FileEditPreview.layer({ root: "/path/to/workspace", maxFiles: 50, lockTimeout: "30 seconds" })
 * ```
 *
 * @since 0.3.0
 */
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Layer from "effect/Layer"
import * as FileLock from "./FileLock.js"

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
