/**
 * The composed layers of one resolve session.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { ResolveRuntime, ToolChoiceQueue } from "effect-resolve"
 *
 * // Each build is a new session: its own queue, steering bus and standing handler.
 * const program = Effect.flatMap(ToolChoiceQueue, (queue) => queue.inspect).pipe(
 *   Effect.provide(ResolveRuntime.layer)
 * )
 * ```
 *
 * @since 0.1.0
 */
import * as Layer from "effect/Layer"
import { StandingResolveHandler } from "../services/StandingResolveHandler.js"
import { SteeringBus } from "../services/SteeringBus.js"
import { ToolChoiceQueue } from "../services/ToolChoiceQueue.js"

/**
 * The services one session needs.
 *
 * @since 0.1.0
 * @category models
 */
export type Services = ToolChoiceQueue | SteeringBus | StandingResolveHandler

/**
 * Every service of a session, fresh per build. Provide it once per agent session.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<Services> = Layer.mergeAll(
  ToolChoiceQueue.layer,
  SteeringBus.layer,
  StandingResolveHandler.layer
)
