/**
 * Where staged actions live: every `PendingRecord` by id, its journal of transitions, and each session's resumable
 * state. `claim` is the one conditional update that makes resolving exactly-once: of any number of callers (fibers
 * or processes sharing a store) claiming the same pending record, exactly one gets it.
 *
 * Layers: `PendingStore.layerMemory` (a fresh in-memory store, the default), and SQL stores on `@effect/sql`
 * (`SqlPendingStore`, with `SqliteStore` on a file and `PostgresStore` for shared deployments). Every store has the
 * same semantics (one conformance suite runs against all of them).
 *
 * @example
 * ```ts
 * import { Effect, Option } from "effect"
 * import { PendingRecord, PendingStore } from "effect-resolve"
 *
 * // Claim a staged record, apply it, record the outcome.
 * const applyOnce = (record: PendingRecord.PendingRecord, owner: string, now: number) =>
 *   Effect.gen(function*() {
 *     const store = yield* PendingStore
 *     const claimed = yield* store.claim({ id: record.id, owner, leaseUntil: now + 30_000, now })
 *     if (Option.isNone(claimed)) return "someone else has it, or it is no longer pending"
 *     // ... apply it, then:
 *     yield* store.settle({ id: record.id, owner, to: "applied", outcome: Option.some("Applied."), now })
 *     return "applied"
 *   })
 * ```
 *
 * @since 0.2.0
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type * as Stream from "effect/Stream"
import type { Decision, DecisionAction } from "../domain/Decision.js"
import { PendingStoreError } from "../domain/Errors.js"
import type { PendingEvent, PendingRecord, PendingStatus } from "../domain/PendingRecord.js"
import * as Memory from "./internal/memoryStore.js"

/**
 * A store operation failed (defined with the other errors in `Errors`).
 *
 * @since 0.2.0
 * @category errors
 */
export { PendingStoreError } from "../domain/Errors.js"

/**
 * @since 0.2.0
 * @category tags
 */
export declare namespace PendingStore {
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
   * `heartbeat`'s input: a runtime instance, the new end of its lease (after `now`), and the time.
   *
   * @since 0.3.0
   * @category models
   */
  export interface HeartbeatInput {
    readonly instance: string
    readonly leaseUntil: number
    readonly now: number
    /**
     * A renewal (0.4): the instance's lease is extended only while it still holds at `now`; a lease that lapsed (or
     * was released, or forgotten) is never taken again, and the heartbeat fails with `reason: "leaseLapsed"`.
     * Without it (the first heartbeat of an instance), the lease is recorded whatever was there.
     */
    readonly renew?: boolean | undefined
  }

  /**
   * A session's owner epoch (0.4): `acquire` hands out a new one, larger than every one before, to each new owner of
   * a session. A store `fenced` with it refuses every write once a newer owner acquired the session.
   *
   * @since 0.4.0
   * @category models
   */
  export interface Fence {
    readonly session: string
    readonly epoch: number
  }

  /**
   * `acquire`'s input: the session, the runtime instance that becomes its owner, and the time.
   *
   * @since 0.4.0
   * @category models
   */
  export interface AcquireInput {
    readonly session: string
    readonly owner: string
    readonly now: number
  }

  /**
   * A session's current owner, as `owner` tells it: the latest epoch, the instance that acquired it, and when.
   *
   * @since 0.4.0
   * @category models
   */
  export interface Owner {
    readonly epoch: number
    readonly owner: string
    readonly at: number
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

  // ---- the approval inbox (0.3): listing across sessions, snoozes, decisions, the change feed -------------------

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
  export interface ActionQuery extends PageOptions {
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
   * One entry of a session's owner log: the runtime instance `owner` opened the session (`open`), saved its state
   * (`save`) or closed it (`close`), at `at` (epoch milliseconds, from `Clock`). A cluster runner keeps this log
   * (`effect-resolve/cluster`: each open and close, and with `logSaves` each save): the next runner opens a session
   * once its last owner closed it or is gone, and with the journal's claims the store shows who ran each session, when.
   *
   * @since 0.3.0
   * @category models
   */
  export interface SessionLogEntry {
    readonly session: string
    readonly owner: string
    readonly event: "open" | "save" | "close"
    readonly at: number
  }

  /**
   * A save of a session's conversation in increments (`saveConversation`): its resumable state (JSON text), and its
   * messages (each a JSON text) from index `from` on. The messages the store holds at `from` and after are replaced
   * by `messages`; those before `from` stay as they are, so a turn writes only what it added.
   *
   * @since 0.3.0
   * @category models
   */
  export interface ConversationSave {
    readonly state: string
    /** The index of the first message written (0 or more, at most the number of messages stored). */
    readonly from: number
    readonly messages: ReadonlyArray<string>
    /**
     * The state this writer saved or loaded last: when the stored state is another (a second process saved the
     * session since), the messages before `from` may not be this writer's, and the save fails, writing nothing (save
     * again from 0). `Option.none()`: no such check.
     */
    readonly previous: Option.Option<string>
  }

  /**
   * A session's saved conversation (`loadConversation`): its state, and every message stored, in order.
   *
   * @since 0.3.0
   * @category models
   */
  export interface Conversation {
    readonly state: string
    readonly messages: ReadonlyArray<string>
  }

  /**
   * Every method is atomic: a transition is one transaction (the record and its journal event) and either happens
   * wholly or not at all. Writes are uninterruptible once started, so an interrupted caller's store is never in an
   * unknown state. Bad input fails with a `PendingStoreError` and changes nothing. Times are epoch milliseconds
   * the caller passes (from `Clock`): a lease is held while `now < leaseUntil`, a record expires when
   * `expiresAt <= now`.
   *
   * @since 0.2.0
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
      options: PendingStore.PageOptions
    ) => Effect.Effect<PendingStore.Page<PendingRecord>, PendingStoreError>
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
    readonly claim: (input: PendingStore.ClaimInput) => Effect.Effect<Option.Option<PendingRecord>, PendingStoreError>
    /**
     * `resolving → applied | discarded | pending | conflict`, only while `owner` holds the claim (even after its
     * lease passed, as long as nobody recovered the record); `false` otherwise. Owner and lease are cleared.
     */
    readonly settle: (input: PendingStore.SettleInput) => Effect.Effect<boolean, PendingStoreError>
    /**
     * Any other transition (clear, expire, orphan, recovery): only from one of `from` (and, with `owner`, only
     * while that owner holds it); `false` otherwise. Owner and lease are cleared. Refused as bad input: a target of
     * `resolving` (only `claim` starts a claim), a terminal status in `from` (terminal is final), `to` in `from`.
     */
    readonly transition: (input: PendingStore.TransitionInput) => Effect.Effect<boolean, PendingStoreError>
    /** Records left `resolving` whose lease passed at `now` (`leaseUntil <= now`), every session: recovery candidates. */
    readonly stale: (now: number) => Effect.Effect<ReadonlyArray<PendingRecord>, PendingStoreError>
    /** The journal of one record, oldest first (empty for an unknown id). */
    readonly history: (id: string) => Effect.Effect<ReadonlyArray<PendingEvent>, PendingStoreError>
    /** One page of `history`, in the same order. */
    readonly historyPage: (
      id: string,
      options: PendingStore.PageOptions
    ) => Effect.Effect<PendingStore.Page<PendingEvent>, PendingStoreError>
    /**
     * Removes settled records (`applied`, `discarded`, `cleared`, `expired`) of a session, with their journals, as
     * `input` says, oldest first; never a record that is not settled. Returns how many went (fewer than `batch`:
     * nothing more to remove now).
     */
    readonly prune: (input: PendingStore.PruneInput) => Effect.Effect<number, PendingStoreError>
    /**
     * A runtime instance says it is alive until `leaseUntil`: its lease is recorded, and so is the lease of every
     * record it holds `resolving` (so a long apply is never recovered while its owner lives). Instances whose lease
     * passed at `now` are forgotten.
     */
    readonly heartbeat: (input: PendingStore.HeartbeatInput) => Effect.Effect<void, PendingStoreError>
    /** A runtime instance closed: it is forgotten (it counts as gone from now on). */
    readonly release: (instance: string) => Effect.Effect<void, PendingStoreError>
    /**
     * The lease ends of the given runtime instances that the store knows; an instance it does not know closed, or
     * its lease passed and it was forgotten.
     */
    readonly leases: (
      instances: ReadonlyArray<string>
    ) => Effect.Effect<ReadonlyMap<string, number>, PendingStoreError>
    /** A session's resumable state (JSON text written by the turn driver); the last write wins. */
    readonly saveSession: (session: string, state: string) => Effect.Effect<void, PendingStoreError>
    /** The last state saved for the session, if any. */
    readonly loadSession: (session: string) => Effect.Effect<Option.Option<string>, PendingStoreError>

    // ---- the approval inbox (0.3) -----------------------------------------------------------------------------

    /**
     * One page of records across sessions, filtered as `query` says, most recent first, each with its snooze and its
     * requested decision. On the SQL stores its cost follows the page (indexes on the records not yet settled, by
     * status and by session), not how many records the store holds.
     */
    readonly listActions: (
      query: PendingStore.ActionQuery
    ) => Effect.Effect<PendingStore.Page<PendingStore.ListedAction>, PendingStoreError>
    /** The given records (at most 1 000 ids) as `listActions` lists them, in no particular order; unknown ids are left out. */
    readonly getActions: (
      ids: ReadonlyArray<string>
    ) => Effect.Effect<ReadonlyArray<PendingStore.ListedAction>, PendingStoreError>
    /** The counts of a badge over the records not yet settled (its cost follows how many there are). */
    readonly countActions: (
      query: PendingStore.CountQuery
    ) => Effect.Effect<PendingStore.ActionCounts, PendingStoreError>
    /**
     * Snoozes a record not yet settled until `until` (or ends its snooze): `false` when it is unknown or settled.
     * Nothing else about the record changes.
     */
    readonly snooze: (input: PendingStore.SnoozeInput) => Effect.Effect<boolean, PendingStoreError>
    /**
     * Records a decision, `requested`, in one statement: only for a record that is `pending` or `orphaned` and not
     * expired at `now`, and only when no other decision for it is `requested` (of concurrent callers, one wins).
     */
    readonly recordDecision: (
      input: PendingStore.DecisionInput
    ) => Effect.Effect<PendingStore.RecordDecisionResult, PendingStoreError>
    /** The decision with this id, if any. */
    readonly getDecision: (id: string) => Effect.Effect<Option.Option<Decision>, PendingStoreError>
    /** Every decision recorded for a record, oldest first (empty for an unknown id). */
    readonly decisions: (actionId: string) => Effect.Effect<ReadonlyArray<Decision>, PendingStoreError>
    /**
     * Decisions still `requested`, with their records as they are now, oldest first: what a process that can run
     * them (the session's owner, an inbox registering the kind) completes. Its cost follows how many are requested.
     */
    readonly requestedDecisions: (
      query: PendingStore.RequestedQuery
    ) => Effect.Effect<ReadonlyArray<PendingStore.RequestedDecision>, PendingStoreError>
    /** `requested → done | failed`, once: `false` when the decision is unknown or already completed. */
    readonly completeDecision: (input: PendingStore.CompleteDecisionInput) => Effect.Effect<boolean, PendingStoreError>
    /** The last sequence number of each feed source now (a reader starts there). */
    readonly feedHead: Effect.Effect<PendingStore.FeedPosition, PendingStoreError>
    /** The changes after a position, and at missing sequence numbers (see `FeedInput`). */
    readonly feed: (
      input: PendingStore.FeedInput
    ) => Effect.Effect<ReadonlyArray<PendingStore.FeedChange>, PendingStoreError>
    /**
     * Forgets the oldest of the inbox's notes, keeping the last `keepLast` (at most 10 000 go per call); returns how
     * many went. A reader that lags further behind than what is kept misses those notes.
     */
    readonly pruneNotes: (keepLast: number) => Effect.Effect<number, PendingStoreError>
    // -- 0.3: a session's conversation in increments ---------------------------------------------------------------
    /**
     * Saves the session's state and its messages from `from` on (`ConversationSave`), in one transaction: the
     * bytes written per turn are the turn's own, not the whole conversation's. Bad input (a `from` past the messages
     * stored) fails with a `PendingStoreError` and writes nothing.
     *
     * @since 0.3.0
     */
    readonly saveConversation: (
      session: string,
      save: PendingStore.ConversationSave
    ) => Effect.Effect<void, PendingStoreError>
    /**
     * The session's last saved state with every message stored, if any state was saved (by `saveConversation` or
     * `saveSession`; after a `saveSession` only, `messages` is empty).
     *
     * @since 0.3.0
     */
    readonly loadConversation: (
      session: string
    ) => Effect.Effect<Option.Option<PendingStore.Conversation>, PendingStoreError>
    // -- 0.3: the owner log of a session (cluster runners) --------------------------------------------------------
    /**
     * Appends one entry to the session's owner log (an append-only table; nothing else reads or prunes it). Bad
     * input fails with a `PendingStoreError` and appends nothing.
     *
     * @since 0.3.0
     */
    readonly logSession: (entry: PendingStore.SessionLogEntry) => Effect.Effect<void, PendingStoreError>
    /**
     * The session's owner log, in the order it was appended; with `last`, only its last `last` entries (a cluster
     * runner reads the last one before it opens the session).
     *
     * @since 0.3.0
     */
    readonly sessionLog: (
      session: string,
      options?: { readonly last?: number | undefined }
    ) => Effect.Effect<ReadonlyArray<PendingStore.SessionLogEntry>, PendingStoreError>
    // -- 0.4: fencing (one owner for real) ------------------------------------------------------------------------
    /**
     * Makes `owner` the session's owner: a new epoch, larger than every epoch handed out for the session before, in
     * one statement. Every store `fenced` with an older epoch refuses its writes from then on.
     *
     * @since 0.4.0
     */
    readonly acquire: (input: PendingStore.AcquireInput) => Effect.Effect<number, PendingStoreError>
    /**
     * The session's current owner (`none` when no owner ever acquired it).
     *
     * @since 0.4.0
     */
    readonly owner: (session: string) => Effect.Effect<Option.Option<PendingStore.Owner>, PendingStoreError>
    /**
     * This store, fenced: each write it makes for `fence.session` (insert, claim, settle, transition, prune,
     * heartbeat, release, the session's state, conversation and owner log, completing a decision) happens only while
     * `fence.epoch` is the session's latest, checked in the write's own statement or transaction; otherwise it
     * changes nothing and fails with `reason: "fenced"`. Reads and other sessions' writes are as usual.
     *
     * @since 0.4.0
     */
    readonly fenced: (fence: PendingStore.Fence) => PendingStore.Service
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

/**
 * The PendingStore service.
 *
 * @since 0.2.0
 * @category tags
 */
export class PendingStore extends Context.Tag("effect-resolve/PendingStore")<PendingStore, PendingStore.Service>() {
  /**
   * A fresh, empty in-memory store per layer build: the default. Same semantics as the SQL stores; nothing
   * survives the process.
   *
   * @since 0.2.0
   * @category layers
   */
  static readonly layerMemory: Layer.Layer<PendingStore> = Layer.sync(this, () => Memory.makeMemory())
}

/**
 * The error for input a store refuses; nothing was changed.
 *
 * @since 0.2.0
 * @category errors
 */
export const invalidInput = (operation: string, problem: string): PendingStoreError =>
  new PendingStoreError({ operation, detail: `${problem}; nothing was changed.` })

/**
 * The error for an id `insert` found taken; nothing was changed.
 *
 * @since 0.2.0
 * @category errors
 */
export const duplicateId = (id: string): PendingStoreError =>
  new PendingStoreError({
    operation: "insert",
    detail: `a record with id ${JSON.stringify(id)} already exists; nothing was changed. Stage the action under ` +
      "a new id."
  })

/**
 * What is wrong with a `saveConversation` input, given the number of messages stored, if anything (the memory and SQL
 * stores refuse the same saves with the same words).
 *
 * @since 0.3.0
 * @category validation
 */
export const checkConversationSave = (
  save: PendingStore.ConversationSave,
  stored: number
): string | undefined => {
  if (!Number.isSafeInteger(save.from) || save.from < 0) return "from must be a whole number, 0 or more"
  if (save.from > stored) return `from (${save.from}) is past the ${stored} messages stored`
  if (!Array.isArray(save.messages) || !save.messages.every((m) => typeof m === "string")) {
    return "messages must be strings"
  }
  return undefined
}

/**
 * Whether a `saveConversation` expecting `previous` finds the stored state it expects (the memory and SQL stores refuse
 * the same saves with the same words).
 *
 * @since 0.3.0
 * @category validation
 */
export const checkPrevious = (
  save: PendingStore.ConversationSave,
  stored: string | undefined
): string | undefined =>
  Option.isSome(save.previous) && save.previous.value !== stored ?
    "the stored state is not the one this writer saved last (another process saved the session since): save from 0" :
    undefined

/**
 * What is wrong with an owner-log entry given to `logSession`, if anything (the memory and SQL stores refuse the same
 * entries with the same words).
 *
 * @since 0.3.0
 * @category validation
 */
export const checkSessionLogEntry = (entry: PendingStore.SessionLogEntry): string | undefined => {
  if (typeof entry !== "object" || entry === null) return "the entry is not an object"
  if (typeof entry.session !== "string") return "session must be a string"
  if (typeof entry.owner !== "string" || entry.owner.length === 0) return "owner must be a non-empty string"
  if (entry.event !== "open" && entry.event !== "save" && entry.event !== "close") {
    return `event must be "open", "save" or "close", got ${JSON.stringify(entry.event)}`
  }
  if (!(typeof entry.at === "number" && Number.isSafeInteger(entry.at) && entry.at >= 0)) {
    return "at must be epoch milliseconds (a non-negative integer)"
  }
  return undefined
}

/**
 * The error of a write a fenced store refused: a newer owner acquired the session; nothing was changed.
 *
 * @since 0.4.0
 * @category errors
 */
export const fencedOut = (operation: string, fence: PendingStore.Fence): PendingStoreError =>
  new PendingStoreError({
    operation,
    reason: "fenced",
    detail: `another runtime instance owns session ${JSON.stringify(fence.session)} now (this one held epoch ` +
      `${fence.epoch}); nothing was changed. This instance must stop: reopen the session to continue it.`
  })

/**
 * The error of a renewal that found the instance's lease lapsed; nothing was changed.
 *
 * @since 0.4.0
 * @category errors
 */
export const leaseLapsed = (instance: string): PendingStoreError =>
  new PendingStoreError({
    operation: "heartbeat",
    reason: "leaseLapsed",
    detail: `the lease of runtime instance ${JSON.stringify(instance)} lapsed before it was renewed (its process ` +
      "was paused or cut off), and others may have taken over its work; nothing was changed. The instance must " +
      "stop: open the session again (a new instance) to continue."
  })

/**
 * What is wrong with an `acquire` input, if anything.
 *
 * @since 0.4.0
 * @category validation
 */
export const checkAcquire = (input: PendingStore.AcquireInput): string | undefined => {
  if (typeof input !== "object" || input === null) return "the input is not an object"
  if (typeof input.session !== "string") return "session must be a string"
  if (typeof input.owner !== "string" || input.owner.length === 0) return "owner must be a non-empty string"
  if (!(typeof input.now === "number" && Number.isSafeInteger(input.now) && input.now >= 0)) {
    return "now must be epoch milliseconds (a non-negative integer)"
  }
  return undefined
}

export { makeMemory } from "./internal/memoryStore.js"

/** Whether a decision can be recorded for `record` at `now`: it is pending or orphaned, and not expired. */
export const isDecidable = (record: PendingRecord, now: number): boolean =>
  (record.status === "pending" || record.status === "orphaned") && (record.expiresAt === null || record.expiresAt > now)

/**
 * Adds one record to a badge's counts.
 *
 * @internal
 */
export const tally = (
  counts: { -readonly [K in keyof PendingStore.ActionCounts]: number },
  status: PendingStatus,
  snoozed: boolean,
  requested: boolean,
  n = 1
): void => {
  if (status === "resolving" || status === "orphaned" || status === "conflict") counts[status] += n
  if (requested) counts.requested += n
  else if (snoozed) counts.snoozed += n
  else if (status === "pending") counts.pending += n
}

/**
 * The error for a decision id `recordDecision` found taken; nothing was changed.
 *
 * @since 0.3.0
 * @category errors
 */
export const duplicateDecision = (id: string): PendingStoreError =>
  new PendingStoreError({
    operation: "recordDecision",
    detail: `a decision with id ${JSON.stringify(id)} already exists; nothing was changed. Record it under a new id ` +
      "(Decision.makeId)."
  })
