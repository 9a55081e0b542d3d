/**
 * A durable agent session survives a restart (`src/agent/internal/sessionState.ts`, through the public `TurnDriver`):
 * the turn driver saves the conversation, the unsent steering and the forcing state after every turn, and a driver
 * opened on the same session (a new layer, as a restarted process builds it) sends its next request exactly as the
 * first process would have.
 */
import { Prompt, Tool, Toolkit } from "@effect/ai"
import { assert, describe, it } from "@effect/vitest"
import { deepStrictEqual } from "@effect/vitest/utils"
import { Context, Effect, Exit, Layer, Option, Ref, Schema, Scope } from "effect"
import * as path from "node:path"
import { afterAll } from "vitest"
import * as ScriptedModel from "../../src/agent/ScriptedModel.js"
import { restoredPreviewText, TurnDriver } from "../../src/agent/TurnDriver.js"
import {
  ActionKind,
  PendingActions,
  PendingStore,
  PendingStoreError,
  ResolveConfig,
  ResolveRuntime,
  ResolveTool,
  stageKind,
  ToolChoiceQueue,
  ToolResult
} from "../../src/index.js"
import { makeMemory } from "../../src/services/PendingStore.js"
import * as SqliteStore from "../../src/stores/SqliteStore.js"
import { tempDir } from "../stores/subjects.js"

class Disk extends Context.Tag("test/Disk")<Disk, Ref.Ref<Record<string, string>>>() {}

const Write = ActionKind.make({
  name: "write",
  payload: Schema.Struct({ file: Schema.String, text: Schema.String }),
  apply: ({ file, text }) =>
    Effect.flatMap(
      Disk,
      (disk) => Effect.as(Ref.update(disk, (files) => ({ ...files, [file]: text })), ToolResult.text(`Wrote ${file}`))
    ),
  recover: () => Effect.succeed("pending")
})

const Edit = Tool.make("edit", {
  parameters: { file: Schema.String, text: Schema.String },
  success: Schema.String,
  failure: PendingStoreError,
  dependencies: [PendingActions, Disk]
})
const Tools = Toolkit.make(Edit)
const handlers = Tools.toLayer({
  edit: ({ file, text }) =>
    Effect.map(
      stageKind(Write, { file, text }, {
        label: `Edit: ${file}`,
        sourceToolName: "edit",
        preview: `${file} would become ${JSON.stringify(text)}`
      }),
      (handle) => `Preview (${handle.id}): ${file} would become ${JSON.stringify(text)}`
    )
})

// An app tool whose result does not quote the action's id.
const quietHandlers = Tools.toLayer({
  edit: ({ file, text }) =>
    Effect.as(
      stageKind(Write, { file, text }, { label: `Edit: ${file}`, sourceToolName: "edit", preview: `${file}: ${text}` }),
      "Preview ready."
    )
})

const { dir, cleanup } = tempDir()
afterAll(cleanup)
let files = 0

/** One "process": a durable session on `store` with a scripted model, in its own scope. */
const openSession = (
  store: Layer.Layer<PendingStore, unknown>,
  disk: Ref.Ref<Record<string, string>>,
  script: ScriptedModel.Script,
  enforcement: "force" | "soft" = "force",
  toolHandlers: typeof handlers = handlers
) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    const runtime = ResolveRuntime.durable({ session: "agent-1", store, kinds: [Write] })
    const layer = Layer.mergeAll(
      TurnDriver.layerOn({ system: "You edit files." }),
      toolHandlers,
      ScriptedModel.layer(script)
    ).pipe(
      Layer.provideMerge(runtime),
      Layer.provideMerge(Layer.succeed(Disk, disk)),
      Layer.provideMerge(ResolveConfig.layer({ enforcement }))
    )
    const context = yield* Layer.buildWithScope(layer, scope)
    return {
      run: <A, E>(effect: Effect.Effect<A, E, Layer.Layer.Success<typeof layer>>) => Effect.provide(effect, context),
      close: Scope.close(scope, Exit.void)
    }
  })

const drive = (prompt: string, maxTurns?: number) =>
  Effect.flatMap(TurnDriver, (driver) => Effect.either(driver.run(prompt, { toolkit: Tools, maxTurns })))

/** What a request carried, as comparable data. */
const shape = (request: ScriptedModel.ScriptedRequest) => ({
  toolChoice: request.toolChoice,
  tools: request.tools,
  userTexts: request.userTexts
})

const stageTurn = ScriptedModel.toolCall("edit", { file: "a.ts", text: "hello" }, "call-edit")
const resolveTurn = ScriptedModel.toolCall("resolve", {
  action: "apply",
  reason: "Matches.",
  extra: null,
  id: null
}, "call-resolve")

for (const enforcement of ["force", "soft"] as const) {
  describe(`a durable agent session (${enforcement})`, () => {
    it.live("after a restart between turns, the next request is exactly the one the first process would have sent", () =>
      Effect.gen(function*() {
        // The reference: one process, no restart. Turn 1 stages the preview, turn 2 resolves it.
        const referenceDisk = yield* Ref.make<Record<string, string>>({})
        const reference = yield* openSession(
          Layer.succeed(PendingStore, makeMemory()),
          referenceDisk,
          [stageTurn, resolveTurn, "Done."],
          enforcement
        )
        yield* reference.run(drive("Say hello in a.ts"))
        const expected = yield* reference.run(ScriptedModel.requests)
        yield* reference.close

        // The same, with a restart after turn 1 (the first process stops after one request).
        const store = SqliteStore.layer({ filename: path.join(dir, `agent-${++files}.db`) })
        const disk = yield* Ref.make<Record<string, string>>({})
        const first = yield* openSession(store, disk, [stageTurn], enforcement)
        const stopped = yield* first.run(drive("Say hello in a.ts", 1))
        assert.strictEqual(stopped._tag, "Left")
        yield* first.close

        const second = yield* openSession(store, disk, [resolveTurn, "Done."], enforcement)
        const finished = yield* second.run(drive("Continue."))
        assert.strictEqual(finished._tag, "Right")
        const [next] = yield* second.run(ScriptedModel.requests)
        // Exactly as it would have been, but for the new user message of the second run.
        const wanted = shape(expected[1]!)
        deepStrictEqual({ ...shape(next!), userTexts: next!.userTexts.filter((t) => t !== "Continue.") }, wanted)
        assert.strictEqual(wanted.toolChoice === "auto", enforcement === "soft")
        deepStrictEqual(yield* Ref.get(disk), { "a.ts": "hello" })
        deepStrictEqual(
          (yield* second.run(Effect.flatMap(PendingActions, (p) => p.list))).map((info) => info.status),
          ["applied"]
        )
        yield* second.close
      }))
  })
}

describe("a durable agent session", () => {
  it.live("a tool result that does not quote the id: the resumed session sends exactly the first process's request", () =>
    Effect.gen(function*() {
      const referenceDisk = yield* Ref.make<Record<string, string>>({})
      const reference = yield* openSession(
        Layer.succeed(PendingStore, makeMemory()),
        referenceDisk,
        [stageTurn, resolveTurn, "Done."],
        "force",
        quietHandlers
      )
      yield* reference.run(drive("Say hello in a.ts"))
      const expected = yield* reference.run(ScriptedModel.requests)
      yield* reference.close

      const store = SqliteStore.layer({ filename: path.join(dir, `agent-${++files}.db`) })
      const disk = yield* Ref.make<Record<string, string>>({})
      const first = yield* openSession(store, disk, [stageTurn], "force", quietHandlers)
      yield* first.run(drive("Say hello in a.ts", 1))
      yield* first.close
      const second = yield* openSession(store, disk, [resolveTurn, "Done."], "force", quietHandlers)
      yield* second.run(drive("Continue."))
      const [next] = yield* second.run(ScriptedModel.requests)
      // No "staged before a restart" reminder: the saved session says the conversation showed this preview.
      deepStrictEqual(
        { ...shape(next!), userTexts: next!.userTexts.filter((t) => t !== "Continue.") },
        shape(expected[1]!)
      )
      deepStrictEqual(yield* Ref.get(disk), { "a.ts": "hello" })
      yield* second.close
    }))

  it.live("a preview staged in a turn the process did not live to save is shown to the model again", () =>
    Effect.gen(function*() {
      // The store forgets every save: as if the process died before the end of the turn that staged the preview.
      const memory = makeMemory()
      const store = Layer.succeed(PendingStore, { ...memory, saveConversation: () => Effect.void })
      const disk = yield* Ref.make<Record<string, string>>({})
      const first = yield* openSession(store, disk, [stageTurn])
      yield* first.run(drive("Say hello in a.ts", 1))
      const [staged] = yield* first.run(Effect.flatMap(PendingActions, (p) => p.list))
      yield* first.close

      const second = yield* openSession(store, disk, [resolveTurn, "Done."])
      yield* second.run(drive("Continue."))
      const [next] = yield* second.run(ScriptedModel.requests)
      assert.include(next!.userTexts, restoredPreviewText(staged!))
      assert.include(restoredPreviewText(staged!), "a.ts would become \"hello\"")
      deepStrictEqual(next!.toolChoice, { tool: "resolve" })
      deepStrictEqual(yield* Ref.get(disk), { "a.ts": "hello" })
      yield* second.close
    }))
})

describe("a durable agent session's conversation is saved in increments", () => {
  it.live("each turn writes only the messages it added; a restart reads them back and sends the same request", () =>
    Effect.gen(function*() {
      const memory = makeMemory()
      const saves: Array<{ readonly from: number; readonly written: number }> = []
      const store = Layer.succeed(PendingStore, {
        ...memory,
        saveConversation: (session, save) => {
          saves.push({ from: save.from, written: save.messages.length })
          return memory.saveConversation(session, save)
        }
      })
      const disk = yield* Ref.make<Record<string, string>>({})
      const script = [stageTurn, resolveTurn, "Done.", "Still done.", stageTurn, resolveTurn, "Done again."]
      const first = yield* openSession(store, disk, script)
      yield* first.run(drive("Say hello in a.ts"))
      yield* first.run(drive("Anything else?"))
      yield* first.run(drive("Say hello again", 1))
      const history = yield* first.run(Effect.flatMap(TurnDriver, (driver) => driver.history))
      yield* first.close

      // Every save starts where the one before ended: no message is written twice.
      assert.isAtLeast(saves.length, 5)
      let stored = 0
      for (const save of saves) {
        assert.strictEqual(save.from, stored)
        assert.isAtMost(save.written, 4, "a turn adds a request's messages and the answer, not the conversation")
        stored = save.from + save.written
      }
      assert.strictEqual(stored, history.content.length)
      const saved = Option.getOrThrow(yield* memory.loadConversation("agent-1"))
      assert.strictEqual(saved.messages.length, history.content.length)

      // A restart: the next request carries the first process's conversation exactly, message for message, then the
      // new prompt (and the resolve forced for the preview still pending, as the first process would have).
      const second = yield* openSession(store, disk, [resolveTurn, "Done."])
      yield* second.run(drive("Continue."))
      const [resumed] = yield* second.run(ScriptedModel.requests)
      const encode = Schema.encodeSync(Prompt.Prompt)
      deepStrictEqual(
        encode(Prompt.fromMessages(resumed!.prompt.content.slice(0, history.content.length))),
        encode(history)
      )
      assert.include(resumed!.userTexts, "Continue.")
      deepStrictEqual(resumed!.toolChoice, { tool: "resolve" })
      deepStrictEqual(yield* Ref.get(disk), { "a.ts": "hello" })
      yield* second.close
    }))
})

describe("a durable agent session shared with another process", () => {
  it.live("an action resolved elsewhere (an approval inbox) is not forced again", () =>
    Effect.gen(function*() {
      const store = Layer.succeed(PendingStore, makeMemory())
      const disk = yield* Ref.make<Record<string, string>>({})
      const agent = yield* openSession(store, disk, [stageTurn, "Waiting for the approval."])
      yield* agent.run(drive("Say hello in a.ts", 1))
      const [staged] = yield* agent.run(Effect.flatMap(PendingActions, (p) => p.list))

      // Elsewhere, on the same store and session: a person approves it.
      const inbox = yield* openSession(store, disk, [])
      yield* inbox.run(
        ResolveTool.execute({ action: "apply", reason: "Approved by Ana.", extra: null, id: staged!.id })
      )
      deepStrictEqual(yield* Ref.get(disk), { "a.ts": "hello" })

      // The agent's next request is not forced: its pending set is read again first.
      yield* agent.run(drive("Continue."))
      const requests = yield* agent.run(ScriptedModel.requests)
      deepStrictEqual(requests.at(-1)!.toolChoice, "auto")
      deepStrictEqual(
        (yield* agent.run(Effect.flatMap(PendingActions, (p) => p.list))).map((info) => info.status),
        ["applied"]
      )
      yield* agent.close
      yield* inbox.close
    }))
})

/** The forcing state a durable session saved last: how many directives each of its maps holds. */
const savedForcing = (memory: ReturnType<typeof makeMemory>) =>
  Effect.map(memory.loadSession("agent-1"), (json) => {
    const state = JSON.parse(Option.getOrThrow(json))
    return {
      forceNext: state.forceNext.length,
      ignoredForced: state.ignoredForced.length,
      errorStreak: state.errorStreak.length
    }
  })

describe("a durable agent session's forcing state stays bounded", () => {
  it.live("the state kept for previews the app cleared goes at the next turn, however many there were", () =>
    Effect.gen(function*() {
      const rounds = 40
      // Each round stages a preview (turn 1), ignores the reminder (turn 2: the next turn is forced), then ignores the
      // forced turn or fails it (turn 3); the app then clears the preview.
      const script: ScriptedModel.Script = (request) => {
        const round = Math.floor(request.index / 3)
        if (round >= rounds) return "Nothing else."
        const step = request.index % 3
        return step === 0 ?
          ScriptedModel.toolCall("edit", { file: `f${round}.ts`, text: "x" }) :
          step === 1 ?
          "Not now." :
          round % 2 === 0 ?
          "Still not." :
          ScriptedModel.fail("overloaded")
      }
      const memory = makeMemory()
      const disk = yield* Ref.make<Record<string, string>>({})
      const agent = yield* openSession(Layer.succeed(PendingStore, memory), disk, script, "soft")
      for (let round = 0; round < rounds; round++) {
        yield* agent.run(drive(`Edit f${round}.ts`, 3))
        // The last turn saved this round's preview's state only: the cleared previews' went at the round's first turn.
        deepStrictEqual(yield* savedForcing(memory), {
          forceNext: 1,
          ignoredForced: round % 2 === 0 ? 1 : 0,
          errorStreak: round % 2
        })
        yield* agent.run(Effect.flatMap(ToolChoiceQueue, (queue) => queue.clear))
      }
      // One more turn: nothing of the cleared previews is kept.
      yield* agent.run(drive("Anything else?", 1))
      deepStrictEqual(yield* savedForcing(memory), { forceNext: 0, ignoredForced: 0, errorStreak: 0 })
      yield* agent.close
    }))

  it.live("a restarted session keeps no state for an action another process resolved meanwhile", () =>
    Effect.gen(function*() {
      const memory = makeMemory()
      const store = Layer.succeed(PendingStore, memory)
      const disk = yield* Ref.make<Record<string, string>>({})
      // The agent stages a preview and ignores the reminder: the next turn would force it.
      const agent = yield* openSession(store, disk, [stageTurn, "Not now."], "soft")
      yield* agent.run(drive("Say hello in a.ts", 2))
      const [staged] = yield* agent.run(Effect.flatMap(PendingActions, (p) => p.list))
      deepStrictEqual(yield* savedForcing(memory), { forceNext: 1, ignoredForced: 0, errorStreak: 0 })
      yield* agent.close
      // Meanwhile a person approves it elsewhere; then the agent's process starts again.
      const inbox = yield* openSession(store, disk, [])
      yield* inbox.run(
        ResolveTool.execute({ action: "apply", reason: "Approved by Ana.", extra: null, id: staged!.id })
      )
      yield* inbox.close
      const restarted = yield* openSession(store, disk, ["Done."], "soft")
      yield* restarted.run(drive("Continue."))
      deepStrictEqual(yield* savedForcing(memory), { forceNext: 0, ignoredForced: 0, errorStreak: 0 })
      yield* restarted.close
    }))
})
