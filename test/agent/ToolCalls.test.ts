/**
 * Running a response's tool calls (`src/agent/internal/toolCalls.ts`), through the public `TurnDriver`: what the model
 * reads back from a failing tool, a call skipped while a preview is pending or after one was staged in the batch, a
 * `resolve` call (applied, failed, invalid, through the standing handler), and malformed output (an unknown tool,
 * arguments that fail the tool's schema).
 */
import { Tool } from "@effect/ai"
import { assert, describe, it } from "@effect/vitest"
import { deepStrictEqual } from "@effect/vitest/utils"
import { Effect, Ref } from "effect"
import * as ScriptedModel from "../../src/agent/ScriptedModel.js"
import { skippedResolveText, skippedText, TurnDriver } from "../../src/agent/TurnDriver.js"
import { StandingResolveHandler, ToolResult } from "../../src/index.js"
import { AppTools, editCall, makeWorld, resolveCall, Search, session, statusOf } from "../support/turnDriver.js"

describe("TurnDriver: tool calls", () => {
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
