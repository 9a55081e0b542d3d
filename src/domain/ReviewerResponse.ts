/**
 * A reviewer's response: a message to the agent about one of its pending actions that decides nothing. The action
 * stays pending; the session's model reads the message in its next request, once, as a hidden steering message, and
 * may stage a new preview or resolve the action itself. What LangGraph's Agent Inbox calls "respond".
 *
 * A store records a response only while its action can be decided (`pending` or `orphaned`, not expired), and marks
 * it `delivered` once the session's saved conversation holds it.
 *
 * @example
 * ```ts
 * import { ReviewerResponse } from "effect-resolve"
 *
 * const line = (response: ReviewerResponse.ReviewerResponse) =>
 *   `${response.reviewer} on ${response.actionId}: ${response.message}` +
 *   (response.deliveredAt === null ? " (not yet read by the model)" : "")
 * ```
 *
 * @since 0.4.0
 */
import type * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { timedId } from "../internal/ids.js"
import { EpochMillis } from "./PendingRecord.js"

/**
 * A recorded response.
 *
 * @since 0.4.0
 * @category schemas
 */
export const ReviewerResponse = Schema.Struct({
  /** Unique: `rs_<time base36>_<random>` (see `makeId`). */
  id: Schema.String,
  /** The pending action it is about. */
  actionId: Schema.String,
  /** The action's session. */
  session: Schema.String,
  /** Who responded: the name of the reviewer's token. */
  reviewer: Schema.String,
  /** What the reviewer said to the agent. */
  message: Schema.String,
  respondedAt: EpochMillis,
  /** When the session's saved conversation first held it; `null` until then. */
  deliveredAt: Schema.NullOr(EpochMillis)
})

/**
 * @since 0.4.0
 * @category models
 */
export type ReviewerResponse = typeof ReviewerResponse.Type

/**
 * A fresh response id, `rs_<time base36>_<random>`: the time from `Clock`, then 64 random bits from the platform's
 * cryptographic generator.
 *
 * @since 0.4.0
 * @category constructors
 */
export const makeId: Effect.Effect<string> = timedId("rs")

/**
 * Whether `id` has the form `makeId` gives.
 *
 * @since 0.4.0
 * @category guards
 */
export const isId = (id: unknown): id is string => typeof id === "string" && /^rs_[a-z0-9_]{1,60}$/.test(id)
