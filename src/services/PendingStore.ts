/**
 * Where staged actions live: every `PendingRecord` by id, its journal of transitions, and each session's resumable
 * state. `claim` is the one conditional update that makes resolving exactly-once: of any number of callers (fibers
 * or processes sharing a store) claiming the same pending record, exactly one gets it.
 *
 * Layers: `PendingStore.layerMemory` (a fresh in-memory store, the default), and SQL stores on `@effect/sql`
 * (`SqlPendingStore`, with `SqliteStore` on a file and `PostgresStore` for shared deployments). Every store has the
 * same semantics (one conformance suite runs against all of them).
 *
 * Its parts (0.4), one per concern, are services of their own that a reader can hold instead of the whole store:
 * `ActionRecords` (records, claims, the journal), `InstanceLeases`, `SessionOwners` (owner epochs and the owner log),
 * `Conversations` (a session's state and messages), `InboxQueries`, `DecisionRequests` and `ChangeFeed`. Every store
 * layer provides them all with `PendingStore`, views on one store (one connection pool, the same transactions);
 * `PendingStore.layerParts` derives them from a `PendingStore` an app provides itself.
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
import { PendingStoreError } from "../domain/Errors.js"
import type { PendingRecord, PendingStatus } from "../domain/PendingRecord.js"
import type { ActionRecords } from "./ActionRecords.js"
import type { ChangeFeed } from "./ChangeFeed.js"
import type { Conversations } from "./Conversations.js"
import type { DecisionRequests } from "./DecisionRequests.js"
import type { InboxQueries } from "./InboxQueries.js"
import type { InstanceLeases } from "./InstanceLeases.js"
import * as Memory from "./internal/memoryStore.js"
import { partsContext } from "./internal/storeParts.js"
import type { SessionOwners } from "./SessionOwners.js"

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
   * `ActionRecords.ClaimInput` (the parts of the store have their own names since 0.4).
   *
   * @since 0.2.0
   * @category models
   */
  export type ClaimInput = ActionRecords.ClaimInput

  /**
   * `ActionRecords.SettleStatus` (the parts of the store have their own names since 0.4).
   *
   * @since 0.2.0
   * @category models
   */
  export type SettleStatus = ActionRecords.SettleStatus

  /**
   * `ActionRecords.SettleInput` (the parts of the store have their own names since 0.4).
   *
   * @since 0.2.0
   * @category models
   */
  export type SettleInput = ActionRecords.SettleInput

  /**
   * `ActionRecords.TransitionInput` (the parts of the store have their own names since 0.4).
   *
   * @since 0.2.0
   * @category models
   */
  export type TransitionInput = ActionRecords.TransitionInput

  /**
   * `ActionRecords.Page` (the parts of the store have their own names since 0.4).
   *
   * @since 0.3.0
   * @category models
   */
  export type Page<A> = ActionRecords.Page<A>

  /**
   * `ActionRecords.PageOptions` (the parts of the store have their own names since 0.4).
   *
   * @since 0.3.0
   * @category models
   */
  export type PageOptions = ActionRecords.PageOptions

  /**
   * `ActionRecords.PruneInput` (the parts of the store have their own names since 0.4).
   *
   * @since 0.3.0
   * @category models
   */
  export type PruneInput = ActionRecords.PruneInput

  /**
   * `InstanceLeases.HeartbeatInput` (the parts of the store have their own names since 0.4).
   *
   * @since 0.3.0
   * @category models
   */
  export type HeartbeatInput = InstanceLeases.HeartbeatInput

  /**
   * `SessionOwners.Fence` (the parts of the store have their own names since 0.4).
   *
   * @since 0.4.0
   * @category models
   */
  export type Fence = SessionOwners.Fence

  /**
   * `SessionOwners.AcquireInput` (the parts of the store have their own names since 0.4).
   *
   * @since 0.4.0
   * @category models
   */
  export type AcquireInput = SessionOwners.AcquireInput

  /**
   * `SessionOwners.Owner` (the parts of the store have their own names since 0.4).
   *
   * @since 0.4.0
   * @category models
   */
  export type Owner = SessionOwners.Owner

  /**
   * `SessionOwners.SessionLogEntry` (the parts of the store have their own names since 0.4).
   *
   * @since 0.3.0
   * @category models
   */
  export type SessionLogEntry = SessionOwners.SessionLogEntry

  /**
   * `Conversations.ConversationSave` (the parts of the store have their own names since 0.4).
   *
   * @since 0.3.0
   * @category models
   */
  export type ConversationSave = Conversations.ConversationSave

  /**
   * `Conversations.Conversation` (the parts of the store have their own names since 0.4).
   *
   * @since 0.3.0
   * @category models
   */
  export type Conversation = Conversations.Conversation

  /**
   * `InboxQueries.ListedAction` (the parts of the store have their own names since 0.4).
   *
   * @since 0.3.0
   * @category models
   */
  export type ListedAction = InboxQueries.ListedAction

  /**
   * `InboxQueries.ActionQuery` (the parts of the store have their own names since 0.4).
   *
   * @since 0.3.0
   * @category models
   */
  export type ActionQuery = InboxQueries.ActionQuery

  /**
   * `InboxQueries.CountQuery` (the parts of the store have their own names since 0.4).
   *
   * @since 0.3.0
   * @category models
   */
  export type CountQuery = InboxQueries.CountQuery

  /**
   * `InboxQueries.ActionCounts` (the parts of the store have their own names since 0.4).
   *
   * @since 0.3.0
   * @category models
   */
  export type ActionCounts = InboxQueries.ActionCounts

  /**
   * `InboxQueries.SnoozeInput` (the parts of the store have their own names since 0.4).
   *
   * @since 0.3.0
   * @category models
   */
  export type SnoozeInput = InboxQueries.SnoozeInput

  /**
   * `DecisionRequests.DecisionInput` (the parts of the store have their own names since 0.4).
   *
   * @since 0.3.0
   * @category models
   */
  export type DecisionInput = DecisionRequests.DecisionInput

  /**
   * `DecisionRequests.RecordDecisionResult` (the parts of the store have their own names since 0.4).
   *
   * @since 0.3.0
   * @category models
   */
  export type RecordDecisionResult = DecisionRequests.RecordDecisionResult

  /**
   * `DecisionRequests.CompleteDecisionInput` (the parts of the store have their own names since 0.4).
   *
   * @since 0.3.0
   * @category models
   */
  export type CompleteDecisionInput = DecisionRequests.CompleteDecisionInput

  /**
   * `DecisionRequests.RequestedQuery` (the parts of the store have their own names since 0.4).
   *
   * @since 0.3.0
   * @category models
   */
  export type RequestedQuery = DecisionRequests.RequestedQuery

  /**
   * `DecisionRequests.RequestedDecision` (the parts of the store have their own names since 0.4).
   *
   * @since 0.3.0
   * @category models
   */
  export type RequestedDecision = DecisionRequests.RequestedDecision

  /**
   * `ChangeFeed.FeedPosition` (the parts of the store have their own names since 0.4).
   *
   * @since 0.3.0
   * @category models
   */
  export type FeedPosition = ChangeFeed.FeedPosition

  /**
   * `ChangeFeed.FeedChange` (the parts of the store have their own names since 0.4).
   *
   * @since 0.3.0
   * @category models
   */
  export type FeedChange = ChangeFeed.FeedChange

  /**
   * `ChangeFeed.FeedInput` (the parts of the store have their own names since 0.4).
   *
   * @since 0.3.0
   * @category models
   */
  export type FeedInput = ChangeFeed.FeedInput

  /**
   * The tags of the parts of the store, one per concern (0.4): every store layer provides each of them with
   * `PendingStore`, all views on one store (one connection pool, the same transactions).
   *
   * @since 0.4.0
   * @category models
   */
  export type Parts =
    | ActionRecords
    | InstanceLeases
    | SessionOwners
    | Conversations
    | InboxQueries
    | DecisionRequests
    | ChangeFeed

  /**
   * The whole store: every part (`ActionRecords`, `InstanceLeases`, `SessionOwners`, `Conversations`, `InboxQueries`,
   * `DecisionRequests`, `ChangeFeed`), and `fenced`, the store whose writes hold only while an owner epoch is the
   * session's latest. A reader that needs one concern holds its part instead.
   *
   * Every method is atomic: a transition is one transaction (the record and its journal event) and either happens
   * wholly or not at all. Writes are uninterruptible once started, so an interrupted caller's store is never in an
   * unknown state. Bad input fails with a `PendingStoreError` and changes nothing. Times are epoch milliseconds
   * the caller passes (from `Clock`): a lease is held while `now < leaseUntil`, a record expires when
   * `expiresAt <= now`.
   *
   * @since 0.2.0
   * @category models
   */
  export interface Service
    extends
      ActionRecords.Service,
      InstanceLeases.Service,
      SessionOwners.Service,
      Conversations.Service,
      InboxQueries.Service,
      DecisionRequests.Service,
      ChangeFeed.Service
  {
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
     * Runs `effect` with this store's writes in one transaction: all of them are committed or none is (`effect`
     * failing rolls them back), at the cost of one commit. On SQL, every statement `effect` runs on the store's
     * `SqlClient` joins it (keep another database's work out of it); the memory store runs `effect` as it is (each
     * write atomic on its own, nothing rolled back). A failure to begin or commit is a `PendingStoreError`.
     *
     * @since 0.4.0
     */
    readonly transaction: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E | PendingStoreError, R>
  }
}

/**
 * The PendingStore service: the whole store. Its parts, one per concern, are tags of their own (`ActionRecords`,
 * `InstanceLeases`, `SessionOwners`, `Conversations`, `InboxQueries`, `DecisionRequests`, `ChangeFeed`); every store
 * layer provides them all with it.
 *
 * @since 0.2.0
 * @category tags
 */
export class PendingStore extends Context.Tag("effect-resolve/PendingStore")<PendingStore, PendingStore.Service>() {
  /**
   * The store and each of its parts, as a context: each part a view on `store` (its methods only).
   *
   * @since 0.4.0
   * @category constructors
   */
  static readonly contextWithParts = (
    store: PendingStore.Service
  ): Context.Context<PendingStore | PendingStore.Parts> => Context.add(partsContext(store), PendingStore, store)

  /**
   * The layer of a store built by `make` (or given): `PendingStore` and every part, from one instance.
   *
   * @since 0.4.0
   * @category layers
   */
  static readonly layerFrom = <E, R>(
    make: Effect.Effect<PendingStore.Service, E, R>
  ): Layer.Layer<PendingStore | PendingStore.Parts, E, R> =>
    Layer.effectContext(Effect.map(make, PendingStore.contextWithParts))

  /**
   * Every part of the `PendingStore` in context: for an app that provides `PendingStore` itself (a store of its own,
   * or one it wraps) and runs code that holds a part.
   *
   * @since 0.4.0
   * @category layers
   */
  static readonly layerParts: Layer.Layer<PendingStore.Parts, never, PendingStore> = Layer.effectContext(
    Effect.map(PendingStore, partsContext)
  )

  /**
   * A fresh, empty in-memory store per layer build: the default. Same semantics as the SQL stores; nothing
   * survives the process. It provides every part too.
   *
   * @since 0.2.0
   * @category layers
   */
  static readonly layerMemory: Layer.Layer<PendingStore | PendingStore.Parts> = PendingStore.layerFrom(
    Effect.sync(() => Memory.makeMemory())
  )
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

/**
 * The error for a response id `recordResponse` found taken; nothing was changed.
 *
 * @since 0.4.0
 * @category errors
 */
export const duplicateResponse = (id: string): PendingStoreError =>
  new PendingStoreError({
    operation: "recordResponse",
    detail: `a response with id ${JSON.stringify(id)} already exists; nothing was changed. Record it under a new id ` +
      "(ReviewerResponse.makeId)."
  })
