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
 */
import { NodePath } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Cause, Deferred, Duration, Effect, Exit, Fiber, Layer, Option, Scope } from "effect"
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
            const error = `the contender exited (${code ?? signal})`
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
