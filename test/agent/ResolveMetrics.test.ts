/**
 * The turn driver's counts in a long-running server: each session keeps its own (`driver.metrics`), and the
 * process-wide metrics have bounded tags only, so opening sessions does not grow Effect's global metric registry.
 */
import { Tool, Toolkit } from "@effect/ai"
import { assert, describe, it } from "@effect/vitest"
import { deepStrictEqual } from "@effect/vitest/utils"
import { Effect, Layer, Metric, Schema } from "effect"
import * as ResolveMetrics from "../../src/agent/ResolveMetrics.js"
import * as ScriptedModel from "../../src/agent/ScriptedModel.js"
import { TurnDriver } from "../../src/agent/TurnDriver.js"
import { PendingActions, PendingStoreError, ResolveConfig, stage, ToolResult } from "../../src/index.js"

const Edit = Tool.make("edit", {
  parameters: { file: Schema.String },
  success: Schema.String,
  failure: PendingStoreError,
  dependencies: [PendingActions]
})
const Tools = Toolkit.make(Edit)
const handlers = Tools.toLayer({
  edit: ({ file }) =>
    Effect.as(
      stage({
        label: `Edit: ${file}`,
        sourceToolName: "edit",
        apply: () => Effect.succeed(ToolResult.text(`Wrote ${file}`))
      }),
      `Preview of ${file}`
    )
})

const session = (script: ScriptedModel.Script, sessionId?: string) =>
  Layer.mergeAll(TurnDriver.layer({ sessionId }), ScriptedModel.layer(script), handlers, ResolveConfig.layer({}))

/** A session that stages a preview, ignores the forced turn once, applies it, and stops: every series is touched. */
const busy: ScriptedModel.Script = [
  ScriptedModel.toolCall("edit", { file: "a.ts" }),
  "Not yet.",
  ScriptedModel.toolCall("resolve", { action: "apply", reason: "Right.", extra: null, id: null }),
  "Done."
]

const runIn = (script: ScriptedModel.Script, sessionId?: string) =>
  Effect.flatMap(TurnDriver, (driver) => Effect.zipRight(driver.run("Go.", { toolkit: Tools }), driver.metrics)).pipe(
    Effect.provide(session(script, sessionId))
  )

const ours = () => Metric.unsafeSnapshot().filter((pair) => pair.metricKey.name.startsWith("effect_resolve_"))

describe("ResolveMetrics", () => {
  it.effect("two sessions in one process keep their own counts, whatever their ids", () =>
    Effect.gen(function*() {
      const before = yield* ResolveMetrics.totals
      // The same id on purpose: the counts belong to the session, not to a tag.
      const first = yield* runIn(busy, "shared-id")
      const second = yield* runIn(["Hello."], "shared-id")
      deepStrictEqual(first, {
        turns: 4,
        forcedTurns: 2,
        toolChoiceChanges: 2,
        previews: { staged: 1, applied: 1, discarded: 0, failed: 0 },
        requeues: { error: 0, aborted: 0, not_invoked: 1 },
        forcingDegraded: { required: 0, reminder: 0 }
      })
      deepStrictEqual(second, {
        turns: 1,
        forcedTurns: 0,
        toolChoiceChanges: 0,
        previews: { staged: 0, applied: 0, discarded: 0, failed: 0 },
        requeues: { error: 0, aborted: 0, not_invoked: 0 },
        forcingDegraded: { required: 0, reminder: 0 }
      })
      // The process-wide metrics count both.
      const after = yield* ResolveMetrics.totals
      assert.strictEqual(after.turns - before.turns, 5)
      assert.strictEqual(after.forcedTurns - before.forcedTurns, 2)
      assert.strictEqual(after.previews.applied - before.previews.applied, 1)
      assert.strictEqual(after.requeues.not_invoked - before.requeues.not_invoked, 1)
      // The deprecated per-session read is the process's totals now.
      deepStrictEqual(yield* ResolveMetrics.snapshot("shared-id"), after)
    }))

  it.effect("1000 sessions do not grow the global metric registry; every tag is bounded", () =>
    Effect.gen(function*() {
      yield* runIn(busy)
      yield* ResolveMetrics.totals
      const before = Metric.unsafeSnapshot().length
      for (let i = 0; i < 1000; i++) yield* runIn(["Hello."], `session-${i}`)
      assert.strictEqual(Metric.unsafeSnapshot().length, before)
      const tags = new Set(ours().flatMap((pair) => pair.metricKey.tags.map((tag) => tag.key)))
      deepStrictEqual([...tags].sort(), ["outcome", "reason", "to"])
      // Twelve series at most: three untagged counters, and one series per outcome, reason and level.
      assert.isAtMost(ours().length, 3 + 4 + 3 + 2)
    }), { timeout: 60_000 })
})
