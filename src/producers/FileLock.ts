/**
 * Per-file write locks of the `edit` tool: one writer per file at a time, across every session of a thread and
 * across threads and processes.
 *
 * - In a thread: a table keyed by the file's real path, held in a slot on `globalThis`, so every session, every
 *   layer and every copy of this module in the thread shares it; waiters queue on it and are woken when it is
 *   released. Each worker thread (`node:worker_threads`) has its own `globalThis`, hence its own table: threads of
 *   one process are kept apart by the lock files, like processes.
 * - Across threads and processes: an advisory lock file next to the target, `.<name>.edit-lock`, created
 *   exclusively (`wx`) and never more readable than the target, like the temporary files: `0600`, plus read for
 *   group and others where the target has it (`0600` while the target does not exist; the umask can only take bits
 *   away). It holds one line of JSON:
 *   `{"pid":1234,"threadId":0,"host":"box","since":"2025-01-01T00:00:00.000Z","token":"0123456789abcdef",...}`
 *   (`threadId` is `node:worker_threads`' `threadId`, `0` in the main thread; a line without it, written by an older
 *   version, is read as the main thread's). While it is held its modification time is refreshed every
 *   `staleAfter / 3`. A lock file is taken over when it is stale: its process is gone (same host, `kill(pid, 0)`
 *   answers `ESRCH`), it was left by this very thread (same pid and thread id, a token this thread does not hold),
 *   or it was not refreshed for `staleAfter`. A lock file of another thread of this process is held while this
 *   process lives (a thread cannot tell whether another one still runs): only its age makes it stale. A lock file
 *   this user may not read (another user's, `EACCES` / `EPERM`) is held by someone it cannot see: waited for (a
 *   wait that times out names "another user"), and stale only by its age. Taking over is itself guarded by an
 *   exclusive `.<name>.edit-lock-recovery` file (created with the lock file's mode): only its holder re-reads the
 *   stale lock file, checks it is the very one judged stale (same inode, same bytes, same modification time) and
 *   removes it, with the temporary file its dead holder may have left; then every contender races for the lock file
 *   again with `wx`, so exactly one wins.
 * - Locks of several files are taken one by one in the order of their real paths, so two applies cannot deadlock,
 *   and the whole wait is bounded by `timeout`.
 *
 * Advisory: only writers that take these locks (this module, in this or another thread or process) are kept out.
 *
 * @since 0.2.0
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as Scope from "effect/Scope"
import { createHash, randomBytes } from "node:crypto"
import * as NFS from "node:fs/promises"
import * as OS from "node:os"
import * as NPath from "node:path"
import { threadId } from "node:worker_threads"
import { messageOf } from "../internal/render.js"

// -----------------------------------------------------------------------------------------------------------------
// options and errors
// -----------------------------------------------------------------------------------------------------------------

/**
 * How long an apply waits for the locks of its files, and when a lock file counts as abandoned.
 *
 * @since 0.2.0
 * @category models
 */
export interface LockOptions {
  /** The longest wait for all the locks of one apply. */
  readonly timeout: Duration.Duration
  /** A lock file not refreshed for this long is abandoned (its holder refreshes it every third of it). */
  readonly staleAfter: Duration.Duration
}

/**
 * The defaults: wait up to 10 seconds; a lock file not refreshed for 30 seconds is abandoned.
 *
 * @since 0.2.0
 * @category constants
 */
export const defaultLockOptions: LockOptions = { timeout: Duration.seconds(10), staleAfter: Duration.seconds(30) }

/**
 * The locks were not all free within `timeout`: `path` (a real path) was still held, by `holder` when known.
 *
 * @since 0.2.0
 * @category errors
 */
export class LockWaitTimeout
  extends Schema.TaggedError<LockWaitTimeout>("effect-resolve/LockWaitTimeout")("LockWaitTimeout", {
    path: Schema.String,
    holder: Schema.optional(Schema.String)
  })
{
  /**
   * @since 0.2.0
   */
  override get message(): string {
    return `${this.path} is locked by ${this.holder ?? "another writer"}; the wait for its lock timed out. ` +
      `Close the scope (releasing the locks taken so far) and try again in a moment.`
  }
}

/**
 * A lock file could not be created or read (`problem` says why; `missing` when its directory is gone).
 *
 * @since 0.2.0
 * @category errors
 */
export class LockFileError extends Schema.TaggedError<LockFileError>("effect-resolve/LockFileError")("LockFileError", {
  path: Schema.String,
  problem: Schema.String,
  missing: Schema.Boolean
}) {
  /**
   * @since 0.2.0
   */
  override get message(): string {
    return this.missing ?
      `The directory of ${this.path} is gone (${this.problem}): there is nothing to lock.` :
      `Could not create or read the lock file next to ${this.path} (${this.problem}): taking the lock needs ` +
      `write permission in that directory.`
  }
}

/**
 * A lock this thread holds on `target` (a real path) until its scope closes.
 *
 * @since 0.2.0
 * @category models
 */
export interface HeldLock {
  readonly target: string
  /** Unique to this hold; names the temporary file of the write (`tempFileOf`). */
  readonly token: string
  readonly lockFile: string
}

// -----------------------------------------------------------------------------------------------------------------
// names
// -----------------------------------------------------------------------------------------------------------------

/** A file name short enough to take a prefix and a suffix (names are limited to 255 bytes). */
const shortName = (name: string): string => {
  if (Buffer.byteLength(name, "utf8") <= 120) return name
  let kept = ""
  let bytes = 0
  for (const char of name) {
    bytes += Buffer.byteLength(char, "utf8")
    if (bytes > 80) break
    kept += char
  }
  return `${kept}~${createHash("sha256").update(name).digest("hex").slice(0, 16)}`
}

const sibling = (target: string, suffix: string): string =>
  NPath.join(NPath.dirname(target), `.${shortName(NPath.basename(target))}${suffix}`)

/**
 * The lock file of `target`: `.<name>.edit-lock` in the same directory.
 *
 * @since 0.2.0
 * @category constructors
 */
export const lockFileOf = (target: string): string => sibling(target, ".edit-lock")

const recoveryFileOf = (target: string): string => sibling(target, ".edit-lock-recovery")

/**
 * The temporary file a write of `target` under the lock `token` uses: `.<name>.<token>.edit-tmp`, next to it.
 *
 * @since 0.2.0
 * @category constructors
 */
export const tempFileOf = (target: string, token: string): string => sibling(target, `.${token}.edit-tmp`)

// -----------------------------------------------------------------------------------------------------------------
// thread-wide state (one per `globalThis`: each worker thread has its own)
// -----------------------------------------------------------------------------------------------------------------

interface LocalEntry {
  holder: string | undefined
  readonly waiters: Set<() => void>
}

interface ProcessLocks {
  /** In-thread locks, by real path. */
  readonly entries: Map<string, LocalEntry>
  /** Tokens of the lock (and recovery) files this thread holds. */
  readonly held: Set<string>
}

const processSlot = Symbol.for("effect-resolve/FileLock/process-locks/v1")

/** Shared by every session and every copy of this module in the thread (not by other worker threads). */
const processLocks: ProcessLocks = ((globalThis as Record<symbol, unknown>)[processSlot] ??= {
  entries: new Map(),
  held: new Set()
}) as ProcessLocks

const newToken = (): string => randomBytes(8).toString("hex")

const errnoOf = (error: unknown): string | undefined =>
  error !== null && typeof error === "object" && "code" in error && typeof error.code === "string" ?
    error.code :
    undefined

// -----------------------------------------------------------------------------------------------------------------
// in-process lock
// -----------------------------------------------------------------------------------------------------------------

const entryOf = (target: string): LocalEntry => {
  let entry = processLocks.entries.get(target)
  if (entry === undefined) {
    entry = { holder: undefined, waiters: new Set() }
    processLocks.entries.set(target, entry)
  }
  return entry
}

const releaseLocal = (target: string, token: string) =>
  Effect.sync(() => {
    const entry = processLocks.entries.get(target)
    if (entry === undefined || entry.holder !== token) return
    entry.holder = undefined
    const waiters = [...entry.waiters]
    entry.waiters.clear()
    if (waiters.length === 0) processLocks.entries.delete(target)
    for (const wake of waiters) wake()
  })

/** Resumes when the entry is free (at once if it is); interruptible, and an interrupted waiter leaves no trace. */
const awaitFree = (entry: LocalEntry) =>
  Effect.async<void>((resume) => {
    if (entry.holder === undefined) return resume(Effect.void)
    const wake = () => resume(Effect.void)
    entry.waiters.add(wake)
    return Effect.sync(() => {
      entry.waiters.delete(wake)
    })
  })

// -----------------------------------------------------------------------------------------------------------------
// lock files
// -----------------------------------------------------------------------------------------------------------------

interface Holder {
  readonly pid: number
  /** The holder's `node:worker_threads` `threadId`: `0` for the main thread, and for a line without one. */
  readonly threadId: number
  readonly host: string
  readonly since: string
  readonly token: string
}

const holderContent = (token: string): string =>
  `${
    JSON.stringify({
      pid: process.pid,
      threadId,
      host: OS.hostname(),
      since: new Date().toISOString(),
      token,
      by: "effect-resolve edit"
    })
  }\n`

const parseHolder = (content: string | undefined): Holder | undefined => {
  if (content === undefined) return undefined
  try {
    const value: unknown = JSON.parse(content)
    if (value === null || typeof value !== "object") return undefined
    const { host, pid, since, threadId, token } = value as Record<string, unknown>
    return typeof pid === "number" && typeof host === "string" && typeof token === "string" ?
      {
        pid,
        // Lines written before the thread id was recorded come from a main thread (or a process without workers).
        threadId: typeof threadId === "number" && Number.isSafeInteger(threadId) && threadId >= 0 ? threadId : 0,
        host,
        token,
        since: typeof since === "string" ? since : "?"
      } :
      undefined
  } catch {
    return undefined
  }
}

/** What a lock file says, as read at one moment. */
interface Seen {
  /** Its bytes; `undefined` when this user may not read it (another user's lock file). */
  readonly content: string | undefined
  readonly ino: number
  readonly mtimeMs: number
}

const maxLockFileBytes = 4096

/** The lock file's content and identity, or `undefined` when there is none. */
const look = async (file: string): Promise<Seen | undefined> => {
  try {
    const handle = await NFS.open(file, "r")
    try {
      const info = await handle.stat()
      // A lock file is a line of JSON; whatever else is there is not read.
      const buffer = Buffer.alloc(maxLockFileBytes)
      const { bytesRead } = await handle.read(buffer, 0, maxLockFileBytes, 0)
      return { content: buffer.toString("utf8", 0, bytesRead), ino: info.ino, mtimeMs: info.mtimeMs }
    } finally {
      await handle.close()
    }
  } catch (error) {
    const code = errnoOf(error)
    if (code === "ENOENT") return undefined
    if (code !== "EACCES" && code !== "EPERM") throw error
  }
  // Not readable by this user: another user holds it. Its identity and age still tell when it is abandoned.
  try {
    const info = await NFS.stat(file)
    return { content: undefined, ino: info.ino, mtimeMs: info.mtimeMs }
  } catch (error) {
    if (errnoOf(error) === "ENOENT") return undefined
    throw error
  }
}

const describeHolder = (seen: Seen): string => {
  if (seen.content === undefined) return "another user, whose lock file this user may not read"
  const holder = parseHolder(seen.content)
  return holder === undefined ?
    "a writer whose lock file is being written or unreadable" :
    `process ${holder.pid}${holder.threadId === 0 ? "" : ` (worker thread ${holder.threadId})`} on ${holder.host} ` +
    `since ${holder.since}`
}

/** How long a lock file may stay without its line before it counts as left by a writer that died. */
const unreadableGraceMs = 2_000

/** Why the lock file `seen` is abandoned, or `undefined` while its holder may still be at work. */
const staleReason = (seen: Seen, staleAfterMs: number): string | undefined => {
  const age = Date.now() - seen.mtimeMs
  if (age > staleAfterMs) return `not refreshed for ${Math.round(age)} ms`
  // Another user's, which this one may not read: held by someone it cannot see; only age can make it stale.
  if (seen.content === undefined) return undefined
  const holder = parseHolder(seen.content)
  // Being written: a writer writes its line right after creating the file, so a lock file still without one after
  // a moment was left by a writer that died in between (SIGKILL; found by the crash test).
  if (holder === undefined) return age > unreadableGraceMs ? `left unwritten for ${Math.round(age)} ms` : undefined
  // Another host's: only age can make it stale.
  if (holder.host !== OS.hostname()) return undefined
  if (holder.pid === process.pid) {
    // This thread's own: abandoned unless it holds the token.
    if (holder.threadId === threadId) return processLocks.held.has(holder.token) ? undefined : "left by this thread"
    // Another thread of this process (worker threads share the pid): held while the process lives, as far as this
    // thread can tell; its tokens are in that thread's table, not this one's. Only age makes it stale.
    return undefined
  }
  try {
    process.kill(holder.pid, 0)
    return undefined
  } catch (error) {
    return errnoOf(error) === "ESRCH" ? `process ${holder.pid} is gone` : undefined
  }
}

/**
 * The mode to create the lock and recovery files of `target` with: never more readable than the target, like its
 * temporary files. Read-write for its owner (the holder reads and refreshes it), readable by group and others only
 * when the target is; nobody else ever writes it (a stale one is removed, which takes the directory's permission,
 * not the file's). `0600` when the target cannot be looked at (it does not exist yet). The umask can only take bits
 * away.
 */
const lockModeOf = async (target: string): Promise<number> => {
  try {
    return 0o600 | ((await NFS.stat(target)).mode & 0o044)
  } catch {
    return 0o600
  }
}

/**
 * Creates `file` exclusively with `content` and `mode`; its inode number, or `undefined` if it exists. A half-made
 * file is removed.
 */
const createExclusive = async (file: string, content: string, mode: number): Promise<number | undefined> => {
  let handle: NFS.FileHandle
  try {
    handle = await NFS.open(file, "wx", mode)
  } catch (error) {
    if (errnoOf(error) === "EEXIST") return undefined
    throw error
  }
  try {
    await handle.writeFile(content)
    const { ino } = await handle.stat()
    await handle.close()
    return ino
  } catch (error) {
    await handle.close().catch(() => undefined)
    await NFS.unlink(file).catch(() => undefined)
    throw error
  }
}

/** Removes `file` if it is still the one created with inode `ino` (best effort: a failure leaves it to go stale). */
const removeIfOwn = async (file: string, ino: number): Promise<void> => {
  try {
    if ((await NFS.lstat(file)).ino === ino) await NFS.unlink(file)
  } catch {
    // Gone already, or left behind: it is recovered once stale.
  }
}

/** Whether two looks saw the very same lock file: same inode, same bytes (or both unreadable), not refreshed since. */
const isSame = (a: Seen, b: Seen): boolean => a.ino === b.ino && a.content === b.content && a.mtimeMs === b.mtimeMs

/** How long a recovery file may live before it is considered left by a crashed recoverer. */
const recoveryStaleMs = 5_000

/**
 * Takes over the stale lock file `seen` of `target`, guarded by the recovery file. `true` when the stale lock file
 * is gone (removed here or by someone else), `false` when another recoverer is at work.
 */
const recover = async (target: string, seen: Seen): Promise<boolean> => {
  const lockFile = lockFileOf(target)
  const recoveryFile = recoveryFileOf(target)
  const token = newToken()
  processLocks.held.add(token)
  try {
    if ((await createExclusive(recoveryFile, holderContent(token), await lockModeOf(target))) === undefined) {
      // Another recoverer; a recovery file left by a crash is removed once its process is gone or it is old.
      const other = await look(recoveryFile)
      if (other !== undefined && staleReason(other, recoveryStaleMs) !== undefined) {
        const again = await look(recoveryFile)
        if (again !== undefined && isSame(again, other)) {
          await NFS.unlink(recoveryFile).catch(() => undefined)
        }
      }
      return false
    }
    try {
      // Only the holder of the recovery file removes a lock file, and only the very one judged stale.
      const now = await look(lockFile)
      if (now !== undefined && isSame(now, seen)) {
        // Gone already: removed by a recoverer that took over a recovery file it judged left behind.
        await NFS.unlink(lockFile).catch((error) => {
          if (errnoOf(error) !== "ENOENT") throw error
        })
        const dead = parseHolder(seen.content)
        if (dead !== undefined && /^[0-9a-f]{16}$/.test(dead.token)) {
          await NFS.unlink(tempFileOf(target, dead.token)).catch(() => undefined)
        }
      }
      return true
    } finally {
      await NFS.unlink(recoveryFile).catch(() => undefined)
    }
  } finally {
    processLocks.held.delete(token)
  }
}

const tryPromise = <A>(target: string, run: () => Promise<A>): Effect.Effect<A, LockFileError> =>
  Effect.tryPromise({
    try: run,
    catch: (error) =>
      new LockFileError({ path: target, problem: messageOf(error), missing: errnoOf(error) === "ENOENT" })
  })

/** A lock file this thread created, with what it takes to release it. */
interface Taken {
  readonly held: HeldLock
  readonly ino: number
  readonly timer: ReturnType<typeof setInterval>
}

/** One attempt at a lock file: taken, to try again at once, or to wait for its holder. */
type Attempt =
  | { readonly _tag: "Taken"; readonly taken: Taken }
  | { readonly _tag: "Again" }
  | { readonly _tag: "Wait"; readonly holder: string | undefined }

/**
 * Tries to create the lock file of `target` for `token`; on success its modification time is refreshed every
 * `staleAfterMs / 3` by an unreferenced timer (it never keeps the process alive). A stale lock file is taken over.
 */
const attemptFile = async (target: string, token: string, staleAfterMs: number): Promise<Attempt> => {
  const lockFile = lockFileOf(target)
  processLocks.held.add(token)
  let ino: number | undefined
  try {
    ino = await createExclusive(lockFile, holderContent(token), await lockModeOf(target))
  } catch (error) {
    processLocks.held.delete(token)
    throw error
  }
  if (ino !== undefined) {
    const timer = setInterval(() => {
      const now = new Date()
      NFS.utimes(lockFile, now, now).catch(() => undefined)
    }, Math.max(10, Math.floor(staleAfterMs / 3)))
    timer.unref()
    return { _tag: "Taken", taken: { held: { target, token, lockFile }, ino, timer } }
  }
  processLocks.held.delete(token)
  const seen = await look(lockFile)
  if (seen === undefined) return { _tag: "Again" }
  if (staleReason(seen, staleAfterMs) !== undefined) {
    return (await recover(target, seen)) ? { _tag: "Again" } : { _tag: "Wait", holder: describeHolder(seen) }
  }
  return { _tag: "Wait", holder: describeHolder(seen) }
}

/** Releases lock files this thread holds, all at once. */
const releaseAll = async (all: ReadonlyArray<Taken>): Promise<void> => {
  await Promise.all(all.map(async ({ held, ino, timer }) => {
    clearInterval(timer)
    await removeIfOwn(held.lockFile, ino)
    processLocks.held.delete(held.token)
  }))
}

/** Waits for `effect` until `deadline` (epoch ms); `false` if the deadline came first. */
const until = (deadline: number, effect: Effect.Effect<void>): Effect.Effect<boolean> =>
  Effect.suspend(() => {
    const left = deadline - Date.now()
    return left <= 0 ?
      Effect.succeed(false) :
      Effect.map(Effect.timeoutOption(effect, Duration.millis(left)), (done) => done._tag === "Some")
  })

/** Every in-process lock at once when all are free (`true`, their release registered), else none (`false`). */
const takeAllLocalAtOnce = (
  scope: Scope.Scope,
  targets: ReadonlyArray<string>,
  tokens: ReadonlyArray<string>
): Effect.Effect<boolean> =>
  Effect.uninterruptible(Effect.suspend(() => {
    if (targets.some((target) => processLocks.entries.get(target)?.holder !== undefined)) return Effect.succeed(false)
    targets.forEach((target, i) => {
      entryOf(target).holder = tokens[i]
    })
    return Effect.as(
      Scope.addFinalizer(scope, Effect.forEach(targets, (target, i) => releaseLocal(target, tokens[i]!))),
      true
    )
  }))

/** Takes the in-process lock of `target` for the scope; only the wait is interruptible. */
const takeLocal = (
  scope: Scope.Scope,
  target: string,
  token: string,
  deadline: () => number
): Effect.Effect<void, LockWaitTimeout> =>
  Effect.uninterruptibleMask((restore) => {
    const attempt: Effect.Effect<void, LockWaitTimeout> = Effect.suspend(() => {
      const entry = entryOf(target)
      if (entry.holder === undefined) {
        entry.holder = token
        return Scope.addFinalizer(scope, releaseLocal(target, token))
      }
      return Effect.flatMap(
        restore(until(deadline(), awaitFree(entry))),
        (free) =>
          free ? attempt : Effect.fail(new LockWaitTimeout({ path: target, holder: "another apply in this process" }))
      )
    })
    return attempt
  })

/**
 * Takes the lock file of `target` for the scope, waiting (polling with backoff, interruptibly) while a live holder
 * has it. Taking it and registering its release happen together.
 */
const takeFile = (
  scope: Scope.Scope,
  target: string,
  token: string,
  staleAfterMs: number,
  deadline: () => number
): Effect.Effect<HeldLock, LockWaitTimeout | LockFileError> =>
  Effect.uninterruptibleMask((restore) => {
    const loop = (delay: number): Effect.Effect<HeldLock, LockWaitTimeout | LockFileError> =>
      Effect.flatMap(tryPromise(target, () => attemptFile(target, token, staleAfterMs)), (attempt) => {
        switch (attempt._tag) {
          case "Taken":
            return Effect.as(
              Scope.addFinalizer(scope, Effect.promise(() => releaseAll([attempt.taken]))),
              attempt.taken.held
            )
          case "Again":
            return loop(delay)
          case "Wait": {
            const jittered = Duration.millis(delay + Math.floor(Math.random() * delay))
            return Effect.flatMap(
              restore(until(deadline(), Effect.sleep(jittered))),
              (slept) =>
                slept ?
                  loop(Math.min(delay * 2, 100)) :
                  Effect.fail(new LockWaitTimeout({ path: target, holder: attempt.holder ?? "another writer" }))
            )
          }
        }
      })
    return loop(2)
  })

/**
 * Every lock file at once, without waiting: all taken (their release registered as one finalizer), or `undefined`
 * with none held (those taken are released at once). Uninterruptible: it never waits.
 */
const takeAllAtOnce = (
  scope: Scope.Scope,
  targets: ReadonlyArray<string>,
  tokens: ReadonlyArray<string>,
  staleAfterMs: number
): Effect.Effect<ReadonlyArray<HeldLock> | undefined> =>
  Effect.uninterruptible(Effect.flatMap(
    Effect.promise(() => Promise.allSettled(targets.map((target, i) => attemptFile(target, tokens[i]!, staleAfterMs)))),
    (results) => {
      const taken = results.flatMap((r) => r.status === "fulfilled" && r.value._tag === "Taken" ? [r.value.taken] : [])
      if (taken.length === targets.length) {
        return Effect.as(Scope.addFinalizer(scope, Effect.promise(() => releaseAll(taken))), taken.map((t) => t.held))
      }
      return Effect.as(Effect.promise(() => releaseAll(taken)), undefined)
    }
  ))

/**
 * Takes the locks of `targets` (real paths; duplicates once) for the scope: the in-process locks one by one in the
 * order of the paths, then the lock files, all at once when they are free, else one by one in that order (so two
 * applies cannot deadlock: only the ordered path waits). Fails with `LockWaitTimeout` when they are not all taken
 * within `options.timeout` (the locks taken so far are released with the scope), or `LockFileError` when a lock
 * file cannot be created. Interrupting the wait takes nothing more.
 *
 * @since 0.2.0
 * @category constructors
 */
export const lockFiles = (
  targets: ReadonlyArray<string>,
  options: LockOptions
): Effect.Effect<ReadonlyArray<HeldLock>, LockWaitTimeout | LockFileError, Scope.Scope> =>
  Effect.flatMap(Scope.Scope, (scope) =>
    Effect.suspend(() => {
      const sorted = [...new Set(targets)].sort()
      const tokens = sorted.map(newToken)
      const staleAfterMs = Duration.toMillis(options.staleAfter)
      // The deadline starts with the first wait: an apply that never waits never reads the clock.
      let deadline: number | undefined
      const deadlineOf = () => deadline ??= Date.now() + Duration.toMillis(options.timeout)
      return Effect.zipRight(
        Effect.flatMap(
          takeAllLocalAtOnce(scope, sorted, tokens),
          (all) =>
            all ?
              Effect.void :
              Effect.forEach(sorted, (target, i) => takeLocal(scope, target, tokens[i]!, deadlineOf), { discard: true })
        ),
        Effect.flatMap(takeAllAtOnce(scope, sorted, tokens, staleAfterMs), (all) =>
          all !== undefined ?
            Effect.succeed(all) :
            Effect.forEach(sorted, (target, i) => takeFile(scope, target, tokens[i]!, staleAfterMs, deadlineOf)))
      )
    }))
