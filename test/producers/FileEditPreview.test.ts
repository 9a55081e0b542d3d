/**
 * `FileEditPreview`: the `edit` tool itself, and the producer end to end on the plain `NodeContext` layer. Its parts
 * have their own tests: `EditParams`, `EditPreview`, `EditApply` (apply and discard), `EditRecover`, `EditDiff`.
 */
import { NodeContext } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { deepStrictEqual } from "@effect/vitest/utils"
import { Effect, Layer } from "effect"
import { ResolveRuntime } from "../../src/index.js"
import * as FileEditPreview from "../../src/producers/FileEditPreview.js"
import { edit, one, readText, tempDir, turn, writeFiles } from "../support/editWorkspace.js"
import { successOf } from "../support/exits.js"

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
