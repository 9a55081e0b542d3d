/**
 * The PendingActions contract (src/services/PendingActions.ts): a session's set is its own, and `make` refuses
 * options out of range. What each part of the set does is tested after the module that does it, in
 * test/services/internal/ (pendingSet, staging, resolving, storeMirror, reconcile, retention).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import {
  PendingActions,
  ResolveRuntime,
  ResolveTool,
  stage,
  ToolResult,
  UnknownPendingAction
} from "../../src/index.js"

const stageOne = (name: string) =>
  stage({
    label: `Edit: ${name}`,
    sourceToolName: "edit",
    preview: `diff of ${name}`,
    apply: (reason) => Effect.succeed(ToolResult.text(`wrote ${name} (${reason})`))
  })

const apply = (id?: string) => ResolveTool.execute({ action: "apply", reason: "Right.", extra: null, id: id ?? null })

describe("PendingActions", () => {
  it.effect("sessions never share actions", () =>
    Effect.gen(function*() {
      const a = yield* stageOne("a.ts").pipe(Effect.provide(ResolveRuntime.layer))
      const error = yield* Effect.flip(apply(a.id).pipe(Effect.provide(ResolveRuntime.layer)))
      assert.instanceOf(error, UnknownPendingAction)
    }))

  it.effect("retainSettled must be a whole number", () =>
    Effect.gen(function*() {
      const exit = yield* Effect.exit(Effect.provide(PendingActions, ResolveRuntime.layerWith({ retainSettled: -1 })))
      assert.isTrue(exit._tag === "Failure")
      assert.include(String(exit), "retainSettled must be a whole number")
    }))
})
