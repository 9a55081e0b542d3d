/**
 * Durable decisions, one concern of the `PendingStore`: a reviewer's decision on a pending action is recorded
 * `requested`, then whoever can run it (the session's owner, an inbox registering the kind) completes it, once. A
 * reviewer's response (a message to the agent that leaves the action pending) is recorded beside them, and marked
 * delivered once the session's saved conversation holds it.
 *
 * Every store layer provides it, as a view on the same store as `PendingStore` and the other parts.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { DecisionRequests } from "effect-resolve"
 *
 * // The decisions of session "s1" still waiting to be run, oldest first.
 * const waiting = Effect.flatMap(DecisionRequests, (decisions) =>
 *   decisions.requestedDecisions({ sessions: ["s1"], limit: 100 }))
 * ```
 *
 * @since 0.4.0
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import type { Decision, DecisionAction } from "../domain/Decision.js"
import type { PendingStoreError } from "../domain/Errors.js"
import type { PendingRecord } from "../domain/PendingRecord.js"
import type { ReviewerResponse } from "../domain/ReviewerResponse.js"
import type { ActionRecords } from "./ActionRecords.js"

/**
 * Durable decisions: recorded, requested, completed once. A part of `PendingStore` (0.4): hold it to depend on this concern only.
 *
 * @since 0.4.0
 * @category tags
 */
export class DecisionRequests
  extends Context.Tag("effect-resolve/DecisionRequests")<DecisionRequests, DecisionRequests.Service>()
{}

/**
 * @since 0.4.0
 * @category tags
 */
export declare namespace DecisionRequests {
  /**
   * `recordDecision`'s input: the new decision's id (`Decision.makeId`), the action it decides, who decided, what,
   * why, and the amendment (a JSON value, `null` for none).
   *
   * @since 0.3.0
   * @category models
   */
  export interface DecisionInput {
    readonly id: string
    readonly actionId: string
    readonly reviewer: string
    readonly action: DecisionAction
    readonly reason: string
    readonly amendment: unknown
    readonly now: number
  }
  /**
   * `recordDone`'s input: a reviewer's decision that ran as soon as it was made, with no `requested` record before
   * it (`Decisions.decide`): a fresh id (`Decision.makeId`), the action, who decided what and why, the amendment (a
   * JSON value, `null` for none), when it was made (`requestedAt`), what running it gave (`outcome`), who ran it
   * (`by`), and when it was completed (`now`).
   *
   * @since 0.4.0
   * @category models
   */
  export interface DoneInput extends Omit<DecisionInput, "now"> {
    readonly requestedAt: number
    readonly outcome: string
    readonly by: string
    readonly now: number
  }
  /**
   * What `recordDone` did: whether the settle took effect (`true` without one), and whether the decision was
   * recorded.
   *
   * @since 0.4.0
   * @category models
   */
  export interface Done {
    readonly settled: boolean
    readonly recorded: boolean
  }
  /**
   * What `recordDecision` did: `Recorded` (the decision is `requested`), or why nothing was recorded: the action is
   * unknown, it cannot be decided now (it is not `pending` or `orphaned`, or it expired), or another decision for it
   * is still `requested`.
   *
   * @since 0.3.0
   * @category models
   */
  export type RecordDecisionResult =
    | { readonly _tag: "Recorded"; readonly decision: Decision }
    | { readonly _tag: "UnknownAction" }
    | { readonly _tag: "NotDecidable"; readonly record: PendingRecord }
    | { readonly _tag: "AlreadyRequested"; readonly decision: Decision }
  /**
   * `completeDecision`'s input: how the decision ended (`done` or `failed`), what running it gave, and who ran it.
   *
   * @since 0.3.0
   * @category models
   */
  export interface CompleteDecisionInput {
    readonly id: string
    readonly state: "done" | "failed"
    readonly outcome: string
    readonly by: string
    readonly now: number
  }
  /**
   * Which requested decisions `requestedDecisions` reads: of `sessions` and of records of `kinds` when given (each
   * at most 100 entries), at most `limit` (1 to 1 000), oldest first.
   *
   * @since 0.3.0
   * @category models
   */
  export interface RequestedQuery {
    readonly sessions?: ReadonlyArray<string> | undefined
    readonly kinds?: ReadonlyArray<string> | undefined
    readonly limit: number
  }
  /**
   * A requested decision and the record it decides, as it is now (a record may have settled meanwhile: whoever
   * completes the decision says so).
   *
   * @since 0.3.0
   * @category models
   */
  export interface RequestedDecision {
    readonly decision: Decision
    readonly record: PendingRecord
  }

  /**
   * `recordResponse`'s input: the new response's id (`ReviewerResponse.makeId`), the action it is about, who
   * responded and what they said (1 to 4 000 characters).
   *
   * @since 0.4.0
   * @category models
   */
  export interface ResponseInput {
    readonly id: string
    readonly actionId: string
    readonly reviewer: string
    readonly message: string
    readonly now: number
  }
  /**
   * What `recordResponse` did: `Recorded`, or why nothing was recorded: the action is unknown, or it cannot be
   * decided now (it is not `pending` or `orphaned`, or it expired): its model is no longer waiting on it.
   *
   * @since 0.4.0
   * @category models
   */
  export type RecordResponseResult =
    | { readonly _tag: "Recorded"; readonly response: ReviewerResponse }
    | { readonly _tag: "UnknownAction" }
    | { readonly _tag: "NotDecidable"; readonly record: PendingRecord }
  /**
   * `markDelivered`'s input: the responses the session's saved conversation now holds (at most 100 ids), and when.
   *
   * @since 0.4.0
   * @category models
   */
  export interface DeliveredInput {
    readonly ids: ReadonlyArray<string>
    readonly now: number
  }

  /**
   * The decisions of a `PendingStore`. Writes are atomic and uninterruptible once started; bad input fails with a
   * `PendingStoreError` and changes nothing.
   *
   * @since 0.4.0
   * @category models
   */
  export interface Service {
    /**
     * Records a decision, `requested`, in one statement: only for a record that is `pending` or `orphaned` and not
     * expired at `now`, and only when no other decision for it is `requested` (of concurrent callers, one wins).
     */
    readonly recordDecision: (
      input: DecisionRequests.DecisionInput
    ) => Effect.Effect<DecisionRequests.RecordDecisionResult, PendingStoreError>
    /** The decision with this id, if any. */
    readonly getDecision: (id: string) => Effect.Effect<Option.Option<Decision>, PendingStoreError>
    /** Every decision recorded for a record, oldest first (empty for an unknown id). */
    readonly decisions: (actionId: string) => Effect.Effect<ReadonlyArray<Decision>, PendingStoreError>
    /**
     * Decisions still `requested`, with their records as they are now, oldest first: what a process that can run
     * them (the session's owner, an inbox registering the kind) completes. Its cost follows how many are requested.
     */
    readonly requestedDecisions: (
      query: DecisionRequests.RequestedQuery
    ) => Effect.Effect<ReadonlyArray<DecisionRequests.RequestedDecision>, PendingStoreError>
    /** `requested → done | failed`, once: `false` when the decision is unknown or already completed. */
    readonly completeDecision: (
      input: DecisionRequests.CompleteDecisionInput
    ) => Effect.Effect<boolean, PendingStoreError>
    /**
     * Settles a claimed action (as `ActionRecords.settle`) and completes its requested decision `done` with
     * `decision.outcome`, by `decision.by`, at the settle's `now`: the completion only when the settle took effect.
     * `settled: false` when the claim is no longer held (nothing changed), `completed: false` when the decision was
     * completed already. One statement on Postgres; one transaction on SQLite.
     */
    readonly settleDeciding: (
      settle: ActionRecords.SettleInput,
      decision: { readonly id: string; readonly outcome: string; readonly by: string }
    ) => Effect.Effect<{ readonly settled: boolean; readonly completed: boolean }, PendingStoreError>
    /**
     * Records a decision `done` that ran as soon as it was made (see `DoneInput`), with `settle` when given: in the
     * same write as the settle of its claimed action and only when that settle took effect (one statement on
     * Postgres, one transaction on SQLite). A session's write: a fenced store refuses it for an older owner.
     * `recorded: false` when the action is unknown or a decision has this id already; `settled` as `settle` did
     * (`true` without one).
     */
    readonly recordDone: (
      input: DecisionRequests.DoneInput,
      settle?: ActionRecords.SettleInput
    ) => Effect.Effect<DecisionRequests.Done, PendingStoreError>
    /**
     * Records a reviewer's response, in one statement: only for a record that is `pending` or `orphaned` and not
     * expired at `now`. It decides nothing: a requested decision, or another response, does not stand in its way.
     */
    readonly recordResponse: (
      input: DecisionRequests.ResponseInput
    ) => Effect.Effect<DecisionRequests.RecordResponseResult, PendingStoreError>
    /** Every response recorded for a record, oldest first (empty for an unknown id). */
    readonly responses: (actionId: string) => Effect.Effect<ReadonlyArray<ReviewerResponse>, PendingStoreError>
    /**
     * The responses of `session` not yet delivered, oldest first, at most `limit` (1 to 1 000): what its owner
     * sends the model. Its cost follows how many wait.
     */
    readonly undeliveredResponses: (
      query: { readonly session: string; readonly limit: number }
    ) => Effect.Effect<ReadonlyArray<ReviewerResponse>, PendingStoreError>
    /**
     * Marks responses delivered, each once (a session's write: a fenced store refuses it for an older owner);
     * returns how many it marked.
     */
    readonly markDelivered: (input: DecisionRequests.DeliveredInput) => Effect.Effect<number, PendingStoreError>
  }
}
