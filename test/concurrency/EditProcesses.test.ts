/**
 * One winner per file across processes (issue 10 §2), with a second real Node process (`test/support/edit-worker.ts`
 * through `node --import tsx`):
 * - this process and the worker preview conflicting edits of one file and apply them at the same wall-clock moment,
 *   many rounds: exactly one wins, the file is the winner's result, the loser got the stale error and is pending;
 * - a worker killed with SIGKILL in the middle of an apply (holding its lock, its temporary file written) leaves a
 *   lock file that the next apply takes over, removing the temporary file too;
 * - several workers take over one stale lock file at the same moment, many rounds: they still hold it one at a time.
 */
import { NodeContext } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Exit, Layer, Option } from "effect"
import { deepStrictEqual } from "node:assert/strict"
import * as ChildProcess from "node:child_process"
import * as NFS from "node:fs/promises"
import * as OS from "node:os"
import * as NPath from "node:path"
import { FileEditPreview } from "../../src/edit.js"
import { ResolveRuntime, ResolveTool, ToolChoiceQueue } from "../../src/index.js"
import { worker } from "../support/EditWorker.js"

const tempDir = Effect.acquireRelease(
  Effect.promise(() => NFS.mkdtemp(NPath.join(OS.tmpdir(), "effect-resolve-processes-"))),
  (dir) => Effect.promise(() => NFS.rm(dir, { recursive: true, force: true }))
)

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

const sessionLayer = (root: string) =>
  Layer.mergeAll(ResolveRuntime.layer, NodeContext.layer, FileEditPreview.layer({ root, maxBytes: 64 * 1024 * 1024 }))

/** Sleeps until the wall-clock time `at`: a coarse sleep, then a short spin. */
const until = (at: number) =>
  Effect.promise(async () => {
    const coarse = at - Date.now() - 3
    if (coarse > 0) await new Promise((resolve) => setTimeout(resolve, coarse))
    while (Date.now() < at) {
      // spin
    }
  })

const listing = (dir: string) => Effect.promise(() => NFS.readdir(dir).then((names) => names.sort()))

const deadPid = Effect.promise(() =>
  new Promise<number>((resolve) => {
    const child = ChildProcess.spawn(process.execPath, ["-e", ""], { stdio: "ignore" })
    child.once("exit", () => resolve(child.pid!))
  })
)

describe("edit locks across processes", () => {
  it.live(
    "this process and a second one apply conflicting previews at the same moment: exactly one wins",
    () =>
      Effect.scoped(Effect.gen(function*() {
        const root = yield* tempDir
        const file = NPath.join(root, "shared.txt")
        const other = yield* worker
        // A large file makes each apply's check-and-write last milliseconds, so the two overlap.
        const padding = "// a line of padding, so that reading and writing the file take a while\n".repeat(20_000)
        const rounds = 12
        const wins = { here: 0, there: 0 }
        for (let round = 0; round < rounds; round++) {
          yield* Effect.promise(() => NFS.writeFile(file, `value = base\n${padding}`))
          const previewed = yield* Effect.promise(() =>
            other.send({ op: "preview", root, path: "shared.txt", oldText: "base", newText: `there${round}` })
          )
          assert.isTrue(previewed.ok, previewed.error)
          const outcome = yield* Effect.gen(function*() {
            yield* FileEditPreview.tool.execute(edit("shared.txt", "base", `here${round}`))
            const at = Date.now() + 300
            const answer = other.post({ op: "apply", at })
            yield* until(at)
            const exit = yield* turn("apply")
            const there = yield* Effect.promise(() => answer)
            const queue = yield* ToolChoiceQueue
            const pendingHere = (yield* queue.inspect).length > 0
            if (pendingHere) yield* turn("discard")
            return { exit, there, pendingHere }
          }).pipe(Effect.provide(sessionLayer(root)))
          const label = `round ${round}: here ${messageOf(outcome.exit)} / there ${JSON.stringify(outcome.there)}`
          const hereWon = Exit.isSuccess(outcome.exit)
          assert.notStrictEqual(hereWon, outcome.there.applied, `${label}: not exactly one winner`)
          const winner = hereWon ? "here" : "there"
          wins[winner]++
          const loserMessage = hereWon ? outcome.there.message : messageOf(outcome.exit)
          assert.match(loserMessage, /^Preview is stale: shared\.txt changed after the preview\. Nothing was written\./)
          assert.strictEqual(
            hereWon ? outcome.there.pendingAfter : outcome.pendingHere,
            true,
            `${label}: loser not pending`
          )
          assert.strictEqual(hereWon ? outcome.pendingHere : outcome.there.pendingAfter, false, label)
          const content = yield* Effect.promise(() => NFS.readFile(file, "utf8"))
          assert.strictEqual(content, `value = ${winner}${round}\n${padding}`, label)
          deepStrictEqual(yield* listing(root), ["shared.txt"], `${label}: a lock or temporary file is left`)
        }
        assert.strictEqual(wins.here + wins.there, rounds)
      })),
    180_000
  )

  it.live(
    "a lock file left by a process killed with SIGKILL in the middle of an apply is taken over",
    () =>
      Effect.scoped(Effect.gen(function*() {
        const root = yield* tempDir
        const file = NPath.join(root, "a.txt")
        yield* Effect.promise(() => NFS.writeFile(file, "value = base\n"))
        const other = yield* worker
        const held = yield* Effect.promise(() =>
          other.send({ op: "hold", root, path: "a.txt", oldText: "base", newText: "killed" })
        )
        assert.isTrue(held.blocked, JSON.stringify(held))
        const lock = JSON.parse(yield* Effect.promise(() => NFS.readFile(NPath.join(root, ".a.txt.edit-lock"), "utf8")))
        assert.strictEqual(lock.pid, other.pid)
        const temp = `.a.txt.${lock.token}.edit-tmp`
        assert.includeMembers(yield* listing(root), [".a.txt.edit-lock", temp, "a.txt"])
        yield* Effect.promise(() => other.kill("SIGKILL"))
        yield* Effect.gen(function*() {
          yield* FileEditPreview.tool.execute(edit("a.txt", "base", "after"))
          const exit = yield* turn("apply")
          assert.isTrue(Exit.isSuccess(exit), messageOf(exit))
        }).pipe(Effect.provide(sessionLayer(root)))
        assert.strictEqual(yield* Effect.promise(() => NFS.readFile(file, "utf8")), "value = after\n")
        deepStrictEqual(yield* listing(root), ["a.txt"])
      })),
    60_000
  )

  it.live(
    "three processes take over one stale lock file at the same moment: still one holder at a time",
    () =>
      Effect.scoped(Effect.gen(function*() {
        const root = yield* tempDir
        const target = NPath.join(root, "a.txt")
        const shared = NPath.join(root, "critical-section")
        const workers = yield* Effect.all([worker, worker, worker], { concurrency: "unbounded" })
        const rounds = 8
        for (let round = 0; round < rounds; round++) {
          const pid = yield* deadPid
          yield* Effect.promise(async () => {
            await NFS.writeFile(target, "a\n")
            await NFS.writeFile(shared, "free")
            await NFS.writeFile(
              NPath.join(root, ".a.txt.edit-lock"),
              JSON.stringify({ pid, host: OS.hostname(), since: new Date().toISOString(), token: "0123456789abcdef" })
            )
          })
          const at = Date.now() + 300
          const answers = yield* Effect.promise(() =>
            Promise.all(
              workers.map((w) => w.send({ op: "critical", target, shared, at, holdMs: 15, timeoutMs: 20_000 }))
            )
          )
          for (const answer of answers) {
            assert.isTrue(answer.ok, `round ${round}: ${JSON.stringify(answers)}`)
            assert.isUndefined(answer.violation, `round ${round}: two holders at once: ${JSON.stringify(answers)}`)
          }
          assert.strictEqual(yield* Effect.promise(() => NFS.readFile(shared, "utf8")), "free")
          deepStrictEqual(yield* listing(root), ["a.txt", "critical-section"], `round ${round}`)
        }
      })),
    120_000
  )
})
