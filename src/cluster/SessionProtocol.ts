/**
 * The messages of a session on a cluster: the `Session` entity (`@effect/cluster`, id = the session id) and its
 * RPCs, each with a Schema payload, success and error. `Run` and `Steer` are persisted (`SqlMessageStorage`): a
 * message to a session whose runner died is delivered once the session runs elsewhere, and a retry with the same
 * `runId` / `steerId` is the same message (its primary key), processed at most once. `Decide`, `List` and `Get` are
 * idempotent and not persisted: `SessionClient` sends them again until they are answered.
 *
 * The behaviour is `SessionEntity.layer` (on a runner); the typed client is `SessionClient`.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { SessionProtocol } from "effect-resolve/cluster"
 *
 * // The raw entity client, from any node of the cluster (SessionClient wraps it).
 * const program = Effect.gen(function*() {
 *   const sessions = yield* SessionProtocol.Session.client
 *   const reply = yield* sessions("s-42").Run({ runId: "run-1", prompt: "Rename greet to hello" })
 *   return reply.text
 * })
 * ```
 *
 * @since 0.3.0
 */
import * as AiError from "@effect/ai/AiError"
import * as ClusterSchema from "@effect/cluster/ClusterSchema"
import * as Entity from "@effect/cluster/Entity"
import * as Rpc from "@effect/rpc/Rpc"
import * as Schema from "effect/Schema"
import { MaxTurnsExceeded, RequeueLimitExceeded, ResolveNotCalled, SessionLost } from "../agent/TurnDriver.js"
import {
  ApplyFailed,
  InvalidResolveParams,
  NoPendingAction,
  PendingActionElsewhere,
  PendingActionNotPending,
  PendingStoreError,
  ToolError,
  UnknownPendingAction
} from "../domain/Errors.js"
import { PendingStatus } from "../domain/PendingRecord.js"

/**
 * One action of a session as the cluster sends it: `PendingActions.PendingActionInfo`, with its options encoded as
 * `null` on the wire.
 *
 * @since 0.3.0
 * @category schemas
 */
export const SessionAction = Schema.Struct({
  id: Schema.String,
  label: Schema.String,
  sourceToolName: Schema.String,
  kind: Schema.String,
  preview: Schema.String,
  status: PendingStatus,
  attempts: Schema.Number,
  createdAt: Schema.Number,
  expiresAt: Schema.OptionFromNullOr(Schema.Number),
  outcome: Schema.OptionFromNullOr(Schema.String),
  runnable: Schema.Boolean
})

/**
 * @since 0.3.0
 * @category models
 */
export type SessionAction = typeof SessionAction.Type

/**
 * What a finished `Run` returns: the text of the model's last answer, how many turns this delivery of the message
 * ran (0 when the run had already finished on a runner that died before it could reply), whether it continued a run
 * that another runner (or an earlier activation) had started, and the actions of the session not yet settled.
 *
 * @since 0.3.0
 * @category schemas
 */
export const RunReply = Schema.Struct({
  text: Schema.String,
  turns: Schema.Number,
  resumed: Schema.Boolean,
  open: Schema.Array(SessionAction)
})

/**
 * @since 0.3.0
 * @category models
 */
export type RunReply = typeof RunReply.Type

/**
 * What a run can fail with: the turn driver's errors, the model's `AiError`, and a store failure.
 *
 * @since 0.3.0
 * @category schemas
 */
export const RunError = Schema.Union(
  MaxTurnsExceeded,
  RequeueLimitExceeded,
  ResolveNotCalled,
  SessionLost,
  AiError.AiError,
  PendingStoreError
)

/**
 * @since 0.3.0
 * @category models
 */
export type RunError = typeof RunError.Type

/**
 * A person's decision on one pending action: `apply` it, `discard` it, or `amend` it (apply it with `amendment`,
 * decoded with the kind's `amendment` Schema, whose encoded form is then a string, and given to `apply` as
 * `call.amendment`; since 0.3 also passed as `extra.amendment`). `by` names who decided (told to the model with the decision);
 * `reason` is the resolve reason.
 *
 * @since 0.3.0
 * @category schemas
 */
export const DecisionKind = Schema.Literal("apply", "discard", "amend")

/**
 * @since 0.3.0
 * @category models
 */
export type DecisionKind = typeof DecisionKind.Type

/**
 * What a `Decide` returns: the action's status after it, the result text (the kind's, or the recorded outcome), and
 * whether the action was already in that state when this message arrived (a redelivered decision, or one the model
 * or another person made first with the same effect).
 *
 * @since 0.3.0
 * @category schemas
 */
export const DecisionReply = Schema.Struct({
  id: Schema.String,
  status: PendingStatus,
  text: Schema.String,
  settledBefore: Schema.Boolean
})

/**
 * @since 0.3.0
 * @category models
 */
export type DecisionReply = typeof DecisionReply.Type

/**
 * What a decision can fail with: `resolve`'s errors by id (the action is unknown, not pending, run elsewhere, its
 * apply failed, ...) and a reason `resolve` refuses.
 *
 * @since 0.3.0
 * @category schemas
 */
export const DecisionError = Schema.Union(
  ToolError,
  ApplyFailed,
  NoPendingAction,
  UnknownPendingAction,
  PendingActionNotPending,
  PendingActionElsewhere,
  PendingStoreError,
  InvalidResolveParams
)

/**
 * @since 0.3.0
 * @category models
 */
export type DecisionError = typeof DecisionError.Type

/**
 * One page of a session's actions, most recent first; `next` is the cursor of the next page.
 *
 * @since 0.3.0
 * @category schemas
 */
export const ActionPage = Schema.Struct({
  items: Schema.Array(SessionAction),
  next: Schema.OptionFromNullOr(Schema.String)
})

/**
 * @since 0.3.0
 * @category models
 */
export type ActionPage = typeof ActionPage.Type

/**
 * Adds `prompt` as a user message and drives turns until the model stops asking for tools and nothing is pending.
 * `runId` is the message's identity: a retry with the same id is the same run, and a runner that continues it after
 * another died never adds the prompt twice.
 *
 * @since 0.3.0
 * @category rpcs
 */
export const Run = Rpc.make("Run", {
  payload: { runId: Schema.String, prompt: Schema.String },
  primaryKey: ({ runId }) => runId,
  success: RunReply,
  error: RunError
}).annotate(ClusterSchema.Persisted, true)

/**
 * Steers a user message into the session: it is sent with the next model request (of the run in progress, or of the
 * next run), once. Answered only once the message is recorded in the cluster's `SteeringJournal` (since 0.4): a
 * runner that dies before that request is sent, the runner taking the session over sends it. Fails with
 * `PendingStoreError` when the journal cannot record it (send it again with the same `steerId`).
 *
 * @since 0.3.0
 * @category rpcs
 */
export const Steer = Rpc.make("Steer", {
  payload: { steerId: Schema.String, text: Schema.String },
  primaryKey: ({ steerId }) => steerId,
  error: PendingStoreError
}).annotate(ClusterSchema.Persisted, true)

/**
 * A person decides one pending action, by id. Applied exactly once whoever else resolves it (the model, another
 * person); the model is told in its next request. Not persisted: a decision is idempotent (the action is claimed
 * once, and the same decision again answers `settledBefore: true`), so the client sends it again until it is
 * answered, which costs no message storage.
 *
 * @since 0.3.0
 * @category rpcs
 */
export const Decide = Rpc.make("Decide", {
  payload: {
    id: Schema.String,
    decision: DecisionKind,
    reason: Schema.String,
    by: Schema.String,
    amendment: Schema.optional(Schema.String)
  },
  success: DecisionReply,
  error: DecisionError
})

/**
 * One page of the session's actions (every status), most recent first: at most `limit` (1 to 1 000, default 100)
 * after `cursor`.
 *
 * @since 0.3.0
 * @category rpcs
 */
export const List = Rpc.make("List", {
  payload: { limit: Schema.optional(Schema.Number), cursor: Schema.optional(Schema.String) },
  success: ActionPage,
  error: PendingStoreError
})

/**
 * One action of the session by id.
 *
 * @since 0.3.0
 * @category rpcs
 */
export const Get = Rpc.make("Get", {
  payload: { id: Schema.String },
  success: Schema.OptionFromNullOr(SessionAction),
  error: PendingStoreError
})

/**
 * The entity type of a session: its id is the session id (the key of its durable pending set and conversation).
 *
 * @since 0.3.0
 * @category constants
 */
export const entityType = "effect-resolve/Session"

/**
 * A session as a cluster entity: at most one runner runs it at a time (the cluster's sharding is its only owner),
 * and any node sends it messages.
 *
 * @since 0.3.0
 * @category entities
 */
export const Session = Entity.make(entityType, [Run, Steer, Decide, List, Get])
