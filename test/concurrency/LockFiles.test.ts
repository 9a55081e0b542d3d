/**
 * The lock files of the `edit` tool (`.<name>.edit-lock`, `src/producers/FileLock.ts`) against who else is on the
 * machine:
 *
 * - Modes: a lock file, its recovery file and the temporary file of the write are never more readable than their
 *   target (a `0600` file keeps `0600` neighbours under umask 022; a file that does not exist yet gets `0600`).
 * - Another user: a lock file this user may not read is another user's held lock: waited for (the bounded wait fails
 *   with `EditFileLocked` naming "another user"), never an error about reading it, and taken over only once stale by
 *   age. As root (CI), the contender is a second process run as the unprivileged `nobody` (root reads every file); as
 *   another user, the lock file is made mode 000.
 * - Worker threads share their process's pid: a lock file records the thread too, so one held by another live thread
 *   of this process is waited for, never taken as this thread's leftover; two threads contending for one file hold it
 *   one at a time.
 */
import { NodePath } from "@effect/platform-node"
import { assert, describe, it, layer } from "@effect/vitest"
import { Cause, Context, Deferred, Duration, Effect, Exit, Fiber, Layer, Option, Scope } from "effect"
import { deepStrictEqual } from "node:assert/strict"
import * as ChildProcess from "node:child_process"
import * as FS from "node:fs"
import FSPromises from "node:fs/promises"
import * as NFS from "node:fs/promises"
import { syncBuiltinESMExports } from "node:module"
import * as OS from "node:os"
import * as NPath from "node:path"
import * as readline from "node:readline"
import { fileURLToPath } from "node:url"
import { FileEditPreview } from "../../src/edit.js"
import { ResolveRuntime, ResolveTool, ToolChoiceQueue } from "../../src/index.js"
import * as FileLock from "../../src/producers/FileLock.js"
import * as FaultyFileSystem from "../support/FaultyFileSystem.js"
import { type LockThread, lockThread } from "../support/LockThread.js"

const tempDir = Effect.acquireRelease(
  Effect.promise(() => NFS.mkdtemp(NPath.join(OS.tmpdir(), "effect-resolve-lockfiles-"))),
  (dir) => Effect.promise(() => NFS.rm(dir, { recursive: true, force: true }))
)

/** The umask the issue describes (022) for the scope; the previous one is restored. */
const umask022 = Effect.acquireRelease(
  Effect.sync(() => process.umask(0o022)),
  (previous) => Effect.sync(() => process.umask(previous))
)

const modeOf = (file: string) => Effect.promise(() => NFS.stat(file).then((info) => info.mode & 0o777))
const octal = (mode: number) => `0${mode.toString(8).padStart(3, "0")}`
const read = (file: string) => Effect.promise(() => NFS.readFile(file, "utf8"))
const listing = (dir: string) => Effect.promise(() => NFS.readdir(dir).then((names) => names.sort()))

const lockOptions = (timeoutMs: number): FileLock.LockOptions => ({
  timeout: Duration.millis(timeoutMs),
  staleAfter: Duration.seconds(30)
})

const edit = (path: string, oldText: string, newText: string) => ({ files: [{ path, edits: [{ oldText, newText }] }] })

const turn = (action: "apply" | "discard") =>
  Effect.gen(function*() {
    const queue = yield* ToolChoiceQueue
    yield* queue.nextToolChoice
    const exit = yield* Effect.exit(ResolveTool.execute({ action, reason: `test ${action}` }))
    yield* queue.resolve
    return exit
  })

const messageOf = (exit: Exit.Exit<unknown, { readonly message: string }>): string => {
  const failure = Exit.isFailure(exit) ? Cause.failureOption(exit.cause) : Option.none()
  return Option.isSome(failure) ? failure.value.message : Exit.isFailure(exit) ? Cause.pretty(exit.cause) : "success"
}

/** The failure of `exit`, which must have failed. */
const failureOf = <E>(exit: Exit.Exit<unknown, E>): E => {
  const failure = Exit.isFailure(exit) ? Cause.failureOption(exit.cause) : Option.none()
  if (Option.isNone(failure)) throw new Error(`expected a failure, got ${String(exit)}`)
  return failure.value
}

/** The pid of a process that has exited. */
const deadPid = Effect.promise(() =>
  new Promise<number>((resolve) => {
    const child = ChildProcess.spawn(process.execPath, ["-e", ""], { stdio: "ignore" })
    child.once("exit", () => resolve(child.pid!))
  })
)

const lockLine = (pid: number, token: string) =>
  `${JSON.stringify({ pid, host: OS.hostname(), since: new Date().toISOString(), token, by: "effect-resolve edit" })}\n`

/** The lock of `target` (a real path), held by this thread until the returned effect runs (or the scope closes). */
const holdLock = (target: string) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    const release = Scope.close(scope, Exit.void)
    yield* Effect.addFinalizer(() => release)
    yield* Effect.provideService(FileLock.lockFiles([target], lockOptions(1_000)), Scope.Scope, scope)
    return release
  })

describe("lock file modes: never more readable than the target (umask 022)", () => {
  /** A session whose file system can block the apply at its first rename: the lock held, the temporary file made. */
  const blockedApply = (root: string) =>
    Effect.gen(function*() {
      const plan = yield* FaultyFileSystem.makePlan
      const session = yield* Layer.build(Layer.mergeAll(
        ResolveRuntime.layer,
        Layer.merge(FaultyFileSystem.layer(plan), NodePath.layer),
        FileEditPreview.layer({ root })
      ))
      yield* Effect.provide(FileEditPreview.tool.execute(edit("a.txt", "base", "new")), session)
      const reached = yield* Deferred.make<void>()
      const release = yield* Deferred.make<void>()
      // A failed assertion must not leave the apply blocked (its write phase cannot be interrupted).
      yield* Effect.addFinalizer(() => Deferred.succeed(release, undefined))
      yield* FaultyFileSystem.arm(plan, FaultyFileSystem.block("rename", 1, { reached, release }))
      const apply = yield* Effect.fork(Effect.provide(turn("apply"), session))
      yield* Deferred.await(reached)
      return { apply, release }
    })

  for (const mode of [0o600, 0o640, 0o644]) {
    it.live(`a ${octal(mode)} target: its lock file and temporary file, while the apply holds the lock`, () =>
      Effect.scoped(Effect.gen(function*() {
        yield* umask022
        const root = yield* tempDir
        const file = NPath.join(root, "a.txt")
        yield* Effect.promise(async () => {
          await NFS.writeFile(file, "value = base\n")
          await NFS.chmod(file, mode)
        })
        const { apply, release } = yield* blockedApply(root)
        const names = yield* listing(root)
        const temp = names.find((name) => name.endsWith(".edit-tmp"))
        assert.isDefined(temp, names.join(", "))
        assert.strictEqual(octal(yield* modeOf(NPath.join(root, ".a.txt.edit-lock"))), octal(mode))
        assert.strictEqual(octal(yield* modeOf(NPath.join(root, temp!))), octal(mode))
        yield* Deferred.succeed(release, undefined)
        const exit = yield* Fiber.join(apply)
        assert.isTrue(Exit.isSuccess(exit), messageOf(exit))
        assert.strictEqual(yield* read(file), "value = new\n")
        assert.strictEqual(octal(yield* modeOf(file)), octal(mode))
        deepStrictEqual(yield* listing(root), ["a.txt"])
      })))
  }

  it.live("a target that does not exist yet: a 0600 lock file", () =>
    Effect.scoped(Effect.gen(function*() {
      yield* umask022
      const root = yield* tempDir
      const target = NPath.join(root, "new.txt")
      const release = yield* holdLock(target)
      deepStrictEqual(yield* listing(root), [".new.txt.edit-lock"])
      assert.strictEqual(octal(yield* modeOf(FileLock.lockFileOf(target))), "0600")
      yield* release
      deepStrictEqual(yield* listing(root), [])
    })))

  /**
   * Pauses the taking over of the lock file of `target` while its recovery file exists: `open` (of `node:fs/promises`,
   * which the lock module uses) waits before the recoverer re-reads the stale lock file, until `resume`.
   */
  const pauseRecovery = (target: string) =>
    Effect.acquireRelease(
      Effect.gen(function*() {
        const lockFile = FileLock.lockFileOf(target)
        const recoveryFile = `${lockFile}-recovery`
        const paused = yield* Deferred.make<void>()
        const resume = yield* Deferred.make<void>()
        const open = FSPromises.open
        FSPromises.open = (async (...args: Parameters<typeof open>) => {
          if (args[0] === lockFile && FS.existsSync(recoveryFile)) {
            await Effect.runPromise(Effect.zipRight(Deferred.succeed(paused, undefined), Deferred.await(resume)))
          }
          return open(...args)
        }) as typeof open
        syncBuiltinESMExports()
        return { open, recoveryFile, paused, resume }
      }),
      ({ open, resume }) =>
        Effect.zipRight(
          Effect.sync(() => {
            FSPromises.open = open
            syncBuiltinESMExports()
          }),
          // A failed assertion must not leave the recoverer paused.
          Deferred.succeed(resume, undefined)
        )
    )

  for (const mode of [0o600, 0o644, undefined]) {
    it.live(`the recovery file of a ${mode === undefined ? "missing" : octal(mode)} target`, () =>
      Effect.scoped(Effect.gen(function*() {
        yield* umask022
        const root = yield* tempDir
        const target = NPath.join(root, "a.txt")
        const lockFile = FileLock.lockFileOf(target)
        const pid = yield* deadPid
        yield* Effect.promise(async () => {
          if (mode !== undefined) {
            await NFS.writeFile(target, "a\n")
            await NFS.chmod(target, mode)
          }
          await NFS.writeFile(lockFile, lockLine(pid, "0123456789abcdef"))
        })
        const { paused, recoveryFile, resume } = yield* pauseRecovery(target)
        const take = yield* Effect.fork(Effect.scoped(Effect.zipRight(
          FileLock.lockFiles([target], lockOptions(5_000)),
          Effect.promise(() => NFS.readFile(lockFile, "utf8"))
        )))
        yield* Effect.timeoutFail(Deferred.await(paused), {
          duration: "10 seconds",
          onTimeout: () => new Error("the lock file was not taken over under a recovery file")
        })
        assert.strictEqual(octal(yield* modeOf(recoveryFile)), mode === 0o644 ? "0644" : "0600")
        yield* Deferred.succeed(resume, undefined)
        const taken = JSON.parse(yield* Fiber.join(take))
        assert.strictEqual(taken.pid, process.pid)
        deepStrictEqual(yield* listing(root), mode === undefined ? [] : ["a.txt"])
      })))
  }
})

describe("another user's lock file: a held lock, waited for", () => {
  const isRoot = process.getuid?.() === 0

  /** As root: the unprivileged `nobody`, whom the contender runs as (root reads every file, `nobody` does not). */
  const nobody = Effect.sync(() => {
    const line = FS.readFileSync("/etc/passwd", "utf8").split("\n").find((entry) => entry.startsWith("nobody:"))
    const [, , uid, gid] = line?.split(":") ?? []
    if (uid === undefined || gid === undefined) {
      throw new Error("running as root, this test needs the unprivileged user nobody (in /etc/passwd)")
    }
    return { uid: Number(uid), gid: Number(gid) }
  })

  const script = fileURLToPath(new URL("../support/lock-contender.ts", import.meta.url))
  const projectRoot = fileURLToPath(new URL("../..", import.meta.url))

  interface Contender {
    readonly apply: (command: Record<string, unknown>) => Effect.Effect<any>
  }

  /** `lock-contender.ts` in a second process, run as `user` (this user when undefined); killed with the scope. */
  const contender = (user: { readonly uid: number; readonly gid: number } | undefined) =>
    Effect.acquireRelease(
      Effect.promise(() =>
        new Promise<{ readonly child: ChildProcess.ChildProcess; readonly contender: Contender }>((resolve, reject) => {
          const child = ChildProcess.spawn(process.execPath, ["--import", "tsx", script], {
            cwd: projectRoot,
            stdio: ["pipe", "pipe", "inherit"],
            ...user
          })
          const waiting: Array<(value: any) => void> = []
          child.once("error", reject)
          child.once("exit", (code, signal) => {
            const error = `the contender${user === undefined ? "" : ` (uid ${user.uid})`} exited (${code ?? signal})` +
              (user === undefined ? "" : `: that user must be able to read ${projectRoot} and its node_modules`)
            reject(new Error(error))
            for (const answer of waiting.splice(0)) answer({ error })
          })
          readline.createInterface({ input: child.stdout! }).on("line", (line) => {
            let value: any
            try {
              value = JSON.parse(line)
            } catch {
              return // not an answer (a stray log line)
            }
            if (value.ready === true) {
              return resolve({
                child,
                contender: {
                  apply: (command) =>
                    Effect.promise(() =>
                      new Promise<any>((answer) => {
                        waiting.push(answer)
                        child.stdin!.write(`${JSON.stringify({ op: "apply", ...command })}\n`)
                      })
                    )
                }
              })
            }
            waiting.shift()?.(value)
          })
        })
      ),
      ({ child }) => Effect.sync(() => child.kill("SIGKILL"))
    ).pipe(Effect.map(({ contender }) => contender))

  it.live(
    isRoot ?
      "as root: nobody waits for root's lock of nobody's 0600 file, and takes over an unreadable one only when old" :
      "a lock file mode 000 is waited for, and taken over only when old",
    () =>
      Effect.scoped(Effect.gen(function*() {
        yield* umask022
        const user = isRoot ? yield* nobody : undefined
        const root = yield* tempDir
        const file = NPath.join(root, "a.txt")
        const lockFile = FileLock.lockFileOf(file)
        yield* Effect.promise(async () => {
          await NFS.writeFile(file, "value = base\n", { mode: 0o600 })
          // The contender's file, in a directory it may write to (to take over a lock file, it removes it).
          if (user !== undefined) {
            await NFS.chown(root, user.uid, user.gid)
            await NFS.chown(file, user.uid, user.gid)
          }
        })
        /** Unreadable by the contender: as root, by its mode (0600, root's); else made 000. */
        const hideLockFile = Effect.promise(async () => {
          if (user === undefined) await NFS.chmod(lockFile, 0o000)
        })
        const other = yield* contender(user)
        const apply = (oldText: string, newText: string) =>
          other.apply({ root, path: "a.txt", oldText, newText, lockTimeoutMs: 300, lockStaleAfterMs: 30_000 })
        const waited = (answer: any, label: string) => {
          assert.isFalse(answer.applied, `${label}: ${JSON.stringify(answer)}`)
          assert.strictEqual(answer.tag, "ApplyFailed", `${label}: ${JSON.stringify(answer)}`)
          assert.strictEqual(answer.causeTag, "EditFileLocked", `${label}: ${JSON.stringify(answer)}`)
          assert.include(
            answer.message,
            "a.txt is being written by another apply (another user, whose lock file this user may not read); waited",
            label
          )
          assert.isTrue(answer.pendingAfter, label)
        }

        // A live holder: this process, holding the lock of the contender's 0600 file.
        const release = yield* holdLock(yield* Effect.promise(() => NFS.realpath(file)))
        const line = yield* read(lockFile)
        assert.strictEqual(JSON.parse(line).pid, process.pid)
        yield* hideLockFile
        assert.strictEqual(octal(yield* modeOf(lockFile)), isRoot ? "0600" : "0000")
        waited(yield* apply("base", "contender"), "held")
        assert.strictEqual(yield* read(file), "value = base\n")
        if (!isRoot) yield* Effect.promise(() => NFS.chmod(lockFile, 0o600))
        assert.strictEqual(yield* read(lockFile), line, "the held lock file was taken over")
        yield* release
        const after = yield* apply("base", "contender")
        assert.isTrue(after.applied, JSON.stringify(after))
        assert.strictEqual(yield* read(file), "value = contender\n")

        // A lock file left by a process that is gone: unreadable, the contender cannot know; only age tells.
        const pid = yield* deadPid
        yield* Effect.promise(() => NFS.writeFile(lockFile, lockLine(pid, "0123456789abcdef"), { mode: 0o600 }))
        yield* hideLockFile
        waited(yield* apply("contender", "again"), "fresh, left")
        assert.strictEqual(yield* read(file), "value = contender\n")
        yield* Effect.promise(() => {
          const then = new Date(Date.now() - 60_000)
          return NFS.utimes(lockFile, then, then)
        })
        const old = yield* apply("contender", "again")
        assert.isTrue(old.applied, JSON.stringify(old))
        assert.strictEqual(yield* read(file), "value = again\n")
        deepStrictEqual(yield* listing(root), ["a.txt"])
      })),
    30_000
  )
})

/** Two worker threads of this process, started once for the tests below (starting one takes a second or two). */
class Threads extends Context.Tag("test/LockFiles/Threads")<Threads, readonly [LockThread, LockThread]>() {}

const threadsLayer = Layer.scoped(Threads, Effect.all([lockThread, lockThread], { concurrency: "unbounded" }))

layer(threadsLayer, { excludeTestServices: true, timeout: "60 seconds" })(
  "worker threads of one process (they share its pid)",
  (it) => {
    it.scoped("a lock file held by another live thread is waited for, never taken as this thread's leftover", () =>
      Effect.scoped(Effect.gen(function*() {
        const root = yield* tempDir
        const target = NPath.join(root, "a.txt")
        const lockFile = FileLock.lockFileOf(target)
        yield* Effect.promise(() => NFS.writeFile(target, "a\n"))
        const [one, two] = yield* Threads
        assert.notStrictEqual(one.threadId, two.threadId)
        const here = `process ${process.pid} on ${OS.hostname()} since `

        // This thread holds it: a worker thread waits, then fails naming this thread's process.
        const release = yield* holdLock(target)
        const line = yield* read(lockFile)
        assert.strictEqual(JSON.parse(line).pid, process.pid)
        const tried = yield* Effect.promise(() => one.send({ op: "try", target, timeoutMs: 300 }))
        assert.isFalse(tried.taken, JSON.stringify(tried))
        assert.strictEqual(tried.tag, "LockWaitTimeout", JSON.stringify(tried))
        assert.isTrue(tried.holder.startsWith(here), tried.holder)
        assert.strictEqual(yield* read(lockFile), line, "the lock file of this thread was taken over")
        yield* release
        deepStrictEqual(yield* listing(root), ["a.txt"])

        // A worker thread holds it: its lock file names its thread; this thread and the other worker wait.
        const held = yield* Effect.promise(() => one.send({ op: "hold", target }))
        assert.isTrue(held.held, JSON.stringify(held))
        const theirs = yield* read(lockFile)
        const holder = JSON.parse(theirs)
        assert.strictEqual(holder.pid, process.pid)
        assert.strictEqual(holder.threadId, one.threadId)
        const mine = yield* Effect.exit(Effect.scoped(FileLock.lockFiles([target], lockOptions(300))))
        const error = failureOf(mine)
        assert.instanceOf(error, FileLock.LockWaitTimeout)
        assert.include(error.holder, `process ${process.pid} (worker thread ${one.threadId}) on ${OS.hostname()}`)
        assert.include(error.message, `is locked by process ${process.pid} (worker thread ${one.threadId}) on `)
        assert.include(error.message, "try again in a moment")
        const other = yield* Effect.promise(() => two.send({ op: "try", target, timeoutMs: 300 }))
        assert.isFalse(other.taken, JSON.stringify(other))
        assert.include(other.holder, `(worker thread ${one.threadId})`)
        assert.strictEqual(yield* read(lockFile), theirs, "the lock file of a worker thread was taken over")

        // Released, it is free for the others.
        yield* Effect.promise(() => one.send({ op: "release" }))
        deepStrictEqual(yield* listing(root), ["a.txt"])
        const after = yield* Effect.promise(() => two.send({ op: "try", target, timeoutMs: 300 }))
        assert.isTrue(after.taken, JSON.stringify(after))
        deepStrictEqual(yield* listing(root), ["a.txt"])
      })))

    it.scoped("two threads contend for one file: exactly one holds it at a time, every round", () =>
      Effect.scoped(Effect.gen(function*() {
        const root = yield* tempDir
        const target = NPath.join(root, "a.txt")
        const shared = NPath.join(root, "critical-section")
        yield* Effect.promise(async () => {
          await NFS.writeFile(target, "a\n")
          await NFS.writeFile(shared, "free")
        })
        const threads = yield* Threads
        const at = Date.now() + 200
        const rounds = 40
        const answers = yield* Effect.promise(() =>
          Promise.all(
            threads.map((thread) =>
              thread.send({ op: "critical", target, shared, at, rounds, holdMs: 2, timeoutMs: 10_000 })
            )
          )
        )
        for (const answer of answers) {
          assert.isTrue(answer.ok, JSON.stringify(answers))
          deepStrictEqual(answer.violations, [], `two holders at once: ${JSON.stringify(answers)}`)
          assert.strictEqual(answer.rounds, rounds)
        }
        assert.strictEqual(yield* read(shared), "free")
        deepStrictEqual(yield* listing(root), ["a.txt", "critical-section"])
      })))
  }
)
