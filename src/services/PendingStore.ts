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
import { PendingStoreError } from "../domain/Errors.js"
import { isTerminal, type PendingEvent, type PendingRecord, type PendingStatus } from "../domain/PendingRecord.js"
import {
  checkClaim,
  checkRecord,
  checkSession,
  checkSettle,
  checkTransition,
  payloadJson
} from "./internal/pendingStore.js"

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
   *
   * @since 0.2.0
   * @category models
   */
  export interface TransitionInput {
    readonly id: string
    readonly from: ReadonlyArray<PendingStatus>
    readonly to: PendingStatus
    readonly owner?: Option.Option<string>
    readonly now: number
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
    /** A session's records (every status), most recent first: `createdAt` descending, then insertion order. */
    readonly list: (session: string) => Effect.Effect<ReadonlyArray<PendingRecord>, PendingStoreError>
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
    /** A session's resumable state (JSON text written by the turn driver); the last write wins. */
    readonly saveSession: (session: string, state: string) => Effect.Effect<void, PendingStoreError>
    /** The last state saved for the session, if any. */
    readonly loadSession: (session: string) => Effect.Effect<Option.Option<string>, PendingStoreError>
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
  static readonly layerMemory: Layer.Layer<PendingStore> = Layer.sync(this, () => makeMemory())
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
 * Builds an in-memory store (what `layerMemory` provides). Its state is closure-local and changed only inside
 * synchronous blocks, each atomic like a `Ref.modify`; records are frozen, so what a read returns never changes.
 *
 * @since 0.2.0
 * @category constructors
 */
export const makeMemory = (): PendingStore.Service => {
  const records = new Map<string, PendingRecord>()
  const seqs = new Map<string, number>()
  const bySession = new Map<string, Array<string>>()
  /** Per session, the ids of its records not yet settled, in insertion order. */
  const openBySession = new Map<string, Set<string>>()
  const resolving = new Set<string>()
  const journal = new Map<string, Array<PendingEvent>>()
  const sessions = new Map<string, string>()
  let seq = 0

  const event = (
    actionId: string,
    at: number,
    from: PendingStatus | null,
    to: PendingStatus,
    owner: string | null,
    attempt: number
  ) => {
    const e: PendingEvent = Object.freeze({ actionId, at, from, to, owner, attempt })
    const list = journal.get(actionId)
    if (list === undefined) journal.set(actionId, [e])
    else list.push(e)
  }

  const update = (
    before: PendingRecord,
    changes: Pick<PendingRecord, "status" | "owner" | "leaseUntil" | "updatedAt"> & Partial<PendingRecord>,
    eventOwner: string | null
  ): PendingRecord => {
    const after: PendingRecord = Object.freeze({ ...before, ...changes })
    records.set(after.id, after)
    if (after.status === "resolving") resolving.add(after.id)
    else resolving.delete(after.id)
    if (isTerminal(after.status)) openBySession.get(after.session)?.delete(after.id)
    event(after.id, after.updatedAt, before.status, after.status, eventOwner, after.attempts)
    return after
  }

  const insert = (record: PendingRecord) =>
    Effect.suspend(() => {
      const problem = checkRecord(record)
      if (problem !== undefined) return Effect.fail(invalidInput("insert", problem))
      const json = payloadJson(record.payload)
      if (json === undefined) {
        return Effect.fail(invalidInput("insert", "payload must be a JSON value (null for closures)"))
      }
      if (records.has(record.id)) return Effect.fail(duplicateId(record.id))
      const stored: PendingRecord = Object.freeze({
        id: record.id,
        session: record.session,
        kind: record.kind,
        label: record.label,
        sourceToolName: record.sourceToolName,
        preview: record.preview,
        payload: record.payload === null ? null : deepFreeze(JSON.parse(json)),
        status: record.status,
        attempts: record.attempts,
        owner: null,
        leaseUntil: null,
        createdAt: record.createdAt,
        updatedAt: record.updatedAt,
        expiresAt: record.expiresAt,
        outcome: record.outcome
      })
      records.set(stored.id, stored)
      seqs.set(stored.id, ++seq)
      const ids = bySession.get(stored.session)
      if (ids === undefined) bySession.set(stored.session, [stored.id])
      else ids.push(stored.id)
      if (!isTerminal(stored.status)) {
        const open = openBySession.get(stored.session)
        if (open === undefined) openBySession.set(stored.session, new Set([stored.id]))
        else open.add(stored.id)
      }
      event(stored.id, stored.updatedAt, null, stored.status, null, stored.attempts)
      return Effect.void
    })

  const claim = (input: PendingStore.ClaimInput) =>
    Effect.suspend(() => {
      const problem = checkClaim(input)
      if (problem !== undefined) return Effect.fail(invalidInput("claim", problem))
      const before = records.get(input.id)
      if (
        before === undefined || before.status !== "pending" ||
        (before.expiresAt !== null && before.expiresAt <= input.now)
      ) return Effect.succeed(Option.none<PendingRecord>())
      return Effect.succeed(Option.some(update(before, {
        status: "resolving",
        attempts: before.attempts + 1,
        owner: input.owner,
        leaseUntil: input.leaseUntil,
        updatedAt: input.now
      }, input.owner)))
    })

  const settle = (input: PendingStore.SettleInput) =>
    Effect.suspend(() => {
      const problem = checkSettle(input)
      if (problem !== undefined) return Effect.fail(invalidInput("settle", problem))
      const before = records.get(input.id)
      if (before === undefined || before.status !== "resolving" || before.owner !== input.owner) {
        return Effect.succeed(false)
      }
      update(before, {
        status: input.to,
        owner: null,
        leaseUntil: null,
        updatedAt: input.now,
        outcome: Option.getOrNull(input.outcome)
      }, before.owner)
      return Effect.succeed(true)
    })

  const transition = (input: PendingStore.TransitionInput) =>
    Effect.suspend(() => {
      const problem = checkTransition(input)
      if (problem !== undefined) return Effect.fail(invalidInput("transition", problem))
      const before = records.get(input.id)
      if (before === undefined || !input.from.includes(before.status)) return Effect.succeed(false)
      if (input.owner !== undefined && before.owner !== Option.getOrNull(input.owner)) return Effect.succeed(false)
      update(before, { status: input.to, owner: null, leaseUntil: null, updatedAt: input.now }, before.owner)
      return Effect.succeed(true)
    })

  const stale = (now: number) =>
    Effect.sync(() => {
      const found: Array<PendingRecord> = []
      for (const id of resolving) {
        const record = records.get(id)!
        if (record.leaseUntil !== null && record.leaseUntil <= now) found.push(record)
      }
      return found.sort((a, b) => a.leaseUntil! - b.leaseUntil! || seqs.get(a.id)! - seqs.get(b.id)!)
    })

  // Newest insertion first; a stable sort by createdAt keeps that order among equal times.
  const newestFirst = (ids: Iterable<string>): Array<PendingRecord> =>
    Array.from(ids, (id) => records.get(id)!).reverse().sort((a, b) => b.createdAt - a.createdAt)

  return PendingStore.of({
    insert,
    get: (id) => Effect.sync(() => Option.fromNullable(records.get(id))),
    list: (session) => Effect.sync(() => newestFirst(bySession.get(session) ?? [])),
    listOpen: (session) => Effect.sync(() => newestFirst(openBySession.get(session) ?? [])),
    claim,
    settle,
    transition,
    stale,
    history: (id) => Effect.sync(() => journal.get(id)?.slice() ?? []),
    saveSession: (session, state) =>
      Effect.suspend(() => {
        const problem = checkSession(session, state)
        if (problem !== undefined) return Effect.fail(invalidInput("saveSession", problem))
        sessions.set(session, state)
        return Effect.void
      }),
    loadSession: (session) => Effect.sync(() => Option.fromNullable(sessions.get(session)))
  })
}

const deepFreeze = (value: unknown): unknown => {
  if (typeof value === "object" && value !== null) {
    for (const key of Object.keys(value)) deepFreeze((value as Record<string, unknown>)[key])
    Object.freeze(value)
  }
  return value
}
