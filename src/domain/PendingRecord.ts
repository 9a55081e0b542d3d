/**
 * A staged action as plain data: what a `PendingStore` keeps for every preview a tool staged, and the journal of
 * its transitions. Records encode to rows and JSON (`Schema.encode(PendingRecord)`); times are epoch milliseconds
 * from Effect's `Clock`.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { PendingRecord } from "effect-resolve"
 *
 * const record = Effect.map(PendingRecord.makeId, (id): PendingRecord.PendingRecord => ({
 *   id,
 *   session: "s1",
 *   kind: "edit",
 *   label: "Edit: 1 replacement in 1 file",
 *   sourceToolName: "edit",
 *   stager: null,
 *   preview: "--- a/x.ts\n+++ b/x.ts\n...",
 *   payload: { paths: ["x.ts"] },
 *   status: "pending",
 *   attempts: 0,
 *   owner: null,
 *   leaseUntil: null,
 *   createdAt: 1_700_000_000_000,
 *   updatedAt: 1_700_000_000_000,
 *   expiresAt: null,
 *   outcome: null
 * }))
 * ```
 *
 * @since 0.2.0
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { timedId } from "../internal/ids.js"

/**
 * Where a staged action is:
 * - `pending`: staged, waiting for `resolve`;
 * - `resolving`: claimed by one owner (a runtime instance) that is applying or discarding it;
 * - `applied`, `discarded`, `cleared`, `expired`: terminal, nothing more happens to it;
 * - `orphaned`: its stager is provably gone and no process that opened the session could run it (a closure, whose
 *   code died with its process, or a kind that process does not register). It can be discarded or cleared, not
 *   applied; a record of a durable kind becomes `pending` again in any process that registers its kind;
 * - `conflict`: recovery could not tell whether it was applied; a person must look;
 * - `unreadable`: never stored; a store reads a row that was changed outside the store (a payload that is not JSON,
 *   a time or status it cannot read) as this status, with the reason in `outcome`. It is never applied; it can be
 *   discarded. A row whose status says it is settled keeps that status whatever else it holds.
 *
 * @since 0.2.0
 * @category schemas
 */
export const PendingStatus = Schema.Literal(
  "pending",
  "resolving",
  "applied",
  "discarded",
  "cleared",
  "expired",
  "orphaned",
  "conflict",
  "unreadable"
)

/**
 * @since 0.2.0
 * @category models
 */
export type PendingStatus = typeof PendingStatus.Type

/**
 * Every status, in the order of `PendingStatus`.
 *
 * @since 0.2.0
 * @category constants
 */
export const statuses: ReadonlyArray<PendingStatus> = PendingStatus.literals

/**
 * The statuses a record never leaves: `applied`, `discarded`, `cleared`, `expired`.
 *
 * @since 0.2.0
 * @category constants
 */
export const terminalStatuses: ReadonlyArray<PendingStatus> = ["applied", "discarded", "cleared", "expired"]

/**
 * Whether `status` is terminal (`applied`, `discarded`, `cleared` or `expired`).
 *
 * @since 0.2.0
 * @category predicates
 */
export const isTerminal = (status: PendingStatus): boolean => terminalSet.has(status)

const terminalSet: ReadonlySet<PendingStatus> = new Set(terminalStatuses)

/**
 * The statuses a store writes (every status but `unreadable`, which only a read produces).
 *
 * @since 0.3.0
 * @category constants
 */
export const storedStatuses: ReadonlyArray<PendingStatus> = statuses.filter((status) => status !== "unreadable")

/**
 * The stored statuses of a record not yet settled: `pending`, `resolving`, `orphaned`, `conflict` (what
 * `PendingStore.listOpen` reads).
 *
 * @since 0.3.0
 * @category constants
 */
export const openStatuses: ReadonlyArray<PendingStatus> = storedStatuses.filter((status) => !isTerminal(status))

const statusSet: ReadonlySet<unknown> = new Set(PendingStatus.literals)

/**
 * Whether `u` is one of the `PendingStatus` values.
 *
 * @since 0.2.0
 * @category predicates
 */
export const isPendingStatus = (u: unknown): u is PendingStatus => statusSet.has(u)

/**
 * Epoch milliseconds: a safe, non-negative integer (it round-trips exactly through SQLite and Postgres `bigint`).
 *
 * @since 0.2.0
 * @category schemas
 */
export const EpochMillis = Schema.NonNegativeInt

/**
 * A staged action as plain data. `owner` and `leaseUntil` are set exactly while the record is `resolving`;
 * `payload` is a JSON value (`null` for the closure form), stored as JSON text, so what comes back from a store is
 * what `JSON.parse(JSON.stringify(payload))` gives.
 *
 * @since 0.2.0
 * @category schemas
 */
export const PendingRecord = Schema.Struct({
  /** Unique; the id the model and the app use (`pa_<time base36>_<random>`, see `makeId`). */
  id: Schema.String,
  /** The session that staged it. */
  session: Schema.String,
  /** The registered durable kind (`"edit"`, `"plan"`, ...), or `"closure"` for the in-process form. */
  kind: Schema.String,
  /** `Edit: 2 replacements in 1 file`. */
  label: Schema.String,
  /** The tool that staged it. */
  sourceToolName: Schema.String,
  /**
   * The runtime instance that staged it (`<host>:<pid>:<thread>:<random>`, one per open durable session), whose
   * liveness decides whether a process that cannot run the record leaves it alone; `null` for records written
   * before 0.3 (their stager counts as gone).
   */
  stager: Schema.NullOr(Schema.String),
  /** The text the model saw. */
  preview: Schema.String,
  /** The kind's payload (JSON), `null` for closures. */
  payload: Schema.Unknown,
  status: PendingStatus,
  /** How many claims so far. */
  attempts: Schema.NonNegativeInt,
  /** Who holds the claim while `resolving` (a runtime instance, `<host>:<pid>:<thread>:<random>`), else `null`. */
  owner: Schema.NullOr(Schema.String),
  /**
   * While `resolving`: until when the owner's claim holds. The owner renews it while it lives (see
   * `PendingStore.heartbeat`); a record whose lease passed may be recovered.
   */
  leaseUntil: Schema.NullOr(EpochMillis),
  createdAt: EpochMillis,
  updatedAt: EpochMillis,
  /** An optional expiry: from this time on the action can no longer be claimed. */
  expiresAt: Schema.NullOr(EpochMillis),
  /** The last result text or error message, for UIs; for an `unreadable` record, why it cannot be read. */
  outcome: Schema.NullOr(Schema.String)
})

/**
 * @since 0.2.0
 * @category models
 */
export type PendingRecord = typeof PendingRecord.Type

/**
 * One entry of a record's journal: one per transition, the first one (`from: null`) when the record was inserted.
 * `owner` is who held the claim for that transition (the claimant for `pending → resolving`, the owner that
 * settled for `resolving → ...`, `null` when nobody held it); `attempt` is the record's `attempts` after it.
 *
 * @since 0.2.0
 * @category schemas
 */
export const PendingEvent = Schema.Struct({
  actionId: Schema.String,
  at: EpochMillis,
  from: Schema.NullOr(PendingStatus),
  to: PendingStatus,
  owner: Schema.NullOr(Schema.String),
  attempt: Schema.NonNegativeInt
})

/**
 * @since 0.2.0
 * @category models
 */
export type PendingEvent = typeof PendingEvent.Type

/**
 * A fresh id, `pa_<time base36>_<random>`: the time from `Clock`, then 64 random bits from the platform's
 * cryptographic generator (ids are unique across processes sharing a store).
 *
 * @since 0.2.0
 * @category constructors
 */
export const makeId: Effect.Effect<string> = timedId("pa")
