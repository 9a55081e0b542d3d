import { Tool, Toolkit } from "@effect/ai"
import { assert, describe, it } from "@effect/vitest"
import { deepStrictEqual } from "@effect/vitest/utils"
import { Deferred, Effect, Exit, Fiber, Layer, Logger, Option, Ref, Schedule, Schema, type Tracer } from "effect"
import * as ProviderToolChoice from "../../src/agent/ProviderToolChoice.js"
import * as ScriptedModel from "../../src/agent/ScriptedModel.js"
import {
  RequeueLimitExceeded,
  ResolveNotCalled,
  skippedResolveText,
  skippedText,
  TurnDriver
} from "../../src/agent/TurnDriver.js"
import {
  PendingAction,
  PendingActions,
  PendingStoreError,
  queueResolveHandler,
  ResolveConfig,
  type ResolveConfigShape,
  StandingResolveHandler,
  SteeringMessage,
  ToolChoice,
  ToolChoiceQueue,
  ToolResult
} from "../../src/index.js"

// The app's tools: `edit` stages a preview of a file write, `search` is a plain tool.
const Edit = Tool.make("edit", {
  parameters: { file: Schema.String, text: Schema.String },
  success: Schema.String,
  failure: PendingStoreError, // staging fails only when a durable store does
  dependencies: [PendingActions]
})
const Search = Tool.make("search", {
  parameters: { q: Schema.String },
  success: Schema.String,
  failure: Schema.String
})
const AppTools = Toolkit.make(Edit, Search)

interface World {
  readonly files: Ref.Ref<Record<string, string>>
  readonly handles: Ref.Ref<ReadonlyArray<PendingAction.PendingActionHandle>>
  readonly searches: Ref.Ref<ReadonlyArray<string>>
  /** How many applies fail before one succeeds. */
  readonly failingApplies: Ref.Ref<number>
}

const makeWorld = Effect.all({
  files: Ref.make<Record<string, string>>({}),
  handles: Ref.make<ReadonlyArray<PendingAction.PendingActionHandle>>([]),
  searches: Ref.make<ReadonlyArray<string>>([]),
  failingApplies: Ref.make(0)
})

const handlers = (world: World) =>
  AppTools.toLayer({
    edit: ({ file, text }) =>
      Effect.gen(function*() {
        const handle = yield* queueResolveHandler({
          label: `Edit: 1 replacement in ${file}`,
          sourceToolName: "edit",
          apply: () =>
            Effect.gen(function*() {
              const failing = yield* Ref.getAndUpdate(world.failingApplies, (n) => Math.max(0, n - 1))
              if (failing > 0) return yield* Effect.fail(new Error("disk is full"))
              yield* PendingAction.commit(Ref.update(world.files, (files) => ({ ...files, [file]: text })))
              return ToolResult.text(`Wrote ${file}`)
            })
        })
        yield* Ref.update(world.handles, (all) => [...all, handle])
        return `Preview: ${file} would become ${JSON.stringify(text)}`
      }),
    search: ({ q }) =>
      q === "boom" ?
        Effect.fail("the search index is offline") :
        Effect.as(Ref.update(world.searches, (all) => [...all, q]), `results for ${q}`)
  })

let sessions = 0

/** A fresh session (driver + runtime), a scripted model and the app's handlers, per test. */
const session = (script: ScriptedModel.Script, world: World, config: Partial<ResolveConfigShape> = {}) =>
  Layer.mergeAll(
    TurnDriver.layer({ sessionId: `turn-driver-test-${++sessions}` }),
    ScriptedModel.layer(script),
    handlers(world),
    ResolveConfig.layer(config)
  )

const editCall = (file = "a.ts", text = "hello") => ScriptedModel.toolCall("edit", { file, text })
const resolveCall = (action: "apply" | "discard", reason = "Looks right.", extra?: Record<string, unknown>) =>
  ScriptedModel.toolCall("resolve", extra === undefined ? { action, reason } : { action, reason, extra })

const countReminders = (texts: ReadonlyArray<string>) =>
  texts.filter((text) => text === SteeringMessage.resolveReminderText).length

const statusOf = (world: World, i = 0) => Effect.flatMap(Ref.get(world.handles), (handles) => handles[i]!.status)

/** A logger that records every warning and error message, to pin what a user reads in the logs. */
const recordLogs = Effect.gen(function*() {
  const logged = yield* Ref.make<ReadonlyArray<string>>([])
  const logger = Logger.make(({ logLevel, message }) => {
    if (logLevel._tag === "Warning" || logLevel._tag === "Error") {
      const text = Array.isArray(message) ? message.map(String).join(" ") : String(message)
      Effect.runSync(Ref.update(logged, (all) => [...all, text]))
    }
  })
  return { logged, layer: Logger.replace(Logger.defaultLogger, logger) }
})

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

  it.effect("a text answer to a forced turn requeues the preview and forces again", () =>
    Effect.gen(function*() {
      const world = yield* makeWorld
      yield* Effect.gen(function*() {
        const driver = yield* TurnDriver
        yield* driver.run("Edit", { toolkit: AppTools })
        const requests = yield* ScriptedModel.requests
        deepStrictEqual(requests.map((r) => r.toolChoice), [
          "auto",
          { tool: "resolve" },
          { tool: "resolve" },
          "auto"
        ])
        assert.strictEqual(yield* statusOf(world), "applied")
        const metrics = yield* driver.metrics
        assert.strictEqual(metrics.forcedTurns, 2)
        assert.strictEqual(metrics.requeues.not_invoked, 1)
        assert.strictEqual(metrics.previews.applied, 1)
      }).pipe(Effect.provide(session(
        [editCall(), ScriptedModel.text("I think it is fine."), resolveCall("apply"), ScriptedModel.text("Done.")],
        world
      )))
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

  it.effect("invalid resolve input reaches the model as a typed failure and changes nothing", () =>
    Effect.gen(function*() {
      const world = yield* makeWorld
      yield* Effect.gen(function*() {
        const driver = yield* TurnDriver
        const result = yield* driver.run("Edit", { toolkit: AppTools })
        const bad = result.turns[1]!.toolCalls[0]!
        assert.isTrue(bad.isFailure)
        assert.strictEqual((bad.result as { error: string }).error, "InvalidResolveParams")
        assert.isTrue((bad.result as { message: string }).message.includes("action"))
        const requests = yield* ScriptedModel.requests
        // The model tried to comply, so in soft mode the next turn is not forced.
        deepStrictEqual(requests.map((r) => r.toolChoice), ["auto", "auto", "auto", "auto"])
        assert.strictEqual(yield* statusOf(world), "applied")
      }).pipe(Effect.provide(session(
        [
          editCall(),
          ScriptedModel.toolCall("resolve", { action: "maybe", reason: "?" }),
          resolveCall("apply"),
          ScriptedModel.text("Done.")
        ],
        world,
        { enforcement: "soft" }
      )))
    }))

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

  it.effect("soft mode, compliant model: zero tool_choice changes and exactly one reminder", () =>
    Effect.gen(function*() {
      const world = yield* makeWorld
      yield* Effect.gen(function*() {
        const driver = yield* TurnDriver
        yield* driver.run("Edit", { toolkit: AppTools })
        const requests = yield* ScriptedModel.requests
        deepStrictEqual(requests.map((r) => r.toolChoice), ["auto", "auto", "auto"])
        assert.strictEqual(countReminders(requests[2]!.userTexts), 1)
        assert.strictEqual(yield* statusOf(world), "applied")
        const metrics = yield* driver.metrics
        assert.strictEqual(metrics.toolChoiceChanges, 0)
        assert.strictEqual(metrics.forcedTurns, 0)
        deepStrictEqual(metrics.previews, { staged: 1, applied: 1, discarded: 0, failed: 0 })
      }).pipe(Effect.provide(session(
        [editCall(), resolveCall("apply"), ScriptedModel.text("Done.")],
        world,
        { enforcement: "soft" }
      )))
    }))

  it.effect("soft mode, non-compliant turn: the detour is skipped and only the next turn is forced", () =>
    Effect.gen(function*() {
      const world = yield* makeWorld
      yield* Effect.gen(function*() {
        const driver = yield* TurnDriver
        const result = yield* driver.run("Edit", { toolkit: AppTools })
        const requests = yield* ScriptedModel.requests
        deepStrictEqual(requests.map((r) => r.toolChoice), ["auto", "auto", { tool: "resolve" }, "auto"])
        deepStrictEqual(yield* Ref.get(world.searches), [])
        const detour = result.turns[1]!.toolCalls[0]!
        assert.strictEqual(detour.outcome, "skipped")
        deepStrictEqual(detour.result, { skipped: true, message: skippedText })
        assert.strictEqual(yield* statusOf(world), "discarded")
        const metrics = yield* driver.metrics
        assert.strictEqual(metrics.forcedTurns, 1)
        assert.strictEqual(metrics.toolChoiceChanges, 2)
        assert.strictEqual(metrics.previews.discarded, 1)
        assert.strictEqual(metrics.requeues.not_invoked, 1)
      }).pipe(Effect.provide(session(
        [
          editCall(),
          ScriptedModel.toolCall("search", { q: "greeting" }),
          resolveCall("discard", "Not needed."),
          ScriptedModel.text("Done.")
        ],
        world,
        { enforcement: "soft" }
      )))
    }))

  it.effect("soft mode fails with a typed error after 3 ignored forced turns", () =>
    Effect.gen(function*() {
      const world = yield* makeWorld
      yield* Effect.gen(function*() {
        const driver = yield* TurnDriver
        const queue = yield* ToolChoiceQueue
        const error = yield* Effect.flip(driver.run("Edit", { toolkit: AppTools }))
        assert.instanceOf(error, ResolveNotCalled)
        assert.strictEqual((error as ResolveNotCalled).forcedTurns, 3)
        assert.strictEqual((error as ResolveNotCalled).remindedTurns, 0)
        assert.strictEqual(
          (error as ResolveNotCalled).message,
          "The model did not call resolve for \"pending-action:edit\" in 3 forced turns; the run stopped and the " +
            "preview is still pending. Check that the model supports forcing a tool, then run again, or resolve or " +
            "clear the preview in the app."
        )
        const requests = yield* ScriptedModel.requests
        deepStrictEqual(requests.map((r) => r.toolChoice), [
          "auto",
          "auto",
          { tool: "resolve" },
          { tool: "resolve" },
          { tool: "resolve" }
        ])
        // Nothing staged is lost: the preview is still pending, at the head of the queue.
        deepStrictEqual(yield* queue.inspect, ["pending-action:edit"])
        assert.strictEqual(yield* statusOf(world), "pending")
        assert.strictEqual((yield* driver.metrics).forcedTurns, 3)
        yield* queue.clear
        assert.strictEqual(yield* statusOf(world), "cleared")
      }).pipe(Effect.provide(session(
        (request) => request.index === 0 ? editCall() : ScriptedModel.text("No."),
        world,
        { enforcement: "soft" }
      )))
    }))

  it.effect("a preview staged in a batch skips the batch's later calls; the model issues them again", () =>
    Effect.gen(function*() {
      const world = yield* makeWorld
      yield* Effect.gen(function*() {
        const driver = yield* TurnDriver
        const result = yield* driver.run("Edit and search", { toolkit: AppTools })
        const first = result.turns[0]!.toolCalls
        deepStrictEqual(first.map((c) => [c.name, c.outcome]), [
          ["edit", "executed"],
          ["search", "skipped"],
          ["edit", "skipped"],
          ["resolve", "skipped"]
        ])
        deepStrictEqual(first[3]!.result, { skipped: true, message: skippedResolveText })
        deepStrictEqual(first[1]!.result, { skipped: true, message: skippedText })
        deepStrictEqual(yield* Ref.get(world.searches), ["again"])
        assert.strictEqual((yield* Ref.get(world.handles)).length, 1)
        // The history carries one result per call, so the conversation stays valid.
        const history = yield* driver.history
        const tool = history.content.find((m) => m.role === "tool")!
        assert.strictEqual(tool.content.length, 4)
        assert.strictEqual((yield* driver.metrics).previews.staged, 1)
      }).pipe(Effect.provide(session(
        [
          ScriptedModel.respond(
            ScriptedModel.toolCallPart("edit", { file: "a.ts", text: "x" }),
            ScriptedModel.toolCallPart("search", { q: "skipped" }),
            ScriptedModel.toolCallPart("edit", { file: "b.ts", text: "y" }),
            ScriptedModel.toolCallPart("resolve", { action: "apply", reason: "Unread." })
          ),
          resolveCall("apply"),
          ScriptedModel.toolCall("search", { q: "again" }),
          ScriptedModel.text("Done.")
        ],
        world
      )))
    }))

  it.effect("two stacked previews resolve most-recent-first, one forced turn each", () =>
    Effect.gen(function*() {
      const world = yield* makeWorld
      yield* Effect.gen(function*() {
        const driver = yield* TurnDriver
        const order = yield* Ref.make<ReadonlyArray<string>>([])
        const stage = (name: string) =>
          queueResolveHandler({
            label: `Edit: ${name}`,
            sourceToolName: "edit",
            apply: () => Effect.as(Ref.update(order, (all) => [...all, `apply ${name}`]), ToolResult.text("ok")),
            reject: () => Effect.as(Ref.update(order, (all) => [...all, `discard ${name}`]), Option.none())
          })
        const first = yield* stage("first")
        const second = yield* stage("second")
        yield* driver.run("Resolve both", { toolkit: AppTools })
        deepStrictEqual(yield* Ref.get(order), ["apply second", "discard first"])
        assert.strictEqual(yield* first.status, "discarded")
        assert.strictEqual(yield* second.status, "applied")
        const requests = yield* ScriptedModel.requests
        deepStrictEqual(requests.map((r) => r.toolChoice), [{ tool: "resolve" }, { tool: "resolve" }, "auto"])
        const metrics = yield* driver.metrics
        deepStrictEqual(metrics.previews, { staged: 0, applied: 1, discarded: 1, failed: 0 })
      }).pipe(Effect.provide(session(
        [resolveCall("apply"), resolveCall("discard", "Superseded."), ScriptedModel.text("Done.")],
        world
      )))
    }))

  it.effect("a failing apply keeps the preview pending; the model retries on the next forced turn", () =>
    Effect.gen(function*() {
      const world = yield* makeWorld
      yield* Ref.set(world.failingApplies, 1)
      yield* Effect.gen(function*() {
        const driver = yield* TurnDriver
        const result = yield* driver.run("Edit", { toolkit: AppTools })
        const failedCall = result.turns[1]!.toolCalls[0]!
        assert.isTrue(failedCall.isFailure)
        deepStrictEqual(failedCall.result, { error: "ApplyFailed", message: "Apply failed: disk is full" })
        const requests = yield* ScriptedModel.requests
        deepStrictEqual(requests[2]!.toolChoice, { tool: "resolve" })
        assert.strictEqual(yield* statusOf(world), "applied")
        const metrics = yield* driver.metrics
        deepStrictEqual(metrics.previews, { staged: 1, applied: 1, discarded: 0, failed: 1 })
      }).pipe(Effect.provide(session(
        [editCall(), resolveCall("apply"), resolveCall("apply", "Retry."), ScriptedModel.text("Done.")],
        world
      )))
    }))

  it.effect("plan approval goes through the standing handler, without forcing", () =>
    Effect.gen(function*() {
      const world = yield* makeWorld
      yield* Effect.gen(function*() {
        const driver = yield* TurnDriver
        const standing = yield* StandingResolveHandler
        const approved = yield* Ref.make<ReadonlyArray<unknown>>([])
        const spans = yield* Ref.make<ReadonlyArray<string>>([])
        yield* standing.install((call) =>
          Effect.gen(function*() {
            const span = yield* Effect.orElseSucceed(Effect.map(Effect.currentSpan, (s) => s.name), () => "none")
            yield* Ref.update(spans, (all) => [...all, span])
            yield* Ref.update(approved, (all) => [...all, call.extra?.title])
            return ToolResult.text(`Plan ${call.action === "apply" ? "approved" : "rejected"}`)
          })
        )
        const result = yield* driver.run("Plan the change", { toolkit: AppTools })
        deepStrictEqual(yield* Ref.get(approved), ["my-plan"])
        deepStrictEqual(yield* Ref.get(spans), ["TurnDriver.resolve"])
        deepStrictEqual(result.turns[0]!.toolCalls[0]!.result, ToolResult.text("Plan approved"))
        const metrics = yield* driver.metrics
        assert.strictEqual(metrics.forcedTurns, 0)
        assert.strictEqual(metrics.toolChoiceChanges, 0)
        deepStrictEqual(metrics.previews, { staged: 0, applied: 0, discarded: 0, failed: 0 })
      }).pipe(
        Effect.scoped,
        Effect.provide(session(
          [resolveCall("apply", "The plan is complete.", { title: "my-plan" }), ScriptedModel.text("Approved.")],
          world
        ))
      )
    }))

  it.effect("a model that cannot force a named tool gets the soft path", () =>
    Effect.gen(function*() {
      const world = yield* makeWorld
      yield* Effect.gen(function*() {
        const driver = yield* TurnDriver
        yield* driver.run("Edit", { toolkit: AppTools })
        const requests = yield* ScriptedModel.requests
        deepStrictEqual(requests.map((r) => r.toolChoice), [
          "auto",
          "auto",
          { mode: "required", oneOf: ["resolve"] },
          "auto"
        ])
        deepStrictEqual(requests[2]!.tools, ["resolve"])
        assert.strictEqual(yield* statusOf(world), "applied")
        assert.strictEqual((yield* driver.metrics).forcedTurns, 1)
      }).pipe(Effect.provide(session(
        [editCall(), ScriptedModel.text("Maybe later."), resolveCall("apply"), ScriptedModel.text("Done.")],
        world,
        {
          enforcement: "force",
          modelCapabilities: {
            supportsNamedToolChoice: false,
            supportsRequiredToolChoice: true,
            supportsNoneToolChoice: true
          }
        }
      )))
    }))

  it.effect("a model that can force nothing is reminded again instead, and the run still fails after 3 turns", () =>
    Effect.gen(function*() {
      const world = yield* makeWorld
      yield* Effect.gen(function*() {
        const driver = yield* TurnDriver
        const error = yield* Effect.flip(driver.run("Edit", { toolkit: AppTools }))
        assert.instanceOf(error, ResolveNotCalled)
        const requests = yield* ScriptedModel.requests
        deepStrictEqual(requests.map((r) => r.toolChoice), ["auto", "auto", "auto", "auto", "auto"])
        deepStrictEqual(requests.map((r) => countReminders(r.userTexts)), [0, 1, 2, 3, 4])
        // Nothing was forced: the error counts the turns that repeated the reminder (after the preview's own), and
        // says so.
        const notCalled = error as ResolveNotCalled
        assert.strictEqual(notCalled.forcedTurns, 0)
        assert.strictEqual(notCalled.remindedTurns, requests.slice(2).length)
        assert.strictEqual(
          notCalled.message,
          "The model did not call resolve for \"pending-action:edit\" in 3 turns that only repeated the reminder; " +
            "the run stopped and the preview is still pending. This session cannot force a tool call now " +
            "(ResolveConfig.modelCapabilities, less the forcing the provider refused), so its last turns only " +
            "reminded the model: check that the model follows the reminder, then run again, or resolve or clear the " +
            "preview in the app."
        )
        const metrics = yield* driver.metrics
        assert.strictEqual(metrics.forcedTurns, 0)
        assert.strictEqual(metrics.toolChoiceChanges, 0)
      }).pipe(Effect.provide(session(
        (request) => request.index === 0 ? editCall() : ScriptedModel.text("No."),
        world,
        { modelCapabilities: ProviderToolChoice.autoOnly }
      )))
    }))

  it.effect("ResolveNotCalled tells forced turns from turns that only reminded, when forcing was lost midway", () =>
    Effect.gen(function*() {
      const world = yield* makeWorld
      let named = 0
      const script: ScriptedModel.Script = (request) =>
        request.index === 0 ?
          editCall() :
          ScriptedModel.isForced(request) && named++ > 0 ?
          ScriptedModel.fail(thinkingRefusal) :
          ScriptedModel.text("No.")
      yield* Effect.gen(function*() {
        const driver = yield* TurnDriver
        const error = yield* Effect.flip(driver.run("Edit", { toolkit: AppTools }))
        assert.instanceOf(error, ResolveNotCalled)
        // One forced turn answered with text, a refused request, then two turns with the reminder again.
        const requests = yield* ScriptedModel.requests
        deepStrictEqual(requests.map((r) => r.toolChoice), [
          "auto",
          { tool: "resolve" },
          { tool: "resolve" },
          "auto",
          "auto"
        ])
        const notCalled = error as ResolveNotCalled
        deepStrictEqual([notCalled.forcedTurns, notCalled.remindedTurns], [1, 2])
        assert.strictEqual(
          notCalled.message,
          "The model did not call resolve for \"pending-action:edit\" in 1 forced turn and 2 turns that only " +
            "repeated the reminder; the run stopped and the preview is still pending. This session cannot force a " +
            "tool call now (ResolveConfig.modelCapabilities, less the forcing the provider refused), so its last " +
            "turns only reminded the model: check that the model follows the reminder, then run again, or resolve " +
            "or clear the preview in the app."
        )
      }).pipe(Effect.provide(session(script, world, {
        modelCapabilities: {
          supportsNamedToolChoice: true,
          supportsRequiredToolChoice: false,
          supportsNoneToolChoice: true
        }
      })))
    }))

  it.effect("a directive the model cannot express is rejected as unavailable and the turn sends auto", () =>
    Effect.gen(function*() {
      const world = yield* makeWorld
      yield* Effect.gen(function*() {
        const driver = yield* TurnDriver
        const queue = yield* ToolChoiceQueue
        const reasons = yield* Ref.make<ReadonlyArray<string>>([])
        yield* queue.pushOnce(ToolChoice.forceTool("search"), {
          label: "must-search",
          onRejected: (reason) => Effect.as(Ref.update(reasons, (all) => [...all, reason]), "drop" as const)
        })
        yield* driver.run("Hello", { toolkit: AppTools })
        deepStrictEqual(yield* Ref.get(reasons), ["unavailable"])
        deepStrictEqual((yield* ScriptedModel.requests).map((r) => r.toolChoice), ["auto"])
      }).pipe(Effect.provide(session(
        [ScriptedModel.text("Hi.")],
        world,
        { modelCapabilities: ProviderToolChoice.anthropicExtendedThinking }
      )))
    }))

  it.effect("a failing tool returns a failure result to the model and the run goes on", () =>
    Effect.gen(function*() {
      const world = yield* makeWorld
      yield* Effect.gen(function*() {
        const driver = yield* TurnDriver
        const result = yield* driver.run("Search", { toolkit: AppTools })
        const call = result.turns[0]!.toolCalls[0]!
        assert.isTrue(call.isFailure)
        deepStrictEqual(call.result, { error: "Error", message: "the search index is offline" })
        assert.strictEqual(result.text, "The index is offline.")
      }).pipe(Effect.provide(session(
        [ScriptedModel.toolCall("search", { q: "boom" }), ScriptedModel.text("The index is offline.")],
        world
      )))
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

describe("TurnDriver: malformed model output goes back to the model", () => {
  it.effect("a call to an unknown tool gets a failure result naming the tools that exist; the run goes on", () =>
    Effect.gen(function*() {
      const world = yield* makeWorld
      yield* Effect.gen(function*() {
        const driver = yield* TurnDriver
        const result = yield* driver.run("Look it up", { toolkit: AppTools })
        const call = result.turns[0]!.toolCalls[0]!
        assert.isTrue(call.isFailure)
        deepStrictEqual(call.result, {
          error: "UnknownTool",
          message: "No tool named \"grep\". Available tools: edit, search, resolve."
        })
        assert.strictEqual(result.text, "Done.")
        deepStrictEqual(yield* Ref.get(world.searches), ["greet"])
        // The conversation carries the bad call and its result, so the model reads what went wrong.
        const history = yield* driver.history
        const tool = history.content.find((m) => m.role === "tool")!
        assert.strictEqual((tool.content[0] as { name: string }).name, "grep")
      }).pipe(Effect.provide(session(
        [
          ScriptedModel.toolCall("grep", { pattern: "greet" }),
          ScriptedModel.toolCall("search", { q: "greet" }),
          ScriptedModel.text("Done.")
        ],
        world
      )))
    }))

  it.effect("arguments that fail the tool's schema get the decode error; the handler does not run", () =>
    Effect.gen(function*() {
      const world = yield* makeWorld
      yield* Effect.gen(function*() {
        const driver = yield* TurnDriver
        const result = yield* driver.run("Search", { toolkit: AppTools })
        const calls = result.turns[0]!.toolCalls
        deepStrictEqual(calls.map((c) => [c.isFailure, (c.result as { error?: string }).error]), [
          [true, "InvalidToolParams"],
          [true, "InvalidToolParams"],
          [false, undefined]
        ])
        const message = (calls[0]!.result as { message: string }).message
        assert.include(message, "The arguments of \"search\" do not match its schema: q: ")
        assert.include(message, "Expected string, actual 42")
        assert.include((calls[1]!.result as { message: string }).message, "(root)")
        deepStrictEqual(yield* Ref.get(world.searches), ["fine"])
        // The tools were sent with their real JSON Schemas.
        const [first] = yield* ScriptedModel.requests
        deepStrictEqual(first!.toolSchemas.search, Tool.getJsonSchema(Search))
        assert.strictEqual((yield* driver.metrics).requeues.error, 0)
      }).pipe(Effect.provide(session(
        [
          ScriptedModel.respond(
            ScriptedModel.toolCallPart("search", { q: 42 }),
            ScriptedModel.toolCallPart("search", "greet"),
            ScriptedModel.toolCallPart("search", { q: "fine" })
          ),
          ScriptedModel.text("Done.")
        ],
        world
      )))
    }))

  it.effect("resolve arguments that are a string, null or an array come back as InvalidResolveParams", () =>
    Effect.gen(function*() {
      const world = yield* makeWorld
      yield* Effect.gen(function*() {
        const driver = yield* TurnDriver
        const result = yield* driver.run("Edit", { toolkit: AppTools })
        const bad = result.turns.slice(1, 4).map((t) => t.toolCalls[0]!)
        deepStrictEqual(bad.map((c) => [c.isFailure, (c.result as { error: string }).error]), [
          [true, "InvalidResolveParams"],
          [true, "InvalidResolveParams"],
          [true, "InvalidResolveParams"]
        ])
        assert.include((bad[0]!.result as { message: string }).message, "must be a JSON object")
        assert.strictEqual(yield* statusOf(world), "applied")
        deepStrictEqual(yield* Ref.get(world.files), { "a.ts": "hello" })
      }).pipe(Effect.provide(session(
        [
          editCall(),
          ScriptedModel.toolCall("resolve", "apply"),
          ScriptedModel.toolCall("resolve", null),
          ScriptedModel.toolCall("resolve", ["apply", "Looks right."]),
          resolveCall("apply"),
          ScriptedModel.text("Done.")
        ],
        world,
        { maxForcedTurns: 5 }
      )))
    }))

  it.effect("malformed output on forced turns never counts toward the requeue limit", () =>
    Effect.gen(function*() {
      const world = yield* makeWorld
      yield* Effect.gen(function*() {
        const driver = yield* TurnDriver
        yield* driver.run("Edit", { toolkit: AppTools })
        const metrics = yield* driver.metrics
        deepStrictEqual(metrics.requeues, { error: 0, aborted: 0, not_invoked: 2 })
        assert.strictEqual(yield* statusOf(world), "applied")
      }).pipe(Effect.provide(session(
        [
          editCall(),
          ScriptedModel.toolCall("apply_patch", { diff: "..." }),
          ScriptedModel.toolCall("edit", { file: 1 }),
          resolveCall("apply"),
          ScriptedModel.text("Done.")
        ],
        world,
        { maxErrorRequeues: 0 }
      )))
    }))
})

const thinkingRefusal = ScriptedModel.httpError(
  400,
  JSON.stringify({
    type: "error",
    error: { type: "invalid_request_error", message: "Thinking may not be enabled when tool_choice forces tool use." }
  })
)

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

describe("TurnDriver: reminders in a long session", () => {
  // Each preview leaves its reminder in the history, verbatim: shortening an applied preview's reminder would change
  // the history prefix a provider has cached (README, "Reminders in a long session"). This pins both facts on the
  // 100-preview session the README measures.
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
