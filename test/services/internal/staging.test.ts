/**
 * How an action enters a session's pending set (src/services/internal/staging.ts), through the public API: its
 * forcing directive goes to the head of the queue before the reminder is steered, it has a unique id, its directive
 * comes back while it is pending and is dropped (the action cleared) when the queue is cleared; a durable kind's
 * action in memory runs like a closure.
 */
import { assert, describe, it } from "@effect/vitest"
import { deepStrictEqual } from "@effect/vitest/utils"
import { Effect, Layer, Option, Ref } from "effect"
import {
  NoPendingAction,
  PendingActions,
  Preview,
  type RejectReason,
  ResolveRuntime,
  ResolveTool,
  stage,
  stageKind,
  StandingResolveHandler,
  SteeringBus,
  SteeringMessage,
  ToolChoice,
  ToolChoiceQueue,
  ToolResult
} from "../../../src/index.js"
import { apply, Note, Notes } from "./durableSessions.js"

const resolveChoice = Option.some(ToolChoice.forceTool("resolve"))

const succeedWith = (text: string) => () => Effect.succeed(ToolResult.text(text))

/** A session whose queue and bus log every push and steer, in call order. */
const observedSession = (log: Ref.Ref<ReadonlyArray<string>>) => {
  const queue = Layer.effect(
    ToolChoiceQueue,
    Effect.map(ToolChoiceQueue, (inner) =>
      ToolChoiceQueue.of({
        ...inner,
        pushOnce: (choice, options) =>
          Effect.zipRight(Ref.update(log, (l) => [...l, `push ${options?.label}`]), inner.pushOnce(choice, options))
      }))
  ).pipe(Layer.provide(ToolChoiceQueue.layer))
  const bus = Layer.effect(
    SteeringBus,
    Effect.gen(function*() {
      const inner = yield* SteeringBus
      const q = yield* ToolChoiceQueue
      return SteeringBus.of({
        ...inner,
        steer: (input) =>
          Effect.flatMap(q.inspect, (queued) =>
            Effect.zipRight(
              Ref.update(log, (l) => [...l, `steer ${input.customType} (queued: ${queued.join(", ")})`]),
              inner.steer(input)
            ))
      })
    })
  ).pipe(Layer.provide(SteeringBus.layer))
  return PendingActions.layer().pipe(
    Layer.provideMerge(Layer.mergeAll(bus, StandingResolveHandler.layer)),
    Layer.provideMerge(queue)
  )
}
describe("stage (§5)", () => {
  it.effect("pushes the forced directive first, then steers the reminder", () =>
    Effect.gen(function*() {
      const log = yield* Ref.make<ReadonlyArray<string>>([])
      yield* stage({ label: "Edit: 1 file", sourceToolName: "edit", apply: succeedWith("ok") }).pipe(
        Effect.provide(observedSession(log))
      )
      deepStrictEqual(yield* Ref.get(log), [
        "push pending-action:edit",
        "steer resolve-reminder (queued: pending-action:edit)"
      ])
    }))

  it.effect("queues a one-shot forced resolve at the head, labelled pending-action:<source>", () =>
    Effect.gen(function*() {
      const queue = yield* ToolChoiceQueue
      yield* queue.pushOnce("auto", { label: "earlier" })
      const handle = yield* stage({
        label: "AST Edit: 2 replacements in 1 file",
        sourceToolName: "ast_edit",
        apply: succeedWith("ok")
      })
      assert.strictEqual(handle.label, "AST Edit: 2 replacements in 1 file")
      assert.strictEqual(handle.sourceToolName, "ast_edit")
      assert.strictEqual(Preview.directiveLabel("ast_edit"), "pending-action:ast_edit")
      deepStrictEqual(yield* queue.inspect, ["pending-action:ast_edit", "earlier"])
      deepStrictEqual(yield* queue.nextToolChoice, resolveChoice)
      const info = Option.getOrThrow(yield* queue.inFlight)
      deepStrictEqual([info.id, info.label, info.requeues], [handle.id, "pending-action:ast_edit", 0])
      // One-shot: nothing of it stays queued.
      deepStrictEqual(yield* queue.inspect, ["earlier"])
      // The directive carries the action's id and no handler of its own: resolve reads the pending set.
      assert.strictEqual(info.id, handle.id)
      assert.isTrue(Option.isNone(yield* queue.peekInFlightInvoker))
    }).pipe(Effect.provide(ResolveRuntime.layer)))

  it.effect("steers the SPEC's reminder with { toolName }", () =>
    Effect.gen(function*() {
      const bus = yield* SteeringBus
      yield* stage({ label: "Plan", sourceToolName: "exit_plan_mode", apply: succeedWith("ok") })
      const [reminder, ...rest] = yield* bus.drain
      deepStrictEqual(rest, [])
      assert.strictEqual(reminder!.customType, "resolve-reminder")
      assert.strictEqual(reminder!.content, SteeringMessage.resolveReminderText)
      deepStrictEqual(reminder!.details, { toolName: "exit_plan_mode" })
      assert.isFalse(reminder!.display)
      assert.strictEqual(reminder!.attribution, "agent")
    }).pipe(Effect.provide(ResolveRuntime.layer)))

  it.effect("gives every preview a unique id, even with the same label and source", () =>
    Effect.gen(function*() {
      const handles = yield* Effect.forEach(
        Array.from({ length: 20 }, () => 0),
        () => stage({ label: "Edit", sourceToolName: "edit", apply: succeedWith("ok") }),
        { concurrency: "unbounded" }
      )
      assert.strictEqual(new Set(handles.map((h) => h.id)).size, 20)
    }).pipe(Effect.provide(ResolveRuntime.layer)))

  it.effect("stacked previews resolve most recent first, one forced turn each", () =>
    Effect.gen(function*() {
      const queue = yield* ToolChoiceQueue
      const applied = yield* Ref.make<ReadonlyArray<string>>([])
      const stageOne = (name: string) =>
        stage({
          label: `Edit: ${name}`,
          sourceToolName: name,
          apply: () => Effect.as(Ref.update(applied, (a) => [...a, name]), ToolResult.text(`applied ${name}`))
        })
      const a = yield* stageOne("a")
      const b = yield* stageOne("b")
      const c = yield* stageOne("c")
      deepStrictEqual(yield* queue.inspect, ["pending-action:c", "pending-action:b", "pending-action:a"])
      const order: Array<string> = []
      for (const expected of [c, b, a]) {
        deepStrictEqual(yield* queue.nextToolChoice, resolveChoice)
        assert.strictEqual(Option.getOrThrow(yield* queue.inFlight).id, expected.id)
        const result = yield* ResolveTool.execute({ action: "apply", reason: "ok" })
        order.push(ToolResult.textOf(result))
        yield* queue.resolve
      }
      deepStrictEqual(order, ["applied c", "applied b", "applied a"])
      deepStrictEqual(yield* Ref.get(applied), ["c", "b", "a"])
      for (const handle of [a, b, c]) assert.strictEqual(yield* handle.status, "applied")
      assert.isTrue(Option.isNone(yield* queue.nextToolChoice))
    }).pipe(Effect.provide(ResolveRuntime.layer)))

  it.effect("a model that ignores the forced choice does not lose the preview", () =>
    Effect.gen(function*() {
      const queue = yield* ToolChoiceQueue
      const handle = yield* stage({ label: "Edit", sourceToolName: "edit", apply: succeedWith("ok") })
      for (let turn = 1; turn <= 3; turn++) {
        yield* queue.nextToolChoice
        yield* queue.resolve // answered with text: not invoked
        assert.strictEqual(yield* handle.status, "pending")
        deepStrictEqual(yield* queue.inspect, ["pending-action:edit"])
      }
      yield* queue.nextToolChoice
      assert.strictEqual(Option.getOrThrow(yield* queue.inFlight).requeues, 3)
      yield* ResolveTool.execute({ action: "apply", reason: "ok" })
      yield* queue.resolve
      deepStrictEqual(yield* queue.inspect, [])
    }).pipe(Effect.provide(ResolveRuntime.layer)))

  it.effect("is requeued on every rejection while pending", () =>
    Effect.gen(function*() {
      const queue = yield* ToolChoiceQueue
      const handle = yield* stage({ label: "Edit", sourceToolName: "edit", apply: succeedWith("ok") })
      const reasons: ReadonlyArray<RejectReason> = ["aborted", "error", "unavailable", "not_invoked"]
      for (const reason of reasons) {
        yield* queue.nextToolChoice
        yield* queue.reject(reason)
        deepStrictEqual(yield* queue.inspect, ["pending-action:edit"], reason)
      }
      assert.strictEqual(yield* handle.status, "pending")
    }).pipe(Effect.provide(ResolveRuntime.layer)))

  it.effect("is discarded after a discard and cleared after clear or removeByLabel", () =>
    Effect.gen(function*() {
      const queue = yield* ToolChoiceQueue
      const discarded = yield* stage({ label: "A", sourceToolName: "a", apply: succeedWith("ok") })
      yield* queue.nextToolChoice
      yield* ResolveTool.execute({ action: "discard", reason: "no" })
      yield* queue.resolve
      assert.strictEqual(yield* discarded.status, "discarded")

      const queued = yield* stage({ label: "B", sourceToolName: "b", apply: succeedWith("ok") })
      const inFlight = yield* stage({ label: "C", sourceToolName: "c", apply: succeedWith("ok") })
      yield* queue.nextToolChoice
      yield* queue.clear
      assert.strictEqual(yield* queued.status, "cleared")
      assert.strictEqual(yield* inFlight.status, "cleared")

      const removed = yield* stage({ label: "D", sourceToolName: "d", apply: succeedWith("ok") })
      assert.strictEqual(yield* queue.removeByLabel("pending-action:d"), 1)
      assert.strictEqual(yield* removed.status, "cleared")
      deepStrictEqual(yield* queue.inspect, [])
      // A cleared action cannot be resolved.
      assert.instanceOf(yield* Effect.flip(ResolveTool.execute({ action: "apply", reason: "r" })), NoPendingAction)
    }).pipe(Effect.provide(ResolveRuntime.layer)))
})

describe("durable kinds", () => {
  it.effect("in memory, a kind action runs like a closure and keeps no store", () =>
    Effect.gen(function*() {
      const notes = yield* Notes
      const handle = yield* stageKind(Note, { text: "quick" }, { label: "Note: quick", sourceToolName: "note" })
      assert.isFalse(yield* Effect.map(PendingActions, (p) => p.durable))
      yield* apply(handle.id)
      deepStrictEqual(yield* Ref.get(notes), ["quick (ok, attempt 1)"])
      assert.strictEqual(yield* handle.status, "applied")
      deepStrictEqual(Option.isSome(yield* Effect.flatMap(PendingActions, (p) => p.get(handle.id))), true)
    }).pipe(
      Effect.provide(ResolveRuntime.layer),
      Effect.provideServiceEffect(Notes, Ref.make<ReadonlyArray<string>>([]))
    ))
})
