import { assert, describe, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import { queueResolveHandler, ResolveRuntime, ResolveTool, ToolChoiceQueue, ToolResult } from "../../src/index.js"

describe("resolve", () => {
  it.effect("applies the in-flight preview once", () =>
    Effect.gen(function*() {
      const queue = yield* ToolChoiceQueue
      let applied = 0
      const handle = yield* queueResolveHandler({
        label: "Edit: 1 replacement in 1 file",
        sourceToolName: "edit",
        apply: () => Effect.sync(() => (applied++, ToolResult.text("done")))
      })
      assert.deepStrictEqual(yield* queue.nextToolChoice, Option.some({ type: "tool" as const, name: "resolve" }))
      const result = yield* ResolveTool.execute({ action: "apply", reason: "ok" })
      assert.strictEqual(ToolResult.textOf(result), "done")
      assert.strictEqual(applied, 1)
      assert.strictEqual(yield* handle.status, "applied")
    }).pipe(Effect.provide(ResolveRuntime.layer)))
})
