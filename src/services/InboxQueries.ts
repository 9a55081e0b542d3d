/**
 * What the approval inbox reads across sessions, one concern of the `PendingStore`: pages of records with their
 * snoozes and requested decisions, the counts of a badge, and snoozes.
 *
 * Every store layer provides it, as a view on the same store as `PendingStore` and the other parts.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { InboxQueries } from "effect-resolve"
 *
 * // How many actions wait for a person?
 * const waiting = (now: number) =>
 *   Effect.map(Effect.flatMap(InboxQueries, (inbox) => inbox.countActions({ now })), (counts) => counts.pending)
 * ```
 *
 * @since 0.4.0
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import type { Decision } from "../domain/Decision.js"
import type { PendingStoreError } from "../domain/Errors.js"
import type { PendingRecord, PendingStatus } from "../domain/PendingRecord.js"
import type { ActionRecords } from "./ActionRecords.js"

/**
 * The approval inbox's queries across sessions, and snoozes. A part of `PendingStore` (0.4): hold it to depend on this concern only.
 *
 * @since 0.4.0
 * @category tags
 */
export class InboxQueries extends Context.Tag("effect-resolve/InboxQueries")<InboxQueries, InboxQueries.Service>() {}

/**
 * @since 0.4.0
 * @category tags
 */
export declare namespace InboxQueries {
  /**
   * A record as the approval inbox lists it: the record, until when a reviewer snoozed it (`none`: never snoozed, or
   * the snooze was ended; a time already past means the snooze is over), and the decision recorded for it that is
   * still `requested`, if any.
   *
   * @since 0.3.0
   * @category models
   */
  export interface ListedAction {
    readonly record: PendingRecord
    readonly snoozedUntil: Option.Option<number>
    readonly requested: Option.Option<Decision>
  }
  /**
   * Which records `listActions` reads, across sessions, most recent first (`createdAt` descending, then insertion
   * order), a page at a time:
   * - `sessions`, `statuses`, `kinds`: only those (each list at most 100 entries); `statuses` defaults to the
   *   records not yet settled (`pending`, `resolving`, `orphaned`, `conflict`);
   * - `snoozed`: `"hide"` (the default) leaves out records snoozed past `now`, `"only"` lists only those,
   *   `"include"` both;
   * - `limit` (1 to 1 000) and `cursor` (a page's `next`) as `PageOptions`.
   *
   * @since 0.3.0
   * @category models
   */
  export interface ActionQuery extends ActionRecords.PageOptions {
    readonly sessions?: ReadonlyArray<string> | undefined
    readonly statuses?: ReadonlyArray<PendingStatus> | undefined
    readonly kinds?: ReadonlyArray<string> | undefined
    readonly snoozed?: "hide" | "include" | "only" | undefined
    readonly now: number
  }
  /**
   * Which records `countActions` counts: those not yet settled, of `sessions` and `kinds` when given (each at most
   * 100 entries), snoozes judged at `now`.
   *
   * @since 0.3.0
   * @category models
   */
  export interface CountQuery {
    readonly sessions?: ReadonlyArray<string> | undefined
    readonly kinds?: ReadonlyArray<string> | undefined
    readonly now: number
  }
  /**
   * The counts of a badge, over the records not yet settled:
   * - `pending`: pending, not snoozed, no decision requested: what waits for a person;
   * - `requested`: a decision is recorded and waits to be run;
   * - `snoozed`: snoozed past `now` (and no decision requested);
   * - `resolving`, `orphaned`, `conflict`: with that status (whatever their snooze).
   *
   * @since 0.3.0
   * @category models
   */
  export interface ActionCounts {
    readonly pending: number
    readonly requested: number
    readonly snoozed: number
    readonly resolving: number
    readonly orphaned: number
    readonly conflict: number
  }
  /**
   * `snooze`'s input: hide the record from the inbox's default list until `until` (`none` ends a snooze). The
   * record stays what it is for its session (a pending action is still pending for the model).
   *
   * @since 0.3.0
   * @category models
   */
  export interface SnoozeInput {
    readonly id: string
    readonly until: Option.Option<number>
    readonly now: number
  }

  /**
   * The inbox queries of a `PendingStore`. Bad input fails with a `PendingStoreError` and changes nothing.
   *
   * @since 0.4.0
   * @category models
   */
  export interface Service {
    /**
     * One page of records across sessions, filtered as `query` says, most recent first, each with its snooze and its
     * requested decision. On the SQL stores its cost follows the page (indexes on the records not yet settled, by
     * status and by session), not how many records the store holds.
     */
    readonly listActions: (
      query: InboxQueries.ActionQuery
    ) => Effect.Effect<ActionRecords.Page<InboxQueries.ListedAction>, PendingStoreError>
    /** The given records (at most 1 000 ids) as `listActions` lists them, in no particular order; unknown ids are left out. */
    readonly getActions: (
      ids: ReadonlyArray<string>
    ) => Effect.Effect<ReadonlyArray<InboxQueries.ListedAction>, PendingStoreError>
    /** The counts of a badge over the records not yet settled (its cost follows how many there are). */
    readonly countActions: (
      query: InboxQueries.CountQuery
    ) => Effect.Effect<InboxQueries.ActionCounts, PendingStoreError>
    /**
     * Snoozes a record not yet settled until `until` (or ends its snooze): `false` when it is unknown or settled.
     * Nothing else about the record changes.
     */
    readonly snooze: (input: InboxQueries.SnoozeInput) => Effect.Effect<boolean, PendingStoreError>
  }
}
