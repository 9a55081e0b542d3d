/**
 * A durable agent session survives a restart: the turn driver saves the conversation, the unsent steering and the
 * forcing state after every turn, and a driver opened on the same session (a new layer, as a restarted process
 * builds it) sends its next request exactly as the first process would have.
 */
import { Tool, Toolkit } from "@effect/ai"
import { assert, describe, it } from "@effect/vitest"
import { deepStrictEqual } from "@effect/vitest/utils"
import { Context, Effect, Exit, Layer, Ref, Schema, Scope } from "effect"
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

const { dir, cleanup } = tempDir()
afterAll(cleanup)
let files = 0

/** One "process": a durable session on `store` with a scripted model, in its own scope. */
const openSession = (
  store: Layer.Layer<PendingStore, unknown>,
  disk: Ref.Ref<Record<string, string>>,
  script: ScriptedModel.Script,
  enforcement: "force" | "soft" = "force"
) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    const runtime = ResolveRuntime.durable({ session: "agent-1", store, kinds: [Write] })
    const layer = Layer.mergeAll(
      TurnDriver.layerOn({ system: "You edit files." }),
      handlers,
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
  it.live("a preview staged in a turn the process did not live to save is shown to the model again", () =>
    Effect.gen(function*() {
      // The store forgets every save: as if the process died before the end of the turn that staged the preview.
      const memory = makeMemory()
      const store = Layer.succeed(PendingStore, { ...memory, saveSession: () => Effect.void })
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
