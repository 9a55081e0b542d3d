/**
 * Forcing less when the provider refuses (`src/agent/internal/refusals.ts`), through the public `TurnDriver`: a
 * refusal learned from an HTTP 400 takes away exactly the level refused, for the rest of the session; a forced
 * preview whose requests keep failing is probed once at each weaker level, then the run stops with
 * `RequeueLimitExceeded`. The preview is never dropped.
 */
import { assert, describe, it } from "@effect/vitest"
import { deepStrictEqual } from "@effect/vitest/utils"
import { Effect, Layer, Ref, Schedule } from "effect"
import * as ProviderToolChoice from "../../src/agent/ProviderToolChoice.js"
import * as ScriptedModel from "../../src/agent/ScriptedModel.js"
import { RequeueLimitExceeded, TurnDriver } from "../../src/agent/TurnDriver.js"
import { ResolveConfig, ToolChoiceQueue } from "../../src/index.js"
import {
  AppTools,
  countReminders,
  editCall,
  makeWorld,
  recordLogs,
  resolveCall,
  session,
  statusOf,
  thinkingRefusal
} from "../support/turnDriver.js"

describe("TurnDriver: a provider that refuses forcing degrades it and keeps the preview", () => {
  it.effect("named → required → auto with the reminder; learned for the session, logged and counted", () =>
    Effect.gen(function*() {
      const world = yield* makeWorld
      const script: ScriptedModel.Script = (request) =>
        ScriptedModel.isForced(request) ?
          ScriptedModel.fail(thinkingRefusal) :
          [editCall(), resolveCall("apply"), "Done.", editCall("b.ts"), resolveCall("apply"), "Both done."][
            request.index === 0 ? 0 : request.index - 2
          ]!
      yield* Effect.gen(function*() {
        const driver = yield* TurnDriver
        const result = yield* driver.run("Edit", { toolkit: AppTools })
        assert.strictEqual(result.text, "Done.")
        const requests = yield* ScriptedModel.requests
        deepStrictEqual(requests.map((r) => r.toolChoice), [
          "auto",
          { tool: "resolve" },
          { mode: "required", oneOf: ["resolve"] },
          "auto",
          "auto"
        ])
        // The reminder of the staging, then once more when forcing fell back to the reminder.
        assert.strictEqual(countReminders(requests[3]!.userTexts), 2)
        assert.strictEqual(yield* statusOf(world), "applied")
        deepStrictEqual(yield* driver.capabilities, {
          supportsNamedToolChoice: false,
          supportsRequiredToolChoice: false,
          supportsNoneToolChoice: true
        })
        const metrics = yield* driver.metrics
        deepStrictEqual(metrics.forcingDegraded, { required: 1, reminder: 1 })
        deepStrictEqual(metrics.requeues, { error: 0, aborted: 0, not_invoked: 0 })
        // A later preview of the session starts from what was learned: no forced request, no refusal.
        yield* driver.run("Edit b", { toolkit: AppTools })
        const later = (yield* ScriptedModel.requests).slice(5)
        deepStrictEqual(later.map((r) => r.toolChoice), ["auto", "auto", "auto"])
        assert.strictEqual(yield* statusOf(world, 1), "applied")
      }).pipe(Effect.provide(session(script, world)))
    }))

  it.effect("a provider that refuses only the named choice keeps forcing with required", () =>
    Effect.gen(function*() {
      const world = yield* makeWorld
      const script: ScriptedModel.Script = (request) =>
        typeof request.toolChoice === "object" && "tool" in request.toolChoice ?
          ScriptedModel.fail(ScriptedModel.httpError(400, "{\"error\":{\"param\":\"tool_choice\"}}")) :
          request.index === 0 ?
          editCall() :
          request.index === 2 ?
          resolveCall("apply") :
          "Done."
      yield* Effect.gen(function*() {
        const driver = yield* TurnDriver
        yield* driver.run("Edit", { toolkit: AppTools })
        const requests = yield* ScriptedModel.requests
        deepStrictEqual(requests.map((r) => r.toolChoice), [
          "auto",
          { tool: "resolve" },
          { mode: "required", oneOf: ["resolve"] },
          "auto"
        ])
        deepStrictEqual(requests[2]!.tools, ["resolve"])
        assert.strictEqual(yield* statusOf(world), "applied")
        deepStrictEqual((yield* driver.metrics).forcingDegraded, { required: 1, reminder: 0 })
        assert.isTrue((yield* driver.capabilities).supportsRequiredToolChoice)
      }).pipe(Effect.provide(session(script, world)))
    }))

  it.effect("a provider that refuses only \"required\" loses only required: named forcing is kept for the session", () =>
    Effect.gen(function*() {
      const world = yield* makeWorld
      const { layer: logs, logged } = yield* recordLogs
      const refusal = ScriptedModel.httpError(
        400,
        JSON.stringify({ error: { message: "tool_choice \"required\" is not supported", param: "tool_choice" } })
      )
      let answered = 0
      const script: ScriptedModel.Script = (request) =>
        request.toolChoice === "required" ||
          (typeof request.toolChoice === "object" && "mode" in request.toolChoice &&
            request.toolChoice.mode === "required") ?
          ScriptedModel.fail(refusal) :
          [editCall(), resolveCall("apply"), "Done."][answered++]!
      yield* Effect.gen(function*() {
        const driver = yield* TurnDriver
        const queue = yield* ToolChoiceQueue
        const reasons = yield* Ref.make<ReadonlyArray<string>>([])
        // The app asks for any tool call on the next turn: the provider refuses "required".
        yield* queue.pushOnce("required", {
          label: "must-use-a-tool",
          onRejected: (reason) => Effect.as(Ref.update(reasons, (all) => [...all, reason]), "drop" as const)
        })
        const result = yield* driver.run("Edit", { toolkit: AppTools })
        assert.strictEqual(result.text, "Done.")
        // One refused request, then the turn without the directive; the preview is still forced by name.
        const requests = yield* ScriptedModel.requests
        deepStrictEqual(requests.map((r) => r.toolChoice), ["required", "auto", { tool: "resolve" }, "auto"])
        deepStrictEqual(yield* Ref.get(reasons), ["unavailable"])
        assert.strictEqual(yield* statusOf(world), "applied")
        deepStrictEqual(yield* driver.capabilities, {
          supportsNamedToolChoice: true,
          supportsRequiredToolChoice: false,
          supportsNoneToolChoice: true
        })
        // The level resolve is forced at did not change: nothing counted as degraded, and the log says so.
        deepStrictEqual((yield* driver.metrics).forcingDegraded, { required: 0, reminder: 0 })
        deepStrictEqual(yield* Ref.get(logged), [
          "effect-resolve: the provider refused forced tool_choice (HTTP 400 to \"required\": StatusCode: An HTTP " +
          "response error occurred. (400 POST scripted://model)); " +
          "the session no longer sends it, and forcing resolve stays \"named\". Set ResolveConfig.modelCapabilities " +
          "(supportsRequiredToolChoice: false) to start there."
        ])
        // A later preview of the session is forced by name again.
        answered = 0
        yield* driver.run("Edit b", { toolkit: AppTools })
        deepStrictEqual((yield* ScriptedModel.requests).slice(4).map((r) => r.toolChoice), [
          "auto",
          { tool: "resolve" },
          "auto"
        ])
      }).pipe(Effect.provide(Layer.merge(session(script, world), logs)))
    }))

  it.effect("unrecognised failures of forced requests: after the limit, forcing less is probed and learned", () =>
    Effect.gen(function*() {
      const world = yield* makeWorld
      const { layer: logs, logged } = yield* recordLogs
      let answered = 0
      const script: ScriptedModel.Script = (request) =>
        ScriptedModel.isForced(request) ?
          ScriptedModel.fail(ScriptedModel.httpError(500, "internal error")) :
          [editCall(), resolveCall("apply"), "Done."][answered++]!
      yield* Effect.gen(function*() {
        const driver = yield* TurnDriver
        const result = yield* driver.run("Edit", { toolkit: AppTools, retry: Schedule.recurs(5) })
        assert.strictEqual(result.text, "Done.")
        const requests = yield* ScriptedModel.requests
        // maxErrorRequeues 3: four forced attempts (retries count), then one attempt per weaker level.
        deepStrictEqual(requests.map((r) => r.toolChoice), [
          "auto",
          { tool: "resolve" },
          { tool: "resolve" },
          { tool: "resolve" },
          { tool: "resolve" },
          { mode: "required", oneOf: ["resolve"] },
          "auto",
          "auto"
        ])
        assert.strictEqual(yield* statusOf(world), "applied")
        deepStrictEqual((yield* driver.metrics).forcingDegraded, { required: 0, reminder: 1 })
        assert.isFalse((yield* driver.capabilities).supportsNamedToolChoice)
        // The warning tells the path taken, and cites the last failure before the accepted request.
        deepStrictEqual(yield* Ref.get(logged), [
          "effect-resolve: the provider refused forced tool_choice (4 failed requests with tool_choice " +
          "{\"tool\":\"resolve\"}, 1 with {\"mode\":\"required\",\"oneOf\":[\"resolve\"]}, then one accepted with " +
          "\"auto\": StatusCode: An HTTP response error occurred. (500 POST scripted://model)); forcing resolve is " +
          "degraded to \"reminder\" for the rest of this session. Set ResolveConfig.modelCapabilities " +
          "(supportsNamedToolChoice: false, supportsRequiredToolChoice: false) to start there."
        ])
      }).pipe(Effect.provide(Layer.merge(session(script, world), logs)))
    }))

  it.effect("retries count per HTTP attempt: a failing provider stops the run after maxErrorRequeues + 1", () =>
    Effect.gen(function*() {
      const world = yield* makeWorld
      yield* Effect.gen(function*() {
        const driver = yield* TurnDriver
        const error = yield* Effect.flip(driver.run("Edit", { toolkit: AppTools, retry: Schedule.recurs(5) }))
        assert.instanceOf(error, RequeueLimitExceeded)
        assert.strictEqual((error as RequeueLimitExceeded).errors, 4)
        const requests = yield* ScriptedModel.requests
        assert.strictEqual(requests.filter((r) => ScriptedModel.isForced(r)).length, 5) // 4 named, 1 required probe
        assert.strictEqual(requests.length, 7)
        assert.strictEqual(yield* statusOf(world), "pending")
        deepStrictEqual(yield* Effect.flatMap(ToolChoiceQueue, (q) => q.inspect), ["pending-action:edit"])
      }).pipe(Effect.provide(session(
        (request) => request.index === 0 ? editCall() : ScriptedModel.fail("the service is unavailable"),
        world
      )))
    }))
})

describe("TurnDriver: the requeue limit", () => {
  it.effect("requeues after model errors are bounded: the run stops with a typed error, the preview stays pending", () =>
    Effect.gen(function*() {
      const world = yield* makeWorld
      yield* Effect.gen(function*() {
        const driver = yield* TurnDriver
        const queue = yield* ToolChoiceQueue
        const first = yield* Effect.flip(driver.run("Edit", { toolkit: AppTools }))
        assert.strictEqual(first._tag, "UnknownError")
        const second = yield* Effect.flip(driver.run("Again", { toolkit: AppTools }))
        assert.strictEqual(second._tag, "UnknownError")
        const third = yield* Effect.flip(driver.run("Again", { toolkit: AppTools }))
        assert.instanceOf(third, RequeueLimitExceeded)
        const limit = third as RequeueLimitExceeded
        assert.strictEqual(limit.errors, 3)
        assert.isTrue(limit.pending)
        assert.include(limit.message, "still pending")
        // Nothing staged is lost: only the app or a discard ends a preview.
        deepStrictEqual(yield* queue.inspect, ["pending-action:edit"])
        assert.strictEqual(yield* statusOf(world), "pending")
        // Forcing less was tried once per level on the third run (each failed too): nothing was learned.
        const requests = yield* ScriptedModel.requests
        deepStrictEqual(requests.slice(1).map((r) => r.toolChoice), [
          { tool: "resolve" },
          { tool: "resolve" },
          { tool: "resolve" },
          { mode: "required", oneOf: ["resolve"] },
          "auto"
        ])
        deepStrictEqual(yield* driver.capabilities, ResolveConfig.defaults.modelCapabilities)
        const metrics = yield* driver.metrics
        assert.strictEqual(metrics.requeues.error, 3)
        deepStrictEqual(metrics.forcingDegraded, { required: 0, reminder: 0 })
      }).pipe(Effect.provide(session(
        (request) => request.index === 0 ? editCall() : ScriptedModel.fail("the service is unavailable"),
        world,
        { maxErrorRequeues: 2 }
      )))
    }))

  it.effect("RequeueLimitExceeded cites the last error received: the last probe's when forcing less was tried", () =>
    Effect.gen(function*() {
      const world = yield* makeWorld
      const failure = (request: ScriptedModel.ScriptedRequest) =>
        ScriptedModel.fail(`attempt ${request.index} with ${JSON.stringify(request.toolChoice)} failed`)
      yield* Effect.gen(function*() {
        const driver = yield* TurnDriver
        const error = yield* Effect.flip(driver.run("Edit", { toolkit: AppTools, retry: Schedule.recurs(5) }))
        assert.instanceOf(error, RequeueLimitExceeded)
        const limit = error as RequeueLimitExceeded
        deepStrictEqual(limit.probed, ["required", "reminder"])
        assert.strictEqual(
          limit.message,
          "The model request failed 4 times in a row while \"pending-action:edit\" was served, then once at each " +
            "weaker forcing level (\"required\", then \"reminder\"), and the run stopped. It is still pending, at the " +
            "head of the queue: run again once the provider answers, or resolve, discard or clear it in the app. " +
            "The last error (at \"reminder\"): ScriptedModel.generateText: attempt 6 with \"auto\" failed"
        )
      }).pipe(Effect.provide(session(
        (request) => request.index === 0 ? editCall() : failure(request),
        world
      )))
      // A session that cannot force anything: no probe, and the last error is the last attempt's.
      const soft = yield* makeWorld
      yield* Effect.gen(function*() {
        const driver = yield* TurnDriver
        const error = yield* Effect.flip(driver.run("Edit", { toolkit: AppTools, retry: Schedule.recurs(5) }))
        assert.instanceOf(error, RequeueLimitExceeded)
        deepStrictEqual((error as RequeueLimitExceeded).probed, [])
        assert.strictEqual(
          (error as RequeueLimitExceeded).message,
          "The model request failed 4 times in a row while \"pending-action:edit\" was served, and the run stopped. " +
            "It is still pending, at the head of the queue: run again once the provider answers, or resolve, discard " +
            "or clear it in the app. The last error: ScriptedModel.generateText: attempt 5 with \"auto\" failed"
        )
      }).pipe(Effect.provide(session(
        (request) => request.index <= 1 ? [editCall(), "Later."][request.index]! : failure(request),
        soft,
        { modelCapabilities: ProviderToolChoice.autoOnly }
      )))
    }))
})
