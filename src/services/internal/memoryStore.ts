/**
 * The in-memory `PendingStore` (`PendingStore.layerMemory`, `makeMemory`).
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as PubSub from "effect/PubSub"
import * as Stream from "effect/Stream"
import { isTerminal, type PendingEvent, type PendingRecord, type PendingStatus } from "../../domain/PendingRecord.js"
import {
  checkAcquire,
  checkConversationSave,
  checkPrevious,
  checkSessionLogEntry,
  duplicateId,
  fencedOut,
  invalidInput,
  leaseLapsed,
  PendingStore
} from "../PendingStore.js"
import { deepFreeze, makeMemoryInboxState, memoryInbox } from "./memoryInbox.js"
import {
  amendmentJson,
  badCursor,
  checkClaim,
  checkComplete,
  checkDone,
  checkHeartbeat,
  checkPage,
  checkPrune,
  checkRecord,
  checkSession,
  checkSettle,
  checkTransition,
  eventCursor,
  fencedWrites,
  payloadJson,
  recordCursor,
  settleThenComplete
} from "./pendingStore.js"
import { signalling } from "./storeSignals.js"

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
  /** Per session, the ids of its records, in insertion order. */
  const bySession = new Map<string, Set<string>>()
  /** Per session, the ids of its records not yet settled, in insertion order. */
  const openBySession = new Map<string, Set<string>>()
  const resolving = new Set<string>()
  const journal = new Map<string, Array<PendingEvent>>()
  const sessions = new Map<string, string>()
  const conversations = new Map<string, ReadonlyArray<string>>()
  /** Per session, its owner log. */
  const sessionLogs = new Map<string, Array<PendingStore.SessionLogEntry>>()
  /** Runtime instances and the ends of their leases. */
  const instances = new Map<string, number>()
  /** Per session, its current owner (0.4: fencing). */
  const owners = new Map<string, PendingStore.Owner>()
  let seq = 0
  const inboxState = makeMemoryInboxState()

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
    inboxState.journalFeed.push(actionId)
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
    if (after.status !== before.status) {
      event(after.id, after.updatedAt, before.status, after.status, eventOwner, after.attempts)
    }
    return after
  }

  const addTo = (index: Map<string, Set<string>>, session: string, id: string) => {
    const ids = index.get(session)
    if (ids === undefined) index.set(session, new Set([id]))
    else ids.add(id)
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
        stager: record.stager,
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
      addTo(bySession, stored.session, stored.id)
      if (!isTerminal(stored.status)) addTo(openBySession, stored.session, stored.id)
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

  // Records kept in memory are always readable: `"unreadable"` in `from` never matches here.
  const transition = (input: PendingStore.TransitionInput) =>
    Effect.suspend(() => {
      const problem = checkTransition(input)
      if (problem !== undefined) return Effect.fail(invalidInput("transition", problem))
      const before = records.get(input.id)
      if (before === undefined || !input.from.includes(before.status)) return Effect.succeed(false)
      if (input.owner !== undefined && before.owner !== Option.getOrNull(input.owner)) return Effect.succeed(false)
      update(before, {
        status: input.to,
        owner: null,
        leaseUntil: null,
        updatedAt: input.now,
        ...(input.stager === undefined ? {} : { stager: input.stager })
      }, before.owner)
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

  // Newest first: createdAt descending, then insertion descending.
  const newestFirst = (a: PendingRecord, b: PendingRecord) =>
    b.createdAt - a.createdAt || seqs.get(b.id)! - seqs.get(a.id)!
  const sorted = (ids: Iterable<string> | undefined): Array<PendingRecord> =>
    ids === undefined ? [] : Array.from(ids, (id) => records.get(id)!).sort(newestFirst)

  const listPage = (session: string, options: PendingStore.PageOptions) =>
    Effect.suspend(() => {
      const problem = checkPage(options)
      if (problem !== undefined) return Effect.fail(invalidInput("listPage", problem))
      const after = options.cursor === undefined ? undefined : recordCursor.decode(options.cursor)
      if (options.cursor !== undefined && after === undefined) {
        return Effect.fail(invalidInput("listPage", badCursor))
      }
      const all = sorted(bySession.get(session))
      const from = after === undefined ?
        0 :
        all.findIndex((r) =>
          typeof after.createdAt === "string" || r.createdAt < after.createdAt ||
          (r.createdAt === after.createdAt && seqs.get(r.id)! < after.seq)
        )
      const items = from < 0 ? [] : all.slice(from, from + options.limit)
      const last = items[items.length - 1]
      const more = from >= 0 && from + options.limit < all.length && last !== undefined
      return Effect.succeed<PendingStore.Page<PendingRecord>>({
        items,
        next: more ? Option.some(recordCursor.encode(last.createdAt, seqs.get(last.id)!)) : Option.none()
      })
    })

  const historyPage = (id: string, options: PendingStore.PageOptions) =>
    Effect.suspend(() => {
      const problem = checkPage(options)
      if (problem !== undefined) return Effect.fail(invalidInput("historyPage", problem))
      const after = options.cursor === undefined ? 0 : eventCursor.decode(options.cursor)
      if (after === undefined) return Effect.fail(invalidInput("historyPage", badCursor))
      const events = journal.get(id) ?? []
      const items = events.slice(after, after + options.limit)
      const end = after + items.length
      return Effect.succeed<PendingStore.Page<PendingEvent>>({
        items,
        next: end < events.length ? Option.some(eventCursor.encode(end)) : Option.none()
      })
    })

  const remove = (record: PendingRecord) => {
    records.delete(record.id)
    seqs.delete(record.id)
    journal.delete(record.id)
    inboxState.forget(record.id)
    bySession.get(record.session)?.delete(record.id)
  }

  const prune = (input: PendingStore.PruneInput) =>
    Effect.suspend(() => {
      const problem = checkPrune(input)
      if (problem !== undefined) return Effect.fail(invalidInput("prune", problem))
      const settled: Array<PendingRecord> = []
      for (const id of bySession.get(input.session) ?? []) {
        const record = records.get(id)!
        if (isTerminal(record.status)) settled.push(record)
      }
      // Most recently settled first; those past `keepLast`, or settled before `settledBefore`, go, oldest first.
      settled.sort((a, b) => b.updatedAt - a.updatedAt || seqs.get(b.id)! - seqs.get(a.id)!)
      const keep = Option.getOrElse(input.keepLast, () => Infinity)
      const before = Option.getOrElse(input.settledBefore, () => -Infinity)
      const doomed = settled.filter((record, i) => i >= keep || record.updatedAt < before).reverse()
        .slice(0, input.batch)
      doomed.forEach(remove)
      return Effect.succeed(doomed.length)
    })

  const heartbeat = (input: PendingStore.HeartbeatInput) =>
    Effect.suspend(() => {
      const problem = checkHeartbeat(input)
      if (problem !== undefined) return Effect.fail(invalidInput("heartbeat", problem))
      for (const [instance, until] of instances) if (until <= input.now) instances.delete(instance)
      if (input.renew === true && !instances.has(input.instance)) return Effect.fail(leaseLapsed(input.instance))
      instances.set(input.instance, input.leaseUntil)
      for (const id of resolving) {
        const record = records.get(id)!
        if (record.owner === input.instance) records.set(id, Object.freeze({ ...record, leaseUntil: input.leaseUntil }))
      }
      return Effect.void
    })

  const { insertDone, ...inbox } = memoryInbox(inboxState, { records, seqs, bySession, openBySession })

  const acquire = (input: PendingStore.AcquireInput) =>
    Effect.suspend(() => {
      const problem = checkAcquire(input)
      if (problem !== undefined) return Effect.fail(invalidInput("acquire", problem))
      const epoch = (owners.get(input.session)?.epoch ?? 0) + 1
      owners.set(input.session, Object.freeze({ epoch, owner: input.owner, at: input.now }))
      return Effect.succeed(epoch)
    })

  const changes = Effect.runSync(PubSub.sliding<void>(1))
  const store: PendingStore.Service = PendingStore.of({
    ...inbox,
    changed: Stream.fromPubSub(changes),
    acquire,
    owner: (session) => Effect.sync(() => Option.fromNullable(owners.get(session))),
    fenced: (fence) => fencedMemory(store, fence, () => owners.get(fence.session)?.epoch),
    // Each write is atomic on its own; nothing is rolled back.
    transaction: (effect) => effect,
    settleDeciding: (settle, decision) =>
      Effect.suspend(() => {
        const completion = { ...decision, state: "done" as const, now: settle.now }
        const problem = checkSettle(settle) ?? checkComplete(completion)
        if (problem !== undefined) return Effect.fail(invalidInput("settleDeciding", problem))
        return settleThenComplete(store.settle(settle), store.completeDecision(completion))
      }),
    recordDone: (input, settle) =>
      Effect.suspend(() => {
        const problem = checkDone(input) ?? (settle === undefined ? undefined : checkSettle(settle))
        if (problem !== undefined) return Effect.fail(invalidInput("recordDone", problem))
        const amendment = amendmentJson(input.amendment)
        if ("problem" in amendment) return Effect.fail(invalidInput("recordDone", amendment.problem))
        const record = Effect.sync(() => insertDone(input, amendment.json))
        return settle === undefined ?
          Effect.map(record, (recorded) => ({ settled: true, recorded })) :
          Effect.map(settleThenComplete(store.settle(settle), record), ({ completed, settled }) => ({
            settled,
            recorded: completed
          }))
      }),
    insert,
    get: (id) => Effect.sync(() => Option.fromNullable(records.get(id))),
    list: (session) => Effect.sync(() => sorted(bySession.get(session))),
    listPage,
    listOpen: (session) => Effect.sync(() => sorted(openBySession.get(session))),
    claim,
    settle,
    transition,
    stale,
    history: (id) => Effect.sync(() => journal.get(id)?.slice() ?? []),
    historyPage,
    prune,
    heartbeat,
    release: (instance) => Effect.sync(() => void instances.delete(instance)),
    leases: (ids) =>
      Effect.sync(() => {
        const found = new Map<string, number>()
        for (const id of ids) {
          const until = instances.get(id)
          if (until !== undefined) found.set(id, until)
        }
        return found
      }),
    saveSession: (session, state) =>
      Effect.suspend(() => {
        const problem = checkSession(session, state)
        if (problem !== undefined) return Effect.fail(invalidInput("saveSession", problem))
        sessions.set(session, state)
        return Effect.void
      }),
    loadSession: (session) => Effect.sync(() => Option.fromNullable(sessions.get(session))),
    saveConversation: (session, save) =>
      Effect.suspend(() => {
        const stored = conversations.get(session) ?? []
        const problem = checkSession(session, save.state) ?? checkConversationSave(save, stored.length) ??
          checkPrevious(save, sessions.get(session))
        if (problem !== undefined) return Effect.fail(invalidInput("saveConversation", problem))
        sessions.set(session, save.state)
        conversations.set(session, [...stored.slice(0, save.from), ...save.messages])
        return Effect.void
      }),
    loadConversation: (session) =>
      Effect.sync(() => {
        const state = sessions.get(session)
        return state === undefined ?
          Option.none() :
          Option.some({ state, messages: conversations.get(session)?.slice() ?? [] })
      }),
    logSession: (entry) =>
      Effect.suspend(() => {
        const problem = checkSessionLogEntry(entry)
        if (problem !== undefined) return Effect.fail(invalidInput("logSession", problem))
        const stored: PendingStore.SessionLogEntry = Object.freeze({
          session: entry.session,
          owner: entry.owner,
          event: entry.event,
          at: entry.at
        })
        const log = sessionLogs.get(entry.session)
        if (log === undefined) sessionLogs.set(entry.session, [stored])
        else log.push(stored)
        return Effect.void
      }),
    sessionLog: (session, options) =>
      Effect.suspend(() => {
        const last = options?.last
        if (last !== undefined && !(Number.isSafeInteger(last) && last >= 1)) {
          return Effect.fail(invalidInput("sessionLog", "last must be a whole number, 1 or more"))
        }
        const log = sessionLogs.get(session) ?? []
        return Effect.succeed(last === undefined ? log.slice() : log.slice(-last))
      })
  })
  return signalling(store, changes)
}

/**
 * The memory store fenced: each write runs only while `fence.epoch` is the session's latest. The check and the
 * write run in one synchronous step of this process (the memory store's writes are synchronous).
 */
const fencedMemory = (
  store: PendingStore.Service,
  fence: PendingStore.Fence,
  current: () => number | undefined
): PendingStore.Service => {
  const fenced: Record<string, unknown> = { ...store }
  for (const name of fencedWrites) {
    const write = store[name] as (...args: ReadonlyArray<unknown>) => Effect.Effect<unknown, unknown>
    fenced[name] = (...args: ReadonlyArray<unknown>) =>
      Effect.suspend(() => current() === fence.epoch ? write(...args) : Effect.fail(fencedOut(name, fence)))
  }
  fenced.fenced = (other: PendingStore.Fence) => store.fenced(other)
  return fenced as unknown as PendingStore.Service
}
