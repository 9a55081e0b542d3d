/**
 * Resolving an edit preview (`internal/editApply`, through `resolve`): apply writes exactly the previewed change,
 * all files or none (faults injected at every step of the write phase, interruptions), keeps modes, line endings and
 * symlinks; a file changed or a path that leads elsewhere since the preview makes it stale, checked again right
 * before each rename; the temporary file is never more readable than its target; discard writes nothing.
 */
import { NodeContext } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { deepStrictEqual } from "@effect/vitest/utils"
import { Deferred, Effect, Exit, Fiber, Layer } from "effect"
import * as NFS from "node:fs/promises"
import * as NPath from "node:path"
import { ResolveRuntime, ResolveTool, ToolChoiceQueue, ToolResult } from "../../src/index.js"
import * as FileEditPreview from "../../src/producers/FileEditPreview.js"
import { edit, inWorkspace, listing, one, readText, tempDir, turn, writeFiles } from "../support/editWorkspace.js"
import { failureOf, successOf } from "../support/exits.js"
import * as FaultyFileSystem from "../support/FaultyFileSystem.js"

const outsideDir = tempDir

describe("EditApply", () => {
  // ---------------------------------------------------------------------------------------------------------------
  // apply and discard
  // ---------------------------------------------------------------------------------------------------------------

  it.live("apply writes exactly the previewed change, in every file", () =>
    inWorkspace({ "a.txt": "one two one\n", "b.txt": "alpha\nbeta\n" }, ({ root }) =>
      Effect.gen(function*() {
        yield* edit({
          files: [
            {
              path: "a.txt",
              edits: [{ oldText: "one", newText: "1", replaceAll: true }, { oldText: "two", newText: "2" }]
            },
            { path: "b.txt", edits: [{ oldText: "beta", newText: "gamma" }] }
          ]
        })
        const result = successOf(yield* turn({ action: "apply", reason: "Matches the request." }))
        assert.strictEqual(
          ToolResult.textOf(result),
          "Applied Edit: 4 replacements in 2 files. Wrote a.txt (3), b.txt (1). Reason: Matches the request."
        )
        const details = result.details as any
        assert.strictEqual(details.label, "Edit: 4 replacements in 2 files")
        assert.strictEqual(details.sourceToolName, "edit")
        deepStrictEqual(details.sourceResultDetails.files, [
          { path: "a.txt", replacements: 3 },
          { path: "b.txt", replacements: 1 }
        ])
        assert.strictEqual(yield* readText(root, "a.txt"), "1 2 1\n")
        assert.strictEqual(yield* readText(root, "b.txt"), "alpha\ngamma\n")
        deepStrictEqual(yield* listing(root), ["a.txt", "b.txt"])
        const queue = yield* ToolChoiceQueue
        deepStrictEqual(yield* queue.inspect, [])
      })))

  it.live("newText with $ patterns is inserted literally", () =>
    inWorkspace({ "a.txt": "price\n" }, ({ root }) =>
      Effect.gen(function*() {
        yield* edit(one("a.txt", "price", "$& $1 $$"))
        successOf(yield* turn({ action: "apply", reason: "ok" }))
        assert.strictEqual(yield* readText(root, "a.txt"), "$& $1 $$\n")
      })))

  it.live("discard writes nothing and says what was discarded", () =>
    inWorkspace({ "a.txt": "x\n" }, ({ root }) =>
      Effect.gen(function*() {
        yield* edit(one("a.txt", "x", "y"))
        const result = successOf(yield* turn({ action: "discard", reason: "Not needed." }))
        assert.strictEqual(
          ToolResult.textOf(result),
          "Discarded: Edit: 1 replacement in 1 file. Nothing was written to a.txt. Reason: Not needed."
        )
        assert.strictEqual(yield* readText(root, "a.txt"), "x\n")
        deepStrictEqual(yield* listing(root), ["a.txt"])
      })))

  it.live("keeps file modes", () =>
    inWorkspace({ "run.sh": "echo hi\n" }, ({ root }) =>
      Effect.gen(function*() {
        yield* Effect.promise(() => NFS.chmod(NPath.join(root, "run.sh"), 0o751))
        yield* edit(one("run.sh", "hi", "hello"))
        successOf(yield* turn({ action: "apply", reason: "ok" }))
        const stat = yield* Effect.promise(() => NFS.stat(NPath.join(root, "run.sh")))
        assert.strictEqual(stat.mode & 0o777, 0o751)
        assert.strictEqual(yield* readText(root, "run.sh"), "echo hello\n")
      })))

  it.live("CRLF, a missing trailing newline and a BOM survive untouched outside the edits", () =>
    inWorkspace({ "win.txt": "\uFEFFa\r\nb\r\nc", "unix.txt": "x\ny" }, ({ root }) =>
      Effect.gen(function*() {
        const result = yield* edit({
          files: [
            { path: "win.txt", edits: [{ oldText: "b", newText: "B" }] },
            { path: "unix.txt", edits: [{ oldText: "x", newText: "X" }] }
          ]
        })
        assert.include(ToolResult.textOf(result), "\\ No newline at end of file")
        successOf(yield* turn({ action: "apply", reason: "ok" }))
        const win = yield* Effect.promise(() => NFS.readFile(NPath.join(root, "win.txt")))
        deepStrictEqual([...win], [...Buffer.from("\uFEFFa\r\nB\r\nc", "utf8")])
        assert.strictEqual(yield* readText(root, "unix.txt"), "X\ny")
      })))

  it.live("a path through a symlink inside the workspace edits the target", () =>
    inWorkspace({ "real.txt": "v1\n" }, ({ root }) =>
      Effect.gen(function*() {
        yield* Effect.promise(() => NFS.symlink(NPath.join(root, "real.txt"), NPath.join(root, "link.txt")))
        yield* edit(one("link.txt", "v1", "v2"))
        successOf(yield* turn({ action: "apply", reason: "ok" }))
        assert.strictEqual(yield* readText(root, "real.txt"), "v2\n")
        const link = yield* Effect.promise(() => NFS.lstat(NPath.join(root, "link.txt")))
        assert.isTrue(link.isSymbolicLink())
      })))

  // ---------------------------------------------------------------------------------------------------------------
  // stale previews
  // ---------------------------------------------------------------------------------------------------------------

  it.live("a stale file: nothing written, the action stays pending, discard works", () =>
    inWorkspace({ "a.txt": "a\n", "b.txt": "b\n" }, ({ root }) =>
      Effect.gen(function*() {
        const preview = yield* edit({
          files: [
            { path: "a.txt", edits: [{ oldText: "a", newText: "A" }] },
            { path: "b.txt", edits: [{ oldText: "b", newText: "B" }] }
          ]
        })
        yield* writeFiles(root, { "b.txt": "b changed by someone\n" })
        const error = failureOf(yield* turn({ action: "apply", reason: "ok" }))
        assert.strictEqual(error._tag, "ToolError")
        assert.match(error.message, /^Preview is stale: b\.txt changed after the preview\. Nothing was written\./)
        assert.strictEqual(yield* readText(root, "a.txt"), "a\n")
        assert.strictEqual(yield* readText(root, "b.txt"), "b changed by someone\n")
        const queue = yield* ToolChoiceQueue
        deepStrictEqual(yield* queue.inspect, ["pending-action:edit"])
        const discarded = successOf(yield* turn({ action: "discard", reason: "Stale." }))
        assert.include(ToolResult.textOf(discarded), "Discarded: Edit: 2 replacements in 2 files")
        deepStrictEqual(yield* queue.inspect, [])
        assert.strictEqual(yield* readText(root, "a.txt"), "a\n")
        assert.strictEqual((preview.details as any).fileCount, 2)
      })))

  it.live("a deleted file makes the preview stale", () =>
    inWorkspace({ "a.txt": "a\n" }, ({ root }) =>
      Effect.gen(function*() {
        yield* edit(one("a.txt", "a", "A"))
        yield* Effect.promise(() => NFS.rm(NPath.join(root, "a.txt")))
        const error = failureOf(yield* turn({ action: "apply", reason: "ok" }))
        assert.include(error.message, "Preview is stale: a.txt (now missing or unreadable)")
        deepStrictEqual(yield* listing(root), [])
      })))

  it.live("two stacked previews of one file: the second applied first makes the first stale, not merged", () =>
    inWorkspace({ "a.txt": "first line\nsecond line\n" }, ({ root }) =>
      Effect.gen(function*() {
        yield* edit(one("a.txt", "first line", "FIRST"))
        yield* edit(one("a.txt", "second line", "SECOND"))
        const second = successOf(yield* turn({ action: "apply", reason: "The second one." }))
        assert.include(ToolResult.textOf(second), "Reason: The second one.")
        assert.strictEqual(yield* readText(root, "a.txt"), "first line\nSECOND\n")
        const stale = failureOf(yield* turn({ action: "apply", reason: "The first one." }))
        assert.include(stale.message, "Preview is stale: a.txt changed after the preview")
        assert.strictEqual(yield* readText(root, "a.txt"), "first line\nSECOND\n")
        const queue = yield* ToolChoiceQueue
        deepStrictEqual(yield* queue.inspect, ["pending-action:edit"])
        successOf(yield* turn({ action: "discard", reason: "Stale; preview again." }))
        deepStrictEqual(yield* queue.inspect, [])
      })))

  // ---------------------------------------------------------------------------------------------------------------
  // all or nothing: injected faults
  // ---------------------------------------------------------------------------------------------------------------

  const three = { "a.txt": "a\n", "b.txt": "b\n", "c.txt": "c\n" }
  const editThree = {
    files: [
      { path: "a.txt", edits: [{ oldText: "a", newText: "A" }] },
      { path: "b.txt", edits: [{ oldText: "b", newText: "B" }] },
      { path: "c.txt", edits: [{ oldText: "c", newText: "C" }] }
    ]
  }

  for (const operation of ["rename", "writeFile", "chmod"] as const) {
    for (const k of [1, 2, 3]) {
      it.live(`a fault at ${operation} #${k} of the write phase leaves every file as it was`, () =>
        inWorkspace(three, ({ plan, root }) =>
          Effect.gen(function*() {
            yield* edit(editThree)
            yield* FaultyFileSystem.arm(plan, FaultyFileSystem.fail(operation, k))
            const error = failureOf(yield* turn({ action: "apply", reason: "ok" }))
            assert.strictEqual(error._tag, "ApplyFailed")
            assert.include(error.message, "Apply failed: writing ")
            assert.include(error.message, "no file was changed")
            if (operation === "rename") {
              assert.include(error.message, `writing ${["a", "b", "c"][k - 1]}.txt failed`)
              if (k > 1) assert.include(error.message, "Restored from the preview's snapshot: ")
            }
            for (const name of ["a", "b", "c"]) assert.strictEqual(yield* readText(root, `${name}.txt`), `${name}\n`)
            deepStrictEqual(yield* listing(root), ["a.txt", "b.txt", "c.txt"])
            // Still pending: the next forced turn applies it.
            const queue = yield* ToolChoiceQueue
            deepStrictEqual(yield* queue.inspect, ["pending-action:edit"])
            successOf(yield* turn({ action: "apply", reason: "retry" }))
            for (const name of ["a", "b", "c"]) {
              assert.strictEqual(yield* readText(root, `${name}.txt`), `${name.toUpperCase()}\n`)
            }
          })))
    }
  }

  it.live("interruption before the write phase leaves the files untouched and the action pending", () =>
    inWorkspace(three, ({ plan, root }) =>
      Effect.gen(function*() {
        yield* edit(editThree)
        const queue = yield* ToolChoiceQueue
        yield* queue.nextToolChoice
        const reached = yield* Deferred.make<void>()
        const release = yield* Deferred.make<void>()
        // The check phase reads every file first; block its second read.
        yield* FaultyFileSystem.arm(plan, FaultyFileSystem.block("readFile", 2, { reached, release }))
        const fiber = yield* Effect.fork(ResolveTool.execute({ action: "apply", reason: "ok" }))
        yield* Deferred.await(reached)
        const exit = yield* Fiber.interrupt(fiber)
        assert.isTrue(Exit.isInterrupted(exit))
        yield* queue.resolve
        for (const name of ["a", "b", "c"]) assert.strictEqual(yield* readText(root, `${name}.txt`), `${name}\n`)
        deepStrictEqual(yield* listing(root), ["a.txt", "b.txt", "c.txt"])
        deepStrictEqual(yield* queue.inspect, ["pending-action:edit"])
        successOf(yield* turn({ action: "apply", reason: "again" }))
        assert.strictEqual(yield* readText(root, "c.txt"), "C\n")
      })))

  it.live("interruption during the write phase waits for it: every file is written and the action applied", () =>
    inWorkspace(three, ({ plan, root }) =>
      Effect.gen(function*() {
        yield* edit(editThree)
        const queue = yield* ToolChoiceQueue
        yield* queue.nextToolChoice
        const reached = yield* Deferred.make<void>()
        const release = yield* Deferred.make<void>()
        yield* FaultyFileSystem.arm(plan, FaultyFileSystem.block("rename", 2, { reached, release }))
        const fiber = yield* Effect.fork(ResolveTool.execute({ action: "apply", reason: "ok" }))
        yield* Deferred.await(reached)
        const interrupter = yield* Effect.fork(Fiber.interrupt(fiber))
        // The interruption cannot land while the write phase runs.
        assert.strictEqual(yield* readText(root, "a.txt"), "A\n")
        assert.strictEqual(yield* readText(root, "b.txt"), "b\n")
        yield* Deferred.succeed(release, undefined)
        const exit = yield* Fiber.join(interrupter)
        assert.isTrue(Exit.isInterrupted(exit))
        yield* queue.resolve
        for (const name of ["a", "b", "c"]) {
          assert.strictEqual(yield* readText(root, `${name}.txt`), `${name.toUpperCase()}\n`)
        }
        deepStrictEqual(yield* listing(root), ["a.txt", "b.txt", "c.txt"])
        // Committed: the action is applied and not requeued.
        deepStrictEqual(yield* queue.inspect, [])
      })))

  // ---------------------------------------------------------------------------------------------------------------
  // confinement, checked again at apply time
  // ---------------------------------------------------------------------------------------------------------------

  describe("confinement is checked again at apply time", () => {
    it.live("a directory on the way swapped for a symlink to a folder outside with the same bytes: stale", () =>
      Effect.scoped(Effect.gen(function*() {
        const outside = yield* outsideDir
        yield* writeFiles(outside, { "a.txt": "secret = 1\n" })
        yield* inWorkspace({ "sub/a.txt": "secret = 1\n" }, ({ root }) =>
          Effect.gen(function*() {
            yield* edit(one("sub/a.txt", "secret = 1", "secret = 2"))
            yield* Effect.promise(async () => {
              await NFS.rename(NPath.join(root, "sub"), NPath.join(root, "sub-old"))
              await NFS.symlink(outside, NPath.join(root, "sub"))
            })
            const error = failureOf(yield* turn({ action: "apply", reason: "ok" }))
            assert.strictEqual(error._tag, "ToolError")
            assert.match(error.message, /^Preview is stale: sub\/a\.txt \(its path now leads elsewhere/)
            assert.include(error.message, "Nothing was written.")
            assert.strictEqual(yield* readText(root, "sub-old/a.txt"), "secret = 1\n")
            deepStrictEqual(yield* listing(NPath.join(root, "sub-old")), ["a.txt"])
            const queue = yield* ToolChoiceQueue
            deepStrictEqual(yield* queue.inspect, ["pending-action:edit"])
          }))
        assert.strictEqual(yield* readText(outside, "a.txt"), "secret = 1\n")
        deepStrictEqual(yield* listing(outside), ["a.txt"])
      })))

    it.live("the workspace root moved away and replaced by a symlink to a folder outside: stale", () =>
      Effect.scoped(Effect.gen(function*() {
        const outside = yield* outsideDir
        const parent = yield* tempDir
        const root = NPath.join(parent, "ws")
        yield* writeFiles(root, { "a.txt": "v = 1\n" })
        yield* writeFiles(outside, { "a.txt": "v = 1\n" })
        const layer = Layer.mergeAll(ResolveRuntime.layer, NodeContext.layer, FileEditPreview.layer({ root }))
        yield* Effect.gen(function*() {
          yield* edit(one("a.txt", "v = 1", "v = 2"))
          yield* Effect.promise(async () => {
            await NFS.rename(root, NPath.join(parent, "ws-moved"))
            await NFS.symlink(outside, root)
          })
          const error = failureOf(yield* turn({ action: "apply", reason: "ok" }))
          assert.match(error.message, /^Preview is stale: the workspace root \(it now resolves to another directory\)/)
          const queue = yield* ToolChoiceQueue
          deepStrictEqual(yield* queue.inspect, ["pending-action:edit"])
        }).pipe(Effect.provide(layer))
        assert.strictEqual(yield* readText(outside, "a.txt"), "v = 1\n")
        assert.strictEqual(yield* readText(parent, "ws-moved/a.txt"), "v = 1\n")
        deepStrictEqual(yield* listing(outside), ["a.txt"])
      })))

    it.live("the root given as a symlink, retargeted to another folder: stale, neither written", () =>
      Effect.scoped(Effect.gen(function*() {
        const parent = yield* tempDir
        yield* writeFiles(parent, { "ws1/a.txt": "v = 1\n", "ws2/a.txt": "v = 1\n" })
        const link = NPath.join(parent, "current")
        yield* Effect.promise(() => NFS.symlink(NPath.join(parent, "ws1"), link))
        const layer = Layer.mergeAll(ResolveRuntime.layer, NodeContext.layer, FileEditPreview.layer({ root: link }))
        yield* Effect.gen(function*() {
          yield* edit(one("a.txt", "v = 1", "v = 2"))
          yield* Effect.promise(async () => {
            await NFS.rm(link)
            await NFS.symlink(NPath.join(parent, "ws2"), link)
          })
          const error = failureOf(yield* turn({ action: "apply", reason: "ok" }))
          assert.match(error.message, /^Preview is stale: the workspace root/)
        }).pipe(Effect.provide(layer))
        assert.strictEqual(yield* readText(parent, "ws1/a.txt"), "v = 1\n")
        assert.strictEqual(yield* readText(parent, "ws2/a.txt"), "v = 1\n")
      })))

    it.live("a directory swapped after the check, before the rename: stale, nothing written anywhere", () =>
      Effect.scoped(Effect.gen(function*() {
        const outside = yield* outsideDir
        yield* writeFiles(outside, { "a.txt": "secret = 1\n" })
        yield* inWorkspace({ "b.txt": "b\n", "sub/a.txt": "secret = 1\n" }, ({ plan, root }) =>
          Effect.gen(function*() {
            yield* edit({
              files: [
                { path: "b.txt", edits: [{ oldText: "b", newText: "B" }] },
                { path: "sub/a.txt", edits: [{ oldText: "secret = 1", newText: "secret = 2" }] }
              ]
            })
            const queue = yield* ToolChoiceQueue
            yield* queue.nextToolChoice
            const reached = yield* Deferred.make<void>()
            const release = yield* Deferred.make<void>()
            // b.txt's rename, the first one: the check phase is over, both temporary files are written, and
            // sub/a.txt's path is resolved again right before its own rename, which comes next.
            yield* FaultyFileSystem.arm(
              plan,
              FaultyFileSystem.block("rename", 1, { reached, release, path: (p) => p.includes(".b.txt.") })
            )
            const fiber = yield* Effect.fork(ResolveTool.execute({ action: "apply", reason: "ok" }))
            yield* Deferred.await(reached)
            yield* Effect.promise(async () => {
              await NFS.rename(NPath.join(root, "sub"), NPath.join(root, "sub-old"))
              await NFS.symlink(outside, NPath.join(root, "sub"))
            })
            yield* Deferred.succeed(release, undefined)
            const exit = yield* Fiber.await(fiber)
            yield* queue.resolve
            const error = failureOf(exit)
            assert.strictEqual(error._tag, "ToolError", error.message)
            assert.match(
              error.message,
              /^Preview is stale: sub\/a\.txt \(its path now leads elsewhere.*\) changed during the apply\. Nothing was written\./
            )
            assert.include(error.message, "Restored from the preview's snapshot: b.txt.")
            assert.strictEqual(yield* readText(root, "b.txt"), "b\n")
            assert.strictEqual(yield* readText(root, "sub-old/a.txt"), "secret = 1\n")
            deepStrictEqual(yield* queue.inspect, ["pending-action:edit"])
          }))
        assert.strictEqual(yield* readText(outside, "a.txt"), "secret = 1\n")
        deepStrictEqual(yield* listing(outside), ["a.txt"])
      })))
  })

  it.live("the temporary file is never more readable than the target, from its creation", () =>
    inWorkspace({ "private.txt": "token = 1\n" }, ({ plan, root }) =>
      Effect.gen(function*() {
        yield* Effect.promise(() => NFS.chmod(NPath.join(root, "private.txt"), 0o600))
        yield* edit(one("private.txt", "token = 1", "token = 2"))
        const queue = yield* ToolChoiceQueue
        yield* queue.nextToolChoice
        const reached = yield* Deferred.make<void>()
        const release = yield* Deferred.make<void>()
        // Between creating the temporary file and setting its mode: as a crash at that moment would leave it.
        yield* FaultyFileSystem.arm(plan, FaultyFileSystem.block("chmod", 1, { reached, release }))
        const fiber = yield* Effect.fork(ResolveTool.execute({ action: "apply", reason: "ok" }))
        yield* Deferred.await(reached)
        const temps = (yield* listing(root)).filter((name) => name.endsWith(".edit-tmp"))
        assert.strictEqual(temps.length, 1, temps.join(", "))
        const stat = yield* Effect.promise(() => NFS.stat(NPath.join(root, temps[0]!)))
        assert.strictEqual(stat.mode & 0o077, 0, `temporary file mode ${(stat.mode & 0o777).toString(8)}`)
        assert.strictEqual(yield* readText(root, temps[0]!), "token = 2\n")
        yield* Deferred.succeed(release, undefined)
        successOf(yield* Fiber.await(fiber))
        yield* queue.resolve
        const after = yield* Effect.promise(() => NFS.stat(NPath.join(root, "private.txt")))
        assert.strictEqual(after.mode & 0o777, 0o600)
        deepStrictEqual(yield* listing(root), ["private.txt"])
      })))
})
