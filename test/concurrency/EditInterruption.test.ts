/**
 * Interruption of the `edit` producer's apply (issue 5 §2), on a real temporary workspace:
 * - at every yield point, looping over the points instead of sampling them: a supervisor counts the operations of
 *   the resolve fiber and interrupts it at operation k, for k = 1, 2, ... until a run completes before k (the
 *   technique of `Interruption.test.ts`);
 * - while a file operation is blocked (FaultyFileSystem `block`), in the check phase and in the write phase, with
 *   the blocked operation then succeeding or failing.
 * After each run the action is either applied once with every file fully written (and no temporary file left), or
 * still pending with every file untouched — and the next forced turn then applies it exactly once.
 */
import { NodePath } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Layer, Option, Ref } from "effect"
import { deepStrictEqual } from "node:assert/strict"
import * as NFS from "node:fs/promises"
import * as OS from "node:os"
import * as NPath from "node:path"
import { FileEditPreview } from "../../src/edit.js"
import { ResolveRuntime, ResolveTool, ToolChoiceQueue } from "../../src/index.js"
import * as FaultyFileSystem from "../support/FaultyFileSystem.js"
import { InterruptAt, withOpSupervision } from "../support/InterruptAt.js"

const originals: Record<string, string> = {
  "a.txt": "alpha\nbeta\n",
  "src/b.ts": "export const b = 1\n",
  "src/deep/c.md": "# c\n"
}

const edited: Record<string, string> = {
  "a.txt": "alpha\nBETA\n",
  "src/b.ts": "export const b = 2\n",
  "src/deep/c.md": "# C\n"
}

const editAll = {
  files: [
    { path: "a.txt", edits: [{ oldText: "beta", newText: "BETA" }] },
    { path: "src/b.ts", edits: [{ oldText: "= 1", newText: "= 2" }] },
    { path: "src/deep/c.md", edits: [{ oldText: "# c", newText: "# C" }] }
  ]
}

/** Writes the original files (the workspace is reused from run to run). */
const reset = (root: string) =>
  Effect.promise(async () => {
    await NFS.rm(root, { recursive: true, force: true })
    for (const [name, text] of Object.entries(originals)) {
      await NFS.mkdir(NPath.dirname(NPath.join(root, name)), { recursive: true })
      await NFS.writeFile(NPath.join(root, name), text)
    }
  })

/** Every entry of the workspace, files with their text. */
const snapshot = (root: string) =>
  Effect.promise(async () => {
    const out: Record<string, string> = {}
    for (const entry of (await NFS.readdir(root, { recursive: true })).sort()) {
      const stat = await NFS.lstat(NPath.join(root, entry))
      out[entry] = stat.isDirectory() ? "(dir)" : await NFS.readFile(NPath.join(root, entry), "utf8")
    }
    return out
  })

const tree = (files: Record<string, string>) => ({ ...files, "src": "(dir)", "src/deep": "(dir)" })

const untouched = tree(originals)
const written = tree(edited)

const workspace = Effect.acquireRelease(
  Effect.promise(() => NFS.mkdtemp(NPath.join(OS.tmpdir(), "effect-resolve-edit-interrupt-"))),
  (dir) => Effect.promise(() => NFS.rm(dir, { recursive: true, force: true }))
).pipe(Effect.map((dir) => NPath.join(dir, "ws")))

const sessionLayer = (root: string, plan: FaultyFileSystem.Plan) =>
  Layer.mergeAll(ResolveRuntime.layer, FaultyFileSystem.layer(plan), NodePath.layer, FileEditPreview.layer({ root }))

/**
 * Checks the invariant after an apply that may have been interrupted: applied (files written, nothing queued) or
 * pending (files untouched, the directive requeued — and then the next forced turn applies it exactly once).
 * Returns whether the first attempt applied it.
 */
const checkOutcome = (root: string, label: string) =>
  Effect.gen(function*() {
    const queue = yield* ToolChoiceQueue
    const files = yield* snapshot(root)
    const inspect = yield* queue.inspect
    if (inspect.length === 0) {
      deepStrictEqual(files, written, `${label}: applied, but the files are not fully written`)
      return true
    }
    deepStrictEqual(files, untouched, `${label}: still pending, but files changed`)
    deepStrictEqual(inspect, ["pending-action:edit"], label)
    yield* queue.nextToolChoice
    yield* ResolveTool.execute({ action: "apply", reason: "retry" })
    yield* queue.resolve
    deepStrictEqual(yield* snapshot(root), written, `${label}: the retry did not write every file`)
    deepStrictEqual(yield* queue.inspect, [], label)
    const again = yield* Effect.exit(ResolveTool.execute({ action: "apply", reason: "twice?" }))
    assert.isTrue(Exit.isFailure(again), `${label}: applied twice`)
    deepStrictEqual(yield* snapshot(root), written, label)
    return false
  })

describe("interruption of the edit producer's apply", () => {
  it.live(
    "at every yield point of resolve apply: applied once with every file written, or pending and untouched",
    () =>
      Effect.scoped(Effect.gen(function*() {
        const root = yield* workspace
        const plan = yield* FaultyFileSystem.makePlan
        let completedAt: number | undefined
        let interruptedPending = 0
        let interruptedApplied = 0
        for (let k = 1; k < 20_000 && completedAt === undefined; k++) {
          yield* reset(root)
          const run = yield* Effect.gen(function*() {
            const queue = yield* ToolChoiceQueue
            yield* FileEditPreview.tool.execute(editAll)
            yield* queue.nextToolChoice
            const supervisor = new InterruptAt(k)
            const fiber = yield* Effect.fork(withOpSupervision(Effect.supervised(
              ResolveTool.execute({ action: "apply", reason: "interrupt test" }),
              supervisor
            )))
            const exit = yield* Fiber.await(fiber)
            yield* queue.resolve
            if (Exit.isFailure(exit)) assert.isTrue(Exit.isInterrupted(exit), `k=${k}: ${String(exit)}`)
            const applied = yield* checkOutcome(root, `k=${k}`)
            if (Exit.isSuccess(exit)) assert.isTrue(applied, `k=${k}: resolve succeeded but did not apply`)
            return { exit, applied, ops: supervisor.ops }
          }).pipe(Effect.provide(sessionLayer(root, plan)))
          if (Exit.isFailure(run.exit)) {
            if (run.applied) interruptedApplied++
            else interruptedPending++
          }
          if (Exit.isSuccess(run.exit) && run.ops < k) completedAt = k
        }
        assert.isDefined(completedAt, "resolve never completed before the interruption point")
        // Interruptions landed both before the write phase (left pending) and inside it (deferred: applied).
        assert.isAbove(interruptedPending, 20)
        assert.isAbove(interruptedApplied, 20, "no interruption landed inside the write phase")
      })),
    120_000
  )

  describe("while a file operation is blocked", () => {
    const points: ReadonlyArray<readonly [FaultyFileSystem.Operation, number, "check" | "write"]> = [
      ["readFile", 1, "check"],
      ["readFile", 3, "check"],
      ["stat", 2, "check"],
      ["writeFile", 1, "write"],
      ["writeFile", 3, "write"],
      ["chmod", 2, "write"],
      ["rename", 1, "write"],
      ["rename", 2, "write"],
      ["rename", 3, "write"]
    ]
    for (const [operation, nth, phase] of points) {
      for (const thenFail of [false, true]) {
        const expectation = phase === "check" ?
          "pending, untouched" :
          thenFail ?
          "the write fails: pending, restored" :
          "the write completes: applied"
        it.live(`${operation} #${nth} blocked (${phase} phase${thenFail ? ", then fails" : ""}): ${expectation}`, () =>
          Effect.scoped(Effect.gen(function*() {
            const root = yield* workspace
            yield* reset(root)
            const plan = yield* FaultyFileSystem.makePlan
            yield* Effect.gen(function*() {
              const queue = yield* ToolChoiceQueue
              yield* FileEditPreview.tool.execute(editAll)
              yield* queue.nextToolChoice
              const reached = yield* Deferred.make<void>()
              const release = yield* Deferred.make<void>()
              yield* FaultyFileSystem.arm(plan, FaultyFileSystem.block(operation, nth, { reached, release, thenFail }))
              const fiber = yield* Effect.fork(ResolveTool.execute({ action: "apply", reason: "blocked" }))
              yield* Deferred.await(reached)
              // Interrupt while blocked; the write phase is uninterruptible, so the interruption waits for it.
              const interrupting = yield* Effect.fork(Fiber.interrupt(fiber))
              if (phase === "check") {
                const exit = yield* Fiber.join(interrupting)
                assert.isTrue(Exit.isInterrupted(exit), `the check phase was not interrupted: ${String(exit)}`)
              }
              yield* Deferred.succeed(release, undefined)
              const exit = yield* Fiber.join(interrupting)
              assert.isTrue(Exit.isFailure(exit), "the apply was not interrupted")
              yield* queue.resolve
              const applied = yield* checkOutcome(root, `${operation} #${nth}`)
              assert.strictEqual(applied, phase === "write" && !thenFail)
              deepStrictEqual(yield* Ref.get(plan), [])
              assert.isTrue(Option.isNone(yield* queue.inFlight))
            }).pipe(Effect.provide(sessionLayer(root, plan)))
          })))
      }
    }
  })
})
