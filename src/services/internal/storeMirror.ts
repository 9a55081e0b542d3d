/**
 * How a durable session's set stays in step with its store: a stored record becomes an entry (runnable here when
 * its kind is registered and its payload decodes), the set takes the store's view of a record another process
 * changed (except where it knows better), and the durable reads (`list`, `listOpen`, `listPage`, `get`, `refresh`)
 * go to the store and bring what they read into the set.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import type { PendingStoreError } from "../../domain/Errors.js"
import { isTerminal, type PendingRecord } from "../../domain/PendingRecord.js"
import type { ActionRecords } from "../ActionRecords.js"
import type { PendingActionInfo } from "../PendingActions.js"
import {
  type Entry,
  infoNow,
  openNow,
  payOwed,
  publish,
  pushForcing,
  retire,
  type Runner,
  type State
} from "./pendingSet.js"
import { kindRunner } from "./staging.js"

/** A record as apps see it, when the set does not hold it. */
const recordInfo = (record: PendingRecord): PendingActionInfo => ({
  id: record.id,
  label: record.label,
  sourceToolName: record.sourceToolName,
  kind: record.kind,
  preview: record.preview,
  status: record.status,
  attempts: record.attempts,
  createdAt: record.createdAt,
  expiresAt: Option.fromNullable(record.expiresAt),
  outcome: Option.fromNullable(record.outcome),
  runnable: false
})

// ---------------------------------------------------------------------------------------------------------------
// Records into entries
// ---------------------------------------------------------------------------------------------------------------

/**
 * A record's kind and decoded payload when this process can run it: the kind is registered here and the payload
 * decodes.
 */
export const runnable = (s: State, record: PendingRecord) => {
  const kind = s.kinds.get(record.kind)
  if (kind === undefined || record.status === "unreadable") return undefined
  const decoded = Schema.decodeUnknownOption(kind.payload)(record.payload)
  return Option.isSome(decoded) ? { kind, payload: decoded.value } : undefined
}

const runnerFor = (s: State, record: PendingRecord, entry: Entry): Runner | undefined => {
  const found = runnable(s, record)
  return found === undefined ? undefined : kindRunner(found.kind, found.payload, entry, s.kindContext)
}

/**
 * An entry for a stored record (the one the set holds, if any). A record this process cannot run (a closure, an
 * unregistered kind, a payload that no longer decodes) has no runner: it is listed, never forces and is not picked
 * without an id.
 */
export const restoreEntry = (s: State, record: PendingRecord): Entry => {
  const known = s.entries.get(record.id)
  if (known !== undefined) return known
  const entry: Entry = {
    id: record.id,
    label: record.label,
    sourceToolName: record.sourceToolName,
    kind: record.kind,
    preview: record.preview,
    createdAt: record.createdAt,
    expiresAt: record.expiresAt ?? undefined,
    standing: s.kinds.get(record.kind)?.standing === true,
    status: record.status,
    attempts: record.attempts,
    outcome: record.outcome ?? undefined,
    dropped: false,
    runner: undefined,
    retired: false,
    claimed: false,
    stager: record.stager,
    order: ++s.ordinal
  }
  if (isTerminal(entry.status)) {
    // Settled (read by id from the store): kept among the settled ones, never forcing.
    s.entries.set(entry.id, entry)
    retire(s, entry)
    return entry
  }
  entry.runner = runnerFor(s, record, entry)
  s.entries.set(entry.id, entry)
  if (!entry.standing && entry.runner !== undefined) pushForcing(s, entry)
  return entry
}

// ---------------------------------------------------------------------------------------------------------------
// The store's view
// ---------------------------------------------------------------------------------------------------------------

/** A record another process changed: the entry takes the store's view. */
export const adopt = (s: State, entry: Entry, record: PendingRecord): void => {
  entry.stager = record.stager
  if (entry.status !== record.status || entry.attempts !== record.attempts) {
    entry.status = record.status
    entry.attempts = record.attempts
    entry.outcome = record.outcome ?? undefined
    publish(s, entry)
  }
}

/** Reads a record again after a conditional write found it changed: the entry takes the store's view. */
export const reread = (s: State, entry: Entry, store: ActionRecords.Service): Effect.Effect<void> =>
  Effect.map(Effect.orElseSucceed(store.get(entry.id), () => Option.none()), (record) => {
    if (Option.isSome(record)) adopt(s, entry, record.value)
  })

/**
 * The set takes the store's view of one record, except where it knows better: a claim of this process, or a status
 * this process settled (final; the store's write may still be on its way, as for an expiry). A record it does not
 * hold is taken in unless it is settled (settled elsewhere, or forgotten here: the store has it).
 */
const mirror = (s: State, record: PendingRecord): Entry | undefined => {
  const entry = s.entries.get(record.id)
  if (entry === undefined) return isTerminal(record.status) ? undefined : restoreEntry(s, record)
  if (!entry.claimed && !isTerminal(entry.status)) adopt(s, entry, record)
  return entry
}

const infoOfRecord = (s: State, record: PendingRecord): PendingActionInfo => {
  const entry = mirror(s, record)
  return entry === undefined ? recordInfo(record) : infoNow(s, entry)
}

// ---------------------------------------------------------------------------------------------------------------
// Durable reads
// ---------------------------------------------------------------------------------------------------------------

/**
 * One read of the records not yet settled (its cost follows their number, not the session's history); an action
 * the set holds open that is no longer among them settled elsewhere, and is read by id.
 */
export const refresh = (s: State, store: ActionRecords.Service): Effect.Effect<void, PendingStoreError> =>
  Effect.flatMap(store.listOpen(s.session), (records) => {
    const open = new Set<string>()
    for (const record of records) {
      open.add(record.id)
      mirror(s, record)
    }
    const settledElsewhere: Array<string> = []
    for (const entry of s.entries.values()) {
      if (!isTerminal(entry.status) && !entry.claimed && !open.has(entry.id)) {
        settledElsewhere.push(entry.id)
      }
    }
    return Effect.forEach(
      settledElsewhere,
      (id) => Effect.map(store.get(id), Option.map((record) => mirror(s, record))),
      { discard: true }
    )
  })

/** Durable: `refresh`, then the open actions. */
export const listOpen = (
  s: State,
  store: ActionRecords.Service
): Effect.Effect<ReadonlyArray<PendingActionInfo>, PendingStoreError> =>
  Effect.zipRight(
    refresh(s, store),
    Effect.suspend(() => {
      const open = openNow(s)
      return Effect.as(payOwed(s), open)
    })
  )

/** Durable: every record of the session, the store's view (the set's for what it holds, the same once refreshed). */
export const list = (
  s: State,
  store: ActionRecords.Service
): Effect.Effect<ReadonlyArray<PendingActionInfo>, PendingStoreError> =>
  Effect.map(store.list(s.session), (records) => records.map((record) => infoOfRecord(s, record))).pipe(
    Effect.tap(() => payOwed(s))
  )

/** Durable: a page of the store. */
export const listPage = (
  s: State,
  store: ActionRecords.Service,
  options: ActionRecords.PageOptions
): Effect.Effect<ActionRecords.Page<PendingActionInfo>, PendingStoreError> =>
  Effect.map(store.listPage(s.session, options), (page) => ({
    items: page.items.map((record) => infoOfRecord(s, record)),
    next: page.next
  })).pipe(Effect.tap(() => payOwed(s)))

/** Durable: one record of the session by id. */
export const get = (
  s: State,
  store: ActionRecords.Service,
  id: string
): Effect.Effect<Option.Option<PendingActionInfo>, PendingStoreError> =>
  Effect.map(store.get(id), (record): Option.Option<PendingActionInfo> => {
    if (Option.isNone(record) || record.value.session !== s.session) return Option.none()
    return Option.some(infoOfRecord(s, record.value))
  }).pipe(Effect.tap(() => payOwed(s)))
