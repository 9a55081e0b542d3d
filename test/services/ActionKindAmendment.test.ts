/**
 * A kind is a contract (data, no requirements) plus handlers. A reviewer's amendment reaches `apply` only as
 * `call.amendment`, decoded with the contract's Schema and typed by it, for the very action it names, passed by the
 * process running the reviewer's decision (`resolveAmended`): a model's `resolve` call cannot pass one in `extra`.
 */
import { assert, describe, expectTypeOf, it } from "@effect/vitest"
import { Context, Effect, Layer, Option, Schema } from "effect"
import {
  ActionKind,
  PendingActions,
  PendingStore,
  resolve,
  resolveAmended,
  ResolveRuntime,
  stageKind,
  ToolResult
} from "../../src/index.js"
import { makeMemory } from "../../src/services/PendingStore.js"

class Prefix extends Context.Tag("test/Prefix")<Prefix, string>() {}

const NoteContract = ActionKind.contract({
  name: "note",
  payload: Schema.Struct({ text: Schema.String }),
  amendment: Schema.Struct({
    text: Schema.String,
    loud: Schema.optionalWith(Schema.Boolean, { default: () => false })
  }),
  amendmentDraft: ({ text }) => Option.some({ text })
})

const Note = ActionKind.implement(NoteContract, {
  apply: (payload, call) =>
    Effect.map(Prefix, (prefix) =>
      ToolResult.text(Option.match(call.amendment, {
        onNone: () => `${prefix}wrote ${payload.text}`,
        // Typed by the contract, and decoded: the default of `loud` is filled in.
        onSome: (a) => `${prefix}wrote ${a.loud ? a.text.toUpperCase() : a.text} (amended, loud: ${a.loud})`
      })))
})

const stage = (text: string) => stageKind(Note, { text }, { label: `Note: ${text}`, sourceToolName: "note" })

const session = ResolveRuntime.layer.pipe(Layer.merge(Layer.succeed(Prefix, "")))

describe("ActionKind contracts and handlers", () => {
  it("a contract is data with no requirements; its handlers' requirements are the kind's", () => {
    expectTypeOf<ActionKind.Requirements<[typeof NoteContract]>>().toEqualTypeOf<never>()
    expectTypeOf<ActionKind.Requirements<[typeof Note]>>().toEqualTypeOf<Prefix>()
    expectTypeOf<ActionKind.Requirements<[typeof NoteContract, typeof Note]>>().toEqualTypeOf<Prefix>()
    expectTypeOf<ActionKind.Requirements<[]>>().toEqualTypeOf<never>()
    assert.isFalse(ActionKind.isRunnable(NoteContract))
    assert.isTrue(ActionKind.isRunnable(Note))
    // The kind carries its contract's parts.
    assert.strictEqual(Note.name, "note")
    assert.strictEqual(Note.amendment, NoteContract.amendment)
    assert.strictEqual(Note.amendmentDraft, NoteContract.amendmentDraft)
  })

  it("call.amendment is typed by the amendment Schema, with make as with implement", () => {
    ActionKind.make({
      name: "typed",
      payload: Schema.Struct({ n: Schema.Number }),
      amendment: Schema.Struct({ n: Schema.NumberFromString }),
      apply: (payload, call) => {
        expectTypeOf(call.amendment).toEqualTypeOf<Option.Option<{ readonly n: number }>>()
        return Effect.succeed(
          ToolResult.text(String(Option.getOrElse(Option.map(call.amendment, (a) => a.n), () => payload.n)))
        )
      }
    })
    ActionKind.implement(NoteContract, {
      apply: (_payload, call) => {
        expectTypeOf(call.amendment).toEqualTypeOf<Option.Option<{ readonly text: string; readonly loud: boolean }>>()
        return Effect.succeed(ToolResult.text("ok"))
      }
    })
  })

  it.effect("apply gets the reviewer's amendment of its own action, decoded", () =>
    Effect.gen(function*() {
      const a = yield* stage("a")
      const b = yield* stage("b")
      const amendment = { actionId: a.id, reviewer: "ann", encoded: { text: "A!", loud: true } }
      // resolveAmended applies the action the amendment names, amended.
      const amended = yield* resolveAmended({ reason: "ok" }, amendment)
      assert.strictEqual(ToolResult.textOf(amended), "wrote A! (amended, loud: true)")
      // The encoded form is decoded: a missing `loud` gets its default.
      const plain = yield* resolveAmended({ reason: "ok" }, {
        actionId: b.id,
        reviewer: "ann",
        encoded: { text: "b2" }
      })
      assert.strictEqual(ToolResult.textOf(plain), "wrote b2 (amended, loud: false)")
    }).pipe(Effect.provide(session)))

  it.effect("an amendment naming another action is not applied to this one", () =>
    Effect.gen(function*() {
      const a = yield* stage("a")
      const b = yield* stage("b")
      const pending = yield* PendingActions
      const result = yield* pending.resolveOr(
        { action: "apply", reason: "ok", id: b.id },
        () => Effect.die("no fallback"),
        { amendment: { actionId: a.id, reviewer: "ann", encoded: { text: "A!" } } }
      )
      assert.strictEqual(ToolResult.textOf(result), "wrote b")
    }).pipe(Effect.provide(session)))

  it.effect("a model's extra.amendment is not an amendment", () =>
    Effect.gen(function*() {
      const a = yield* stage("a")
      const result = yield* resolve({ action: "apply", reason: "ok", id: a.id, extra: { amendment: { text: "evil" } } })
      assert.strictEqual(ToolResult.textOf(result), "wrote a")
      assert.deepStrictEqual(ToolResult.textOf(result).includes("evil"), false)
    }).pipe(Effect.provide(session)))

  it.effect("an amendment that no longer decodes fails typed before the claim: nothing changes", () =>
    Effect.gen(function*() {
      const a = yield* stage("a")
      const error = yield* Effect.flip(
        resolveAmended({ reason: "ok" }, { actionId: a.id, reviewer: "ann", encoded: { text: 42 } })
      )
      assert.strictEqual(error._tag, "ApplyFailed")
      assert.include(error.message, "no longer matches")
      const pending = yield* PendingActions
      const info = yield* pending.get(a.id)
      assert.isTrue(Option.isSome(info))
      if (Option.isSome(info)) {
        assert.strictEqual(info.value.status, "pending")
        assert.strictEqual(info.value.attempts, 0)
      }
      // Still appliable as staged.
      const result = yield* resolve({ action: "apply", reason: "as staged", id: a.id })
      assert.strictEqual(ToolResult.textOf(result), "wrote a")
    }).pipe(Effect.provide(session)))

  it.effect("durable: an undecodable amendment leaves the stored record untouched", () =>
    Effect.gen(function*() {
      const store = makeMemory()
      const layer = ResolveRuntime.layerDurable({ session: "s", kinds: [Note] }).pipe(
        Layer.provide(Layer.succeed(PendingStore, store)),
        Layer.provide(Layer.succeed(Prefix, "durable: "))
      )
      yield* Effect.gen(function*() {
        const a = yield* stage("a")
        const before = yield* store.get(a.id)
        const exit = yield* Effect.exit(
          resolveAmended({ reason: "ok" }, { actionId: a.id, reviewer: "ann", encoded: { text: 42 } })
        )
        assert.isTrue(exit._tag === "Failure")
        const after = yield* store.get(a.id)
        assert.deepStrictEqual(after, before)
        const amended = yield* resolveAmended({ reason: "ok" }, {
          actionId: a.id,
          reviewer: "ann",
          encoded: { text: "x" }
        })
        assert.strictEqual(ToolResult.textOf(amended), "durable: wrote x (amended, loud: false)")
      }).pipe(Effect.provide(layer), Effect.provide(Layer.succeed(Prefix, "durable: ")))
    }))

  it.effect("the deprecated amendmentOf returns call.amendment", () =>
    Effect.gen(function*() {
      type Text = { readonly text: string }
      const Old: ActionKind.ActionKind<Text, Text, never, never> = ActionKind.make({
        name: "old",
        payload: Schema.Struct({ text: Schema.String }),
        amendment: Schema.Struct({ text: Schema.String }),
        apply: (payload, call) =>
          Effect.map(
            Effect.orDie(ActionKind.amendmentOf(Old, call)),
            (amended) => ToolResult.text(Option.match(amended, { onNone: () => payload.text, onSome: (a) => a.text }))
          )
      })
      const a = yield* stageKind(Old, { text: "a" }, { label: "Old", sourceToolName: "old" })
      const result = yield* resolveAmended({ reason: "ok" }, {
        actionId: a.id,
        reviewer: "ann",
        encoded: { text: "z" }
      })
      assert.strictEqual(ToolResult.textOf(result), "z")
    }).pipe(Effect.provide(ResolveRuntime.layer)))
})
