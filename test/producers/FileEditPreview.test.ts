/**
 * `FileEditPreview`: the `edit` tool itself, and the producer end to end on the plain `NodeContext` layer. Its parts
 * have their own tests: `EditParams`, `EditPreview`, `EditApply` (apply and discard), `EditRecover`, `EditDiff`.
 */
import { NodeContext } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { deepStrictEqual } from "@effect/vitest/utils"
import { Effect, Layer } from "effect"
import * as NFS from "node:fs/promises"
import * as NPath from "node:path"
import { PendingActions, ResolveRuntime, ResolveTool, SteeringBus, ToolChoiceQueue } from "../../src/index.js"
import * as FileEditPreview from "../../src/producers/FileEditPreview.js"
import { edit, inWorkspace, one, readText, tempDir, turn, writeFiles } from "../support/editWorkspace.js"
import { failureOf, successOf } from "../support/exits.js"

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

describe("FileEditPreview: two pending previews never hold the same file", () => {
  const idOf = (result: { readonly details?: unknown }) =>
    (result.details as { pendingActionId: string }).pendingActionId

  it.live("a second preview of a held file is refused, naming the holder; nothing is staged; both reach apply once", () =>
    inWorkspace({ "a.txt": "one\n", "b.txt": "two\n" }, ({ root }) =>
      Effect.gen(function*() {
        const pending = yield* PendingActions
        const queue = yield* ToolChoiceQueue
        const bus = yield* SteeringBus
        const first = successOf(yield* Effect.exit(edit(one("a.txt", "one", "ONE"))))
        const firstId = idOf(first)
        // Another file is fine: both are pending.
        const other = successOf(yield* Effect.exit(edit(one("b.txt", "two", "TWO"))))
        const queued = (yield* queue.inspect).length
        const steered = (yield* bus.pending).length
        // The same file, by another spelling of its path: refused.
        const error = failureOf(
          yield* Effect.exit(edit({
            files: [
              { path: "b.txt", edits: [{ oldText: "two", newText: "2" }] },
              { path: "./a.txt", edits: [{ oldText: "one", newText: "1" }] }
            ]
          }))
        )
        assert.instanceOf(error, FileEditPreview.EditFileHeld)
        const held = error as FileEditPreview.EditFileHeld
        deepStrictEqual([held.heldBy, held.path], [firstId, "./a.txt"])
        assert.include(held.message, held.heldBy)
        assert.include(held.message, "fold both edits into one edit call")
        assert.include(held.message, "resolve")
        // Nothing was staged by the refused call.
        assert.strictEqual((yield* pending.list).length, 2)
        assert.strictEqual((yield* queue.inspect).length, queued)
        assert.strictEqual((yield* bus.pending).length, steered)
        // Once the first is resolved, the file is free again.
        successOf(yield* Effect.exit(ResolveTool.execute({ action: "apply", reason: "ok", id: firstId })))
        assert.strictEqual(yield* readText(root, "a.txt"), "ONE\n")
        const again = successOf(yield* Effect.exit(edit(one("a.txt", "ONE", "1"))))
        successOf(yield* Effect.exit(ResolveTool.execute({ action: "apply", reason: "ok", id: idOf(again) })))
        successOf(yield* Effect.exit(ResolveTool.execute({ action: "discard", reason: "no", id: idOf(other) })))
        assert.strictEqual(yield* readText(root, "a.txt"), "1\n")
        assert.strictEqual(yield* readText(root, "b.txt"), "two\n")
      })))

  it.live("a symlink to a held file is the same file", () =>
    inWorkspace({ "a.txt": "one\n" }, ({ root }) =>
      Effect.gen(function*() {
        yield* Effect.promise(() => NFS.symlink(NPath.join(root, "a.txt"), NPath.join(root, "link.txt")))
        const first = successOf(yield* Effect.exit(edit(one("a.txt", "one", "ONE"))))
        const error = failureOf(yield* Effect.exit(edit(one("link.txt", "one", "1"))))
        assert.instanceOf(error, FileEditPreview.EditFileHeld)
        assert.strictEqual((error as FileEditPreview.EditFileHeld).heldBy, idOf(first))
        assert.strictEqual((error as FileEditPreview.EditFileHeld).path, "link.txt")
      })))

  it.live("a discarded preview frees its files", () =>
    inWorkspace({ "a.txt": "one\n" }, () =>
      Effect.gen(function*() {
        yield* edit(one("a.txt", "one", "ONE"))
        successOf(yield* turn({ action: "discard", reason: "no" }))
        successOf(yield* Effect.exit(edit(one("a.txt", "one", "1"))))
      })))
})
