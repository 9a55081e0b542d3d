/**
 * The change feed, one concern of the `PendingStore`: every transition of the records' journal and every note
 * the inbox adds (decisions, snoozes), by sequence number, so a reader (the inbox's live list) catches up with
 * what changed since it last looked; and `changed`, a signal that something may have.
 *
 * Every store layer provides it, as a view on the same store as `PendingStore` and the other parts.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { ChangeFeed } from "effect-resolve"
 *
 * // The ids of the actions that changed since `position`.
 * const changedSince = (position: ChangeFeed.FeedPosition) =>
 *   Effect.map(
 *     Effect.flatMap(ChangeFeed, (feed) => feed.feed({ after: position, limit: 100 })),
 *     (changes) => new Set(changes.map((change) => change.actionId))
 *   )
 * ```
 *
 * @since 0.4.0
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type * as Stream from "effect/Stream"
import type { PendingStoreError } from "../domain/Errors.js"

/**
 * The change feed of the records' journal and the inbox's notes. A part of `PendingStore` (0.4): hold it to depend on this concern only.
 *
 * @since 0.4.0
 * @category tags
 */
export class ChangeFeed extends Context.Tag("effect-resolve/ChangeFeed")<ChangeFeed, ChangeFeed.Service>() {}

/**
 * @since 0.4.0
 * @category tags
 */
export declare namespace ChangeFeed {
  /**
   * Where a reader of the change feed is: the last sequence number it read of each source. `journal` is the
   * records' journal (every transition, in every process); `notes` is what the inbox adds (decisions recorded or
   * completed, snoozes).
   *
   * @since 0.3.0
   * @category models
   */
  export interface FeedPosition {
    readonly journal: number
    readonly notes: number
  }
  /**
   * One change of the feed: its source, its sequence number there, and the action it concerns.
   *
   * @since 0.3.0
   * @category models
   */
  export interface FeedChange {
    readonly source: "journal" | "notes"
    readonly seq: number
    readonly actionId: string
  }
  /**
   * `feed`'s input: the changes after `after` (at most `limit` per source, 1 to 1 000, in sequence order), and
   * those at the sequence numbers in `missing` (at most 1 000 per source): numbers a reader saw skipped, which a
   * transaction still running may fill in later (Postgres hands out sequence numbers before commit).
   *
   * @since 0.3.0
   * @category models
   */
  export interface FeedInput {
    readonly after: FeedPosition
    readonly limit: number
    readonly missing?: { readonly journal: ReadonlyArray<number>; readonly notes: ReadonlyArray<number> } | undefined
  }

  /**
   * The change feed of a `PendingStore`. Bad input fails with a `PendingStoreError` and changes nothing.
   *
   * @since 0.4.0
   * @category models
   */
  export interface Service {
    /** The last sequence number of each feed source now (a reader starts there). */
    readonly feedHead: Effect.Effect<ChangeFeed.FeedPosition, PendingStoreError>
    /** The changes after a position, and at missing sequence numbers (see `FeedInput`). */
    readonly feed: (
      input: ChangeFeed.FeedInput
    ) => Effect.Effect<ReadonlyArray<ChangeFeed.FeedChange>, PendingStoreError>
    /**
     * Forgets the oldest of the inbox's notes, keeping the last `keepLast` (at most 10 000 go per call); returns how
     * many went. A reader that lags further behind than what is kept misses those notes.
     */
    readonly pruneNotes: (keepLast: number) => Effect.Effect<number, PendingStoreError>
    /**
     * Signals that the feed (`feed`) may hold something new, pushed rather than polled (0.4): on Postgres from any
     * process (`LISTEN`/`NOTIFY`: every statement that adds to the journal or the inbox's notes notifies when it
     * commits); in memory and on SQLite from the writes of this store (the same layer), in this process. Signals are
     * coalesced and may come without a change, and a reader of the feed must still poll now and then (another
     * process on a SQLite file signals nothing here; a dropped connection misses what happened meanwhile).
     *
     * @since 0.4.0
     */
    readonly changed: Stream.Stream<void, PendingStoreError>
  }
}
