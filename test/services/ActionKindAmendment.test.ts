/**
 * A kind's amendment (what a reviewer may change before applying) reaches its `apply` only through
 * `ActionKind.withAmendment`, for the very action it names: a model's `resolve` call cannot pass one in `extra`.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Option, Schema } from "effect"
import { ActionKind, resolve, ResolveRuntime, stageKind, ToolResult } from "../../src/index.js"

const Note: ActionKind.ActionKind<{ readonly text: string }, { readonly text: string }, never, never> = ActionKind.make(
  {
    name: "note",
    payload: Schema.Struct({ text: Schema.String }),
    amendment: Schema.Struct({ text: Schema.String }),
    apply: (payload, call) =>
      Effect.map(
        Effect.orDie(ActionKind.amendmentOf(Note, call)),
        (amended) =>
          ToolResult.text(Option.match(amended, {
            onNone: () => `wrote ${payload.text}`,
            onSome: (a) => `wrote ${(a as { text: string }).text} (amended)`
          }))
      )
  }
)

const stage = (text: string) => stageKind(Note, { text }, { label: `Note: ${text}`, sourceToolName: "note" })

describe("ActionKind amendments", () => {
  it.effect("apply reads the reviewer's amendment of its own action, decoded", () =>
    Effect.gen(function*() {
      const a = yield* stage("a")
      const b = yield* stage("b")
      const amendment = { actionId: a.id, reviewer: "ann", encoded: { text: "A!" } }
      // The amendment names a: resolving b with it in scope applies b as staged.
      const other = yield* ActionKind.withAmendment(resolve({ action: "apply", reason: "ok", id: b.id }), amendment)
      assert.strictEqual(ToolResult.textOf(other), "wrote b")
      const amended = yield* ActionKind.withAmendment(resolve({ action: "apply", reason: "ok", id: a.id }), amendment)
      assert.strictEqual(ToolResult.textOf(amended), "wrote A! (amended)")
    }).pipe(Effect.provide(ResolveRuntime.layer)))

  it.effect("a model's extra.amendment is not an amendment", () =>
    Effect.gen(function*() {
      const a = yield* stage("a")
      const result = yield* resolve({ action: "apply", reason: "ok", id: a.id, extra: { amendment: { text: "evil" } } })
      assert.strictEqual(ToolResult.textOf(result), "wrote a")
    }).pipe(Effect.provide(ResolveRuntime.layer)))

  it.effect("an amendment that no longer decodes fails the apply and leaves the action pending", () =>
    Effect.gen(function*() {
      const a = yield* stage("a")
      const exit = yield* Effect.exit(
        ActionKind.withAmendment(resolve({ action: "apply", reason: "ok", id: a.id }), {
          actionId: a.id,
          reviewer: "ann",
          encoded: { text: 42 }
        })
      )
      assert.isTrue(exit._tag === "Failure")
      assert.strictEqual(yield* a.status, "pending")
    }).pipe(Effect.provide(ResolveRuntime.layer)))
})
