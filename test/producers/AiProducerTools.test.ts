/**
 * The producers as `@effect/ai` tools (`AiEditTool`, `AiPlanTool`), added to `TurnDriver.run` in one line: the real
 * edit producer on a temp workspace through the driver (a parallel batch, a conflicting preview refused), the plan
 * tool through plan approval, and both in one merged toolkit. The schemas sent pass OpenAI's strict rules.
 */
import { Toolkit } from "@effect/ai"
import { NodeContext } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { deepStrictEqual } from "@effect/vitest/utils"
import { Effect, Layer } from "effect"
import { AiEditTool, AiPlanTool, ScriptedModel, TurnDriver } from "../../src/ai.js"
import { FileEditPreview } from "../../src/edit.js"
import { PlanApproval } from "../../src/plan.js"
import { readText, tempDir, writeFiles } from "../support/editWorkspace.js"
import { openAiStrict } from "../support/providerSchemas.js"

/** The ids a scripted model reads in the tool results so far ("Pending action id: ..."), oldest first. */
const idsIn = (request: ScriptedModel.ScriptedRequest): ReadonlyArray<string> => [
  ...new Set([...JSON.stringify(request.prompt).matchAll(/Pending action id: (pa_[A-Za-z0-9_-]+)/g)].map((m) => m[1]!))
]

const editPart = (path: string, oldText: string, newText: string) =>
  ScriptedModel.toolCallPart("edit", { files: [{ path, edits: [{ oldText, newText, replaceAll: null }] }] })

const resolveEach = (request: ScriptedModel.ScriptedRequest) =>
  ScriptedModel.respond(
    ...idsIn(request).map((id) =>
      ScriptedModel.toolCallPart("resolve", { action: "apply", reason: "As asked.", extra: null, id })
    )
  )

describe("AiEditTool", () => {
  it.live("three edits in one response each stage a preview; a fourth on a held file is refused; one forced turn", () =>
    Effect.scoped(Effect.gen(function*() {
      const root = yield* tempDir
      yield* writeFiles(root, { "a.ts": "a = 1\n", "b.ts": "b = 1\n", "c.ts": "c = 1\n" })
      const script: ScriptedModel.Script = (request) =>
        request.index === 0 ?
          ScriptedModel.respond(
            editPart("a.ts", "a = 1", "a = 2"),
            editPart("b.ts", "b = 1", "b = 2"),
            editPart("c.ts", "c = 1", "c = 2"),
            editPart("a.ts", "a = 1", "a = 3")
          ) :
          request.index === 1 ?
          resolveEach(request) :
          ScriptedModel.text("Done.")
      yield* Effect.gen(function*() {
        const driver = yield* TurnDriver
        const result = yield* driver.run("Bump a, b and c", { toolkit: AiEditTool.toolkit })
        const calls = result.turns[0]!.toolCalls
        deepStrictEqual(calls.map((c) => c.isFailure), [false, false, false, true])
        const refused = calls[3]!.result as { error: string; message: string }
        assert.strictEqual(refused.error, "EditFileHeld")
        const requests = yield* ScriptedModel.requests
        assert.include(refused.message, idsIn(requests[1]!)[0]!)
        assert.include(refused.message, "fold both edits into one edit call")
        deepStrictEqual(requests.map((r) => r.toolChoice), ["auto", { tool: "resolve" }, "auto"])
        deepStrictEqual(result.turns[1]!.toolCalls.map((c) => c.isFailure), [false, false, false])
        // The strict schema of the producer is what the provider is sent.
        deepStrictEqual(
          requests[0]!.toolSchemas.edit,
          FileEditPreview.parametersJsonSchema as object
        )
        deepStrictEqual(openAiStrict(requests[0]!.toolSchemas.edit), [])
      }).pipe(
        Effect.provide(
          Layer.mergeAll(TurnDriver.layer(), AiEditTool.layerWorkspace({ root }), ScriptedModel.layer(script))
        ),
        Effect.provide(NodeContext.layer)
      )
      deepStrictEqual(
        [yield* readText(root, "a.ts"), yield* readText(root, "b.ts"), yield* readText(root, "c.ts")],
        ["a = 2\n", "b = 2\n", "c = 2\n"]
      )
    })))

  it.live("a call whose arguments do not decode gets InvalidEditParams back; nothing is staged", () =>
    Effect.scoped(Effect.gen(function*() {
      const root = yield* tempDir
      yield* Effect.gen(function*() {
        const driver = yield* TurnDriver
        const result = yield* driver.run("Edit", { toolkit: AiEditTool.toolkit })
        const call = result.turns[0]!.toolCalls[0]!
        assert.isTrue(call.isFailure)
        assert.strictEqual((call.result as { error: string }).error, "InvalidEditParams")
        deepStrictEqual((yield* ScriptedModel.requests).map((r) => r.toolChoice), ["auto", "auto"])
      }).pipe(
        Effect.provide(Layer.mergeAll(
          TurnDriver.layer(),
          AiEditTool.layerWorkspace({ root }),
          ScriptedModel.layer([ScriptedModel.toolCall("edit", { files: "a.ts" }), ScriptedModel.text("Sorry.")])
        )),
        Effect.provide(NodeContext.layer)
      )
    })))
})

describe("AiPlanTool", () => {
  it.live("plan, then edits, in one merged toolkit: the plan is approved, then the edit applied", () =>
    Effect.scoped(Effect.gen(function*() {
      const root = yield* tempDir
      yield* writeFiles(root, { "a.ts": "a = 1\n" })
      const planFilePath = `${root}/PLAN.md`
      const submitted: Array<string> = []
      const approve = (submission: PlanApproval.PlanSubmission) =>
        Effect.sync(() => {
          submitted.push(submission.title)
          return PlanApproval.approved
        })
      const script: ScriptedModel.Script = [
        ScriptedModel.toolCall("plan", { plan: "# Bump a\n\n1. a = 2\n" }),
        ScriptedModel.toolCall("resolve", { action: "apply", reason: "Ready.", extra: null, id: null }),
        ScriptedModel.respond(editPart("a.ts", "a = 1", "a = 2")),
        ScriptedModel.toolCall("resolve", { action: "apply", reason: "As planned.", extra: null, id: null }),
        ScriptedModel.text("Done.")
      ]
      yield* Effect.gen(function*() {
        const driver = yield* TurnDriver
        const result = yield* driver.run("Plan, then bump a", {
          toolkit: Toolkit.merge(AiEditTool.toolkit, AiPlanTool.toolkit)
        })
        deepStrictEqual(result.turns.map((t) => t.toolCalls.map((c) => c.isFailure)), [
          [false],
          [false],
          [false],
          [false],
          []
        ])
        assert.include(JSON.stringify(result.turns[1]!.toolCalls[0]!.result), "Plan approved: Bump-a")
        const requests = yield* ScriptedModel.requests
        deepStrictEqual(openAiStrict(requests[0]!.toolSchemas.plan), [])
        // The plan is a standing action: it never forces; the edit's preview does.
        deepStrictEqual(requests.map((r) => r.toolChoice), ["auto", "auto", "auto", { tool: "resolve" }, "auto"])
      }).pipe(
        Effect.provide(Layer.mergeAll(
          TurnDriver.layer(),
          AiEditTool.layerWorkspace({ root }),
          AiPlanTool.layer({ planFilePath, approve }),
          ScriptedModel.layer(script)
        )),
        Effect.provide(NodeContext.layer)
      )
      deepStrictEqual(submitted, ["Bump-a"])
      assert.strictEqual(yield* readText(root, "PLAN.md"), "# Bump a\n\n1. a = 2\n")
      assert.strictEqual(yield* readText(root, "a.ts"), "a = 2\n")
    })))
})
