/**
 * The memory store's part for the approval inbox: its feed, snoozes, decisions and listings across sessions.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { Decision } from "../../domain/Decision.js"
import { isTerminal, openStatuses, type PendingRecord, type PendingStatus } from "../../domain/PendingRecord.js"
import type { ReviewerResponse } from "../../domain/ReviewerResponse.js"
import type { DecisionRequests } from "../DecisionRequests.js"
import {
  duplicateDecision,
  duplicateResponse,
  invalidInput,
  isDecidable,
  PendingStore,
  tally
} from "../PendingStore.js"
import {
  amendmentJson,
  badCursor,
  checkActionQuery,
  checkComplete,
  checkCountQuery,
  checkDecision,
  checkDelivered,
  checkFeed,
  checkIds,
  checkRequested,
  checkResponse,
  checkSnooze,
  checkUndelivered,
  type InboxMethods,
  maxNotesPrune,
  recordCursor
} from "./pendingStore.js"

export const deepFreeze = (value: unknown): unknown => {
  if (typeof value === "object" && value !== null) {
    for (const key of Object.keys(value)) deepFreeze((value as Record<string, unknown>)[key])
    Object.freeze(value)
  }
  return value
}

// ---- the approval inbox (0.3), in memory ----------------------------------------------------------------------

/** A feed of one source: the action id of each change, numbered from 1; only the last `feedKept` are kept. */
export class MemoryFeed {
  private ids: Array<string> = []
  /** The sequence number of `ids[0]`. */
  private first = 1
  push(actionId: string) {
    this.ids.push(actionId)
    if (this.ids.length >= 2 * feedKept) {
      this.first += this.ids.length - feedKept
      this.ids = this.ids.slice(-feedKept)
    }
  }
  get head(): number {
    return this.first + this.ids.length - 1
  }
  after(seq: number, limit: number): Array<{ readonly seq: number; readonly actionId: string }> {
    const out: Array<{ readonly seq: number; readonly actionId: string }> = []
    for (let s = Math.max(seq + 1, this.first); s <= this.head && out.length < limit; s++) {
      out.push({ seq: s, actionId: this.ids[s - this.first]! })
    }
    return out
  }
  at(seq: number): string | undefined {
    return seq >= this.first ? this.ids[seq - this.first] : undefined
  }
  /** Forgets the oldest entries, keeping the last `keep`, at most `most` at once; returns how many went. */
  trim(keep: number, most: number): number {
    const gone = Math.min(Math.max(0, this.ids.length - keep), most)
    this.ids = this.ids.slice(gone)
    this.first += gone
    return gone
  }
}

/** How many changes of each source the memory store's feed keeps. */
export const feedKept = 100_000

export interface MemoryInboxState {
  readonly journalFeed: MemoryFeed
  readonly notesFeed: MemoryFeed
  readonly snoozes: Map<string, number>
  readonly decisions: Map<string, Decision>
  readonly byAction: Map<string, Array<string>>
  /** Per action, its requested decision's id; in the order they were requested. */
  readonly requested: Map<string, string>
  /** Every response by id, in the order they were recorded. */
  readonly responses: Map<string, ReviewerResponse>
  /** Per action, its responses' ids, oldest first. */
  readonly responsesByAction: Map<string, Array<string>>
  /** Per session, the ids of its responses not yet delivered, oldest first. */
  readonly undelivered: Map<string, Set<string>>
  /** A record was removed (pruned): its snooze and decisions go with it. */
  readonly forget: (actionId: string) => void
}

export const makeMemoryInboxState = (): MemoryInboxState => {
  const state: MemoryInboxState = {
    journalFeed: new MemoryFeed(),
    notesFeed: new MemoryFeed(),
    snoozes: new Map(),
    decisions: new Map(),
    byAction: new Map(),
    requested: new Map(),
    responses: new Map(),
    responsesByAction: new Map(),
    undelivered: new Map(),
    forget: (actionId) => {
      state.snoozes.delete(actionId)
      state.requested.delete(actionId)
      for (const id of state.byAction.get(actionId) ?? []) state.decisions.delete(id)
      state.byAction.delete(actionId)
      for (const id of state.responsesByAction.get(actionId) ?? []) {
        const response = state.responses.get(id)
        if (response !== undefined) state.undelivered.get(response.session)?.delete(id)
        state.responses.delete(id)
      }
      state.responsesByAction.delete(actionId)
    }
  }
  return state
}

export const memoryInbox = (
  state: MemoryInboxState,
  store: {
    readonly records: ReadonlyMap<string, PendingRecord>
    readonly seqs: ReadonlyMap<string, number>
    readonly bySession: ReadonlyMap<string, ReadonlySet<string>>
    readonly openBySession: ReadonlyMap<string, ReadonlySet<string>>
  }
): InboxMethods & {
  /** Records a decision `done` (`recordDone`'s insert, its input checked, `json` its amendment): `false` when the
   * action is unknown or a decision has its id. */
  readonly insertDone: (input: DecisionRequests.DoneInput, json: string) => boolean
} => {
  const { bySession, openBySession, records, seqs } = store
  const openSet: ReadonlySet<PendingStatus> = new Set(openStatuses)
  const note = (actionId: string) => state.notesFeed.push(actionId)
  const snoozedAt = (id: string, now: number): Option.Option<number> => {
    const until = state.snoozes.get(id)
    return until !== undefined && until > now ? Option.some(until) : Option.none()
  }
  const listed = (record: PendingRecord): PendingStore.ListedAction => {
    const requested = state.requested.get(record.id)
    return {
      record,
      snoozedUntil: Option.fromNullable(state.snoozes.get(record.id)),
      requested: requested === undefined ? Option.none() : Option.fromNullable(state.decisions.get(requested))
    }
  }
  // The ids of the records of `sessions` (all when absent), from the open index when only open statuses are wanted.
  const candidates = function*(sessions: ReadonlyArray<string> | undefined, openOnly: boolean) {
    const index = openOnly ? openBySession : bySession
    if (sessions === undefined) {
      for (const ids of index.values()) yield* ids
    } else {
      for (const session of new Set(sessions)) yield* index.get(session) ?? []
    }
  }
  const newestFirst = (a: PendingRecord, b: PendingRecord) =>
    b.createdAt - a.createdAt || seqs.get(b.id)! - seqs.get(a.id)!

  const listActions = (query: PendingStore.ActionQuery) =>
    Effect.suspend(() => {
      const problem = checkActionQuery(query)
      if (problem !== undefined) return Effect.fail(invalidInput("listActions", problem))
      const after = query.cursor === undefined ? undefined : recordCursor.decode(query.cursor)
      if (query.cursor !== undefined && after === undefined) return Effect.fail(invalidInput("listActions", badCursor))
      const statuses = new Set(query.statuses ?? openStatuses)
      const kinds = query.kinds === undefined ? undefined : new Set(query.kinds)
      const snoozed = query.snoozed ?? "hide"
      const found: Array<PendingRecord> = []
      for (const id of candidates(query.sessions, [...statuses].every((status) => openSet.has(status)))) {
        const record = records.get(id)!
        if (!statuses.has(record.status) || (kinds !== undefined && !kinds.has(record.kind))) continue
        if (snoozed !== "include" && Option.isSome(snoozedAt(id, query.now)) !== (snoozed === "only")) continue
        if (
          after !== undefined && typeof after.createdAt === "number" &&
          !(record.createdAt < after.createdAt || (record.createdAt === after.createdAt && seqs.get(id)! < after.seq))
        ) continue
        found.push(record)
      }
      found.sort(newestFirst)
      const items = found.slice(0, query.limit)
      const last = items[items.length - 1]
      return Effect.succeed<PendingStore.Page<PendingStore.ListedAction>>({
        items: items.map(listed),
        next: found.length > query.limit && last !== undefined ?
          Option.some(recordCursor.encode(last.createdAt, seqs.get(last.id)!)) :
          Option.none()
      })
    })

  const countActions = (query: PendingStore.CountQuery) =>
    Effect.suspend(() => {
      const problem = checkCountQuery(query)
      if (problem !== undefined) return Effect.fail(invalidInput("countActions", problem))
      const kinds = query.kinds === undefined ? undefined : new Set(query.kinds)
      const counts = { pending: 0, requested: 0, snoozed: 0, resolving: 0, orphaned: 0, conflict: 0 }
      for (const id of candidates(query.sessions, true)) {
        const record = records.get(id)!
        if (kinds !== undefined && !kinds.has(record.kind)) continue
        tally(counts, record.status, Option.isSome(snoozedAt(id, query.now)), state.requested.has(id))
      }
      return Effect.succeed<PendingStore.ActionCounts>(counts)
    })

  const recordDecision = (input: PendingStore.DecisionInput) =>
    Effect.suspend(() => {
      const problem = checkDecision(input)
      if (problem !== undefined) return Effect.fail(invalidInput("recordDecision", problem))
      const amendment = amendmentJson(input.amendment)
      if ("problem" in amendment) return Effect.fail(invalidInput("recordDecision", amendment.problem))
      const record = records.get(input.actionId)
      if (record === undefined) return Effect.succeed<PendingStore.RecordDecisionResult>({ _tag: "UnknownAction" })
      const waiting = state.requested.get(record.id)
      if (waiting !== undefined) {
        return Effect.succeed<PendingStore.RecordDecisionResult>({
          _tag: "AlreadyRequested",
          decision: state.decisions.get(waiting)!
        })
      }
      if (!isDecidable(record, input.now)) {
        return Effect.succeed<PendingStore.RecordDecisionResult>({ _tag: "NotDecidable", record })
      }
      if (state.decisions.has(input.id)) return Effect.fail(duplicateDecision(input.id))
      const decision = add(record, { ...input, requestedAt: input.now }, amendment.json, {
        state: "requested",
        outcome: null,
        settledAt: null,
        settledBy: null
      })
      state.requested.set(record.id, decision.id)
      return Effect.succeed<PendingStore.RecordDecisionResult>({ _tag: "Recorded", decision })
    })

  /** Stores a new decision on `record` (its amendment as `json`), in the state `end` says. */
  const add = (
    record: PendingRecord,
    input: Omit<DecisionRequests.DoneInput, "outcome" | "by" | "now">,
    json: string,
    end: Pick<Decision, "state" | "outcome" | "settledAt" | "settledBy">
  ): Decision => {
    const decision: Decision = Object.freeze({
      id: input.id,
      actionId: record.id,
      session: record.session,
      reviewer: input.reviewer,
      action: input.action,
      reason: input.reason,
      amendment: deepFreeze(JSON.parse(json)),
      requestedAt: input.requestedAt,
      ...end
    })
    state.decisions.set(decision.id, decision)
    const list = state.byAction.get(record.id)
    if (list === undefined) state.byAction.set(record.id, [decision.id])
    else list.push(decision.id)
    note(record.id)
    return decision
  }

  const insertDone = (input: DecisionRequests.DoneInput, json: string): boolean => {
    const record = records.get(input.actionId)
    if (record === undefined || state.decisions.has(input.id)) return false
    add(record, input, json, { state: "done", outcome: input.outcome, settledAt: input.now, settledBy: input.by })
    return true
  }

  const completeDecision = (input: PendingStore.CompleteDecisionInput) =>
    Effect.suspend(() => {
      const problem = checkComplete(input)
      if (problem !== undefined) return Effect.fail(invalidInput("completeDecision", problem))
      const before = state.decisions.get(input.id)
      if (before === undefined || before.state !== "requested") return Effect.succeed(false)
      state.decisions.set(
        before.id,
        Object.freeze({
          ...before,
          state: input.state,
          outcome: input.outcome,
          settledAt: input.now,
          settledBy: input.by
        })
      )
      state.requested.delete(before.actionId)
      note(before.actionId)
      return Effect.succeed(true)
    })

  const requestedDecisions = (query: PendingStore.RequestedQuery) =>
    Effect.suspend(() => {
      const problem = checkRequested(query)
      if (problem !== undefined) return Effect.fail(invalidInput("requestedDecisions", problem))
      const sessions = query.sessions === undefined ? undefined : new Set(query.sessions)
      const kinds = query.kinds === undefined ? undefined : new Set(query.kinds)
      const found: Array<PendingStore.RequestedDecision> = []
      for (const id of state.requested.values()) {
        const decision = state.decisions.get(id)!
        const record = records.get(decision.actionId)
        if (record === undefined || (sessions !== undefined && !sessions.has(decision.session))) continue
        if (kinds !== undefined && !kinds.has(record.kind)) continue
        found.push({ decision, record })
      }
      found.sort((a, b) => a.decision.requestedAt - b.decision.requestedAt)
      return Effect.succeed(found.slice(0, query.limit))
    })

  const recordResponse = (input: DecisionRequests.ResponseInput) =>
    Effect.suspend(() => {
      const problem = checkResponse(input)
      if (problem !== undefined) return Effect.fail(invalidInput("recordResponse", problem))
      const record = records.get(input.actionId)
      if (record === undefined) return Effect.succeed<DecisionRequests.RecordResponseResult>({ _tag: "UnknownAction" })
      if (!isDecidable(record, input.now)) {
        return Effect.succeed<DecisionRequests.RecordResponseResult>({ _tag: "NotDecidable", record })
      }
      if (state.responses.has(input.id)) return Effect.fail(duplicateResponse(input.id))
      const response: ReviewerResponse = Object.freeze({
        id: input.id,
        actionId: record.id,
        session: record.session,
        reviewer: input.reviewer,
        message: input.message,
        respondedAt: input.now,
        deliveredAt: null
      })
      state.responses.set(response.id, response)
      const list = state.responsesByAction.get(record.id)
      if (list === undefined) state.responsesByAction.set(record.id, [response.id])
      else list.push(response.id)
      const waiting = state.undelivered.get(record.session)
      if (waiting === undefined) state.undelivered.set(record.session, new Set([response.id]))
      else waiting.add(response.id)
      note(record.id)
      return Effect.succeed<DecisionRequests.RecordResponseResult>({ _tag: "Recorded", response })
    })

  const markDelivered = (input: DecisionRequests.DeliveredInput) =>
    Effect.suspend(() => {
      const problem = checkDelivered(input)
      if (problem !== undefined) return Effect.fail(invalidInput("markDelivered", problem))
      let marked = 0
      for (const id of new Set(input.ids)) {
        const response = state.responses.get(id)
        if (response === undefined || response.deliveredAt !== null) continue
        state.responses.set(id, Object.freeze({ ...response, deliveredAt: input.now }))
        state.undelivered.get(response.session)?.delete(id)
        note(response.actionId)
        marked++
      }
      return Effect.succeed(marked)
    })

  const feed = (input: PendingStore.FeedInput) =>
    Effect.suspend(() => {
      const problem = checkFeed(input)
      if (problem !== undefined) return Effect.fail(invalidInput("feed", problem))
      const changes: Array<PendingStore.FeedChange> = []
      const sources = [["journal", state.journalFeed], ["notes", state.notesFeed]] as const
      for (const [source, log] of sources) {
        for (const seq of input.missing?.[source] ?? []) {
          const actionId = log.at(seq)
          if (actionId !== undefined && seq <= log.head) changes.push({ source, seq, actionId })
        }
        for (const { actionId, seq } of log.after(input.after[source], input.limit)) {
          changes.push({ source, seq, actionId })
        }
      }
      return Effect.succeed<ReadonlyArray<PendingStore.FeedChange>>(changes)
    })

  return {
    listActions,
    getActions: (ids) =>
      Effect.suspend(() => {
        const problem = checkIds(ids)
        if (problem !== undefined) return Effect.fail(invalidInput("getActions", problem))
        const found: Array<PendingStore.ListedAction> = []
        for (const id of new Set(ids)) {
          const record = records.get(id)
          if (record !== undefined) found.push(listed(record))
        }
        return Effect.succeed(found)
      }),
    countActions,
    snooze: (input) =>
      Effect.suspend(() => {
        const problem = checkSnooze(input)
        if (problem !== undefined) return Effect.fail(invalidInput("snooze", problem))
        const record = records.get(input.id)
        if (record === undefined || isTerminal(record.status)) return Effect.succeed(false)
        if (Option.isSome(input.until)) state.snoozes.set(record.id, input.until.value)
        else state.snoozes.delete(record.id)
        note(record.id)
        return Effect.succeed(true)
      }),
    recordDecision,
    getDecision: (id) => Effect.sync(() => Option.fromNullable(state.decisions.get(id))),
    decisions: (actionId) =>
      Effect.sync(() => (state.byAction.get(actionId) ?? []).map((id) => state.decisions.get(id)!)),
    requestedDecisions,
    completeDecision,
    insertDone,
    recordResponse,
    responses: (actionId) =>
      Effect.sync(() => (state.responsesByAction.get(actionId) ?? []).map((id) => state.responses.get(id)!)),
    undeliveredResponses: (query) =>
      Effect.suspend(() => {
        const problem = checkUndelivered(query)
        if (problem !== undefined) return Effect.fail(invalidInput("undeliveredResponses", problem))
        const found: Array<ReviewerResponse> = []
        for (const id of state.undelivered.get(query.session) ?? []) {
          if (found.length >= query.limit) break
          found.push(state.responses.get(id)!)
        }
        return Effect.succeed<ReadonlyArray<ReviewerResponse>>(found)
      }),
    markDelivered,
    feedHead: Effect.sync(() => ({ journal: state.journalFeed.head, notes: state.notesFeed.head })),
    feed,
    pruneNotes: (keepLast) =>
      Effect.suspend(() => {
        if (!(Number.isSafeInteger(keepLast) && keepLast >= 0)) {
          return Effect.fail(invalidInput("pruneNotes", "keepLast must be a whole number, 0 or more"))
        }
        return Effect.succeed(state.notesFeed.trim(keepLast, maxNotesPrune))
      })
  }
}
