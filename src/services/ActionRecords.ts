/**
 * The records of staged actions and their claims, one concern of the `PendingStore`: every `PendingRecord` by id,
 * its journal of transitions, and `claim`, the one conditional update that makes resolving exactly-once (of any number
 * of callers claiming the same pending record, in one process or many, exactly one gets it).
 *
 * Every store layer (`PendingStore.layerMemory`, `SqliteStore.layer`, `PostgresStore.layer`, `SqlPendingStore.layer`)
 * provides it, as a view on the same store as `PendingStore` and the other parts.
 *
 * @example
 * ```ts
 * import { Effect, Option } from "effect"
 * import { ActionRecords } from "effect-resolve"
 *
 * // Claim a staged record, apply it, record the outcome.
 * const applyOnce = (id: string, owner: string, now: number) =>
 *   Effect.gen(function*() {
 *     const records = yield* ActionRecords
 *     const claimed = yield* records.claim({ id, owner, leaseUntil: now + 30_000, now })
 *     if (Option.isNone(claimed)) return "someone else has it, or it is no longer pending"
 *     // ... apply it, then:
 *     yield* records.settle({ id, owner, to: "applied", outcome: Option.some("Applied."), now })
 *     return "applied"
 *   })
 * ```
 *
 * @since 0.4.0
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import type { PendingStoreError } from "../domain/Errors.js"
import type { PendingEvent, PendingRecord, PendingStatus } from "../domain/PendingRecord.js"

/**
 * The records of staged actions, their claims and their journal. A part of `PendingStore` (0.4): hold it to depend on this concern only.
 *
 * @since 0.4.0
 * @category tags
 */
export class ActionRecords
  extends Context.Tag("effect-resolve/ActionRecords")<ActionRecords, ActionRecords.Service>()
{}

/**
 * @since 0.4.0
 * @category tags
 */
export declare namespace ActionRecords {
  /**
   * `claim`'s input: who claims (`owner`, e.g. `<hostname>:<pid>:<random>`), until when the claim holds
   * (`leaseUntil`, after `now`), and the time of the claim (`now`, from `Clock`).
   *
   * @since 0.2.0
   * @category models
   */
  export interface ClaimInput {
    readonly id: string
    readonly owner: string
    readonly leaseUntil: number
    readonly now: number
  }
  /**
   * The statuses `settle` ends a claim with.
   *
   * @since 0.2.0
   * @category models
   */
  export type SettleStatus = "applied" | "discarded" | "pending" | "conflict"
  /**
   * `settle`'s input: the owner that holds the claim, where the record goes, and its new `outcome` (`none` clears
   * it).
   *
   * @since 0.2.0
   * @category models
   */
  export interface SettleInput {
    readonly id: string
    readonly owner: string
    readonly to: SettleStatus
    readonly outcome: Option.Option<string>
    readonly now: number
  }
  /**
   * `transition`'s input. `owner`, when given, is a guard: `some(o)` only while `o` holds the record (recovery
   * passes the dead owner `stale` reported, so it cannot end a later claim), `none` only while nobody holds it.
   * `stager`, when given, becomes the record's stager (a process that takes an `orphaned` record back to `pending`
   * runs it from then on). `from` may list `"unreadable"`: it then also matches a row the store reads as
   * unreadable, unless that row is claimed under a lease that has not passed at `now`.
   *
   * @since 0.2.0
   * @category models
   */
  export interface TransitionInput {
    readonly id: string
    readonly from: ReadonlyArray<PendingStatus>
    readonly to: PendingStatus
    readonly owner?: Option.Option<string>
    readonly stager?: string
    readonly now: number
  }
  /**
   * One page of a listing: at most `limit` items, and the cursor of the next page (`none` after the last one).
   *
   * @since 0.3.0
   * @category models
   */
  export interface Page<A> {
    readonly items: ReadonlyArray<A>
    readonly next: Option.Option<string>
  }
  /**
   * Which page to read: at most `limit` items (1 to 1 000), after `cursor` (a `Page`'s `next`; none for the first
   * page). A cursor stays valid while records are added and pruned.
   *
   * @since 0.3.0
   * @category models
   */
  export interface PageOptions {
    readonly limit: number
    readonly cursor?: string | undefined
  }
  /**
   * `prune`'s input: which settled records of `session` go. A record goes when it is not among the `keepLast` most
   * recently settled ones, or it settled before `settledBefore` (epoch milliseconds). At most `batch` records (1 to
   * 10 000) go per call.
   *
   * @since 0.3.0
   * @category models
   */
  export interface PruneInput {
    readonly session: string
    readonly keepLast: Option.Option<number>
    readonly settledBefore: Option.Option<number>
    readonly batch: number
  }

  /**
   * The records and claims of a `PendingStore`. Every method is atomic: a transition is one transaction (the
   * record and its journal event) and either happens wholly or not at all. Writes are uninterruptible once started.
   * Bad input fails with a `PendingStoreError` and changes nothing. Times are epoch milliseconds the caller passes
   * (from `Clock`): a lease is held while `now < leaseUntil`, a record expires when `expiresAt <= now`.
   *
   * @since 0.4.0
   * @category models
   */
  export interface Service {
    /**
     * Adds a new record (status `pending`, no owner, no lease) and its first event (`from: null`), in one
     * transaction. Fails if the id exists (nothing changes).
     */
    readonly insert: (record: PendingRecord) => Effect.Effect<void, PendingStoreError>
    /** The record with this id, if any. */
    readonly get: (id: string) => Effect.Effect<Option.Option<PendingRecord>, PendingStoreError>
    /**
     * A session's records (every status), most recent first: `createdAt` descending, then insertion order. Its cost
     * follows the session's history: prefer `listPage` for a session that may be long.
     */
    readonly list: (session: string) => Effect.Effect<ReadonlyArray<PendingRecord>, PendingStoreError>
    /** One page of `list`, in the same order; its cost follows the page, not the session's history. */
    readonly listPage: (
      session: string,
      options: ActionRecords.PageOptions
    ) => Effect.Effect<ActionRecords.Page<PendingRecord>, PendingStoreError>
    /**
     * A session's records not yet settled (`pending`, `resolving`, `orphaned`, `conflict`), in `list`'s order. Its
     * cost follows how many there are, not the session's history (a durable session reads it before every turn).
     */
    readonly listOpen: (session: string) => Effect.Effect<ReadonlyArray<PendingRecord>, PendingStoreError>
    /**
     * The one conditional update that makes resolving exactly-once: `pending → resolving`, `attempts + 1`, owner
     * and lease recorded, only if the record is `pending` and not expired at `now`. `none` when another caller won
     * (or it is not pending, expired, or unknown): the caller then reads the record to say why.
     */
    readonly claim: (input: ActionRecords.ClaimInput) => Effect.Effect<Option.Option<PendingRecord>, PendingStoreError>
    /**
     * `resolving → applied | discarded | pending | conflict`, only while `owner` holds the claim (even after its
     * lease passed, as long as nobody recovered the record); `false` otherwise. Owner and lease are cleared.
     */
    readonly settle: (input: ActionRecords.SettleInput) => Effect.Effect<boolean, PendingStoreError>
    /**
     * Any other transition (clear, expire, orphan, recovery): only from one of `from` (and, with `owner`, only
     * while that owner holds it); `false` otherwise. Owner and lease are cleared. Refused as bad input: a target of
     * `resolving` (only `claim` starts a claim), a terminal status in `from` (terminal is final), `to` in `from`.
     */
    readonly transition: (input: ActionRecords.TransitionInput) => Effect.Effect<boolean, PendingStoreError>
    /** Records left `resolving` whose lease passed at `now` (`leaseUntil <= now`), every session: recovery candidates. */
    readonly stale: (now: number) => Effect.Effect<ReadonlyArray<PendingRecord>, PendingStoreError>
    /** The journal of one record, oldest first (empty for an unknown id). */
    readonly history: (id: string) => Effect.Effect<ReadonlyArray<PendingEvent>, PendingStoreError>
    /** One page of `history`, in the same order. */
    readonly historyPage: (
      id: string,
      options: ActionRecords.PageOptions
    ) => Effect.Effect<ActionRecords.Page<PendingEvent>, PendingStoreError>
    /**
     * Removes settled records (`applied`, `discarded`, `cleared`, `expired`) of a session, with their journals, as
     * `input` says, oldest first; never a record that is not settled. Returns how many went (fewer than `batch`:
     * nothing more to remove now).
     */
    readonly prune: (input: ActionRecords.PruneInput) => Effect.Effect<number, PendingStoreError>
  }
}
