/**
 * The `edit` preview producer (`FileEditPreview`) as an `@effect/ai` `Tool`, `Toolkit` and handler layer: an app
 * adds safe file edits to `TurnDriver.run` in one line. The provider is sent the producer's strict JSON Schema
 * (`FileEditPreview.parametersJsonSchema`, accepted by OpenAI strict mode); arguments decode permissively when a
 * response is decoded and strictly in the handler, so a bad call comes back to the model as `InvalidEditParams`
 * instead of failing the response. Every failure is returned to the model (`failureMode: "return"`), including
 * `EditFileHeld` when a pending preview already holds a file.
 *
 * @example
 * ```ts
 * import { NodeContext } from "@effect/platform-node"
 * import { Effect, Layer } from "effect"
 * import { AiEditTool, TurnDriver } from "effect-resolve/ai"
 *
 * const program = Effect.gen(function*() {
 *   const driver = yield* TurnDriver
 *   yield* driver.run("Rename greet to hello in src/", { toolkit: AiEditTool.toolkit })
 * }).pipe(
 *   Effect.provide(Layer.mergeAll(TurnDriver.layer(), AiEditTool.layerWorkspace({ root: "." }))),
 *   Effect.provide(NodeContext.layer)
 * ) // and a LanguageModel layer
 * ```
 *
 * @since 0.3.0
 */
import * as Tool from "@effect/ai/Tool"
import * as Toolkit from "@effect/ai/Toolkit"
import type * as FileSystem from "@effect/platform/FileSystem"
import type * as Path from "@effect/platform/Path"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { ToolResult } from "../domain/ToolResult.js"
import { permissiveParameters, toFailure, ToolFailure } from "../internal/aiTools.js"
import { PendingActions } from "../services/PendingActions.js"
import * as FileEditPreview from "./FileEditPreview.js"

/**
 * The `edit` tool: the producer's description and strict JSON Schema; its handler needs the session's
 * `PendingActions` when it runs (the turn driver provides it). Failures are returned to the model.
 *
 * @since 0.3.0
 * @category tools
 */
export const tool = Tool.make("edit", {
  description: FileEditPreview.tool.description,
  success: ToolResult,
  failure: ToolFailure,
  failureMode: "return",
  dependencies: [PendingActions]
}).setParameters(permissiveParameters(FileEditPreview.parametersJsonSchema))

/**
 * A toolkit holding only `edit`: pass it to `TurnDriver.run` (`{ toolkit: AiEditTool.toolkit }`), or merge it with
 * the app's (`Toolkit.merge`).
 *
 * @since 0.3.0
 * @category tools
 */
export const toolkit = Toolkit.make(tool)

/**
 * Runs one `edit` call from raw model input: the preview, or the failure the model reads.
 *
 * @since 0.3.0
 * @category handlers
 */
export const handle = (
  params: unknown
): Effect.Effect<
  ToolResult,
  typeof ToolFailure.Type,
  FileSystem.FileSystem | Path.Path | FileEditPreview.Workspace | PendingActions
> => Effect.mapError(FileEditPreview.tool.execute(params), toFailure)

/**
 * The handler layer of `toolkit`, over the `FileSystem`, `Path` and `Workspace` it is built with.
 *
 * @since 0.3.0
 * @category layers
 */
export const layer: Layer.Layer<
  Tool.Handler<"edit">,
  never,
  FileSystem.FileSystem | Path.Path | FileEditPreview.Workspace
> = toolkit.toLayer(
  Effect.map(
    Effect.context<FileSystem.FileSystem | Path.Path | FileEditPreview.Workspace>(),
    (context) => ({ edit: (params: unknown) => Effect.provide(handle(params), context) })
  )
)

/**
 * `layer` over a workspace (`FileEditPreview.layer(options)`); it still needs a `FileSystem` and a `Path`
 * (`NodeContext.layer`).
 *
 * @since 0.3.0
 * @category layers
 */
export const layerWorkspace = (
  options: Parameters<typeof FileEditPreview.layer>[0]
): Layer.Layer<Tool.Handler<"edit">, never, FileSystem.FileSystem | Path.Path> =>
  Layer.provide(layer, FileEditPreview.layer(options))
