/**
 * A person's decision about a pending action, as a store keeps it: who decided (a reviewer's name), when, `apply` or
 * `discard`, why, and what they changed (an amendment, JSON, or `null`). A decision is recorded `requested` and is
 * completed exactly once, `done` or `failed`, with the outcome, by the process that ran it (an approval inbox that
 * registers the action's kind, or the session's own process). At most one decision per action is `requested` at a
 * time.
 *
 * @example
 * ```ts
 * import { Decision } from "effect-resolve"
 *
 * const waiting = (decision: Decision.Decision) =>
 *   decision.state === "requested" ? `${decision.reviewer} asked to ${decision.action} ${decision.actionId}` : ""
 * ```
 *
 * @since 0.3.0
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { timedId } from "../internal/ids.js"
import { EpochMillis } from "./PendingRecord.js"

/**
 * What a reviewer decided: `apply` the action (perhaps amended) or `discard` it.
 *
 * @since 0.3.0
 * @category schemas
 */
export const DecisionAction = Schema.Literal("apply", "discard")

/**
 * @since 0.3.0
 * @category models
 */
export type DecisionAction = typeof DecisionAction.Type

/**
 * Where a decision is: `requested` (recorded, not yet run), `done` (run: the action was applied or discarded as
 * decided), `failed` (run, and it did not happen: the apply failed, or the action had already left `pending`).
 *
 * @since 0.3.0
 * @category schemas
 */
export const DecisionState = Schema.Literal("requested", "done", "failed")

/**
 * @since 0.3.0
 * @category models
 */
export type DecisionState = typeof DecisionState.Type

/**
 * A recorded decision.
 *
 * @since 0.3.0
 * @category schemas
 */
export const Decision = Schema.Struct({
  /** Unique: `dc_<time base36>_<random>` (see `makeId`). */
  id: Schema.String,
  /** The pending action it decides. */
  actionId: Schema.String,
  /** The action's session. */
  session: Schema.String,
  /** Who decided: the name of the reviewer's token. */
  reviewer: Schema.String,
  action: DecisionAction,
  reason: Schema.String,
  /** What the reviewer changed before applying (a JSON value the action's kind decodes), or `null`. */
  amendment: Schema.Unknown,
  state: DecisionState,
  /** What running it gave (the result text, or why it failed); `null` while requested. */
  outcome: Schema.NullOr(Schema.String),
  requestedAt: EpochMillis,
  /** When it was completed; `null` while requested. */
  settledAt: Schema.NullOr(EpochMillis),
  /** The runtime instance (or process) that completed it; `null` while requested. */
  settledBy: Schema.NullOr(Schema.String)
})

/**
 * @since 0.3.0
 * @category models
 */
export type Decision = typeof Decision.Type

/**
 * A fresh decision id, `dc_<time base36>_<random>`: the time from `Clock`, then 64 random bits from the platform's
 * cryptographic generator.
 *
 * @since 0.3.0
 * @category constructors
 */
export const makeId: Effect.Effect<string> = timedId("dc")

/**
 * Whether `id` has the form `makeId` gives.
 *
 * @since 0.4.0
 * @category guards
 */
export const isId = (id: unknown): id is string => typeof id === "string" && /^dc_[a-z0-9_]{1,60}$/.test(id)
