/**
 * The app a turn driver test drives, through the public API: an `edit` tool that stages a preview of a file write
 * (its apply can be made to fail), a plain `search` tool, a fresh session per test over a scripted model, and the
 * helpers the turn driver's tests share (the model's calls, counting reminders, a preview's status, the logs).
 */
import { Tool, Toolkit } from "@effect/ai"
import { Effect, Layer, Logger, Ref, Schema } from "effect"
import * as ScriptedModel from "../../src/agent/ScriptedModel.js"
import { TurnDriver } from "../../src/agent/TurnDriver.js"
import {
  PendingActions,
  PendingStoreError,
  Preview,
  ResolveConfig,
  type ResolveConfigShape,
  stage,
  SteeringMessage,
  ToolResult
} from "../../src/index.js"

// The app's tools: `edit` stages a preview of a file write, `search` is a plain tool.
export const Edit = Tool.make("edit", {
  parameters: { file: Schema.String, text: Schema.String },
  success: Schema.String,
  failure: PendingStoreError, // staging fails only when a durable store does
  dependencies: [PendingActions]
})
export const Search = Tool.make("search", {
  parameters: { q: Schema.String },
  success: Schema.String,
  failure: Schema.String
})
export const AppTools = Toolkit.make(Edit, Search)

export interface World {
  readonly files: Ref.Ref<Record<string, string>>
  readonly handles: Ref.Ref<ReadonlyArray<Preview.Handle>>
  readonly searches: Ref.Ref<ReadonlyArray<string>>
  /** How many applies fail before one succeeds. */
  readonly failingApplies: Ref.Ref<number>
}

export const makeWorld = Effect.all({
  files: Ref.make<Record<string, string>>({}),
  handles: Ref.make<ReadonlyArray<Preview.Handle>>([]),
  searches: Ref.make<ReadonlyArray<string>>([]),
  failingApplies: Ref.make(0)
})

export const handlers = (world: World) =>
  AppTools.toLayer({
    edit: ({ file, text }) =>
      Effect.gen(function*() {
        const handle = yield* stage({
          label: `Edit: 1 replacement in ${file}`,
          sourceToolName: "edit",
          apply: () =>
            Effect.gen(function*() {
              const failing = yield* Ref.getAndUpdate(world.failingApplies, (n) => Math.max(0, n - 1))
              if (failing > 0) return yield* Effect.fail(new Error("disk is full"))
              yield* Preview.commit(Ref.update(world.files, (files) => ({ ...files, [file]: text })))
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
export const session = (script: ScriptedModel.Script, world: World, config: Partial<ResolveConfigShape> = {}) =>
  Layer.mergeAll(
    TurnDriver.layer({ sessionId: `turn-driver-test-${++sessions}` }),
    ScriptedModel.layer(script),
    handlers(world),
    ResolveConfig.layer(config)
  )

export const editCall = (file = "a.ts", text = "hello") => ScriptedModel.toolCall("edit", { file, text })
export const resolveCall = (action: "apply" | "discard", reason = "Looks right.", extra?: Record<string, unknown>) =>
  ScriptedModel.toolCall("resolve", extra === undefined ? { action, reason } : { action, reason, extra })

export const countReminders = (texts: ReadonlyArray<string>) =>
  texts.filter((text) => text === SteeringMessage.resolveReminderText).length

export const statusOf = (world: World, i = 0) => Effect.flatMap(Ref.get(world.handles), (handles) => handles[i]!.status)

/** A logger that records every warning and error message, to pin what a user reads in the logs. */
export const recordLogs = Effect.gen(function*() {
  const logged = yield* Ref.make<ReadonlyArray<string>>([])
  const logger = Logger.make(({ logLevel, message }) => {
    if (logLevel._tag === "Warning" || logLevel._tag === "Error") {
      const text = Array.isArray(message) ? message.map(String).join(" ") : String(message)
      Effect.runSync(Ref.update(logged, (all) => [...all, text]))
    }
  })
  return { logged, layer: Logger.replace(Logger.defaultLogger, logger) }
})

/** An Anthropic-style refusal of forced tool use (extended thinking), as the provider answers it: an HTTP 400. */
export const thinkingRefusal = ScriptedModel.httpError(
  400,
  JSON.stringify({
    type: "error",
    error: { type: "invalid_request_error", message: "Thinking may not be enabled when tool_choice forces tool use." }
  })
)
