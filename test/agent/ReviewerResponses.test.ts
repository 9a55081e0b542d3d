/**
 * A reviewer's response on the session's side (issue 27, "respond"), through the public `TurnDriver` on a durable
 * session in memory: the model reads it once, through the session's `SteeringBus`; the save after that request marks
 * it delivered; when that mark fails, the next turn finds the response in the saved conversation and marks it then,
 * without telling the model twice. The inbox's side and the idle owner's wake-up are in
 * test/inbox/SessionPickup.test.ts.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Option, Ref, Stream } from "effect"
import * as ScriptedModel from "../../src/agent/ScriptedModel.js"
import { TurnDriver } from "../../src/agent/TurnDriver.js"
import {
  PendingActions,
  PendingStore,
  PendingStoreError,
  resolve,
  ResolveRuntime,
  ReviewerResponse,
  SteeringBus
} from "../../src/index.js"
import { Handlers, Tools } from "../support/noteTool.js"

const drive = (prompt: string) =>
  Effect.flatMap(TurnDriver, (driver) => Effect.either(driver.run(prompt, { maxTurns: 1, toolkit: Tools })))

describe("a reviewer's response, on the session's side", () => {
  it.live("read once through the SteeringBus; a failed delivery mark is made good by the next turn, not re-sent", () =>
    Effect.gen(function*() {
      const failMarks = yield* Ref.make(true)
      const marks = yield* Ref.make(0)
      // The memory store, whose markDelivered fails while `failMarks` is set.
      const store = Layer.effect(
        PendingStore,
        Effect.map(PendingStore, (inner): PendingStore.Service => ({
          ...inner,
          markDelivered: (input) =>
            Effect.flatMap(
              Ref.getAndUpdate(marks, (n) => n + 1),
              () =>
                Effect.flatMap(Ref.get(failMarks), (fail) =>
                  fail ?
                    Effect.fail(new PendingStoreError({ operation: "markDelivered", detail: "the test refused it" })) :
                    inner.markDelivered(input))
            )
        }))
      ).pipe(Layer.provideMerge(PendingStore.layerMemory))
      const layer = Layer.mergeAll(
        TurnDriver.layerWithoutDependencies({}),
        Handlers,
        ScriptedModel.layer([ScriptedModel.toolCall("note", { text: "one" }), "Read it.", "Still here."])
      ).pipe(Layer.provideMerge(ResolveRuntime.layerDurable({ session: "resp-1" })), Layer.provideMerge(store))

      yield* Effect.gen(function*() {
        const pendingStore = yield* PendingStore
        const bus = yield* SteeringBus
        yield* drive("Take a note")
        const [info] = yield* Effect.flatMap(PendingActions, (pending) => pending.listOpen)
        const id = info!.id
        const recorded = yield* pendingStore.recordResponse({
          id: yield* ReviewerResponse.makeId,
          actionId: id,
          reviewer: "ann",
          message: "Make it two",
          now: Date.now()
        })
        assert.strictEqual(recorded._tag, "Recorded")
        const steered = yield* bus.subscribe

        yield* drive("Continue.")
        const told = (yield* ScriptedModel.requests).at(-1)!.userTexts.filter((t) => t.includes("responded about"))
        assert.deepStrictEqual(told, [
          `A reviewer (ann) responded about ${id}, which stays pending: Make it two. Nothing was applied or ` +
          `discarded. Take it into account: stage a new preview, or resolve ${id} yourself.`
        ])
        // It went through the session's bus, as every hidden message does.
        const message = yield* Stream.runHead(steered)
        assert.strictEqual(Option.getOrThrow(message).customType, "reviewer-response")
        // The mark after the save failed: still undelivered in the store.
        assert.isAtLeast(yield* Ref.get(marks), 1)
        assert.strictEqual((yield* pendingStore.undeliveredResponses({ session: "resp-1", limit: 10 })).length, 1)

        yield* Ref.set(failMarks, false)
        yield* drive("And now?")
        const last = (yield* ScriptedModel.requests).at(-1)!
        assert.strictEqual(last.userTexts.filter((t) => t.includes("responded about")).length, 1, "not sent twice")
        assert.deepStrictEqual(yield* pendingStore.undeliveredResponses({ session: "resp-1", limit: 10 }), [])
        // Nothing was decided: the preview still waits.
        assert.deepStrictEqual(
          (yield* Effect.flatMap(PendingActions, (pending) => pending.listOpen)).map((i) => i.id),
          [id]
        )
      }).pipe(Effect.scoped, Effect.provide(layer))
    }))
  it.live("a response to an action settled before the session's turn says it is no longer pending", () =>
    Effect.gen(function*() {
      const pendingStore = yield* PendingStore
      yield* drive("Take a note")
      const [info] = yield* Effect.flatMap(PendingActions, (pending) => pending.listOpen)
      const id = info!.id
      yield* pendingStore.recordResponse({
        id: yield* ReviewerResponse.makeId,
        actionId: id,
        reviewer: "ann",
        message: "Shorter, please",
        now: Date.now()
      })
      // Another reviewer's decision settles it before the session's next turn.
      yield* resolve({ action: "discard", reason: "Not needed.", id })
      yield* drive("Continue.")
      const told = (yield* ScriptedModel.requests).at(-1)!.userTexts.filter((t) => t.includes("responded about"))
      assert.deepStrictEqual(told, [
        `A reviewer (ann) responded about ${id}, which is no longer pending: Shorter, please.`
      ])
    }).pipe(
      Effect.provide(
        Layer.mergeAll(
          TurnDriver.layerWithoutDependencies({}),
          Handlers,
          ScriptedModel.layer([ScriptedModel.toolCall("note", { text: "one" }), "Read it.", "Still here."])
        ).pipe(
          Layer.provideMerge(ResolveRuntime.layerDurable({ session: "resp-2" })),
          Layer.provideMerge(PendingStore.layerMemory)
        )
      )
    ))
})
