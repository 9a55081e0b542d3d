/**
 * What one session's pending set holds in memory, and the rules that keep it: the session's `State` (shared by the
 * modules that stage, resolve and mirror actions; every field documented below), an action's `Entry`, publishing
 * every change, keeping only the last `retainSettled` settled actions, expiry, and the forcing stack that names the
 * most recent pending action. Also the in-memory reads (`list`, `listPage`, `get`, the open actions).
 *
 * @internal
 */
import type * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Either from "effect/Either"
import * as Option from "effect/Option"
import type { ParseError } from "effect/ParseResult"
import * as PubSub from "effect/PubSub"
import type * as Queue from "effect/Queue"
import * as Schedule from "effect/Schedule"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import type { PendingStoreError, PendingSummary } from "../../domain/Errors.js"
import { isTerminal, type PendingStatus } from "../../domain/PendingRecord.js"
import type * as ActionKind from "../ActionKind.js"
import type { PendingActionInfo } from "../PendingActions.js"
import { invalidInput, type PendingStore } from "../PendingStore.js"
import type { SessionOwnership } from "../SessionOwnership.js"
import type { SteeringBus } from "../SteeringBus.js"
import type { ToolChoiceQueue } from "../ToolChoiceQueue.js"
import type * as Invocation from "./invocation.js"
import { badCursor, checkPage } from "./pendingStore.js"
import { type RetentionPlan, settledInStore } from "./retention.js"

/** What runs an action: its callbacks, and the context they run with (the staging fiber's, or the kinds'). */
export interface Runner {
  readonly callbacks: Invocation.Callbacks<unknown, unknown>
  readonly context: Context.Context<unknown>
  /**
   * A durable kind's amendment Schema, decoding a reviewer's encoded amendment (synchronously) before the action is
   * claimed; `undefined` for a closure and for a kind that takes no amendment (an amendment is then ignored).
   */
  readonly decodeAmendment?: ((encoded: unknown) => Either.Either<unknown, ParseError>) | undefined
}

/**
 * An action's state. Mutable and local to one session, read and changed only inside synchronous blocks, each
 * atomic like a `Ref.modify` (see the ToolChoiceQueue's `State`): this is every preview's hot path (bench/).
 */
export interface Entry {
  readonly id: string
  readonly label: string
  readonly sourceToolName: string
  readonly kind: string
  readonly preview: string
  readonly createdAt: number
  readonly expiresAt: number | undefined
  readonly standing: boolean
  status: PendingStatus
  attempts: number
  /** The last result or failure, rendered when read (a durable session renders it at once, for the store). */
  outcome: string | (() => string) | undefined
  /** Cleared while a resolve call was running: it ends `cleared` unless that call applies it. */
  dropped: boolean
  /** What runs it; `undefined` for an action restored without its callbacks. */
  runner: Runner | undefined
  /** Settled and counted among the settled actions the session keeps (see `retainSettled`). */
  retired: boolean
  /** A `resolve` call of this process holds (or is taking) its claim: the mirror's own view, not the store's. */
  claimed: boolean
  /** The runtime instance that staged it, or that took it back from `orphaned` (`null`: before 0.3, in memory). */
  stager: string | null
  /** Its place in this session's staging order (in memory: the key of `listPage` cursors). */
  readonly order: number
}

/** What a session is: fixed when it opens. */
export interface Setup {
  /** The session the actions belong to (the key of a durable session). */
  readonly session: string
  /** The start of this session's action ids (`pa_<random>_`); `count` follows it. */
  readonly prefix: string
  /** This runtime instance: the stager of what it stages, the owner of what it claims. */
  readonly owner: string
  /** How long this instance's lease (on its claims and on its liveness) holds without renewal, in milliseconds. */
  readonly lease: number
  /** The store that keeps every action as a record; `undefined` in memory. */
  readonly store: PendingStore.Service | undefined
  /** The durable kinds this process runs, by name. */
  readonly kinds: ReadonlyMap<string, ActionKind.Any>
  /** What the kinds need, for actions restored from the store. */
  readonly kindContext: Context.Context<unknown>
  /** The session's queue: every forcing action has its directive there. */
  readonly queue: ToolChoiceQueue.Service
  /** The session's steering bus: the resolve reminder goes there. */
  readonly bus: SteeringBus.Service
  /** The time, in epoch milliseconds, from the session's `Clock`. */
  readonly now: () => number
  /** How many settled actions the session keeps for `list` and `get`, the most recent ones. */
  readonly retainSettled: number
  /** Durable: which settled records the store keeps; `undefined` in memory or with `"keep-all"`. */
  readonly retention: RetentionPlan | undefined
  /** Wakes the pruning fiber (sliding, one slot: wakes that come while it prunes count once). */
  readonly pruneWanted: Queue.Queue<void>
  /** Every change of an action, as its new info, for `subscribe`. */
  readonly hub: PubSub.PubSub<PendingActionInfo>
}

/**
 * A session: what it is and what it holds. One object per session, mutable, read and changed only inside
 * synchronous blocks like an `Entry`; the modules of `services/internal/` are functions over it.
 */
export interface State extends Setup {
  /**
   * How many subscriptions are open: info objects are built only while someone listens (staging is every preview's
   * hot path).
   */
  listeners: number
  /** The actions kept, in staging order: every one not yet settled, and the `retainSettled` last settled. */
  readonly entries: Map<string, Entry>
  /** Forcing (non-standing) entries in staging order; the top is the most recent. Popped lazily, compacted. */
  stack: Array<Entry>
  /** When the stack reaches this length, its settled entries are taken out (amortised: twice what is left). */
  compactAt: number
  /** The settled entries kept, oldest first, from `settledHead` on. */
  settled: Array<Entry | undefined>
  settledHead: number
  /** The last action popped off the stack settled: what `resolve` without an id falls back on. */
  lastSettled: Entry | undefined
  /** The ids given so far (the number after `prefix`). */
  count: number
  /** The entries made so far, staged or restored (each one's `order`). */
  ordinal: number
  /** How many actions this session staged. */
  stagedTotal: number
  /** Settles since the pruning fiber was last woken (see `retention`). */
  settledSincePrune: number
  /** An exclusive session's ownership, provided to every apply (set once, when the session opens). */
  ownership: SessionOwnership.Service | undefined
  /**
   * Durable writes owed by synchronous blocks: an expiry noticed while looking for the most recent action, written
   * by the next `payOwed`. Always empty in memory.
   */
  owed: Array<Entry>
}

/** Below this many entries the forcing stack is never compacted. */
const minCompactAt = 64

/** A session's state, holding nothing yet. */
export const make = (setup: Setup): State => ({
  session: setup.session,
  prefix: setup.prefix,
  owner: setup.owner,
  lease: setup.lease,
  store: setup.store,
  kinds: setup.kinds,
  kindContext: setup.kindContext,
  queue: setup.queue,
  bus: setup.bus,
  now: setup.now,
  retainSettled: setup.retainSettled,
  retention: setup.retention,
  pruneWanted: setup.pruneWanted,
  hub: setup.hub,
  listeners: 0,
  ownership: undefined,
  entries: new Map(),
  stack: [],
  compactAt: minCompactAt,
  settled: [],
  settledHead: 0,
  lastSettled: undefined,
  count: 0,
  ordinal: 0,
  stagedTotal: 0,
  settledSincePrune: 0,
  owed: []
})

/** An entry as apps see it. */
export const infoOf = (entry: Entry): PendingActionInfo => ({
  id: entry.id,
  label: entry.label,
  sourceToolName: entry.sourceToolName,
  kind: entry.kind,
  preview: entry.preview,
  status: entry.status,
  attempts: entry.attempts,
  createdAt: entry.createdAt,
  expiresAt: Option.fromNullable(entry.expiresAt),
  outcome: Option.fromNullable(typeof entry.outcome === "function" ? entry.outcome() : entry.outcome),
  runnable: entry.runner !== undefined && !isTerminal(entry.status)
})

// ---------------------------------------------------------------------------------------------------------------
// Changes, and the settled actions kept
// ---------------------------------------------------------------------------------------------------------------

/**
 * Every status change ends here: a settled action joins the kept ones, and the oldest kept beyond `retainSettled`
 * is forgotten (nothing grows with the number of actions a session has settled).
 */
export const publish = (s: State, entry: Entry): void => {
  if (s.listeners > 0) s.hub.unsafeOffer(infoOf(entry))
  if (!entry.retired && isTerminal(entry.status)) retire(s, entry)
}

/** A settled entry joins the kept ones (a settled record read from the store joins them directly). */
export const retire = (s: State, entry: Entry): void => {
  entry.retired = true
  s.settled.push(entry)
  if (s.settled.length - s.settledHead <= s.retainSettled) return
  const oldest = s.settled[s.settledHead]!
  s.settled[s.settledHead++] = undefined
  if (s.entries.get(oldest.id) === oldest) s.entries.delete(oldest.id)
  if (s.settledHead >= minCompactAt && s.settledHead * 2 >= s.settled.length) {
    s.settled = s.settled.slice(s.settledHead)
    s.settledHead = 0
  }
}

/** A new action joins the set (and the forcing stack unless it is standing). */
export const register = (s: State, entry: Entry): void => {
  s.entries.set(entry.id, entry)
  if (!entry.standing) pushForcing(s, entry)
  s.stagedTotal++
  publish(s, entry)
}

/** A subscription that sees every change from the moment it is taken, even before the stream is read. */
export const subscribe = (s: State): Effect.Effect<Stream.Stream<PendingActionInfo>, never, Scope.Scope> =>
  Effect.map(
    Effect.zipLeft(
      PubSub.subscribe(s.hub),
      Effect.acquireRelease(Effect.sync(() => s.listeners++), () => Effect.sync(() => s.listeners--))
    ),
    (subscription) => Stream.fromQueue(subscription)
  )

// ---------------------------------------------------------------------------------------------------------------
// Expiry
// ---------------------------------------------------------------------------------------------------------------

/** Whether an entry is past its expiry (it may still read `pending` until something looks). */
export const isDue = (s: State, entry: Entry): boolean => entry.expiresAt !== undefined && s.now() >= entry.expiresAt

/** A pending action past its expiry is `expired`; durable, the store's write is owed (see `payOwed`). */
export const expire = (s: State, entry: Entry): void => {
  entry.status = "expired"
  publish(s, entry)
  if (s.store !== undefined) s.owed.push(entry)
}

const expireDue = (s: State, entry: Entry): void => {
  if (entry.status === "pending" && isDue(s, entry)) expire(s, entry)
}

/** Writes the expiries noticed since the last call (see `State.owed`). */
export const payOwed = (s: State): Effect.Effect<void> =>
  Effect.suspend(() => {
    if (s.owed.length === 0) return Effect.void
    const due = s.owed
    s.owed = []
    return Effect.forEach(due, (entry) => write(s, entry.id, ["pending"], "expired"), { discard: true })
  })

// Store writes after the world changed (a settle) are retried: a lost one leaves the record `resolving` until
// recovery reconciles it.
export const storeRetry = Schedule.intersect(Schedule.exponential(Duration.millis(20)), Schedule.recurs(4))

/** A store transition that must not fail the caller: logged, and the mirror keeps what it decided. */
export const write = (
  s: State,
  id: string,
  from: ReadonlyArray<PendingStatus>,
  to: PendingStatus
): Effect.Effect<void> =>
  s.store === undefined ? Effect.void : Effect.matchCauseEffect(
    Effect.retry(s.store.transition({ id, from, to, now: s.now() }), storeRetry),
    {
      onFailure: (cause) =>
        Effect.logError(`effect-resolve: could not record ${id} as ${to} in the pending store`, cause),
      onSuccess: (done) => Effect.sync(() => done && isTerminal(to) && settledInStore(s))
    }
  ).pipe(Effect.asVoid)

// ---------------------------------------------------------------------------------------------------------------
// The forcing stack
// ---------------------------------------------------------------------------------------------------------------

/** Whether an entry's forcing directive is still wanted (the queue's `active`). */
export const wanted = (s: State, entry: Entry): boolean =>
  !entry.standing && (entry.status === "resolving" || (entry.status === "pending" && !isDue(s, entry)))

/** The stack keeps what may still force: settled entries below a pending one are taken out now and then. */
export const pushForcing = (s: State, entry: Entry): void => {
  if (s.stack.length >= s.compactAt) {
    s.stack = s.stack.filter((kept) => !isTerminal(kept.status))
    s.compactAt = Math.max(minCompactAt, 2 * s.stack.length)
  }
  s.stack.push(entry)
}

/** The most recent forcing action that is pending or being resolved; settled ones leave the stack. */
export const mostRecent = (s: State): Entry | undefined => {
  const stack = s.stack
  for (let top = stack[stack.length - 1]; top !== undefined; top = stack[stack.length - 1]) {
    if (top.status === "pending" && isDue(s, top)) expire(s, top)
    if (top.status === "pending" || top.status === "resolving") return top
    stack.pop()
    s.lastSettled = top
  }
  return undefined
}

/** The forcing actions pending now, most recent first (what an error tells the model it can resolve). */
export const pendingNow = (s: State): ReadonlyArray<PendingSummary> => {
  const out: Array<PendingSummary> = []
  for (let i = s.stack.length - 1; i >= 0; i--) {
    const entry = s.stack[i]!
    if (entry.status === "pending" && !isDue(s, entry)) out.push({ id: entry.id, label: entry.label })
  }
  return out
}

// ---------------------------------------------------------------------------------------------------------------
// Reads
// ---------------------------------------------------------------------------------------------------------------

/** An entry's info, expired first when it is due. */
export const infoNow = (s: State, entry: Entry): PendingActionInfo => {
  expireDue(s, entry)
  return infoOf(entry)
}

/** The kept actions not yet settled, most recent first. */
export const openNow = (s: State): ReadonlyArray<PendingActionInfo> => {
  const open: Array<PendingActionInfo> = []
  for (const entry of s.entries.values()) {
    expireDue(s, entry)
    if (!isTerminal(entry.status)) open.push(infoOf(entry))
  }
  return open.reverse()
}

/** In memory: the kept actions, most recent first. */
export const list = (s: State): Effect.Effect<ReadonlyArray<PendingActionInfo>> =>
  Effect.sync(() => [...s.entries.values()].reverse().map((entry) => infoNow(s, entry)))

/** In memory: the open actions (nothing to read again). */
export const listOpen = (s: State): Effect.Effect<ReadonlyArray<PendingActionInfo>> => Effect.sync(() => openNow(s))

/** In memory: a page of the kept actions, by staging order (`m<n>` cursors). */
export const listPage = (
  s: State,
  options: PendingStore.PageOptions
): Effect.Effect<PendingStore.Page<PendingActionInfo>, PendingStoreError> =>
  Effect.suspend(() => {
    const problem = checkPage(options)
    if (problem !== undefined) return Effect.fail(invalidInput("listPage", problem))
    const after = options.cursor === undefined ? Infinity : Number(/^m(\d{1,16})$/.exec(options.cursor)?.[1])
    if (Number.isNaN(after)) return Effect.fail(invalidInput("listPage", badCursor))
    const newer = [...s.entries.values()].filter((entry) => entry.order < after).reverse()
    const items = newer.slice(0, options.limit)
    const last = items[items.length - 1]
    return Effect.succeed({
      items: items.map((entry) => infoNow(s, entry)),
      next: newer.length > options.limit && last !== undefined ? Option.some(`m${last.order}`) : Option.none()
    })
  })

/** In memory: one kept action by id. */
export const get = (s: State, id: string): Effect.Effect<Option.Option<PendingActionInfo>> =>
  Effect.sync(() => Option.map(Option.fromNullable(s.entries.get(id)), (entry) => infoNow(s, entry)))
