/**
 * Parallel tool calls (issue 18), through the public `TurnDriver`: every preview call of one response stages its own
 * action; several `resolve` calls of one response are each served once, in order; a second call naming the same id
 * gets `ResolvedInThisResponse`; a `resolve` without id keeps meaning the most recent pending one; the forcing
 * follows the set (one forced turn for a batch, again for what is left, `maxForcedTurns` counted per turn); the
 * previews of a batch get one reminder naming their ids.
 */
import { assert, describe, it } from "@effect/vitest"
import { deepStrictEqual } from "@effect/vitest/utils"
import { Effect, Ref } from "effect"
import * as ScriptedModel from "../../src/agent/ScriptedModel.js"
import { ResolveNotCalled, skippedResolveText, TurnDriver } from "../../src/agent/TurnDriver.js"
import { SteeringMessage } from "../../src/index.js"
import * as Renderer from "../../src/render/Renderer.js"
import { AppTools, editCall, makeWorld, resolveCall, session, type World } from "../support/turnDriver.js"

const threeEdits = ScriptedModel.respond(
  ScriptedModel.toolCallPart("edit", { file: "a.ts", text: "A" }),
  ScriptedModel.toolCallPart("edit", { file: "b.ts", text: "B" }),
  ScriptedModel.toolCallPart("edit", { file: "c.ts", text: "C" })
)

/** A response resolving every action staged so far by id, in staging order (ids are read when the step runs). */
const resolveAllById = (world: World, action: "apply" | "discard" = "apply") =>
  Effect.map(Ref.get(world.handles), (handles) =>
    ScriptedModel.respond(
      ...handles.map((h) => ScriptedModel.toolCallPart("resolve", { action, reason: "Right.", id: h.id }))
    ))

const resolveById = (world: World, index: number, action: "apply" | "discard" = "apply") =>
  Effect.map(Ref.get(world.handles), (handles) =>
    ScriptedModel.respond(
      ScriptedModel.toolCallPart("resolve", { action, reason: "Right.", id: handles[index]!.id })
    ))

const statuses = (world: World) =>
  Effect.flatMap(Ref.get(world.handles), (handles) => Effect.forEach(handles, (h) => h.status))

describe("TurnDriver: parallel tool calls", () => {
  it.effect("three previews in one response, three resolves in the next: one forced turn, three files written", () =>
    Effect.gen(function*() {
      const world = yield* makeWorld
      yield* Effect.gen(function*() {
        const driver = yield* TurnDriver
        const result = yield* driver.run("Edit three files", { toolkit: AppTools })
        const first = result.turns[0]!.toolCalls
        deepStrictEqual(first.map((c) => [c.name, c.outcome, c.isFailure]), [
          ["edit", "executed", false],
          ["edit", "executed", false],
          ["edit", "executed", false]
        ])
        deepStrictEqual(yield* statuses(world), ["applied", "applied", "applied"])
        deepStrictEqual(yield* Ref.get(world.files), { "a.ts": "A", "b.ts": "B", "c.ts": "C" })
        const requests = yield* ScriptedModel.requests
        // Two requests for the change (the previews, the resolves), then the closing answer.
        deepStrictEqual(requests.map((r) => r.toolChoice), ["auto", { tool: "resolve" }, "auto"])
        // One reminder for the batch, naming each id.
        const handles = yield* Ref.get(world.handles)
        const reminders = requests[1]!.userTexts.filter((t) => t.startsWith("<system-reminder>"))
        deepStrictEqual(reminders, [SteeringMessage.resolveBatchReminderText(handles)])
        for (const h of handles) assert.include(reminders[0]!, h.id)
        const metrics = yield* driver.metrics
        deepStrictEqual(metrics.previews, { staged: 3, applied: 3, discarded: 0, failed: 0 })
        assert.strictEqual(metrics.forcedTurns, 1)
      }).pipe(Effect.provide(session([threeEdits, resolveAllById(world), ScriptedModel.text("Done.")], world)))
    }))

  it.effect("the renderer shows each resolve of a turn, numbered, in the order sent; a repeated id as Failed", () =>
    Effect.gen(function*() {
      const world = yield* makeWorld
      const resolvesWithRepeat = Effect.map(Ref.get(world.handles), (handles) =>
        ScriptedModel.respond(
          ScriptedModel.toolCallPart("resolve", { action: "apply", reason: "a first.", id: handles[0]!.id }),
          ScriptedModel.toolCallPart("resolve", { action: "discard", reason: "Not b.", id: handles[1]!.id }),
          ScriptedModel.toolCallPart("resolve", { action: "apply", reason: "c too.", id: handles[2]!.id }),
          ScriptedModel.toolCallPart("resolve", { action: "apply", reason: "a again.", id: handles[0]!.id })
        ))
      yield* Effect.gen(function*() {
        const driver = yield* TurnDriver
        const result = yield* driver.run("Edit three files", { toolkit: AppTools })
        const calls: ReadonlyArray<Renderer.TurnCallLike> = result.turns[1]!.toolCalls
        const lines = Renderer.renderTurn(calls, { width: 80, color: false })
        const heads = lines.filter((line) => !line.startsWith("  "))
        deepStrictEqual(heads.map((line) => line.split(" ").slice(0, 2).join(" ")), [
          "1/4 Accept",
          "2/4 Discard",
          "3/4 Accept",
          "4/4 Failed"
        ])
        assert.include(lines.join("\n"), "a again.")
        for (const line of lines) assert.isAtMost(line.length, 80)
        // The edit calls of the first turn are not resolve calls: nothing to show.
        deepStrictEqual(Renderer.renderTurn(result.turns[0]!.toolCalls, { width: 80, color: false }), [])
      }).pipe(Effect.provide(session([threeEdits, resolvesWithRepeat, ScriptedModel.text("Done.")], world)))
    }))

  it.effect("one resolve without id per response: most recent first, a forced turn for each that is left", () =>
    Effect.gen(function*() {
      const world = yield* makeWorld
      yield* Effect.gen(function*() {
        const driver = yield* TurnDriver
        yield* driver.run("Edit three files", { toolkit: AppTools })
        deepStrictEqual(yield* statuses(world), ["discarded", "applied", "applied"])
        deepStrictEqual(yield* Ref.get(world.files), { "b.ts": "B", "c.ts": "C" })
        const requests = yield* ScriptedModel.requests
        deepStrictEqual(requests.map((r) => r.toolChoice), [
          "auto",
          { tool: "resolve" },
          { tool: "resolve" },
          { tool: "resolve" },
          "auto"
        ])
        assert.strictEqual((yield* driver.metrics).forcedTurns, 3)
      }).pipe(Effect.provide(session(
        [threeEdits, resolveCall("apply"), resolveCall("apply"), resolveCall("discard"), ScriptedModel.text("Done.")],
        world
      )))
    }))

  it.effect("a second resolve naming the same id in one response gets ResolvedInThisResponse; apply runs once", () =>
    Effect.gen(function*() {
      const world = yield* makeWorld
      yield* Ref.set(world.failingApplies, 1)
      yield* Effect.gen(function*() {
        const driver = yield* TurnDriver
        const result = yield* driver.run("Edit", { toolkit: AppTools })
        const [id] = (yield* Ref.get(world.handles)).map((h) => h.id)
        const twice = result.turns[1]!.toolCalls
        deepStrictEqual(twice.map((c) => [c.outcome, (c.result as { error?: string }).error]), [
          ["executed", "ApplyFailed"],
          ["executed", "ResolvedInThisResponse"]
        ])
        const message = (twice[1]!.result as { message: string }).message
        assert.include(message, id!)
        assert.include(message, "its status is now pending")
        // The failed apply ran once in that response (the second call did not retry it); the next turn forced
        // resolve again, and the retry applied it.
        assert.strictEqual(yield* Ref.get(world.failingApplies), 0)
        deepStrictEqual((yield* ScriptedModel.requests).map((r) => r.toolChoice), [
          "auto",
          { tool: "resolve" },
          { tool: "resolve" },
          "auto"
        ])
        const applied = result.turns[2]!.toolCalls
        deepStrictEqual(applied.map((c) => (c.result as { error?: string }).error), [
          undefined,
          "ResolvedInThisResponse"
        ])
        assert.include((applied[1]!.result as { message: string }).message, "its status is now applied")
        deepStrictEqual(yield* statuses(world), ["applied"])
        deepStrictEqual((yield* driver.metrics).previews, { staged: 1, applied: 1, discarded: 0, failed: 1 })
      }).pipe(Effect.provide(session(
        [
          editCall(),
          Effect.map(Ref.get(world.handles), ([h]) =>
            ScriptedModel.respond(
              ScriptedModel.toolCallPart("resolve", { action: "apply", reason: "Right.", id: h!.id }),
              ScriptedModel.toolCallPart("resolve", { action: "apply", reason: "Again.", id: h!.id })
            )),
          Effect.map(Ref.get(world.handles), ([h]) =>
            ScriptedModel.respond(
              ScriptedModel.toolCallPart("resolve", { action: "apply", reason: "Retry.", id: h!.id }),
              ScriptedModel.toolCallPart("resolve", { action: "discard", reason: "Undo.", id: h!.id })
            )),
          ScriptedModel.text("Done.")
        ],
        world
      )))
    }))

  it.effect("a resolve in the response that staged a preview runs for an older one, and is skipped without id", () =>
    Effect.gen(function*() {
      const world = yield* makeWorld
      yield* Effect.gen(function*() {
        const driver = yield* TurnDriver
        const result = yield* driver.run("Edit", { toolkit: AppTools })
        const mixed = result.turns[1]!.toolCalls
        deepStrictEqual(mixed.map((c) => [c.name, c.outcome, c.isFailure]), [
          ["resolve", "executed", false],
          ["edit", "executed", false],
          ["resolve", "skipped", true]
        ])
        deepStrictEqual(mixed[2]!.result, { skipped: true, message: skippedResolveText })
        deepStrictEqual(yield* statuses(world), ["applied", "applied"])
        deepStrictEqual(yield* Ref.get(world.files), { "a.ts": "A", "b.ts": "B" })
        deepStrictEqual((yield* ScriptedModel.requests).map((r) => r.toolChoice), [
          "auto",
          { tool: "resolve" },
          { tool: "resolve" },
          "auto"
        ])
      }).pipe(Effect.provide(session(
        [
          editCall("a.ts", "A"),
          Effect.map(Ref.get(world.handles), ([h]) =>
            ScriptedModel.respond(
              ScriptedModel.toolCallPart("resolve", { action: "apply", reason: "Right.", id: h!.id }),
              ScriptedModel.toolCallPart("edit", { file: "b.ts", text: "B" }),
              ScriptedModel.toolCallPart("resolve", { action: "apply", reason: "Unread." })
            )),
          resolveCall("apply"),
          ScriptedModel.text("Done.")
        ],
        world
      )))
    }))

  it.effect("resolving part of a batch by id forces again for the rest, in one turn", () =>
    Effect.gen(function*() {
      const world = yield* makeWorld
      yield* Effect.gen(function*() {
        const driver = yield* TurnDriver
        yield* driver.run("Edit three files", { toolkit: AppTools })
        deepStrictEqual(yield* statuses(world), ["applied", "applied", "applied"])
        deepStrictEqual((yield* ScriptedModel.requests).map((r) => r.toolChoice), [
          "auto",
          { tool: "resolve" },
          { tool: "resolve" },
          "auto"
        ])
      }).pipe(Effect.provide(session(
        [
          threeEdits,
          resolveById(world, 0),
          resolveAllById(world).pipe(
            Effect.map((parts) => parts.slice(1)) // the two left
          ),
          ScriptedModel.text("Done.")
        ],
        world
      )))
    }))

  it.effect("a model that ignores a batch stops after maxForcedTurns turns; every preview stays pending", () =>
    Effect.gen(function*() {
      const world = yield* makeWorld
      yield* Effect.gen(function*() {
        const driver = yield* TurnDriver
        const error = yield* Effect.flip(driver.run("Edit three files", { toolkit: AppTools }))
        assert.instanceOf(error, ResolveNotCalled)
        assert.strictEqual((error as ResolveNotCalled).forcedTurns, 3)
        deepStrictEqual((yield* ScriptedModel.requests).length, 4)
        deepStrictEqual(yield* statuses(world), ["pending", "pending", "pending"])
      }).pipe(Effect.provide(session(
        [threeEdits, ScriptedModel.text("No."), ScriptedModel.text("No."), ScriptedModel.text("No.")],
        world
      )))
    }))
})
