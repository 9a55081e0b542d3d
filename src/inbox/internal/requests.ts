/**
 * The approval inbox's pure helpers: how a decision, a response and a store failure are shown, and a reviewer's
 * request checked at run time before anything is recorded.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import type * as DecisionModel from "../../domain/Decision.js"
import type { PendingStoreError } from "../../domain/Errors.js"
import type { PendingStatus } from "../../domain/PendingRecord.js"
import type { ReviewerResponse } from "../../domain/ReviewerResponse.js"
import { capText } from "../../internal/render.js"
import { tooDeepPath } from "../../internal/untrusted.js"
import {
  bodyMaxDepth,
  DecisionRequest,
  type DecisionView,
  InvalidDecision,
  InvalidQuery,
  type ResponseView,
  StoreUnavailable
} from "../InboxApi.js"

/** Epoch milliseconds, or `none` when absent. */
export const millisOption = (n: number | null): Option.Option<number> => Option.fromNullable(n)

export const viewOf = (decision: DecisionModel.Decision): DecisionView => ({
  id: decision.id,
  actionId: decision.actionId,
  session: decision.session,
  reviewer: decision.reviewer,
  action: decision.action,
  reason: decision.reason,
  amendment: decision.amendment,
  state: decision.state,
  outcome: Option.fromNullable(decision.outcome),
  requestedAt: decision.requestedAt,
  settledAt: millisOption(decision.settledAt)
})

/** A reviewer's response as the API shows it. */
export const responseViewOf = (response: ReviewerResponse): ResponseView => ({
  id: response.id,
  actionId: response.actionId,
  session: response.session,
  reviewer: response.reviewer,
  message: response.message,
  respondedAt: response.respondedAt,
  deliveredAt: millisOption(response.deliveredAt)
})

export const storeFailed = (error: PendingStoreError) =>
  new StoreUnavailable({
    operation: error.operation,
    message: `The pending store failed (${capText(error.detail, 500)}). Retry; a decision that was recorded is kept ` +
      "and run later."
  })

/** A store error from bad input (no cause) is the caller's; any other is the store's. */
export const queryOrStore = (error: PendingStoreError) =>
  error.cause === undefined ? new InvalidQuery({ message: error.detail }) : storeFailed(error)

const decodeRequest = Schema.decodeUnknownEither(DecisionRequest, { errors: "first" })

/**
 * A decision request checked at run time (`decide` is called from code too, where the types do not hold): nested at
 * most `bodyMaxDepth` levels (checked without recursion, before Schema, whose messages print the value), then
 * decoded. Nothing is recorded before this passes.
 */
export const checkRequest = (request: unknown): Effect.Effect<DecisionRequest, InvalidDecision> => {
  const deep = tooDeepPath(request, bodyMaxDepth)
  if (deep !== undefined) {
    const field = capText(deep.slice(0, 6).join("."), 200)
    return Effect.fail(
      new InvalidDecision({
        field,
        message: `The decision nests objects or arrays more than ${bodyMaxDepth} levels deep (at ${
          JSON.stringify(field)
        }); nothing was recorded. Send a flatter amendment.`
      })
    )
  }
  const decoded = decodeRequest(request)
  if (decoded._tag === "Right") return Effect.succeed(decoded.right)
  const [issue] = ParseResult.ArrayFormatter.formatErrorSync(decoded.left)
  const field = issue === undefined || issue.path.length === 0 ? "(root)" : issue.path.map(String).join(".")
  return Effect.fail(
    new InvalidDecision({
      field,
      message:
        `The decision is not one the inbox takes: ${capText(field, 100)}: ${
          capText(issue?.message ?? "could not be decoded", 500)
        }. Send { action: "apply", reason, amendment? }, { action: "discard", reason }, { action: "snooze", ` +
        `until: <epoch milliseconds> | null } or { action: "respond", message }; nothing was recorded.`
    })
  )
}

export const notDecidableText = (status: PendingStatus): string =>
  status === "resolving" ?
    "is being resolved right now; wait for its result" :
    status === "conflict" ?
    "could not be confirmed after a crash: check it by hand first" :
    status === "unreadable" ?
    "cannot be read from the store; it can only be discarded" :
    status === "orphaned" ?
    "was staged by a process that is gone, and no process registers its kind: it can only be discarded" :
    status === "pending" ?
    "expired; it can no longer be applied" :
    `was already ${status}`
