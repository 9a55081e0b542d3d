/**
 * One winner per file across sessions (issue 10 §2), in one process, on a real temporary workspace: two sessions (two
 * `ResolveRuntime.layer` builds, two `FileEditPreview.layer` builds) preview conflicting edits of one file and apply
 * them at the same moment; the per-file lock makes check-and-write atomic, so exactly one wins and the other gets
 * the stale error and stays pending. Also the bounded wait (a typed error, still pending), interruption while
 * waiting, and the recovery of lock files left by a process that is gone, by this process, or too long ago.
 */
import { NodeContext, NodePath } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Cause, Context, Deferred, Effect, Exit, Fiber, Layer, Option } from "effect"
import { deepStrictEqual } from "node:assert/strict"
import * as ChildProcess from "node:child_process"
import * as NFS from "node:fs/promises"
import * as OS from "node:os"
import * as NPath from "node:path"
import { FileEditPreview } from "../../src/edit.js"
import { ResolveRuntime, ResolveTool, ToolChoiceQueue } from "../../src/index.js"
import * as FaultyFileSystem from "../support/FaultyFileSystem.js"

const tempDir = Effect.acquireRelease(
  Effect.promise(() => NFS.mkdtemp(NPath.join(OS.tmpdir(), "effect-resolve-locks-"))),
  (dir) => Effect.promise(() => NFS.rm(dir, { recursive: true, force: true }))
)

type Services = ResolveRuntime.Services | FileEditPreview.Workspace | import("@effect/platform").FileSystem.FileSystem

/** A session: its own runtime layer and workspace layer, built once for the scope. */
const session = (
  root: string,
  options: { readonly plan?: FaultyFileSystem.Plan; readonly lockTimeout?: number; readonly lockStaleAfter?: number } =
    {}
) =>
  Layer.build(Layer.mergeAll(
    ResolveRuntime.layer,
    options.plan === undefined ? NodeContext.layer : Layer.merge(FaultyFileSystem.layer(options.plan), NodePath.layer),
    FileEditPreview.layer({
      root,
      ...(options.lockTimeout === undefined ? {} : { lockTimeout: options.lockTimeout }),
      ...(options.lockStaleAfter === undefined ? {} : { lockStaleAfter: options.lockStaleAfter })
    })
  )) as Effect.Effect<
    Context.Context<Services | import("@effect/platform").Path.Path>,
    never,
    import("effect").Scope.Scope
  >

const edit = (path: string, oldText: string, newText: string) => ({ files: [{ path, edits: [{ oldText, newText }] }] })

/** One model turn that calls resolve. */
const turn = (action: "apply" | "discard") =>
  Effect.gen(function*() {
    const queue = yield* ToolChoiceQueue
    yield* queue.nextToolChoice
    const exit = yield* Effect.exit(ResolveTool.execute({ action, reason: `test ${action}` }))
    yield* queue.resolve
    return exit
  })

const pending = Effect.flatMap(ToolChoiceQueue, (queue) => queue.inspect)

const messageOf = (exit: Exit.Exit<unknown, { readonly message: string }>): string => {
  const failure = Exit.isFailure(exit) ? Cause.failureOption(exit.cause) : Option.none()
  return Option.isSome(failure) ? failure.value.message : Exit.isFailure(exit) ? Cause.pretty(exit.cause) : "success"
}

const read = (file: string) => Effect.promise(() => NFS.readFile(file, "utf8"))
const listing = (dir: string) => Effect.promise(() => NFS.readdir(dir).then((names) => names.sort()))

/** The pid of a process that has exited. */
const deadPid = Effect.promise(() =>
  new Promise<number>((resolve) => {
    const child = ChildProcess.spawn(process.execPath, ["-e", ""], { stdio: "ignore" })
    child.once("exit", () => resolve(child.pid!))
  })
)

const lockContent = (pid: number, token: string, host = OS.hostname()) =>
  `${JSON.stringify({ pid, host, since: new Date().toISOString(), token, by: "effect-resolve edit" })}\n`

describe("edit locks across sessions of one process", () => {
  it.live(
    "two sessions apply conflicting previews of one file at once: exactly one wins, every round",
    () =>
      Effect.scoped(Effect.gen(function*() {
        const root = yield* tempDir
        const file = NPath.join(root, "a.txt")
        const padding = "// padding line of the shared file\n".repeat(2_000)
        const wins = { a: 0, b: 0 }
        for (let round = 0; round < 30; round++) {
          yield* Effect.promise(() => NFS.writeFile(file, `value = base\n${padding}`))
          yield* Effect.scoped(Effect.gen(function*() {
            const a = yield* session(root)
            const b = yield* session(root)
            yield* Effect.provide(FileEditPreview.tool.execute(edit("a.txt", "base", `a${round}`)), a)
            yield* Effect.provide(FileEditPreview.tool.execute(edit("a.txt", "base", `b${round}`)), b)
            const [exitA, exitB] = yield* Effect.all(
              [Effect.provide(turn("apply"), a), Effect.provide(turn("apply"), b)],
              { concurrency: "unbounded" }
            )
            const label = `round ${round}: A ${messageOf(exitA)} / B ${messageOf(exitB)}`
            assert.strictEqual([exitA, exitB].filter(Exit.isSuccess).length, 1, label)
            const [winner, loser, loserSession] = Exit.isSuccess(exitA)
              ? ["a", exitB, b] as const
              : ["b", exitA, a] as const
            wins[winner]++
            assert.match(
              messageOf(loser),
              /^Preview is stale: a\.txt changed after the preview\. Nothing was written\./
            )
            assert.strictEqual(yield* read(file), `value = ${winner}${round}\n${padding}`, label)
            deepStrictEqual(yield* Effect.provide(pending, loserSession), ["pending-action:edit"], label)
            deepStrictEqual(yield* listing(root), ["a.txt"], `${label}: a lock or temporary file is left`)
            assert.isTrue(Exit.isSuccess(yield* Effect.provide(turn("discard"), loserSession)))
          }))
        }
        assert.strictEqual(wins.a + wins.b, 30)
      })),
    120_000
  )

  describe("while another session holds the lock (its apply blocked at its first rename)", () => {
    /** Session A's apply, blocked holding the lock of a.txt; session B previewed a conflicting edit. */
    const blocked = (options: { readonly lockTimeout: number }) =>
      Effect.gen(function*() {
        const root = yield* tempDir
        const file = NPath.join(root, "a.txt")
        yield* Effect.promise(() => NFS.writeFile(file, "value = base\n"))
        const plan = yield* FaultyFileSystem.makePlan
        const a = yield* session(root, { plan })
        const b = yield* session(root, { lockTimeout: options.lockTimeout })
        yield* Effect.provide(FileEditPreview.tool.execute(edit("a.txt", "base", "a")), a)
        yield* Effect.provide(FileEditPreview.tool.execute(edit("a.txt", "base", "b")), b)
        const reached = yield* Deferred.make<void>()
        const release = yield* Deferred.make<void>()
        yield* FaultyFileSystem.arm(plan, FaultyFileSystem.block("rename", 1, { reached, release }))
        const applyA = yield* Effect.fork(Effect.provide(turn("apply"), a))
        yield* Deferred.await(reached)
        return { root, file, a, b, applyA, release }
      })

    it.live("the lock file next to the target names this process; the waiter gets a typed error and stays pending", () =>
      Effect.scoped(Effect.gen(function*() {
        const { a, applyA, b, file, release, root } = yield* blocked({ lockTimeout: 300 })
        const names = yield* listing(root)
        assert.includeMembers(names, ["a.txt", ".a.txt.edit-lock"])
        const holder = JSON.parse(yield* read(NPath.join(root, ".a.txt.edit-lock")))
        assert.strictEqual(holder.pid, process.pid)
        assert.strictEqual(holder.host, OS.hostname())
        assert.match(holder.token, /^[0-9a-f]{16}$/)
        assert.isTrue(names.includes(`.a.txt.${holder.token}.edit-tmp`), names.join(", "))
        const started = Date.now()
        const exitB = yield* Effect.provide(turn("apply"), b)
        assert.isAtLeast(Date.now() - started, 250)
        const failure = Exit.isFailure(exitB) ? Cause.failureOption(exitB.cause) : Option.none()
        assert.isTrue(Option.isSome(failure), String(exitB))
        if (Option.isSome(failure)) {
          assert.strictEqual(failure.value._tag, "ApplyFailed")
          const cause = (failure.value as any).cause
          assert.instanceOf(cause, FileEditPreview.EditFileLocked)
          assert.strictEqual(cause.path, "a.txt")
          assert.include(failure.value.message, "a.txt is being written by another apply")
          assert.include(failure.value.message, "Nothing was written. The preview is still pending")
        }
        deepStrictEqual(yield* Effect.provide(pending, b), ["pending-action:edit"])
        assert.strictEqual(yield* read(file), "value = base\n")
        // A finishes; B's retry now finds a.txt changed: stale, nothing written.
        yield* Deferred.succeed(release, undefined)
        assert.isTrue(Exit.isSuccess(yield* Fiber.join(applyA)))
        assert.strictEqual(yield* read(file), "value = a\n")
        deepStrictEqual(yield* listing(root), ["a.txt"])
        assert.match(messageOf(yield* Effect.provide(turn("apply"), b)), /^Preview is stale: a\.txt changed/)
        assert.strictEqual(yield* read(file), "value = a\n")
        void a
      })))

    it.live("interrupting an apply that waits for the lock leaves it pending and writes nothing", () =>
      Effect.scoped(Effect.gen(function*() {
        const { applyA, b, file, release, root } = yield* blocked({ lockTimeout: 60_000 })
        const queue = yield* Effect.provide(ToolChoiceQueue, b)
        yield* queue.nextToolChoice
        const waiting = yield* Effect.fork(
          Effect.provide(ResolveTool.execute({ action: "apply", reason: "waits" }), b)
        )
        yield* Effect.sleep("200 millis")
        assert.isTrue(Option.isNone(yield* Fiber.poll(waiting)), "the apply did not wait for the lock")
        const exit = yield* Fiber.interrupt(waiting)
        assert.isTrue(Exit.isInterrupted(exit), String(exit))
        yield* queue.resolve
        deepStrictEqual(yield* queue.inspect, ["pending-action:edit"])
        assert.strictEqual(yield* read(file), "value = base\n")
        yield* Deferred.succeed(release, undefined)
        assert.isTrue(Exit.isSuccess(yield* Fiber.join(applyA)))
        assert.strictEqual(yield* read(file), "value = a\n")
        deepStrictEqual(yield* listing(root), ["a.txt"])
      })))
  })

  describe("a lock file left behind", () => {
    const withLock = (content: string, options: { readonly ageMs?: number; readonly lockTimeout?: number } = {}) =>
      Effect.gen(function*() {
        const root = yield* tempDir
        const file = NPath.join(root, "a.txt")
        const lock = NPath.join(root, ".a.txt.edit-lock")
        yield* Effect.promise(async () => {
          await NFS.writeFile(file, "value = base\n")
          await NFS.writeFile(lock, content)
          if (options.ageMs !== undefined) {
            const then = new Date(Date.now() - options.ageMs)
            await NFS.utimes(lock, then, then)
          }
        })
        const s = yield* session(root, { lockTimeout: options.lockTimeout ?? 2_000, lockStaleAfter: 30_000 })
        yield* Effect.provide(FileEditPreview.tool.execute(edit("a.txt", "base", "new")), s)
        const exit = yield* Effect.provide(turn("apply"), s)
        return { root, file, lock, exit, session: s }
      })

    it.live("by a process that is gone: taken over, with the temporary file it left", () =>
      Effect.scoped(Effect.gen(function*() {
        const pid = yield* deadPid
        const token = "0123456789abcdef"
        const root = yield* tempDir
        yield* Effect.promise(() => NFS.writeFile(NPath.join(root, `.a.txt.${token}.edit-tmp`), "half written"))
        const { exit, file } = yield* Effect.gen(function*() {
          const file = NPath.join(root, "a.txt")
          yield* Effect.promise(async () => {
            await NFS.writeFile(file, "value = base\n")
            await NFS.writeFile(NPath.join(root, ".a.txt.edit-lock"), lockContent(pid, token))
          })
          const s = yield* session(root, { lockTimeout: 2_000 })
          yield* Effect.provide(FileEditPreview.tool.execute(edit("a.txt", "base", "new")), s)
          return { file, exit: yield* Effect.provide(turn("apply"), s) }
        })
        assert.isTrue(Exit.isSuccess(exit), messageOf(exit))
        assert.strictEqual(yield* read(file), "value = new\n")
        deepStrictEqual(yield* listing(root), ["a.txt"])
      })))

    it.live("by this process, under a token it does not hold: taken over", () =>
      Effect.scoped(Effect.gen(function*() {
        const { exit, file, root } = yield* withLock(lockContent(process.pid, "feedfacefeedface"))
        assert.isTrue(Exit.isSuccess(exit), messageOf(exit))
        assert.strictEqual(yield* read(file), "value = new\n")
        deepStrictEqual(yield* listing(root), ["a.txt"])
      })))

    it.live("by a live process, fresh: the apply waits, then fails with a typed error naming it, still pending", () =>
      Effect.scoped(Effect.gen(function*() {
        const { exit, file, lock, session: s } = yield* withLock(lockContent(process.ppid, "0000000000000001"), {
          lockTimeout: 300
        })
        assert.include(messageOf(exit), `a.txt is being written by another apply (process ${process.ppid} on `)
        assert.include(messageOf(exit), "The preview is still pending")
        deepStrictEqual(yield* Effect.provide(pending, s), ["pending-action:edit"])
        assert.strictEqual(yield* read(file), "value = base\n")
        assert.strictEqual(JSON.parse(yield* read(lock)).pid, process.ppid)
      })))

    it.live("by a live process, but not refreshed for longer than lockStaleAfter: taken over", () =>
      Effect.scoped(Effect.gen(function*() {
        const { exit, file, root } = yield* withLock(lockContent(process.ppid, "0000000000000002"), {
          ageMs: 60_000
        })
        assert.isTrue(Exit.isSuccess(exit), messageOf(exit))
        assert.strictEqual(yield* read(file), "value = new\n")
        deepStrictEqual(yield* listing(root), ["a.txt"])
      })))

    it.live("unreadable (empty) and fresh: waited for; empty and old: taken over", () =>
      Effect.scoped(Effect.gen(function*() {
        const fresh = yield* withLock("", { lockTimeout: 300 })
        assert.include(messageOf(fresh.exit), "is being written by another apply")
        assert.strictEqual(yield* read(fresh.file), "value = base\n")
        const old = yield* withLock("", { ageMs: 60_000 })
        assert.isTrue(Exit.isSuccess(old.exit), messageOf(old.exit))
        assert.strictEqual(yield* read(old.file), "value = new\n")
      })))

    it.live("empty for a few seconds (its writer was killed between creating and writing it): taken over at once", () =>
      Effect.scoped(Effect.gen(function*() {
        // Far younger than lockStaleAfter (30 s), and the wait (2 s) is shorter than that too: only the missing line
        // tells that the writer died.
        const { exit, file } = yield* withLock("", { ageMs: 5_000, lockTimeout: 2_000 })
        assert.isTrue(Exit.isSuccess(exit), messageOf(exit))
        assert.strictEqual(yield* read(file), "value = new\n")
      })))
  })
})
