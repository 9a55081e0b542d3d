/**
 * An apply of more than 4 files checks and writes its files concurrently (its renames stay one at a time). The
 * promises of the 3-file suites (`FileFaults`, `EditInterruption`) must hold there too, on a real 6-file workspace:
 * - a fault at the k-th `readFile` / `stat` / `writeFile` / `chmod` / `rename`, for every k: every file is as before
 *   and the action pending, or every file is written and the action applied — never a mix, no temporary file left;
 * - an interruption from another fiber at many moments of resolve apply: applied once with every file written, or
 *   pending with every file untouched (and the next apply then writes everything once). (Interruption injected by an
 *   op-counting supervisor, as in `EditInterruption`, is not used here: with op supervision on, a concurrent
 *   `Effect.forEach` interrupted right after it starts never completes in Effect 3.22.4, even with `Effect.sleep`
 *   children; interruption by another fiber at the same moments does not hang.)
 * Also: apply writes exactly the bytes of the edits (ASCII files, spliced from the original bytes, and UTF-8 ones),
 * for arbitrary small texts and edits.
 */
import { NodePath } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Exit, FastCheck as fc, Fiber, Layer, Option, Ref } from "effect"
import { deepStrictEqual } from "node:assert/strict"
import * as NFS from "node:fs/promises"
import * as OS from "node:os"
import * as NPath from "node:path"
import { FileEditPreview } from "../../src/edit.js"
import { ResolveRuntime, ResolveTool, ToolChoiceQueue } from "../../src/index.js"
import * as FaultyFileSystem from "../support/FaultyFileSystem.js"

const names = ["a.txt", "b.txt", "src/c.ts", "src/d.ts", "src/deep/e.md", "f.txt"]
const before = Object.fromEntries(names.map((name, i) => [name, `file ${i}\nvalue = ${i}\n`]))
const after = Object.fromEntries(names.map((name, i) => [name, `file ${i}\nvalue = ${i * 10}\n`]))
const editAll = {
  files: names.map((path, i) => ({ path, edits: [{ oldText: `value = ${i}`, newText: `value = ${i * 10}` }] }))
}

const tempDir = Effect.acquireRelease(
  Effect.promise(() => NFS.mkdtemp(NPath.join(OS.tmpdir(), "effect-resolve-many-"))),
  (dir) => Effect.promise(() => NFS.rm(dir, { recursive: true, force: true }))
)

const reset = (root: string) =>
  Effect.promise(async () => {
    await NFS.rm(root, { recursive: true, force: true })
    for (const name of names) {
      await NFS.mkdir(NPath.dirname(NPath.join(root, name)), { recursive: true })
      await NFS.writeFile(NPath.join(root, name), before[name]!)
    }
  })

/** Every file of the workspace with its text (directories left out). */
const snapshot = (root: string) =>
  Effect.promise(async () => {
    const out: Record<string, string> = {}
    for (const entry of (await NFS.readdir(root, { recursive: true })).sort()) {
      const stat = await NFS.lstat(NPath.join(root, entry))
      if (!stat.isDirectory()) out[entry] = await NFS.readFile(NPath.join(root, entry), "utf8")
    }
    return out
  })

const sessionLayer = (root: string, plan: FaultyFileSystem.Plan) =>
  Layer.mergeAll(ResolveRuntime.layer, FaultyFileSystem.layer(plan), NodePath.layer, FileEditPreview.layer({ root }))

const applyTurn = Effect.gen(function*() {
  const queue = yield* ToolChoiceQueue
  yield* queue.nextToolChoice
  const exit = yield* Effect.exit(ResolveTool.execute({ action: "apply", reason: "many files" }))
  yield* queue.resolve
  return exit
})

/** After an apply: all before and pending (then a retry applies once), or all after and applied. */
const checkOutcome = (root: string, label: string) =>
  Effect.gen(function*() {
    const queue = yield* ToolChoiceQueue
    const files = yield* snapshot(root)
    if ((yield* queue.inspect).length === 0) {
      deepStrictEqual(files, after, `${label}: applied, but the files are not all written`)
      return true
    }
    deepStrictEqual(files, before, `${label}: still pending, but files changed (or a temporary file is left)`)
    deepStrictEqual(yield* queue.inspect, ["pending-action:edit"], label)
    const retry = yield* applyTurn
    assert.isTrue(Exit.isSuccess(retry), `${label}: the retry failed: ${String(retry)}`)
    deepStrictEqual(yield* snapshot(root), after, `${label}: the retry did not write every file`)
    assert.isTrue(Exit.isFailure(yield* Effect.exit(ResolveTool.execute({ action: "apply", reason: "twice?" }))))
    return false
  })

describe("an apply of 6 files (concurrent checks and writes)", () => {
  for (const operation of ["readFile", "stat", "writeFile", "chmod", "rename"] as const) {
    it.live(
      `a failing ${operation} at every k: all before and pending, or all after`,
      () =>
        Effect.scoped(Effect.gen(function*() {
          const root = yield* tempDir
          let hit = 0
          for (let k = 1; k <= 20; k++) {
            yield* reset(root)
            const plan = yield* FaultyFileSystem.makePlan
            const reached = yield* Effect.gen(function*() {
              yield* FileEditPreview.tool.execute(editAll)
              yield* FaultyFileSystem.arm(plan, FaultyFileSystem.fail(operation, k))
              const exit = yield* applyTurn
              const left = yield* Ref.get(plan)
              yield* FaultyFileSystem.disarm(plan)
              if (Exit.isFailure(exit)) {
                const error = Cause.failureOption(exit.cause)
                assert.isTrue(Option.isSome(error), Cause.pretty(exit.cause))
                if (Option.isSome(error)) assert.match(error.value.message, /Nothing was written|still pending/)
              }
              const applied = yield* checkOutcome(root, `${operation} #${k}`)
              if (left.length > 0) assert.isTrue(applied, `${operation} #${k}: not reached, yet not applied`)
              return left.length === 0
            }).pipe(Effect.provide(sessionLayer(root, plan)))
            if (!reached) break
            hit++
          }
          assert.strictEqual(hit, names.length, `${operation}: points reached`)
        })),
      60_000
    )
  }

  it.live(
    "interrupted from outside at many moments: applied once with every file, or pending and untouched",
    () =>
      Effect.scoped(Effect.gen(function*() {
        const root = yield* tempDir
        const plan = yield* FaultyFileSystem.makePlan
        const outcomes = { pending: 0, applied: 0, completed: 0 }
        // The interruption comes from another fiber after n turns of the scheduler, or after n % 12 ms, so it lands
        // at every kind of suspension point of the apply: waiting for a lock, reading, checking, writing (deferred:
        // the write phase cannot be interrupted).
        for (let n = 0; n < 240; n++) {
          yield* reset(root)
          const run = yield* Effect.gen(function*() {
            const queue = yield* ToolChoiceQueue
            yield* FileEditPreview.tool.execute(editAll)
            yield* queue.nextToolChoice
            const fiber = yield* Effect.fork(ResolveTool.execute({ action: "apply", reason: "interrupt test" }))
            if (n % 2 === 0) { for (let i = 0; i < n; i++) yield* Effect.yieldNow() }
            else yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, n % 12)))
            const exit = yield* Fiber.interrupt(fiber)
            yield* queue.resolve
            if (Exit.isFailure(exit)) assert.isTrue(Exit.isInterrupted(exit), `n=${n}: ${String(exit)}`)
            const applied = yield* checkOutcome(root, `n=${n}`)
            if (Exit.isSuccess(exit)) assert.isTrue(applied, `n=${n}: resolve succeeded but did not apply`)
            return { exit, applied }
          }).pipe(Effect.provide(sessionLayer(root, plan)))
          if (Exit.isSuccess(run.exit)) outcomes.completed++
          else outcomes[run.applied ? "applied" : "pending"]++
        }
        assert.isAbove(outcomes.pending, 5, JSON.stringify(outcomes))
        assert.isAbove(
          outcomes.applied,
          0,
          `no interruption landed inside the write phase: ${JSON.stringify(outcomes)}`
        )
      })),
    120_000
  )
})

describe("a preview of 6 files (concurrent reads)", () => {
  it.live(
    "interrupted from outside at many moments: stages one pending action or none, writes nothing",
    () =>
      Effect.scoped(Effect.gen(function*() {
        const root = yield* tempDir
        const plan = yield* FaultyFileSystem.makePlan
        const outcomes = { staged: 0, none: 0 }
        for (let n = 0; n < 120; n++) {
          yield* reset(root)
          const staged = yield* Effect.gen(function*() {
            const fiber = yield* Effect.fork(FileEditPreview.tool.execute(editAll))
            if (n % 2 === 0) { for (let i = 0; i < n; i++) yield* Effect.yieldNow() }
            else yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, n % 6)))
            const exit = yield* Fiber.interrupt(fiber)
            const queue = yield* ToolChoiceQueue
            const queued = yield* queue.inspect
            deepStrictEqual(yield* snapshot(root), before, `n=${n}: a preview wrote`)
            if (Exit.isSuccess(exit)) deepStrictEqual(queued, ["pending-action:edit"], `n=${n}`)
            else {
              assert.isTrue(Exit.isInterrupted(exit), `n=${n}: ${String(exit)}`)
              assert.isAtMost(queued.length, 1, `n=${n}`)
            }
            return queued.length === 1
          }).pipe(Effect.provide(sessionLayer(root, plan)))
          outcomes[staged ? "staged" : "none"]++
        }
        assert.isAbove(outcomes.none, 5, JSON.stringify(outcomes))
        assert.isAbove(outcomes.staged, 5, JSON.stringify(outcomes))
      })),
    60_000
  )
})

describe("apply writes exactly the edited bytes", () => {
  const piece = fc.constantFrom("a", "b", "\n", "\r\n", " x", "é", "日本", "\u202E")
  const text = fc.array(piece, { minLength: 1, maxLength: 30 }).map((parts) => parts.join(""))

  it.live("for arbitrary texts and up to 3 edits, ASCII and not", () =>
    Effect.scoped(Effect.gen(function*() {
      const root = yield* tempDir
      const file = NPath.join(root, "f.txt")
      const plan = yield* FaultyFileSystem.makePlan
      const samples = fc.sample(
        fc.tuple(
          fc.boolean(),
          text,
          fc.array(fc.tuple(fc.nat(), fc.nat(), text.map((t) => t.slice(0, 6))), { minLength: 1, maxLength: 3 })
        ),
        150
      )
      yield* Effect.gen(function*() {
        for (const [asciiOnly, raw, picks] of samples) {
          const original = asciiOnly ? raw.replace(/[^\x00-\x7f]/g, "q") : raw
          // Edits taken from the text as it is after the previous ones, each replacing every occurrence.
          const edits: Array<{ oldText: string; newText: string; replaceAll: boolean }> = []
          let expected = original
          for (const [at, length, newText] of picks) {
            if (expected.length === 0) break
            const from = at % expected.length
            const oldText = expected.slice(from, from + 1 + (length % Math.min(5, expected.length - from)))
            edits.push({ oldText, newText, replaceAll: true })
            expected = expected.split(oldText).join(newText)
          }
          yield* Effect.promise(() => NFS.writeFile(file, original))
          yield* FileEditPreview.tool.execute({ files: [{ path: "f.txt", edits }] })
          const exit = yield* applyTurn
          const label = JSON.stringify({ original, edits })
          assert.isTrue(Exit.isSuccess(exit), `${label}: ${String(exit)}`)
          deepStrictEqual(
            [...(yield* Effect.promise(() => NFS.readFile(file)))],
            [...Buffer.from(expected, "utf8")],
            label
          )
        }
      }).pipe(Effect.provide(sessionLayer(root, plan)))
    })), 60_000)
})
