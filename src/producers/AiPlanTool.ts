/**
 * Plan approval (`PlanApproval`) as an `@effect/ai` `Tool`, `Toolkit` and handler layer: the model calls `plan` with
 * the whole plan; the handler writes it to the app's plan file and enters plan mode (once: a later call replaces the
 * plan while the approval waits), and the model's `resolve` with action "apply" asks the app's `approve` callback.
 * The provider is sent a strict JSON Schema (`{ plan: string }`, accepted by OpenAI strict mode); every failure is
 * returned to the model (`failureMode: "return"`).
 *
 * @example
 * ```ts
 * import { NodeContext } from "@effect/platform-node"
 * import { Effect, Layer } from "effect"
 * import { PlanApproval } from "effect-resolve/plan"
 * import { AiPlanTool, TurnDriver } from "effect-resolve/ai"
 *
 * const program = Effect.gen(function*() {
 *   const driver = yield* TurnDriver
 *   yield* driver.run("Plan the migration first", { toolkit: AiPlanTool.toolkit })
 * }).pipe(
 *   Effect.provide(Layer.mergeAll(
 *     TurnDriver.layer(),
 *     AiPlanTool.layer({ planFilePath: "PLAN.md", approve: PlanApproval.autoApprove })
 *   )),
 *   Effect.provide(NodeContext.layer)
 * ) // and a LanguageModel layer
 * ```
 *
 * @since 0.3.0
 */
import * as Tool from "@effect/ai/Tool"
import * as Toolkit from "@effect/ai/Toolkit"
import * as FileSystem from "@effect/platform/FileSystem"
import * as Path from "@effect/platform/Path"
import * as Effect from "effect/Effect"
import type * as JSONSchema from "effect/JSONSchema"
import type * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as Scope from "effect/Scope"
import { ToolError } from "../domain/Errors.js"
import { text as resultText, ToolResult } from "../domain/ToolResult.js"
import { permissiveParameters, toFailure, ToolFailure } from "../internal/aiTools.js"
import { PendingActions } from "../services/PendingActions.js"
import { StandingResolveHandler } from "../services/StandingResolveHandler.js"
import * as PlanApproval from "./PlanApproval.js"

/**
 * The strict JSON Schema of `plan`'s parameters.
 *
 * @since 0.3.0
 * @category schemas
 */
export const parametersJsonSchema: JSONSchema.JsonSchema7Root = {
  type: "object",
  properties: {
    plan: {
      type: "string",
      description: "The whole plan, as Markdown: its first heading is its title. It replaces any plan written before."
    }
  },
  required: ["plan"],
  additionalProperties: false
}

const description = [
  "Write your plan and ask for its approval before changing anything.",
  "",
  "The plan is written to the plan file; then call `resolve` with action \"apply\" to ask for approval (pass",
  "`extra` as \"{\\\"title\\\": \\\"<a short title>\\\"}\" to name it). Refused, you get the feedback: call `plan`",
  "again with the revised plan, then `resolve` again. Approved, implement it."
].join("\n")

/**
 * The `plan` tool; its handler needs the session's `PendingActions` and `StandingResolveHandler` when it runs (the
 * turn driver provides them). Failures are returned to the model.
 *
 * @since 0.3.0
 * @category tools
 */
export const tool = Tool.make("plan", {
  description,
  success: ToolResult,
  failure: ToolFailure,
  failureMode: "return",
  dependencies: [PendingActions, StandingResolveHandler]
}).setParameters(permissiveParameters(parametersJsonSchema))

/**
 * A toolkit holding only `plan`: pass it to `TurnDriver.run`, or merge it with the app's (`Toolkit.merge`).
 *
 * @since 0.3.0
 * @category tools
 */
export const toolkit = Toolkit.make(tool)

const PlanParams = Schema.Struct({ plan: Schema.String.pipe(Schema.minLength(1)) })
const decodeParams = Schema.decodeUnknown(PlanParams, { onExcessProperty: "error", errors: "first" })

/**
 * The handler layer of `toolkit`: plan mode is entered (with `options`, as `PlanApproval.enter`) on the first `plan`
 * call, and again after it ended (approved, or left); it lasts at most as long as the layer.
 *
 * @since 0.3.0
 * @category layers
 */
export const layer = <E, R>(
  options: PlanApproval.PlanApprovalOptions<E, R>
): Layer.Layer<Tool.Handler<"plan">, never, FileSystem.FileSystem | Path.Path | R> =>
  toolkit.toLayer(Effect.gen(function*() {
    const scope = yield* Effect.scope
    const context = yield* Effect.context<FileSystem.FileSystem | Path.Path | R>()
    let mode: PlanApproval.PlanMode | undefined
    const handle = (params: unknown) =>
      Effect.gen(function*() {
        const { plan } = yield* Effect.mapError(
          decodeParams(params),
          () => new ToolError({ message: "Call plan with { \"plan\": \"<the whole plan, as Markdown>\" }." })
        )
        const fs = yield* FileSystem.FileSystem
        const path = yield* Path.Path
        const planFilePath = path.resolve(options.planFilePath)
        yield* Effect.mapError(
          fs.writeFileString(planFilePath, plan),
          (error) => new ToolError({ message: `Cannot write the plan to ${planFilePath}: ${error.message}.` })
        )
        if (mode === undefined || !(yield* mode.active)) {
          mode = yield* Scope.extend(PlanApproval.enter(options), scope)
        }
        return resultText(
          `The plan is written to ${planFilePath} and waits for approval. Call resolve with action "apply" to ` +
            `ask for it, or call plan again to replace it first.`
        )
      }).pipe(Effect.provide(context), Effect.mapError(toFailure))
    return { plan: handle }
  }))
