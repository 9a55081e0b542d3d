/**
 * A kind's handlers as a layer (issue 27 §1, `ActionKind.toLayer`), through the public API: a session given the
 * contract alone runs it with the handlers the layer built (their own requirements taken when it was built), the
 * reviewer's amendment typed by the contract; staging with the contract uses the session's handlers; the types
 * require the handlers, and from JavaScript a contract without them is `InvalidOptions` naming the kind.
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Layer, Option, Schema } from "effect"
import {
  ActionKind,
  Decisions,
  PendingActions,
  PendingStore,
  resolve,
  ResolveRuntime,
  stageKind,
  ToolResult
} from "../../src/index.js"

class Greeter extends Context.Tag("test/Greeter")<Greeter, { readonly greet: (name: string) => string }>() {}

const Deploy = ActionKind.contract({
  name: "deploy",
  payload: Schema.Struct({ service: Schema.String }),
  amendment: Schema.Struct({ service: Schema.String })
})

// Built once per layer: the Greeter is read when the layer is built, not at each call.
const DeployHandlers = ActionKind.toLayer(
  Deploy,
  Effect.map(Greeter, (greeter) => ({
    apply: ({ service }: { readonly service: string }, call: ActionKind.Call<{ readonly service: string }>) =>
      Effect.succeed(
        ToolResult.text(
          `${greeter.greet(Option.getOrElse(Option.map(call.amendment, (a) => a.service), () => service))} ` +
            `(${call.reason})`
        )
      )
  }))
)

const session = (name: string) =>
  Layer.mergeAll(Decisions.layer, ResolveRuntime.layerDurable({ session: name, kinds: [Deploy] })).pipe(
    Layer.provide(DeployHandlers),
    Layer.provide(Layer.succeed(Greeter, { greet: (who) => `Deployed ${who}` })),
    Layer.provideMerge(PendingStore.layerMemory)
  )

// The types ask for the handlers of a contract given alone, and for nothing else.
type Needs = Layer.Layer.Context<ReturnType<typeof ResolveRuntime.layerDurable<[typeof Deploy]>>>
const needs: [Needs] extends [PendingStore | ActionKind.Handler<"deploy">] ?
  [PendingStore | ActionKind.Handler<"deploy">] extends [Needs] ? true : false :
  false = true
// @ts-expect-error a layer of other handlers does not satisfy the session
const _wrong: Layer.Layer<any, any, PendingStore> = ResolveRuntime.layerDurable({ session: "x", kinds: [Deploy] }).pipe(
  Layer.provide(ActionKind.toLayer(ActionKind.contract({ name: "other", payload: Schema.String }), {
    apply: () => Effect.succeed(ToolResult.text(""))
  }))
)

describe("ActionKind.toLayer", () => {
  it.live("a contract runs with the layer's handlers: staged with the contract, resolved, amended by a reviewer", () =>
    Effect.gen(function*() {
      assert.isTrue(needs)
      const first = yield* stageKind(Deploy, { service: "api" }, { label: "Deploy api", sourceToolName: "deploy" })
      const applied = yield* resolve({ action: "apply", reason: "ship it", id: first.id })
      assert.strictEqual(ToolResult.textOf(applied), "Deployed api (ship it)")

      const second = yield* stageKind(Deploy, { service: "api" }, { label: "Deploy api", sourceToolName: "deploy" })
      const decisions = yield* Decisions
      const recorded = yield* decisions.record({
        actionId: second.id,
        reviewer: "ann",
        action: "apply",
        reason: "web instead",
        amendment: { service: "web" }
      })
      if (recorded._tag !== "Recorded") return assert.fail(recorded._tag)
      const ran = yield* decisions.run(recorded.decision, "worker")
      assert.strictEqual(ran._tag, "Done")
      if (ran._tag === "Done") assert.strictEqual(ran.message, "Deployed web (web instead)")
      const open = yield* Effect.flatMap(PendingActions, (pending) => pending.listOpen)
      assert.deepStrictEqual(open, [])
    }).pipe(Effect.provide(session("deploys"))))

  it.live("from JavaScript, a contract without handlers in context is InvalidOptions naming it", () =>
    Effect.gen(function*() {
      const layer = ResolveRuntime.layerDurable({ session: "bare", kinds: [Deploy] }) as unknown as Layer.Layer<
        never,
        unknown,
        PendingStore
      >
      const error = yield* Effect.flip(Layer.build(layer).pipe(Effect.scoped, Effect.provide(PendingStore.layerMemory)))
      assert.strictEqual((error as { readonly _tag: string })._tag, "InvalidOptions")
      assert.include(String((error as Error).message), "\"deploy\"")
      assert.include(String((error as Error).message), "ActionKind.toLayer")
    }))
})
