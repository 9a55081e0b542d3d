import { assert, describe, it } from "@effect/vitest"
import { deepStrictEqual } from "@effect/vitest/utils"
import { Effect } from "effect"
import { NoPendingAction, ResolveConfig, ResolveRuntime, ResolveTool, ToolResult } from "../../src/index.js"

const discardNothing = ResolveTool.execute({ action: "discard", reason: "stale" })

describe("ResolveConfig", () => {
  it.effect("defaults without being provided: discard with nothing pending fails", () =>
    Effect.gen(function*() {
      const config = yield* ResolveConfig
      assert.strictEqual(config.discardWithoutPending, "fail")
      assert.strictEqual(config, ResolveConfig.defaults)
      assert.instanceOf(yield* Effect.flip(discardNothing), NoPendingAction)
    }).pipe(Effect.provide(ResolveRuntime.layer)))

  it.effect("layer overrides the given options and keeps the other defaults", () =>
    Effect.gen(function*() {
      const config = yield* ResolveConfig
      assert.strictEqual(config.discardWithoutPending, "succeed")
      for (const key of Object.keys(ResolveConfig.defaults) as Array<keyof typeof config>) {
        if (key !== "discardWithoutPending") deepStrictEqual(config[key], ResolveConfig.defaults[key], key)
      }
      assert.strictEqual(
        ToolResult.textOf(yield* discardNothing),
        "Nothing to discard; no pending action remains."
      )
    }).pipe(
      Effect.provide(ResolveRuntime.layer),
      Effect.provide(ResolveConfig.layer({ discardWithoutPending: "succeed" }))
    ))

  it.effect("the layer does not leak into programs it is not provided to", () =>
    Effect.gen(function*() {
      yield* Effect.provide(discardNothing, ResolveConfig.layer({ discardWithoutPending: "succeed" }))
      assert.strictEqual((yield* ResolveConfig).discardWithoutPending, "fail")
    }).pipe(Effect.provide(ResolveRuntime.layer)))
})
