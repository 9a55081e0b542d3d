/**
 * effect-resolve: stage a preview, then apply or discard it. The resolve runtime for LLM agents, as Effect
 * services provided through layers.
 *
 * This is the core entry: the domain (schemas, errors), the session services (queue, steering bus, standing
 * handler, the pending set and its store), the `resolve` program and tool, and staging. It needs only `effect`.
 * The other entries: `effect-resolve/edit`, `/plan`, `/custom` (preview producers), `/render` (terminal
 * rendering), `/ai` (the agent loop on `@effect/ai`), `/sqlite` and `/postgres` (durable stores).
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
export {
  Extra,
  type Invoker,
  ResolveAction,
  ResolveDetails,
  type ResolveError,
  ResolveInvocation,
  ResolveParams
} from "./domain/ResolveParams.js"
/** @since 0.4.0 */
export { InvalidOptions } from "./domain/InvalidOptions.js"

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
export * as Preview from "./services/Preview.js"
/**
 * @deprecated Renamed `Preview` in 0.3.0; this alias goes in 0.4.0.
 * @since 0.1.0
 */
export * as PendingAction from "./services/PendingAction.js"
/** @since 0.1.0 */
export type { PendingActionHandle, PendingActionSpec } from "./services/PendingAction.js"
/** @since 0.1.0 */
export type { PendingStatus } from "./services/Preview.js"
/** @since 0.2.0 */
export {
  type DurableOptions,
  type PendingActionInfo,
  PendingActions,
  queueResolveHandler,
  type ResolveOptions,
  type Retention,
  stage,
  type StageInfo,
  stageKind,
  track
} from "./services/PendingActions.js"
/** @since 0.2.0 */
export * as ActionKind from "./services/ActionKind.js"
/** @since 0.1.0 */
export {
  decodeResolveParams,
  resolve,
  resolveAmended,
  type ResolveServices,
  ResolveTool,
  runResolve,
  toolsFor
} from "./tools/Resolve.js"
/** @since 0.1.0 */
export type { ToolDefinition } from "./tools/ToolDefinition.js"

/** @since 0.1.0 */
export * as ResolveRuntime from "./layers/ResolveRuntime.js"

/** @since 0.2.0 */
export * as PendingRecord from "./domain/PendingRecord.js"
/** @since 0.2.0 */
export { PendingStore } from "./services/PendingStore.js"
/** @since 0.4.0 */
export { ActionRecords } from "./services/ActionRecords.js"
/** @since 0.4.0 */
export { InstanceLeases } from "./services/InstanceLeases.js"
/** @since 0.4.0 */
export { SessionOwners } from "./services/SessionOwners.js"
/** @since 0.4.0 */
export { Conversations } from "./services/Conversations.js"
/** @since 0.4.0 */
export { InboxQueries } from "./services/InboxQueries.js"
/** @since 0.4.0 */
export { DecisionRequests } from "./services/DecisionRequests.js"
/** @since 0.4.0 */
export { ChangeFeed } from "./services/ChangeFeed.js"
/** @since 0.4.0 */
export { SessionOwnership } from "./services/SessionOwnership.js"
/** @since 0.3.0 */
export * as Decision from "./domain/Decision.js"
/** @since 0.4.0 */
export * as ReviewerResponse from "./domain/ReviewerResponse.js"
/** @since 0.4.0 */
export { Decisions } from "./tools/Decisions.js"
