/**
 * effect-resolve: stage a preview, then apply or discard it. The resolve runtime for LLM agents, as Effect
 * services provided through layers.
 *
 * @since 0.1.0
 */

/** @since 0.1.0 */
export * as ToolChoice from "./domain/ToolChoice.js"
/** @since 0.1.0 */
export * as ToolResult from "./domain/ToolResult.js"
/** @since 0.1.0 */
export * as SteeringMessage from "./domain/SteeringMessage.js"
/** @since 0.1.0 */
export * from "./domain/Errors.js"
/** @since 0.1.0 */
export * from "./domain/ResolveParams.js"

/** @since 0.1.0 */
export {
  type InFlightInfo,
  type PushOptions,
  type RejectDecision,
  type RejectReason,
  ToolChoiceQueue
} from "./services/ToolChoiceQueue.js"
/** @since 0.1.0 */
export { SteeringBus } from "./services/SteeringBus.js"
/** @since 0.1.0 */
export { StandingResolveHandler } from "./services/StandingResolveHandler.js"
/** @since 0.1.0 */
export * from "./services/ResolveConfig.js"

/** @since 0.1.0 */
export * as PendingAction from "./services/PendingAction.js"
/** @since 0.1.0 */
export type { PendingActionHandle, PendingActionSpec, PendingStatus } from "./services/PendingAction.js"
/** @since 0.2.0 */
export {
  type DurableOptions,
  type PendingActionInfo,
  PendingActions,
  queueResolveHandler,
  type StageInfo,
  stageKind
} from "./services/PendingActions.js"
/** @since 0.2.0 */
export * as ActionKind from "./services/ActionKind.js"
/** @since 0.1.0 */
export * from "./tools/Resolve.js"
/** @since 0.1.0 */
export * from "./tools/ToolDefinition.js"

/** @since 0.1.0 */
export * as ResolveRuntime from "./layers/ResolveRuntime.js"

/** @since 0.1.0 */
export * as FileEditPreview from "./tools/FileEditPreview.js"
/** @since 0.1.0 */
export * as PlanApproval from "./producers/PlanApproval.js"
/** @since 0.1.0 */
export * as CustomTools from "./producers/CustomTools.js"
/** @since 0.1.0 */
export { pushPendingAction, toolError } from "./producers/CustomTools.js"
/** @since 0.1.0 */
export * as Renderer from "./render/Renderer.js"
/** @since 0.1.0 */
export { renderResolve } from "./render/Renderer.js"

/** @since 0.1.0 */
export {
  type ForcingLevel,
  forcingLevel,
  isForcingRefusal,
  isPreviewLabel,
  MaxTurnsExceeded,
  RequeueLimitExceeded,
  ResolveNotCalled,
  type RunOptions,
  type RunResult,
  type SessionOptions,
  skippedResolveText,
  skippedText,
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
/** @since 0.1.0 */
export * as ScriptedModel from "./agent/ScriptedModel.js"

/** @since 0.2.0 */
export * as PendingRecord from "./domain/PendingRecord.js"
/** @since 0.2.0 */
export { PendingStore } from "./services/PendingStore.js"
