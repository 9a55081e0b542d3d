/**
 * The agent loop on `@effect/ai`: `TurnDriver` (force and soft enforcement, durable sessions), the `resolve` tool as
 * an `@effect/ai` `Tool`, the `edit` and `plan` producers as `@effect/ai` tools (`AiEditTool`, `AiPlanTool`: they
 * need `@effect/platform`, a peer of `@effect/ai` too), provider tool-choice formats, a scripted model for tests,
 * and metrics. Needs `@effect/ai`.
 *
 * @since 0.2.0
 */

/** @since 0.1.0 */
export {
  type ForcingLevel,
  MaxTurnsExceeded,
  RequeueLimitExceeded,
  ResolveNotCalled,
  type RunOptions,
  type RunResult,
  SessionLost,
  type SessionOptions,
  type ToolCallRecord,
  TurnDriver,
  type TurnDriverError,
  type TurnRecord
} from "./agent/TurnDriver.js"
/** @since 0.1.0 */
export * as ResolveMetrics from "./agent/ResolveMetrics.js"
/** @since 0.1.0 */
export * as ProviderToolChoice from "./agent/ProviderToolChoice.js"
/** @since 0.1.0 */
export * as AiResolveTool from "./agent/AiResolveTool.js"
/** @since 0.3.0 */
export * as AiEditTool from "./producers/AiEditTool.js"
/** @since 0.3.0 */
export * as AiPlanTool from "./producers/AiPlanTool.js"
/** @since 0.1.0 */
export * as ScriptedModel from "./agent/ScriptedModel.js"
