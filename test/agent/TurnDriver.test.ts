/**
 * The turn driver's loop (`src/agent/TurnDriver.ts`, `src/agent/internal/loop.ts`), through the public API: a run's
 * turns end to end, a failed, retried or interrupted request and what becomes of the served preview, the spans, the
 * `maxTurns` bound, a session's isolation, and the history a long session sends.
 */
import { Tool, Toolkit } from "@effect/ai"
import { assert, describe, it } from "@effect/vitest"
import { deepStrictEqual } from "@effect/vitest/utils"
import { Deferred, Effect, Exit, Fiber, Layer, Option, Ref, Schedule, Schema, type Tracer } from "effect"
import * as ScriptedModel from "../../src/agent/ScriptedModel.js"
import { TurnDriver } from "../../src/agent/TurnDriver.js"
import { SteeringMessage, ToolChoiceQueue } from "../../src/index.js"
import { AppTools, countReminders, editCall, makeWorld, resolveCall, session, statusOf } from "../support/turnDriver.js"

describe("TurnDriver", () => {
  it.effect("forced mode: the request after a preview forces resolve and carries the reminder; resolve applies", () =>
    Effect.gen(function*() {
      const world = yield* makeWorld
      yield* Effect.gen(function*() {
        const driver = yield* TurnDriver
        const result = yield* driver.run("Say hello in a.ts", { toolkit: AppTools })
        assert.strictEqual(result.text, "Done.")
        const requests = yield* ScriptedModel.requests
        deepStrictEqual(requests.map((r) => r.toolChoice), ["auto", { tool: "resolve" }, "auto"])
        assert.strictEqual(countReminders(requests[1]!.userTexts), 1)
        assert.strictEqual(countReminders(requests[0]!.userTexts), 0)
        deepStrictEqual(requests[0]!.tools, ["edit", "search", "resolve"])
        deepStrictEqual(yield* Ref.get(world.files), { "a.ts": "hello" })
        assert.strictEqual(yield* statusOf(world), "applied")
        const metrics = yield* driver.metrics
        assert.strictEqual(metrics.turns, 3)
        assert.strictEqual(metrics.forcedTurns, 1)
        assert.strictEqual(metrics.toolChoiceChanges, 2)
        deepStrictEqual(metrics.previews, { staged: 1, applied: 1, discarded: 0, failed: 0 })
        deepStrictEqual(metrics.requeues, { error: 0, aborted: 0, not_invoked: 0 })
      }).pipe(
        Effect.provide(session([editCall(), resolveCall("apply"), ScriptedModel.text("Done.")], world))
      )
    }))

  it.effect("a model error requeues the served preview; the next run is forced to resolve", () =>
    Effect.gen(function*() {
      const world = yield* makeWorld
      yield* Effect.gen(function*() {
        const driver = yield* TurnDriver
        const queue = yield* ToolChoiceQueue
        const failed = yield* Effect.exit(driver.run("Edit", { toolkit: AppTools }))
        assert.isTrue(Exit.isFailure(failed))
        deepStrictEqual(yield* queue.inspect, ["pending-action:edit"])
        assert.strictEqual(yield* statusOf(world), "pending")
        assert.strictEqual((yield* driver.metrics).requeues.error, 1)
        yield* driver.run("Go on", { toolkit: AppTools })
        const requests = yield* ScriptedModel.requests
        deepStrictEqual(requests[2]!.toolChoice, { tool: "resolve" })
        // The reminder of the failed request is carried into the next one.
        assert.strictEqual(countReminders(requests[2]!.userTexts), 1)
        assert.strictEqual(yield* statusOf(world), "applied")
      }).pipe(Effect.provide(session(
        [editCall(), ScriptedModel.fail("overloaded"), resolveCall("apply"), ScriptedModel.text("Done.")],
        world
      )))
    }))

  it.effect("a retried request reuses the turn's tool choice: one logical turn, no requeue", () =>
    Effect.gen(function*() {
      const world = yield* makeWorld
      yield* Effect.gen(function*() {
        const driver = yield* TurnDriver
        yield* driver.run("Edit", { toolkit: AppTools, retry: Schedule.recurs(1) })
        const requests = yield* ScriptedModel.requests
        deepStrictEqual(requests.map((r) => r.toolChoice), [
          "auto",
          { tool: "resolve" },
          { tool: "resolve" },
          "auto"
        ])
        assert.strictEqual(yield* statusOf(world), "applied")
        const metrics = yield* driver.metrics
        assert.strictEqual(metrics.turns, 3)
        assert.strictEqual(metrics.toolChoiceChanges, 2)
        assert.strictEqual(metrics.requeues.error, 0)
      }).pipe(Effect.provide(session(
        [editCall(), ScriptedModel.fail("overloaded"), resolveCall("apply"), ScriptedModel.text("Done.")],
        world
      )))
    }))

  it.live("a run whose first request fails keeps its prompt: the next run's request still holds it", () =>
    Effect.gen(function*() {
      const world = yield* makeWorld
      yield* Effect.gen(function*() {
        const driver = yield* TurnDriver
        const failed = yield* Effect.either(driver.run("Rename foo to bar.", { toolkit: AppTools }))
        assert.isTrue(failed._tag === "Left")
        yield* driver.run("Please go on.", { toolkit: AppTools })
        const requests = yield* ScriptedModel.requests
        deepStrictEqual(requests[1]!.userTexts, ["Rename foo to bar.", "Please go on."])
      }).pipe(Effect.provide(session(
        (request) => request.index === 0 ? ScriptedModel.fail("overloaded") : ScriptedModel.text("Done."),
        world
      )))
    }))

  it.live("interrupting the run mid-request requeues the preview; the next run is forced to resolve", () =>
    Effect.gen(function*() {
      const world = yield* makeWorld
      const started = yield* Deferred.make<void>()
      const script: ScriptedModel.Script = (request) =>
        request.index === 0 ?
          editCall() :
          request.index === 1 ?
          Effect.zipRight(Deferred.succeed(started, undefined), Effect.never) :
          request.index === 2 ?
          resolveCall("apply") :
          ScriptedModel.text("Done.")
      yield* Effect.gen(function*() {
        const driver = yield* TurnDriver
        const queue = yield* ToolChoiceQueue
        const fiber = yield* Effect.fork(driver.run("Edit", { toolkit: AppTools }))
        yield* Deferred.await(started)
        yield* Fiber.interrupt(fiber)
        deepStrictEqual(yield* queue.inspect, ["pending-action:edit"])
        assert.isFalse(yield* queue.hasInFlight)
        assert.strictEqual(yield* statusOf(world), "pending")
        assert.strictEqual((yield* driver.metrics).requeues.aborted, 1)
        yield* driver.run("Continue", { toolkit: AppTools })
        const requests = yield* ScriptedModel.requests
        deepStrictEqual(requests[2]!.toolChoice, { tool: "resolve" })
        assert.strictEqual(yield* statusOf(world), "applied")
        const transcript = yield* driver.transcript
        assert.strictEqual(transcript[1]!.outcome, "aborted")
      }).pipe(Effect.provide(session(script, world)))
    }))

  it.live("interrupting the run while it waits to retry requeues the preview (the wait is interruptible)", () =>
    Effect.gen(function*() {
      const world = yield* makeWorld
      const failed = yield* Deferred.make<void>()
      const script: ScriptedModel.Script = (request) =>
        request.index === 0 ?
          editCall() :
          Effect.as(Deferred.succeed(failed, undefined), ScriptedModel.fail("overloaded"))
      yield* Effect.gen(function*() {
        const driver = yield* TurnDriver
        const queue = yield* ToolChoiceQueue
        const fiber = yield* Effect.fork(driver.run("Edit", { toolkit: AppTools, retry: Schedule.spaced("1 hour") }))
        yield* Deferred.await(failed)
        yield* Effect.sleep("20 millis")
        const exit = yield* Fiber.interrupt(fiber).pipe(Effect.timeout("5 seconds"))
        assert.isTrue(Exit.isInterrupted(exit))
        deepStrictEqual(yield* queue.inspect, ["pending-action:edit"])
        assert.isFalse(yield* queue.hasInFlight)
        assert.strictEqual(yield* statusOf(world), "pending")
        assert.strictEqual((yield* driver.metrics).requeues.aborted, 1)
      }).pipe(Effect.provide(session(script, world)))
    }))

  it.effect("tool calls run inside the run, turn and tool-call spans", () =>
    Effect.gen(function*() {
      const Probe = Tool.make("probe", { success: Schema.Array(Schema.String) })
      const ProbeTools = Toolkit.make(Probe)
      const names = (span: Tracer.AnySpan): ReadonlyArray<string> =>
        span._tag === "Span" ?
          [span.name, ...Option.match(span.parent, { onNone: () => [], onSome: names })] :
          []
      const seen = yield* Ref.make<ReadonlyArray<string>>([])
      yield* Effect.gen(function*() {
        const driver = yield* TurnDriver
        yield* driver.run("Probe", { toolkit: ProbeTools })
        const chain = yield* Ref.get(seen)
        deepStrictEqual(chain.slice(0, 3), ["TurnDriver.toolCall", "TurnDriver.turn", "TurnDriver.run"])
      }).pipe(Effect.provide(Layer.mergeAll(
        TurnDriver.layer(),
        ScriptedModel.layer([ScriptedModel.toolCall("probe", {}), ScriptedModel.text("Done.")]),
        ProbeTools.toLayer({
          probe: () =>
            Effect.flatMap(Effect.currentSpan, (span) => {
              const chain = names(span).filter((name) => name.startsWith("TurnDriver."))
              return Effect.as(Ref.set(seen, chain), chain)
            }).pipe(Effect.orDie)
        })
      )))
    }))

  it.effect("maxTurns ends a run that never finishes with a typed error", () =>
    Effect.gen(function*() {
      const world = yield* makeWorld
      yield* Effect.gen(function*() {
        const driver = yield* TurnDriver
        const error = yield* Effect.flip(driver.run("Search forever", { toolkit: AppTools, maxTurns: 3 }))
        assert.strictEqual(error._tag, "MaxTurnsExceeded")
        assert.strictEqual((yield* ScriptedModel.requests).length, 3)
        assert.strictEqual((yield* driver.metrics).turns, 3)
      }).pipe(Effect.provide(session(() => ScriptedModel.toolCall("search", { q: "more" }), world)))
    }))

  it.effect("a new session cannot see the previous session's pending preview", () =>
    Effect.gen(function*() {
      const world = yield* makeWorld
      yield* Effect.gen(function*() {
        const driver = yield* TurnDriver
        yield* Effect.exit(driver.run("Edit", { toolkit: AppTools }))
        deepStrictEqual(yield* Effect.flatMap(ToolChoiceQueue, (q) => q.inspect), ["pending-action:edit"])
      }).pipe(Effect.provide(session([editCall()], world)))
      yield* Effect.gen(function*() {
        deepStrictEqual(yield* Effect.flatMap(ToolChoiceQueue, (q) => q.inspect), [])
        const driver = yield* TurnDriver
        yield* driver.run("Hello", { toolkit: AppTools })
        deepStrictEqual((yield* ScriptedModel.requests)[0]!.toolChoice, "auto")
      }).pipe(Effect.provide(session([ScriptedModel.text("Hi.")], world)))
    }))
})

describe("TurnDriver: reminders in a long session", () => {
  // Each preview leaves its reminder in the history, verbatim: shortening an applied preview's reminder would change
  // the history prefix a provider has cached (docs/agent-loop.md, "Reminders in a long session"). This pins both
  // facts on the 100-preview session docs/agent-loop.md measures.
  it.effect("one reminder per preview stays in the history, and no request rewrites the prefix", () =>
    Effect.gen(function*() {
      const previews = 100
      const world = yield* makeWorld
      const script: ScriptedModel.Script = (request) => {
        const k = Math.floor(request.index / 2)
        return k >= previews ?
          "Done." :
          request.index % 2 === 0 ?
          editCall(`src/file${k}.ts`, `value ${k}`) :
          ScriptedModel.toolCall("resolve", { action: "apply", reason: "The diff matches.", extra: null })
      }
      yield* Effect.gen(function*() {
        const driver = yield* TurnDriver
        yield* driver.run("Change every value.", { toolkit: AppTools, maxTurns: 2 * previews + 1 })
        const requests = yield* ScriptedModel.requests
        assert.strictEqual(requests.length, 2 * previews + 1)
        const last = requests[requests.length - 1]!
        const reminders = last.userTexts.filter((text) => text === SteeringMessage.resolveReminderText)
        assert.strictEqual(reminders.length, previews)
        assert.strictEqual(reminders.join("").length, previews * 114)
        // Every request's prompt starts with the whole prompt of the request before it (the same messages; one
        // that is another object must at least be equal).
        let previous: ReadonlyArray<unknown> = []
        for (const request of requests) {
          const messages = request.prompt.content
          assert.isAtLeast(messages.length, previous.length)
          previous.forEach((message, i) => {
            if (messages[i] !== message) assert.strictEqual(JSON.stringify(messages[i]), JSON.stringify(message))
          })
          previous = messages
        }
        assert.strictEqual((yield* driver.metrics).previews.applied, previews)
      }).pipe(Effect.provide(session(script, world)))
    }))
})
