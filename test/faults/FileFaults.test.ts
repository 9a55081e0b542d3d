/**
 * File-system faults during a multi-file apply of the `edit` producer (issue 5 §3), looping over every point
 * instead of sampling: a preview edits 3 files, then the k-th `readFile` / `stat` / `writeFile` / `chmod` / `rename`
 * of the apply fails, for k = 1, 2, ... until the apply no longer reaches k (the fault is still armed after it).
 * `remove` is only called while rolling back, so its faults are combined with a first fault that starts a rollback.
 * After each run every file is byte-identical (and mode-identical) to before the apply, or every file is the
 * preview's result — never a mix; no temporary file is left; an action that was not applied is still pending and
 * a later apply without faults applies it exactly once.
 */
import { NodePath } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Exit, Layer, Option, Ref } from "effect"
import { deepStrictEqual } from "node:assert/strict"
import * as NFS from "node:fs/promises"
import * as OS from "node:os"
import * as NPath from "node:path"
import { FileEditPreview } from "../../src/edit.js"
import { ResolveRuntime, ResolveTool, ToolChoiceQueue, ToolResult } from "../../src/index.js"
import * as FaultyFileSystem from "../support/FaultyFileSystem.js"

const before: Record<string, { readonly text: string; readonly mode: number }> = {
  "a.txt": { text: "alpha\nbeta\n", mode: 0o644 },
  "src/b.ts": { text: "export const b = 1\n", mode: 0o755 },
  "src/deep/c.md": { text: "# c\n\nsee a\n", mode: 0o600 }
}

const after: Record<string, string> = {
  "a.txt": "alpha\nBETA\n",
  "src/b.ts": "export const b = 2\n",
  "src/deep/c.md": "# C\n\nsee a\n"
}

const editAll = {
  files: [
    { path: "a.txt", edits: [{ oldText: "beta", newText: "BETA" }] },
    { path: "src/b.ts", edits: [{ oldText: "= 1", newText: "= 2" }] },
    { path: "src/deep/c.md", edits: [{ oldText: "# c", newText: "# C" }] }
  ]
}

const isTemp = (entry: string) => entry.endsWith(".edit-tmp")

/** Every entry of the workspace: files with their mode and text, directories, in order. */
const snapshot = (root: string) =>
  Effect.promise(async () => {
    const out: Record<string, string> = {}
    for (const entry of (await NFS.readdir(root, { recursive: true })).sort()) {
      const stat = await NFS.lstat(NPath.join(root, entry))
      out[entry] = stat.isDirectory() ?
        "dir" :
        `${(stat.mode & 0o7777).toString(8)} ${await NFS.readFile(NPath.join(root, entry), "utf8")}`
    }
    return out
  })

const expected = (side: "before" | "after"): Record<string, string> => ({
  "a.txt": `644 ${side === "before" ? before["a.txt"]!.text : after["a.txt"]}`,
  "src": "dir",
  "src/b.ts": `755 ${side === "before" ? before["src/b.ts"]!.text : after["src/b.ts"]}`,
  "src/deep": "dir",
  "src/deep/c.md": `600 ${side === "before" ? before["src/deep/c.md"]!.text : after["src/deep/c.md"]}`
})

/** Which side each file is on: all "before", all "after", or the offending mix. */
const sideOf = (files: Record<string, string>): "before" | "after" | string => {
  const sides = Object.keys(before).map((name) =>
    files[name] === expected("before")[name] ? "before" : files[name] === expected("after")[name] ? "after" : "neither"
  )
  return sides.every((s) => s === sides[0]) && sides[0] !== "neither" ? sides[0]! : sides.join(",")
}

/** One model turn calling resolve apply: serve the queue, call, end the turn. */
const applyTurn = Effect.gen(function*() {
  const queue = yield* ToolChoiceQueue
  yield* queue.nextToolChoice
  const exit = yield* Effect.exit(ResolveTool.execute({ action: "apply", reason: "fault test" }))
  yield* queue.resolve
  return exit
})

interface Outcome {
  /** Whether every armed fault fired (the apply reached its point). */
  readonly reached: boolean
  readonly applied: boolean
}

/** A fresh temporary workspace holding the 3 files, and a session over it whose file system takes faults. */
const freshWorkspace = Effect.gen(function*() {
  const root = yield* Effect.acquireRelease(
    Effect.promise(() => NFS.mkdtemp(NPath.join(OS.tmpdir(), "effect-resolve-faults-"))),
    (dir) => Effect.promise(() => NFS.rm(dir, { recursive: true, force: true }))
  )
  yield* Effect.promise(async () => {
    for (const [name, { mode, text }] of Object.entries(before)) {
      await NFS.mkdir(NPath.dirname(NPath.join(root, name)), { recursive: true })
      await NFS.writeFile(NPath.join(root, name), text)
      await NFS.chmod(NPath.join(root, name), mode)
    }
  })
  const plan = yield* FaultyFileSystem.makePlan
  const layer = Layer.mergeAll(
    ResolveRuntime.layer,
    FaultyFileSystem.layer(plan),
    NodePath.layer,
    FileEditPreview.layer({ root })
  )
  return { root, plan, layer }
})

/**
 * A fresh workspace and session: preview the 3-file edit, arm `faults`, apply once, check the invariant, then (when
 * not applied) apply again without faults and check it is applied once.
 */
const runWithFaults = (faults: ReadonlyArray<FaultyFileSystem.Fault>, label: string) =>
  Effect.scoped(Effect.gen(function*() {
    const { layer, plan, root } = yield* freshWorkspace
    return yield* Effect.gen(function*() {
      const queue = yield* ToolChoiceQueue
      yield* FileEditPreview.tool.execute(editAll)
      deepStrictEqual(yield* snapshot(root), expected("before"), label)
      for (const fault of faults) yield* FaultyFileSystem.arm(plan, fault)
      const exit = yield* applyTurn
      const left = yield* Ref.get(plan)
      yield* FaultyFileSystem.disarm(plan)
      const files = yield* snapshot(root)
      // No temporary file is left, even when removing one failed once (the rollback tries again).
      deepStrictEqual(Object.keys(files).filter(isTemp), [], label)
      const side = sideOf(files)
      assert.oneOf(side, ["before", "after"], `${label}: files are mixed (${side})`)
      deepStrictEqual(files, expected(side as "before" | "after"), label)

      if (side === "after") {
        assert.isTrue(Exit.isSuccess(exit), `${label}: files written but the apply failed`)
        deepStrictEqual(yield* queue.inspect, [], label)
      } else {
        assert.isTrue(Exit.isFailure(exit), `${label}: the apply succeeded but nothing was written`)
        if (Exit.isFailure(exit)) {
          // A typed error telling the model that nothing was written (stale check) or that the preview is pending.
          const error = Cause.failureOption(exit.cause)
          assert.isTrue(Option.isSome(error), `${label}: ${Cause.pretty(exit.cause)}`)
          if (Option.isSome(error)) assert.match(error.value.message, /Nothing was written|still pending/, label)
        }
        // Still pending: the requeued directive forces resolve again; a later apply writes everything, once.
        deepStrictEqual(yield* queue.inspect, ["pending-action:edit"], label)
        const retry = yield* applyTurn
        assert.isTrue(Exit.isSuccess(retry), `${label}: the retry failed: ${String(retry)}`)
        if (Exit.isSuccess(retry)) assert.include(ToolResult.textOf(retry.value), "Applied Edit: 3 replacements")
        deepStrictEqual(yield* snapshot(root), expected("after"), label)
        deepStrictEqual(yield* queue.inspect, [], label)
        // Applied once: nothing is left to resolve.
        const again = yield* Effect.exit(ResolveTool.execute({ action: "apply", reason: "twice?" }))
        assert.isTrue(Exit.isFailure(again), `${label}: applied twice`)
      }
      return { reached: left.length === 0, applied: side === "after" } satisfies Outcome
    }).pipe(Effect.provide(layer))
  }))

/**
 * Runs `faultsAt(k)` for k = 1, 2, ... until the apply no longer reaches k; returns how many points were hit. With
 * a single fault, an apply that does not reach it must have written everything.
 */
const everyPoint = (name: string, faultsAt: (k: number) => ReadonlyArray<FaultyFileSystem.Fault>) =>
  Effect.gen(function*() {
    let hit = 0
    for (let k = 1; k <= 100; k++) {
      const outcome = yield* runWithFaults(faultsAt(k), `${name} #${k}`)
      if (!outcome.reached) {
        // The apply ran to the end before the k-th call: it must have written everything.
        if (faultsAt(k).length === 1) assert.isTrue(outcome.applied, `${name} #${k}: not reached, yet not applied`)
        return hit
      }
      hit++
    }
    throw new Error(`${name}: still reached after 100 points`)
  })

describe("file-system faults during a 3-file apply", () => {
  // The apply reads and stats each file (stale check), then writes and chmods a temporary file per file, then
  // renames each over its target: 3 calls of each operation.
  for (const operation of ["readFile", "stat", "writeFile", "chmod", "rename"] as const) {
    it.live(
      `a failing ${operation}, at every k: all files before or all after, pending when not applied`,
      () =>
        Effect.gen(function*() {
          const hit = yield* everyPoint(operation, (k) => [FaultyFileSystem.fail(operation, k)])
          assert.strictEqual(hit, 3, `${operation}: points reached`)
        }),
      60_000
    )
  }

  // `remove` runs only while rolling back (deleting the temporary files not yet renamed): a first fault starts the
  // rollback, then the k-th remove fails too.
  const rollbackStarters: ReadonlyArray<readonly [string, FaultyFileSystem.Fault]> = [
    ["writeFile #2", FaultyFileSystem.fail("writeFile", 2)],
    ["chmod #3", FaultyFileSystem.fail("chmod", 3)],
    ["rename #1", FaultyFileSystem.fail("rename", 1)],
    ["rename #3", FaultyFileSystem.fail("rename", 3)]
  ]
  for (const [starter, first] of rollbackStarters) {
    it.live(
      `a failing remove at every k while rolling back after ${starter}: all files before, still pending`,
      () =>
        Effect.gen(function*() {
          const hit = yield* everyPoint(`${starter} + remove`, (k) => [first, FaultyFileSystem.fail("remove", k)])
          assert.isAtLeast(hit, 1, `${starter}: no remove reached`)
        }),
      60_000
    )
  }

  it.live("a double fault (a restore fails too) is reported by name, and the preview then refuses as stale", () =>
    Effect.scoped(Effect.gen(function*() {
      const { layer, plan, root } = yield* freshWorkspace
      yield* Effect.gen(function*() {
        const queue = yield* ToolChoiceQueue
        yield* FileEditPreview.tool.execute(editAll)
        // rename #3 fails after a.txt and src/b.ts were renamed; the rollback restores src/b.ts (writeFile #4),
        // then restoring a.txt (writeFile #5) fails as well.
        yield* FaultyFileSystem.arm(plan, FaultyFileSystem.fail("rename", 3))
        yield* FaultyFileSystem.arm(plan, FaultyFileSystem.fail("writeFile", 5))
        const exit = yield* applyTurn
        deepStrictEqual(yield* Ref.get(plan), [])
        const error = Exit.isFailure(exit) ? Cause.failureOption(exit.cause) : Option.none()
        assert.isTrue(Option.isSome(error), String(exit))
        if (Option.isSome(error)) {
          assert.include(error.value.message, "a.txt could not be restored")
          assert.include(error.value.message, "check them by hand")
        }
        const files = yield* snapshot(root)
        assert.strictEqual(files["a.txt"], expected("after")["a.txt"])
        assert.strictEqual(files["src/b.ts"], expected("before")["src/b.ts"])
        assert.strictEqual(files["src/deep/c.md"], expected("before")["src/deep/c.md"])
        deepStrictEqual(Object.keys(files).filter(isTemp), [])
        // Not applied; a retry finds a.txt changed since the preview and writes nothing.
        deepStrictEqual(yield* queue.inspect, ["pending-action:edit"])
        const retry = yield* applyTurn
        const stale = Exit.isFailure(retry) ? Cause.failureOption(retry.cause) : Option.none()
        assert.isTrue(Option.isSome(stale) && stale.value.message.includes("Preview is stale: a.txt"), String(retry))
        deepStrictEqual(yield* snapshot(root), files)
      }).pipe(Effect.provide(layer))
    })))
})
