import type { Path } from "@effect/platform"
import { NodeContext, NodePath } from "@effect/platform-node"
import * as FileSystemTag from "@effect/platform/FileSystem"
import { assert, describe, it } from "@effect/vitest"
import { deepStrictEqual } from "@effect/vitest/utils"
import { Deferred, Effect, Exit, Fiber, Layer, Ref } from "effect"
import * as NFS from "node:fs/promises"
import * as OS from "node:os"
import * as NPath from "node:path"
import { ResolveRuntime, ResolveTool, SteeringBus, ToolChoiceQueue, ToolResult } from "../../src/index.js"
import * as FileEditPreview from "../../src/producers/FileEditPreview.js"
import { failureOf, successOf } from "../support/exits.js"
import * as FaultyFileSystem from "../support/FaultyFileSystem.js"

// -----------------------------------------------------------------------------------------------------------------
// helpers: a real temporary workspace per test
// -----------------------------------------------------------------------------------------------------------------

const tempDir = Effect.acquireRelease(
  Effect.promise(() => NFS.mkdtemp(NPath.join(OS.tmpdir(), "effect-resolve-edit-"))),
  (dir) => Effect.promise(() => NFS.rm(dir, { recursive: true, force: true }))
)

const writeFiles = (root: string, files: Record<string, string | Uint8Array>) =>
  Effect.promise(async () => {
    for (const [name, content] of Object.entries(files)) {
      await NFS.mkdir(NPath.dirname(NPath.join(root, name)), { recursive: true })
      await NFS.writeFile(NPath.join(root, name), content)
    }
  })

const readText = (root: string, name: string) => Effect.promise(() => NFS.readFile(NPath.join(root, name), "utf8"))
const listing = (root: string) => Effect.promise(() => NFS.readdir(root, { recursive: true }).then((l) => l.sort()))

interface Workspace {
  readonly root: string
  readonly plan: FaultyFileSystem.Plan
}

/** Runs `body` in a fresh session over a fresh temporary workspace holding `files`. */
const inWorkspace = <A, E>(
  files: Record<string, string | Uint8Array>,
  body: (
    ws: Workspace
  ) => Effect.Effect<
    A,
    E,
    ResolveRuntime.Services | FileEditPreview.Workspace | FileSystemTag.FileSystem | Path.Path
  >,
  limits: { readonly maxFiles?: number; readonly maxBytes?: number; readonly maxEdits?: number } = {}
) =>
  Effect.scoped(Effect.gen(function*() {
    const root = yield* tempDir
    yield* writeFiles(root, files)
    const plan = yield* FaultyFileSystem.makePlan
    const layer = Layer.mergeAll(
      ResolveRuntime.layer,
      FaultyFileSystem.layer(plan),
      NodePath.layer,
      FileEditPreview.layer({ root, ...limits })
    )
    return yield* body({ root, plan }).pipe(Effect.provide(layer))
  }))

const edit = (input: unknown) => FileEditPreview.tool.execute(input)

/** One model turn that calls resolve: serve the queue, call, end the turn. */
const turn = (call: { readonly action: "apply" | "discard"; readonly reason: string }) =>
  Effect.gen(function*() {
    const queue = yield* ToolChoiceQueue
    yield* queue.nextToolChoice
    const exit = yield* Effect.exit(ResolveTool.execute(call))
    yield* queue.resolve
    return exit
  })

const nothingStaged = Effect.gen(function*() {
  const queue = yield* ToolChoiceQueue
  const bus = yield* SteeringBus
  deepStrictEqual(yield* queue.inspect, [])
  deepStrictEqual(yield* bus.pending, [])
})

const one = (path: string, oldText: string, newText: string, replaceAll?: boolean) => ({
  files: [{ path, edits: [{ oldText, newText, ...(replaceAll === undefined ? {} : { replaceAll }) }] }]
})

// -----------------------------------------------------------------------------------------------------------------
// preview, apply, discard
// -----------------------------------------------------------------------------------------------------------------

describe("FileEditPreview", () => {
  it.live("is a ToolDefinition named edit with JSON Schema parameters", () =>
    Effect.sync(() => {
      assert.strictEqual(FileEditPreview.tool.name, "edit")
      const params = FileEditPreview.tool.parameters as any
      assert.strictEqual(params.type, "object")
      deepStrictEqual(params.required, ["files"])
      deepStrictEqual(params.properties.files.items.required, ["path", "edits"])
      deepStrictEqual(params.properties.files.items.properties.edits.items.required, [
        "oldText",
        "newText",
        "replaceAll"
      ])
    }))

  it.live("a preview writes nothing, shows the diff and stages one pending action", () =>
    inWorkspace({ "src/a.ts": "const a = 1\nconst b = 2\n" }, ({ root }) =>
      Effect.gen(function*() {
        const before = yield* listing(root)
        const result = yield* edit(one("src/a.ts", "const b = 2", "const b = 3"))
        const text = ToolResult.textOf(result)
        const [first] = text.split("\n")
        assert.strictEqual(first, FileEditPreview.previewHeadline)
        assert.include(first!, "Nothing is written yet")
        assert.include(
          text,
          "--- a/src/a.ts\n+++ b/src/a.ts\n@@ -1,2 +1,2 @@\n const a = 1\n-const b = 2\n+const b = 3"
        )
        assert.include(text, "Edit: 1 replacement in 1 file:\n  src/a.ts: 1 replacement")
        const details = result.details as any
        deepStrictEqual(details.files, [{ path: "src/a.ts", replacements: 1 }])
        assert.strictEqual(details.fileCount, 1)
        assert.strictEqual(details.replacements, 1)
        assert.strictEqual(yield* readText(root, "src/a.ts"), "const a = 1\nconst b = 2\n")
        deepStrictEqual(yield* listing(root), before)
        const queue = yield* ToolChoiceQueue
        deepStrictEqual(yield* queue.inspect, ["pending-action:edit"])
        const bus = yield* SteeringBus
        deepStrictEqual((yield* bus.pending).map((m) => m.customType), ["resolve-reminder"])
      })))

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
  // typed errors at preview time; nothing staged
  // ---------------------------------------------------------------------------------------------------------------

  describe("preview errors", () => {
    const files = { "a.txt": "one one two\n", "b.txt": "b\n", "bin.dat": new Uint8Array([0xff, 0xfe, 0x00, 0x80]) }

    const expectError = <T>(input: unknown, check: (error: unknown) => T, limits = {}) =>
      inWorkspace(files, ({ root }) =>
        Effect.gen(function*() {
          const before = yield* listing(root)
          const error = failureOf(yield* Effect.exit(edit(input)))
          check(error)
          yield* nothingStaged
          deepStrictEqual(yield* listing(root), before)
          assert.strictEqual(yield* readText(root, "a.txt"), "one one two\n")
        }), limits)

    it.live("oldText not found names the file and the edit", () =>
      expectError(
        { files: [{ path: "a.txt", edits: [{ oldText: "two", newText: "2" }, { oldText: "three", newText: "3" }] }] },
        (error) => {
          assert.instanceOf(error, FileEditPreview.EditTextNotFound)
          assert.strictEqual(error.path, "a.txt")
          assert.strictEqual(error.editIndex, 1)
          assert.include(error.message, "a.txt, edits[1]: oldText was not found")
        }
      ))

    it.live("oldText found more than once without replaceAll", () =>
      expectError(one("a.txt", "one", "1"), (error) => {
        assert.instanceOf(error, FileEditPreview.EditTextAmbiguous)
        assert.strictEqual(error.path, "a.txt")
        assert.strictEqual(error.editIndex, 0)
        assert.strictEqual(error.occurrences, 2)
        assert.include(error.message, "replaceAll")
      }))

    it.live("a later file's error stages nothing for the earlier files", () =>
      expectError(
        {
          files: [{ path: "b.txt", edits: [{ oldText: "b", newText: "B" }] }, {
            path: "nope.txt",
            edits: [{ oldText: "x", newText: "y" }]
          }]
        },
        (error) => {
          assert.instanceOf(error, FileEditPreview.EditFileMissing)
          assert.strictEqual(error.path, "nope.txt")
        }
      ))

    it.live("file not UTF-8", () =>
      expectError(one("bin.dat", "x", "y"), (error) => {
        assert.instanceOf(error, FileEditPreview.EditFileNotText)
        assert.strictEqual(error.path, "bin.dat")
      }))

    it.live("a directory is not a file", () =>
      inWorkspace({ "dir/x.txt": "x" }, () =>
        Effect.gen(function*() {
          const error = failureOf(yield* Effect.exit(edit(one("dir", "x", "y"))))
          assert.instanceOf(error, FileEditPreview.EditFileUnreadable)
          assert.include(error.message, "not a regular file")
          yield* nothingStaged
        })))

    it.live("`..` escapes the workspace", () =>
      expectError(one("../outside.txt", "x", "y"), (error) => {
        assert.instanceOf(error, FileEditPreview.EditPathOutsideWorkspace)
        assert.strictEqual(error.path, "../outside.txt")
        assert.isFalse(error.viaSymlink)
      }))

    it.live("an absolute path elsewhere", () =>
      expectError(one("/etc/hostname", "x", "y"), (error) => {
        assert.instanceOf(error, FileEditPreview.EditPathOutsideWorkspace)
        assert.isFalse(error.viaSymlink)
      }))

    it.live("an absolute path inside the workspace is accepted", () =>
      inWorkspace({ "a.txt": "x\n" }, ({ root }) =>
        Effect.gen(function*() {
          const result = yield* edit(one(NPath.join(root, "a.txt"), "x", "y"))
          deepStrictEqual((result.details as any).files, [{ path: "a.txt", replacements: 1 }])
        })))

    it.live("a symlink (file or directory) that resolves outside the workspace", () =>
      Effect.scoped(Effect.gen(function*() {
        const outside = yield* tempDir
        yield* writeFiles(outside, { "secret.txt": "secret\n" })
        yield* inWorkspace({ "a.txt": "a\n" }, ({ root }) =>
          Effect.gen(function*() {
            yield* Effect.promise(() => NFS.symlink(NPath.join(outside, "secret.txt"), NPath.join(root, "link.txt")))
            yield* Effect.promise(() => NFS.symlink(outside, NPath.join(root, "linkdir")))
            for (const path of ["link.txt", "linkdir/secret.txt"]) {
              const error = failureOf(yield* Effect.exit(edit(one(path, "secret", "leaked"))))
              assert.instanceOf(error, FileEditPreview.EditPathOutsideWorkspace)
              assert.strictEqual(error.path, path)
              assert.isTrue(error.viaSymlink)
            }
            yield* nothingStaged
          }))
        assert.strictEqual(yield* readText(outside, "secret.txt"), "secret\n")
      })))

    it.live("too many files", () =>
      expectError(
        {
          files: [{ path: "a.txt", edits: [{ oldText: "two", newText: "2" }] }, {
            path: "b.txt",
            edits: [{ oldText: "b", newText: "B" }]
          }]
        },
        (error) => {
          assert.instanceOf(error, FileEditPreview.EditLimitExceeded)
          assert.strictEqual(error.limit, "files")
          assert.strictEqual(error.max, 1)
          assert.strictEqual(error.actual, 2)
        },
        { maxFiles: 1 }
      ))

    it.live("too many bytes names the file that crosses the limit", () =>
      expectError(
        {
          files: [{ path: "b.txt", edits: [{ oldText: "b", newText: "B" }] }, {
            path: "a.txt",
            edits: [{ oldText: "two", newText: "2" }]
          }]
        },
        (error) => {
          assert.instanceOf(error, FileEditPreview.EditLimitExceeded)
          assert.strictEqual(error.limit, "bytes")
          assert.strictEqual(error.path, "a.txt")
          assert.strictEqual(error.actual, 2 + 12)
        },
        { maxBytes: 10 }
      ))

    it.live("the same file twice", () =>
      expectError(
        {
          files: [{ path: "b.txt", edits: [{ oldText: "b", newText: "B" }] }, {
            path: "./b.txt",
            edits: [{ oldText: "b", newText: "C" }]
          }]
        },
        (error) => {
          assert.instanceOf(error, FileEditPreview.InvalidEditParams)
          assert.strictEqual(error.field, "files.1.path")
        }
      ))

    it.live("invalid input names the field: excess property, empty lists, empty oldText, wrong type", () =>
      Effect.gen(function*() {
        const cases: Array<[unknown, string]> = [
          [{ files: [{ path: "a.txt", edits: [{ oldText: "a", newText: "b" }] }], force: true }, "force"],
          [{ files: [] }, "files"],
          [{ files: [{ path: "a.txt", edits: [] }] }, "files.0.edits"],
          [{ files: [{ path: "a.txt", edits: [{ oldText: "", newText: "b" }] }] }, "files.0.edits.0.oldText"],
          [{ files: [{ path: "a.txt", edits: [{ oldText: "a", newText: 1 }] }] }, "files.0.edits.0.newText"],
          [{ files: [{ path: "a.txt", edits: [{ oldText: "a" }] }] }, "files.0.edits.0.newText"],
          ["files", "(root)"]
        ]
        for (const [input, field] of cases) {
          yield* expectError(input, (error) => {
            assert.instanceOf(error, FileEditPreview.InvalidEditParams)
            assert.strictEqual(error.field, field)
          })
        }
      }))
  })

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

  it.live("works on the plain NodeContext layer", () =>
    Effect.scoped(Effect.gen(function*() {
      const root = yield* tempDir
      yield* writeFiles(root, { "a.txt": "a\n" })
      const layer = Layer.mergeAll(ResolveRuntime.layer, NodeContext.layer, FileEditPreview.layer({ root }))
      yield* Effect.gen(function*() {
        yield* edit(one("a.txt", "a", "b"))
        successOf(yield* turn({ action: "apply", reason: "ok" }))
      }).pipe(Effect.provide(layer))
      assert.strictEqual(yield* readText(root, "a.txt"), "b\n")
    })))
})

describe("FaultyFileSystem (test support)", () => {
  it.live("counts calls from arming, filters by path, fires once and records a journal", () =>
    Effect.scoped(Effect.gen(function*() {
      const root = yield* tempDir
      yield* writeFiles(root, { "a.txt": "a", "b.txt": "b" })
      const plan = yield* FaultyFileSystem.makePlan
      const journal = yield* Ref.make<ReadonlyArray<FaultyFileSystem.Call>>([])
      yield* Effect.gen(function*() {
        const fs = yield* FileSystemTag.FileSystem
        yield* fs.readFile(NPath.join(root, "a.txt"))
        yield* FaultyFileSystem.arm(
          plan,
          FaultyFileSystem.fail("readFile", 2, { path: (p) => p.endsWith("b.txt"), message: "boom" })
        )
        yield* fs.readFile(NPath.join(root, "a.txt")) // does not match the path filter
        yield* fs.readFile(NPath.join(root, "b.txt")) // 1st matching call
        const failed = yield* Effect.flip(fs.readFile(NPath.join(root, "b.txt"))) // 2nd: fires
        assert.strictEqual(failed._tag, "SystemError")
        assert.include(failed.message, "boom")
        yield* fs.readFile(NPath.join(root, "b.txt")) // fired once, gone
        deepStrictEqual(yield* Ref.get(plan), [])
        deepStrictEqual((yield* Ref.get(journal)).map((c) => [NPath.basename(c.path), c.failed]), [
          ["a.txt", false],
          ["a.txt", false],
          ["b.txt", false],
          ["b.txt", true],
          ["b.txt", false]
        ])
        assert.strictEqual(yield* fs.readFileString(NPath.join(root, "a.txt")), "a")
      }).pipe(Effect.provide(FaultyFileSystem.layer(plan, { journal })))
    })))
})

// -----------------------------------------------------------------------------------------------------------------
// issue 10: confinement at apply, the temporary file, hard links, bidi controls, names, strict schema, caps
// -----------------------------------------------------------------------------------------------------------------

/** The keywords OpenAI's strict function calling accepts in every provider's subset we target. */
const strictKeywords = new Set([
  "type",
  "properties",
  "required",
  "additionalProperties",
  "items",
  "anyOf",
  "enum",
  "const",
  "description",
  "title"
])

/** Every way `schema` breaks OpenAI's strict rules (empty when it follows them), with the place it does. */
const strictProblems = (schema: any, at = "(root)"): Array<string> => {
  const problems: Array<string> = []
  if (schema === null || typeof schema !== "object") return [`${at}: not a schema`]
  for (const key of Object.keys(schema)) {
    if (!strictKeywords.has(key)) problems.push(`${at}: keyword ${key} is not allowed`)
  }
  if (schema.type === "object") {
    if (schema.additionalProperties !== false) problems.push(`${at}: additionalProperties must be false`)
    const keys = Object.keys(schema.properties ?? {}).sort()
    if (JSON.stringify([...(schema.required ?? [])].sort()) !== JSON.stringify(keys)) {
      problems.push(`${at}: required must list every property`)
    }
    for (const key of keys) problems.push(...strictProblems(schema.properties[key], `${at}.${key}`))
  }
  if (schema.type === "array") problems.push(...strictProblems(schema.items, `${at}[]`))
  if (schema.anyOf !== undefined) {
    schema.anyOf.forEach((member: unknown, i: number) => problems.push(...strictProblems(member, `${at}|${i}`)))
  }
  if (schema.type === undefined && schema.anyOf === undefined) problems.push(`${at}: no type`)
  return problems
}

const outsideDir = tempDir

describe("FileEditPreview (issue 10)", () => {
  describe("the tool schema (issue 11 §4, edit tool)", () => {
    it.live("follows OpenAI's strict rules: closed objects, every property required, replaceAll nullable", () =>
      Effect.sync(() => {
        const params = FileEditPreview.tool.parameters as any
        deepStrictEqual(strictProblems(params), [])
        assert.strictEqual(params.type, "object")
        const text = JSON.stringify(params)
        for (const keyword of ["$schema", "$ref", "$defs", "definitions"]) assert.notInclude(text, keyword)
        deepStrictEqual(params.properties.files.items.properties.edits.items.properties.replaceAll.anyOf, [
          { type: "boolean" },
          { type: "null" }
        ])
        // The checker is not vacuous.
        assert.isNotEmpty(strictProblems({ type: "object", properties: { a: { type: "string", minLength: 1 } } }))
      }))

    it.live("decodes null and absence of replaceAll as not set; the decoded API is unchanged", () =>
      Effect.gen(function*() {
        const decoded = yield* FileEditPreview.decodeEditParams({
          files: [{
            path: "a.txt",
            edits: [
              { oldText: "a", newText: "b", replaceAll: null },
              { oldText: "c", newText: "d" },
              { oldText: "e", newText: "f", replaceAll: true }
            ]
          }]
        })
        deepStrictEqual(decoded, {
          files: [{
            path: "a.txt",
            edits: [{ oldText: "a", newText: "b" }, { oldText: "c", newText: "d" }, {
              oldText: "e",
              newText: "f",
              replaceAll: true
            }]
          }]
        })
        const error = yield* Effect.flip(FileEditPreview.decodeEditParams({
          files: [{ path: "a.txt", edits: [{ oldText: "a", newText: "b", replaceAll: "yes" }] }]
        }))
        assert.strictEqual(error.field, "files.0.edits.0.replaceAll")
        assert.include(error.problem, "must be true or false (or null: not set)")
      }))

    it.live("a strict-mode call (replaceAll: null) previews and applies like one without it", () =>
      inWorkspace({ "a.txt": "x y x\n" }, ({ root }) =>
        Effect.gen(function*() {
          const ambiguous = failureOf(
            yield* Effect.exit(
              edit({ files: [{ path: "a.txt", edits: [{ oldText: "x", newText: "z", replaceAll: null }] }] })
            )
          )
          assert.instanceOf(ambiguous, FileEditPreview.EditTextAmbiguous)
          yield* edit({ files: [{ path: "a.txt", edits: [{ oldText: "y", newText: "Y", replaceAll: null }] }] })
          successOf(yield* turn({ action: "apply", reason: "ok" }))
          assert.strictEqual(yield* readText(root, "a.txt"), "x Y x\n")
        })))
  })

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

  it.live("two names of one file (hard links) in one call are refused, naming both; nothing staged", () =>
    inWorkspace({ "hard.txt": "v = 1\nw = 1\n" }, ({ root }) =>
      Effect.gen(function*() {
        yield* Effect.promise(async () => {
          await NFS.mkdir(NPath.join(root, "a"))
          await NFS.link(NPath.join(root, "hard.txt"), NPath.join(root, "a/b.txt"))
        })
        const error = failureOf(
          yield* Effect.exit(edit({
            files: [
              { path: "hard.txt", edits: [{ oldText: "v = 1", newText: "v = 2" }] },
              { path: "a/b.txt", edits: [{ oldText: "w = 1", newText: "w = 2" }] }
            ]
          }))
        )
        assert.instanceOf(error, FileEditPreview.InvalidEditParams)
        assert.strictEqual(error.field, "files.1.path")
        assert.include(error.message, "\"a/b.txt\" and \"hard.txt\" are hard links to one file")
        yield* nothingStaged
        assert.strictEqual(yield* readText(root, "a/b.txt"), "v = 1\nw = 1\n")
      })))

  it.live("bidirectional control characters in newText are flagged in the preview, by file and line", () =>
    inWorkspace({ "src/auth.ts": "const ok = 1\nif (isAdmin) {\n}\n" }, () =>
      Effect.gen(function*() {
        const result = yield* edit(one("src/auth.ts", "if (isAdmin) {", "if (isAdmin\u202E) {\u2066// ok\u2069"))
        const text = ToolResult.textOf(result)
        assert.include(
          text,
          "Warning: src/auth.ts line 2 holds Unicode bidirectional control character(s) U+202E, U+2066, U+2069: "
        )
        const plain = yield* edit(one("src/auth.ts", "const ok = 1", "const ok = 2"))
        assert.notInclude(ToolResult.textOf(plain), "Warning:")
      })))

  it.live("non-ASCII paths appear in the diff headers as text; a line break in a name cannot forge a header", () =>
    inWorkspace({ "données/résumé.txt": "é = 1\n", "evil\n+++ b/other.txt": "x\n" }, () =>
      Effect.gen(function*() {
        const text = ToolResult.textOf(
          yield* edit({
            files: [
              { path: "données/résumé.txt", edits: [{ oldText: "é = 1", newText: "é = 2" }] },
              { path: "evil\n+++ b/other.txt", edits: [{ oldText: "x", newText: "y" }] }
            ]
          })
        )
        assert.include(text, "--- a/données/résumé.txt\n+++ b/données/résumé.txt\n@@ -1,1 +1,1 @@\n-é = 1\n+é = 2")
        assert.include(text, "--- \"a/evil\\n+++ b/other.txt\"\n+++ \"b/evil\\n+++ b/other.txt\"\n")
        assert.notInclude(text, "\n+++ b/other.txt\n")
      })))

  describe("caps on what one call may cost", () => {
    it.live("more edits than maxEdits: refused before reading anything", () =>
      inWorkspace({ "a.txt": "a\n" }, () =>
        Effect.gen(function*() {
          const edits = Array.from({ length: 3 }, () => ({ oldText: "a", newText: "a" }))
          const error = failureOf(yield* Effect.exit(edit({ files: [{ path: "a.txt", edits }] })))
          assert.instanceOf(error, FileEditPreview.EditLimitExceeded)
          assert.strictEqual(error.limit, "edits")
          assert.include(error.message, "Too many edits: 3 in one call, at most 2 are allowed")
          yield* nothingStaged
        }), { maxEdits: 2 }))

    it.live("edits that would grow the files past maxBytes: refused, naming the file", () =>
      inWorkspace({ "a.txt": "aaaaaaaaaa\n" }, () =>
        Effect.gen(function*() {
          const error = failureOf(yield* Effect.exit(edit(one("a.txt", "a", "a".repeat(1_000_000), true))))
          assert.instanceOf(error, FileEditPreview.EditLimitExceeded)
          assert.strictEqual(error.limit, "editedBytes")
          assert.strictEqual(error.path, "a.txt")
          assert.strictEqual(error.actual, 10_000_001)
          yield* nothingStaged
        }), { maxBytes: 1_000 }))
  })
})
