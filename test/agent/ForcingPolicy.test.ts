/**
 * The forcing policy (`src/agent/internal/forcingPolicy.ts`), through the public `TurnDriver`: the `tool_choice` each
 * turn sends for the served directive, in force and soft enforcement and at each forcing level a model has, and what
 * follows a turn that ignored a pending preview (forced next, requeued, or the run stops with `ResolveNotCalled`).
 */
import { assert, describe, it } from "@effect/vitest"
import { deepStrictEqual } from "@effect/vitest/utils"
import { Effect, Option, Ref } from "effect"
import * as ProviderToolChoice from "../../src/agent/ProviderToolChoice.js"
import * as ScriptedModel from "../../src/agent/ScriptedModel.js"
import { ResolveNotCalled, skippedText, TurnDriver } from "../../src/agent/TurnDriver.js"
import { stage, ToolChoice, ToolChoiceQueue, ToolResult } from "../../src/index.js"
import {
  AppTools,
  countReminders,
  editCall,
  makeWorld,
  resolveCall,
  session,
  statusOf,
  thinkingRefusal
} from "../support/turnDriver.js"

describe("TurnDriver: the forcing policy", () => {
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

  it.effect("two stacked previews resolve most-recent-first, one forced turn each", () =>
    Effect.gen(function*() {
      const world = yield* makeWorld
      yield* Effect.gen(function*() {
        const driver = yield* TurnDriver
        const order = yield* Ref.make<ReadonlyArray<string>>([])
        const stageOne = (name: string) =>
          stage({
            label: `Edit: ${name}`,
            sourceToolName: "edit",
            apply: () => Effect.as(Ref.update(order, (all) => [...all, `apply ${name}`]), ToolResult.text("ok")),
            reject: () => Effect.as(Ref.update(order, (all) => [...all, `discard ${name}`]), Option.none())
          })
        const first = yield* stageOne("first")
        const second = yield* stageOne("second")
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
})
