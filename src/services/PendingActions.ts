/**
 * The pending set of one session: every staged action by id, most recent first. It is the source of truth that
 * `resolve`, the forcing of the `ToolChoiceQueue` and the turn driver's gate all read:
 *
 * - `resolve` takes the action its `id` names, else the most recent pending one, else (nothing pending) the
 *   standing handler. Staging then resolving works with no model turn in between.
 * - A preview's forcing directive is wanted while its action is pending (the queue's `active`): it is satisfied when
 *   the action leaves `pending`, and dropped when it is gone, so the queue can never force `resolve` for nothing.
 * - Apps read it: `list`, `get(id)`, and `changes`, a `Stream` of every change.
 *
 * In memory by default (`layer`); with a `PendingStore` (`layerDurable`: SQLite, Postgres) every action is a record,
 * claimed with a conditional update so that one caller wins across processes, and a restarted session finds what was
 * pending: actions of a registered durable `ActionKind` run again, closures (whose callbacks died with the process)
 * are shown as `orphaned`, and an action a crashed process left `resolving` is reconciled by its kind's `recover`.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { PendingActions, queueResolveHandler, ResolveRuntime, ResolveTool, ToolResult } from "effect-resolve"
 *
 * const program = Effect.gen(function*() {
 *   const first = yield* queueResolveHandler({
 *     label: "Edit: a.ts",
 *     sourceToolName: "edit",
 *     apply: () => Effect.succeed(ToolResult.text("Wrote a.ts."))
 *   })
 *   yield* queueResolveHandler({
 *     label: "Edit: b.ts",
 *     sourceToolName: "edit",
 *     apply: () => Effect.succeed(ToolResult.text("Wrote b.ts."))
 *   })
 *   const pending = yield* PendingActions
 *   console.log((yield* pending.list).map((a) => `${a.id} ${a.status}`)) // b.ts, then a.ts, both pending
 *   yield* ResolveTool.execute({ action: "apply", reason: "Right.", id: first.id }) // the older one, by id
 * }).pipe(Effect.provide(ResolveRuntime.layer))
 * ```
 *
 * @since 0.2.0
 */
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Fiber from "effect/Fiber"
import * as FiberRef from "effect/FiberRef"
import { globalValue } from "effect/GlobalValue"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as PubSub from "effect/PubSub"
import * as Queue from "effect/Queue"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import { randomBytes } from "node:crypto"
import {
  PendingActionElsewhere,
  PendingActionNotPending,
  type PendingStoreError,
  type PendingSummary,
  UnknownPendingAction
} from "../domain/Errors.js"
import { isTerminal, type PendingRecord, type PendingStatus } from "../domain/PendingRecord.js"
import type { ResolveError, ResolveParams } from "../domain/ResolveParams.js"
import { resolveReminder } from "../domain/SteeringMessage.js"
import { forceTool } from "../domain/ToolChoice.js"
import * as ToolResult from "../domain/ToolResult.js"
import { capText, messageOf, safely } from "../internal/render.js"
import * as ActionKind from "./ActionKind.js"
import * as Invocation from "./internal/invocation.js"
import { badCursor, checkPage } from "./internal/pendingStore.js"
import { localVerdict, makeInstanceId, setLive } from "./internal/runtimeInstance.js"
import { directiveLabel, type PendingActionHandle, type PendingActionSpec } from "./PendingAction.js"
import { invalidInput, PendingStore } from "./PendingStore.js"
import { ResolveConfig } from "./ResolveConfig.js"
import { SteeringBus } from "./SteeringBus.js"
import { type RejectDecision, type RejectReason, ToolChoiceQueue } from "./ToolChoiceQueue.js"

// ---------------------------------------------------------------------------------------------------------------
// Models
// ---------------------------------------------------------------------------------------------------------------

/**
 * One pending action as apps see it.
 *
 * @since 0.2.0
 * @category models
 */
export interface PendingActionInfo {
  readonly id: string
  readonly label: string
  readonly sourceToolName: string
  /** The durable kind, or `"closure"` for the in-process form. */
  readonly kind: string
  /** The text the model saw. */
  readonly preview: string
  readonly status: PendingStatus
  /** How many `resolve` calls claimed it so far. */
  readonly attempts: number
  /** Epoch milliseconds, from `Clock`. */
  readonly createdAt: number
  readonly expiresAt: Option.Option<number>
  /** The last result text or error message; for an `unreadable` action, why its stored row cannot be read. */
  readonly outcome: Option.Option<string>
  /**
   * Whether this process can run it (never for a settled action): it staged it, or it registers its durable kind,
   * and the action is not settled. A pending action that another
   * live process staged and this one cannot run is left to that process (`resolve` fails with
   * `PendingActionElsewhere`), and neither forces nor is picked by `resolve` without an id here.
   */
  readonly runnable: boolean
}

/**
 * How an action of a durable kind is staged.
 *
 * @since 0.2.0
 * @category models
 */
export interface StageInfo {
  readonly label: string
  readonly sourceToolName: string
  /** The text the model saw (a diff, a summary). */
  readonly preview?: string
  /** Resolving fails (status `expired`) once this much time has passed. */
  readonly expiresIn?: Duration.DurationInput
}

/**
 * What `resolve` falls back to when no id was given and nothing is pending: it gets the last action that left the
 * pending set (for a message such as "X was already applied").
 *
 * @since 0.2.0
 * @category models
 */
export type Fallback<E, R> = (
  last: Option.Option<{ readonly label: string; readonly status: PendingStatus }>
) => Effect.Effect<ToolResult.ToolResult, E, R>

/**
 * @since 0.2.0
 * @category tags
 */
export declare namespace PendingActions {
  /**
   * @since 0.2.0
   * @category models
   */
  export interface Service {
    /** The session the actions belong to (the key of a durable session). */
    readonly session: string
    /** Whether a `PendingStore` keeps the actions. */
    readonly durable: boolean
    /**
     * Stages an action in the closure form: records it, pushes its forcing directive at the head of the queue
     * (label `pending-action:<sourceToolName>`, one-shot, requeued while the action is pending; `"auto"` under
     * `enforcement: "soft"`), then steers the resolve reminder. The callbacks run with the staging fiber's context.
     */
    readonly stage: <E, R>(spec: PendingActionSpec<E, R>) => Effect.Effect<PendingActionHandle, PendingStoreError, R>
    /**
     * Stages an action of a durable kind: plain data (`kind` + the payload encoded with its Schema) that a store
     * keeps and a restarted session runs again (register the kind with `layerDurable`). Forcing and reminder as
     * `stage`; a `standing` kind neither forces nor gates.
     */
    readonly stageKind: <P, I, E, R>(
      kind: ActionKind.ActionKind<P, I, E, R>,
      payload: P,
      info: StageInfo
    ) => Effect.Effect<PendingActionHandle, PendingStoreError, R>
    /**
     * Resolves the action `params.id` names (unknown: `UnknownPendingAction`; not pending: `PendingActionNotPending`),
     * else the most recent pending one, else runs `fallback`. The action is claimed exactly once (across processes
     * with a store), its callback runs interruptibly, and it ends `applied` / `discarded`, or `pending` again when
     * the callback failed or was interrupted before `PendingAction.commit` (a failure steers the reminder again).
     */
    readonly resolveOr: <E, R>(
      params: ResolveParams,
      fallback: Fallback<E, R>
    ) => Effect.Effect<ToolResult.ToolResult, ResolveError | E, R>
    /** Whether an action that forces `resolve` is pending (or being resolved): the turn driver's gate. */
    readonly hasPending: Effect.Effect<boolean>
    /** How many actions this session staged so far. */
    readonly staged: Effect.Effect<number>
    /**
     * The session's actions, most recent first: in memory, every one not yet settled and the last `retainSettled`
     * settled ones; durable, every record the store holds for the session.
     */
    readonly list: Effect.Effect<ReadonlyArray<PendingActionInfo>, PendingStoreError>
    /**
     * One page of `list`, most recent first: at most `limit` actions (1 to 1 000) after `cursor` (the `next` of the
     * page before). Durable, its cost follows the page, not the session's history.
     */
    readonly listPage: (
      options: PendingStore.PageOptions
    ) => Effect.Effect<PendingStore.Page<PendingActionInfo>, PendingStoreError>
    /** One action by id (in memory, `none` for a settled action older than the last `retainSettled`). */
    readonly get: (id: string) => Effect.Effect<Option.Option<PendingActionInfo>, PendingStoreError>
    /** Every change of an action's status from the moment the stream starts, as the action's new info. */
    readonly changes: Stream.Stream<PendingActionInfo>
    /** A subscription that sees every change from the moment it is taken, even before the stream is read. */
    readonly subscribe: Effect.Effect<Stream.Stream<PendingActionInfo>, never, Scope.Scope>
    /**
     * Ends an action that is not being resolved and not final (pending, orphaned, conflict) as `cleared`; `false`
     * when it is unknown, final, or being resolved (it is then cleared when that call ends without applying).
     */
    readonly clear: (id: string) => Effect.Effect<boolean, PendingStoreError>
    /** Durable: reads the session's records again (another process may have resolved one). In memory: nothing. */
    readonly refresh: Effect.Effect<void, PendingStoreError>
    /**
     * The actions not yet settled (pending, resolving, orphaned, conflict, unreadable), most recent first. Durable:
     * the session's records are read again first (as `refresh`, one round trip whose cost follows what is open, not
     * the session's history).
     */
    readonly listOpen: Effect.Effect<ReadonlyArray<PendingActionInfo>, PendingStoreError>
  }
}

/**
 * The PendingActions service.
 *
 * @since 0.2.0
 * @category tags
 */
export class PendingActions extends Context.Tag("effect-resolve/PendingActions")<
  PendingActions,
  PendingActions.Service
>() {
  /**
   * A fresh, in-memory pending set per build (one session), on the session's queue and steering bus.
   *
   * @since 0.2.0
   * @category layers
   */
  static readonly layer = (
    options: { readonly session?: string; readonly retainSettled?: number } = {}
  ): Layer.Layer<PendingActions, never, ToolChoiceQueue | SteeringBus> =>
    Layer.scoped(
      PendingActions,
      Effect.orDie(Effect.suspend(() => make({ session: options.session, retainSettled: options.retainSettled })))
    )

  /**
   * A durable pending set: every action is a record of the `PendingStore` (SQLite, Postgres), claimed with a
   * conditional update, and the session's records are restored when the layer is built (recovering what a crashed
   * process left `resolving`). The kinds' requirements are the layer's.
   *
   * @since 0.2.0
   * @category layers
   */
  static readonly layerDurable = <const Kinds extends ReadonlyArray<ActionKind.Any> = []>(
    options: DurableOptions<Kinds>
  ): Layer.Layer<
    PendingActions,
    PendingStoreError,
    ToolChoiceQueue | SteeringBus | PendingStore | ActionKind.Requirements<Kinds>
  > =>
    Layer.scoped(
      PendingActions,
      Effect.gen(function*() {
        const store = yield* PendingStore
        const kindContext = yield* Effect.context<ActionKind.Requirements<Kinds>>()
        return yield* make({
          session: options.session,
          store,
          kinds: options.kinds ?? [],
          kindContext: kindContext as Context.Context<never>,
          lease: options.lease,
          retainSettled: options.retainSettled,
          retention: options.retention
        })
      })
    )
}

/**
 * Options of a durable pending set.
 *
 * @since 0.2.0
 * @category models
 */
export interface DurableOptions<Kinds extends ReadonlyArray<ActionKind.Any>> {
  /** The session: a restarted process that opens the same session finds its actions. */
  readonly session: string
  /**
   * The durable kinds this process runs. A record of a kind registered here is runnable here, whoever staged it;
   * any other record (a closure, an unregistered kind) is left alone while its stager lives, and `orphaned` once
   * its stager is provably gone.
   */
  readonly kinds?: Kinds
  /**
   * How long this runtime's lease holds without renewal (default 1 minute): the lease on each claim it holds and
   * on its own liveness. It is renewed every third of it while the session is open, so a long apply is never
   * recovered while it runs. On one host a process that is gone is known at once; across hosts, once its lease
   * ended.
   */
  readonly lease?: Duration.DurationInput
  /** How many settled actions the session keeps in memory besides the store (default 100; see `make`). */
  readonly retainSettled?: number
  /**
   * Which settled records of the session the store keeps (default: the last 10 000). Pruned in the background,
   * never on a resolve's path; records not yet settled are always kept. `"keep-all"` never prunes.
   */
  readonly retention?: Retention | "keep-all"
}

/**
 * Which settled (applied, discarded, cleared, expired) records a durable session keeps in its store. With both
 * fields, a record goes when either says so.
 *
 * @since 0.3.0
 * @category models
 */
export interface Retention {
  /** Keep the most recent this many settled records (default 10 000). */
  readonly keepLast?: number | undefined
  /** Forget settled records that settled longer ago than this (default: no age limit). */
  readonly maxAge?: Duration.DurationInput | undefined
}

/**
 * Options of `make`.
 *
 * @since 0.2.0
 * @category models
 */
export interface MakeOptions {
  readonly session?: string | undefined
  readonly store?: PendingStore.Service | undefined
  readonly kinds?: ReadonlyArray<ActionKind.Any> | undefined
  /** What the kinds need, for actions restored after a restart. */
  readonly kindContext?: Context.Context<never> | undefined
  readonly lease?: Duration.DurationInput | undefined
  /** Durable: which settled records the store keeps (see `DurableOptions.retention`). */
  readonly retention?: Retention | "keep-all" | undefined
  /**
   * How many settled actions (applied, discarded, cleared, expired) the session keeps for `list` and `get`, the most
   * recent ones (default 100). Actions not yet settled are always kept; so a long session's memory stays flat. In
   * memory, an older settled action is gone (its id is then unknown); a durable session reads it from the store.
   */
  readonly retainSettled?: number | undefined
}

// ---------------------------------------------------------------------------------------------------------------
// Implementation
// ---------------------------------------------------------------------------------------------------------------

interface Runner {
  readonly callbacks: Invocation.Callbacks<unknown, unknown>
  readonly context: Context.Context<unknown>
}

/**
 * An action's state. Mutable and closure-local to one `make`, read and changed only inside synchronous blocks, each
 * atomic like a `Ref.modify` (see the ToolChoiceQueue's `State`): this is every preview's hot path (bench/).
 */
interface Entry {
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

const infoOf = (entry: Entry): PendingActionInfo => ({
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

const recordOf = (entry: Entry, session: string, payload: unknown): PendingRecord => ({
  id: entry.id,
  session,
  kind: entry.kind,
  label: entry.label,
  sourceToolName: entry.sourceToolName,
  stager: entry.stager,
  preview: entry.preview,
  payload,
  status: "pending",
  attempts: 0,
  owner: null,
  leaseUntil: null,
  createdAt: entry.createdAt,
  updatedAt: entry.createdAt,
  expiresAt: entry.expiresAt ?? null,
  outcome: null
})

const defaultLease = Duration.minutes(1)

/** Settled records a durable session keeps by default (see `DurableOptions.retention`). */
const defaultKeepLast = 10_000

const defaultRetainSettled = 100

/** How a session prunes its store: which settled records go, and after how many settles it looks again. */
interface RetentionPlan {
  readonly keepLast: Option.Option<number>
  readonly maxAge: Option.Option<number>
  readonly every: number
}

/** Records one `prune` call removes: small, so that a prune never holds the store's write lock for long. */
const pruneBatch = 500

const retentionOf = (
  retention: Retention | "keep-all" | undefined
): Effect.Effect<RetentionPlan | undefined> => {
  if (retention === "keep-all") return Effect.succeed(undefined)
  const keepLast = retention?.keepLast ?? (retention?.maxAge === undefined ? defaultKeepLast : undefined)
  if (keepLast !== undefined && !(Number.isSafeInteger(keepLast) && keepLast >= 0)) {
    return Effect.dieMessage(
      `effect-resolve: retention.keepLast must be a whole number of records, 0 or more (got ${String(keepLast)})`
    )
  }
  const maxAge = retention?.maxAge === undefined ? undefined : Duration.toMillis(retention.maxAge)
  if (maxAge !== undefined && !(maxAge >= 0 && Number.isFinite(maxAge))) {
    return Effect.dieMessage(`effect-resolve: retention.maxAge must be a finite duration (got ${String(maxAge)})`)
  }
  return Effect.succeed({
    keepLast: Option.fromNullable(keepLast),
    maxAge: Option.fromNullable(maxAge),
    // A tenth of what is kept between two looks: at most 10% over `keepLast`.
    every: keepLast === undefined ? 100 : Math.max(1, Math.min(1_000, Math.ceil(keepLast / 10)))
  })
}

/** Below this many entries the forcing stack is never compacted. */
const minCompactAt = 64

// Store writes after the world changed (a settle) are retried: a lost one leaves the record `resolving` until
// recovery reconciles it.
const storeRetry = Schedule.intersect(Schedule.exponential(Duration.millis(20)), Schedule.recurs(4))

/**
 * Builds a session's pending set on the current queue and steering bus. Prefer `layer` / `layerDurable`.
 *
 * @since 0.2.0
 * @category constructors
 */
export const make = (
  options: MakeOptions = {}
): Effect.Effect<PendingActions.Service, PendingStoreError, ToolChoiceQueue | SteeringBus | Scope.Scope> =>
  Effect.gen(function*() {
    const queue = yield* ToolChoiceQueue
    const bus = yield* SteeringBus
    const clock = yield* Effect.clock
    const startConfig = yield* ResolveConfig
    const store = options.store
    const session = options.session ?? `session-${randomBytes(6).toString("base64url")}`
    const prefix = `pa_${randomBytes(9).toString("base64url")}_`
    // This runtime instance: the stager of what it stages, the owner of what it claims.
    const owner = makeInstanceId()
    const lease = Duration.toMillis(options.lease ?? defaultLease)
    if (!(lease >= 3)) {
      return yield* Effect.dieMessage(`effect-resolve: lease must be at least 3 milliseconds (got ${String(lease)})`)
    }
    const kinds = new Map((options.kinds ?? []).map((kind) => [kind.name, kind] as const))
    const kindContext = (options.kindContext ?? Context.empty()) as Context.Context<unknown>
    yield* Effect.acquireRelease(
      Effect.sync(() => setLive(owner, true)),
      () => Effect.sync(() => setLive(owner, false))
    )
    const hub = yield* Effect.acquireRelease(PubSub.unbounded<PendingActionInfo>(), PubSub.shutdown)
    let listeners = 0

    const retainSettled = options.retainSettled ?? defaultRetainSettled
    if (!Number.isSafeInteger(retainSettled) || retainSettled < 0) {
      return yield* Effect.dieMessage(
        `effect-resolve: retainSettled must be a whole number of actions, 0 or more (got ${String(retainSettled)})`
      )
    }
    const retention = store === undefined ? undefined : yield* retentionOf(options.retention)
    const now = () => clock.unsafeCurrentTimeMillis()

    if (store !== undefined) {
      // This instance says it is alive before it stages anything, and renews that (and the lease of every claim it
      // holds) every third of its lease while the session is open; closing the session forgets it.
      const beat = Effect.suspend(() => {
        const at = now()
        return store.heartbeat({ instance: owner, leaseUntil: at + lease, now: at })
      })
      yield* beat
      yield* Effect.addFinalizer(() =>
        Effect.catchAllCause(
          store.release(owner),
          (cause) => Effect.logWarning("effect-resolve: could not release this session's lease", cause)
        )
      )
      yield* Effect.forkScoped(Effect.repeat(
        Effect.catchAllCause(
          beat,
          (cause) => Effect.logWarning("effect-resolve: could not renew this session's lease in the store", cause)
        ),
        Schedule.spaced(Duration.millis(Math.max(1, Math.floor(lease / 3))))
      ))
    }

    /** The actions kept, in staging order: every one not yet settled, and the `retainSettled` last settled. */
    const entries = new Map<string, Entry>()
    /** Forcing (non-standing) entries in staging order; the top is the most recent. Popped lazily, compacted. */
    let stack: Array<Entry> = []
    /** When the stack reaches this length, its settled entries are taken out (amortised: twice what is left). */
    let compactAt = minCompactAt
    /** The settled entries kept, oldest first, from `settledHead` on. */
    let settled: Array<Entry | undefined> = []
    let settledHead = 0
    let lastSettled: Entry | undefined
    let count = 0
    let ordinal = 0
    let stagedTotal = 0

    // Retention: a background fiber prunes the store's settled records of the session, woken every
    // `retention.every` settles (and once at open); never on a resolve's path.
    let settledSincePrune = 0
    const pruneWanted = yield* Queue.sliding<void>(1)
    const wantPrune = () => {
      settledSincePrune = 0
      pruneWanted.unsafeOffer(undefined)
    }
    // Every status change ends here: a settled action joins the kept ones, and the oldest kept beyond
    // `retainSettled` is forgotten (nothing grows with the number of actions a session has settled).
    const publish = (entry: Entry) => {
      if (listeners > 0) hub.unsafeOffer(infoOf(entry))
      if (!entry.retired && isTerminal(entry.status)) retire(entry)
    }
    const retire = (entry: Entry) => {
      entry.retired = true
      if (retention !== undefined && ++settledSincePrune >= retention.every) wantPrune()
      settled.push(entry)
      if (settled.length - settledHead <= retainSettled) return
      const oldest = settled[settledHead]!
      settled[settledHead++] = undefined
      if (entries.get(oldest.id) === oldest) entries.delete(oldest.id)
      if (settledHead >= minCompactAt && settledHead * 2 >= settled.length) {
        settled = settled.slice(settledHead)
        settledHead = 0
      }
    }
    const isDue = (entry: Entry) => entry.expiresAt !== undefined && now() >= entry.expiresAt
    // Durable writes owed by synchronous blocks (an expiry noticed while looking for the most recent action).
    let owed: Array<Entry> = []
    const expire = (entry: Entry) => {
      entry.status = "expired"
      publish(entry)
      if (store !== undefined) owed.push(entry)
    }
    const payOwed: Effect.Effect<void> = Effect.suspend(() => {
      if (owed.length === 0) return Effect.void
      const due = owed
      owed = []
      return Effect.forEach(due, (entry) => write(entry.id, ["pending"], "expired"), { discard: true })
    })

    // A store transition that must not fail the caller: logged, and the mirror keeps what it decided.
    const write = (id: string, from: ReadonlyArray<PendingStatus>, to: PendingStatus): Effect.Effect<void> =>
      store === undefined ? Effect.void : Effect.catchAllCause(
        Effect.retry(store.transition({ id, from, to, now: now() }), storeRetry),
        (cause) => Effect.logError(`effect-resolve: could not record ${id} as ${to} in the pending store`, cause)
      ).pipe(Effect.asVoid)

    const wanted = (entry: Entry): boolean =>
      !entry.standing && (entry.status === "resolving" || (entry.status === "pending" && !isDue(entry)))

    /** The most recent forcing action that is pending or being resolved; settled ones leave the stack. */
    const mostRecent = (): Entry | undefined => {
      for (let top = stack[stack.length - 1]; top !== undefined; top = stack[stack.length - 1]) {
        if (top.status === "pending" && isDue(top)) expire(top)
        if (top.status === "pending" || top.status === "resolving") return top
        stack.pop()
        lastSettled = top
      }
      return undefined
    }

    const pendingNow = (): ReadonlyArray<PendingSummary> => {
      const out: Array<PendingSummary> = []
      for (let i = stack.length - 1; i >= 0; i--) {
        const entry = stack[i]!
        if (entry.status === "pending" && !isDue(entry)) out.push({ id: entry.id, label: entry.label })
      }
      return out
    }

    const notPending = (entry: Entry) =>
      new PendingActionNotPending({ id: entry.id, label: entry.label, status: entry.status, pending: pendingNow() })

    // ---- staging ---------------------------------------------------------------------------------------------

    const onRejected = (entry: Entry, reason: RejectReason): Effect.Effect<RejectDecision> => {
      if (reason === "cleared" || reason === "removed") {
        if (entry.status === "pending") {
          entry.status = "cleared"
          publish(entry)
          return Effect.as(write(entry.id, ["pending"], "cleared"), "drop")
        }
        if (entry.status === "resolving") entry.dropped = true
        return drop
      }
      return entry.status === "pending" || entry.status === "resolving" ? requeue : drop
    }

    const pushDirective = (entry: Entry, soft: boolean) =>
      queue.pushOnce(soft ? "auto" : forceTool("resolve"), {
        id: entry.id,
        label: directiveLabel(entry.sourceToolName),
        now: true,
        active: () => wanted(entry),
        onRejected: (reason) => onRejected(entry, reason)
      })

    // The stack keeps what may still force: settled entries below a pending one are taken out now and then.
    const pushForcing = (entry: Entry) => {
      if (stack.length >= compactAt) {
        stack = stack.filter((kept) => !isTerminal(kept.status))
        compactAt = Math.max(minCompactAt, 2 * stack.length)
      }
      stack.push(entry)
    }

    const register = (entry: Entry) => {
      entries.set(entry.id, entry)
      if (!entry.standing) pushForcing(entry)
      stagedTotal++
      publish(entry)
    }

    const handleOf = (entry: Entry): PendingActionHandle => ({
      id: entry.id,
      label: entry.label,
      sourceToolName: entry.sourceToolName,
      status: Effect.sync(() => entry.status)
    })

    const newEntry = (
      info: { readonly label: string; readonly sourceToolName: string },
      kind: string,
      preview: string | undefined,
      expiresIn: Duration.DurationInput | undefined,
      standing: boolean
    ): Entry => {
      const createdAt = now()
      return {
        id: `${prefix}${++count}`,
        label: info.label,
        sourceToolName: info.sourceToolName,
        kind,
        preview: preview ?? "",
        createdAt,
        expiresAt: expiresIn === undefined ? undefined : createdAt + Duration.toMillis(expiresIn),
        standing,
        status: "pending",
        attempts: 0,
        outcome: undefined,
        dropped: false,
        runner: undefined,
        retired: false,
        claimed: false,
        stager: store === undefined ? null : owner,
        order: ++ordinal
      }
    }

    // Records (durable), registers, pushes the forcing directive, steers the reminder; in one uninterruptible
    // region, so an action is never recorded without its directive.
    const commitStage = (
      entry: Entry,
      payload: unknown,
      context: Context.Context<unknown>,
      tracker: Array<PendingActionHandle> | undefined
    ): Effect.Effect<PendingActionHandle, PendingStoreError> => {
      const soft = Context.get(context as Context.Context<never>, ResolveConfig).enforcement === "soft"
      const publishAll = (): Effect.Effect<PendingActionHandle> => {
        register(entry)
        tracker?.push(handleOf(entry))
        if (entry.standing) return Effect.succeed(handleOf(entry))
        return Effect.flatMap(
          pushDirective(entry, soft),
          () => Effect.as(bus.steer(resolveReminder(entry.sourceToolName)), handleOf(entry))
        )
      }
      return store === undefined ?
        publishAll() :
        Effect.uninterruptible(
          Effect.flatMap(store.insert(recordOf(entry, session, payload)), () => Effect.suspend(publishAll))
        )
    }

    const stage = <E, R>(spec: PendingActionSpec<E, R>): Effect.Effect<PendingActionHandle, PendingStoreError, R> =>
      Effect.withFiberRuntime((fiber) => {
        const context = fiber.getFiberRef(FiberRef.currentContext) as Context.Context<unknown>
        const entry = newEntry(spec, ActionKind.closureKind, spec.preview, spec.expiresIn, false)
        entry.runner = { callbacks: spec as Invocation.Callbacks<unknown, unknown>, context }
        return commitStage(entry, null, context, fiber.getFiberRef(currentTracker))
      })

    const kindRunner = <P>(
      kind: ActionKind.ActionKind<P, any, any, any>,
      payload: P,
      entry: Entry,
      context: Context.Context<unknown>
    ): Runner => {
      const call = (reason: string, extra: ResolveParams["extra"] & {}) => ({
        id: entry.id,
        reason,
        extra,
        attempt: entry.attempts
      })
      const reject = kind.reject
      return {
        callbacks: {
          label: entry.label,
          sourceToolName: entry.sourceToolName,
          apply: (reason, extra) => kind.apply(payload, call(reason, extra)),
          ...(reject === undefined ? {} : { reject: (reason, extra) => reject(payload, call(reason, extra)) })
        },
        context
      }
    }

    const stageKind = <P, I, E, R>(
      kind: ActionKind.ActionKind<P, I, E, R>,
      payload: P,
      info: StageInfo
    ): Effect.Effect<PendingActionHandle, PendingStoreError, R> =>
      Effect.withFiberRuntime((fiber) => {
        const context = fiber.getFiberRef(FiberRef.currentContext) as Context.Context<unknown>
        const entry = newEntry(info, kind.name, info.preview, info.expiresIn, kind.standing === true)
        entry.runner = kindRunner(kind, payload, entry, context)
        const tracker = fiber.getFiberRef(currentTracker)
        if (store === undefined) return commitStage(entry, null, context, tracker)
        // The payload is stored encoded; a payload its own Schema cannot encode is a bug of the producer.
        return Effect.flatMap(
          Effect.orDie(Schema.encode(kind.payload as Schema.Schema<P, I>)(payload)),
          (encoded) => commitStage(entry, encoded, context, tracker)
        )
      })

    // ---- resolving -------------------------------------------------------------------------------------------

    const outcomeText = (result: ToolResult.ToolResult) => capText(ToolResult.textOf(result))

    // Records how a claim ended. Never fails: the world has changed, and a lost write leaves the record
    // `resolving` for recovery to reconcile.
    const settleStore = (entry: Entry, to: PendingStore.SettleStatus, outcome: string | undefined) =>
      store === undefined ? Effect.void : Effect.matchCauseEffect(
        Effect.retry(
          store.settle({ id: entry.id, owner, to, outcome: Option.fromNullable(outcome), now: now() }),
          storeRetry
        ),
        {
          onFailure: (cause) =>
            Effect.logError(
              `effect-resolve: could not record ${entry.id} as ${to}; it stays resolving in the store until a ` +
                "restart recovers it",
              cause
            ),
          onSuccess: (settled) =>
            settled ?
              Effect.void :
              Effect.logWarning(`effect-resolve: ${entry.id} was recovered by another process while it was resolved`)
        }
      )

    const finish = (entry: Entry, status: PendingStatus, outcome: Entry["outcome"]) => {
      entry.claimed = false
      entry.status = status
      entry.outcome = outcome
      entry.dropped = false
      publish(entry)
    }

    const runClaimed = (
      entry: Entry,
      runner: Runner,
      invocation: ResolveParams,
      restore: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>,
      fiber: Fiber.RuntimeFiber<unknown, unknown>
    ): Effect.Effect<ToolResult.ToolResult, ResolveError> => {
      const run = Invocation.attempt(runner.callbacks, invocation)
      // Providing the staging context merges it into the caller's (about 3.5 µs, bench/); the usual caller (the same
      // fiber or runtime stages and resolves) already runs with that very context.
      const provided = fiber.getFiberRef(FiberRef.currentContext) === runner.context ?
        run as Effect.Effect<ToolResult.ToolResult | Option.Option<ToolResult.ToolResult>, unknown> :
        Effect.provide(run, runner.context)
      const done = invocation.action === "apply" ? "applied" : "discarded"
      return Invocation.withCommitMarker(fiber, restore(provided), {
        onSuccess: (value) => {
          const result = Invocation.settled(entry, invocation, value)
          if (store === undefined) {
            finish(entry, done, () => outcomeText(result))
            return Effect.succeed(result)
          }
          const outcome = outcomeText(result)
          finish(entry, done, outcome)
          return Effect.as(settleStore(entry, done, outcome), result)
        },
        onFailure: (cause, marker): Effect.Effect<never, ResolveError> => {
          // Settle first: nothing below may leave the action `resolving`.
          const dropped = entry.dropped
          const status: PendingStatus = marker.committed ? done : dropped ? "cleared" : "pending"
          const failed = Invocation.failedWith(entry, invocation, cause)
          const interrupted = Cause.isInterruptedOnly(cause)
          // Whatever the failure holds, rendering it never throws (`messageOf`, a guarded `Cause.squash`).
          const outcome = interrupted ? undefined : messageOf(safely(() => Cause.squash(cause), undefined))
          finish(entry, status, outcome)
          const recorded = store === undefined ? Effect.void : status === "cleared" ?
            Effect.zipRight(settleStore(entry, "pending", outcome), write(entry.id, ["pending"], "cleared")) :
            settleStore(entry, status === "pending" ? "pending" : done, outcome)
          // Still pending after a failure: remind the model (not after an interruption, nor for a dropped action,
          // where a reminder would point at nothing, nor for a standing one, which is no preview). The forcing
          // directive is requeued when the turn ends.
          const remind = status === "pending" && !interrupted && !entry.standing ?
            Effect.asVoid(bus.steer(resolveReminder(entry.sourceToolName))) :
            Effect.void
          return Effect.zipRight(Effect.zipRight(recorded, remind), failed)
        }
      })
    }

    // A record another process changed: the mirror takes the store's view.
    const adopt = (entry: Entry, record: PendingRecord) => {
      entry.stager = record.stager
      if (entry.status !== record.status || entry.attempts !== record.attempts) {
        entry.status = record.status
        entry.attempts = record.attempts
        entry.outcome = record.outcome ?? undefined
        publish(entry)
      }
    }

    const claimInStore = (
      entry: Entry,
      runner: Runner,
      invocation: ResolveParams,
      restore: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>,
      fiber: Fiber.RuntimeFiber<unknown, unknown>,
      store: PendingStore.Service
    ): Effect.Effect<ToolResult.ToolResult, ResolveError> => {
      const at = now()
      return Effect.matchCauseEffect(store.claim({ id: entry.id, owner, leaseUntil: at + lease, now: at }), {
        onFailure: (cause) => {
          finish(entry, "pending", entry.outcome)
          entry.attempts--
          return Effect.failCause(cause)
        },
        onSuccess: (claimed) => {
          if (Option.isSome(claimed) && claimed.value.status === "unreadable") {
            // The stored row cannot be read (corrupted outside the store): never applied. The claim is given back
            // and the action shows as unreadable; it can be discarded.
            entry.claimed = false
            entry.attempts--
            return Effect.zipRight(
              settleStore(entry, "pending", claimed.value.outcome ?? undefined),
              Effect.suspend(() => {
                entry.status = "unreadable"
                entry.outcome = claimed.value.outcome ?? undefined
                publish(entry)
                return Effect.fail(notPending(entry))
              })
            )
          }
          if (Option.isSome(claimed)) {
            entry.attempts = claimed.value.attempts
            return runClaimed(entry, runner, invocation, restore, fiber)
          }
          // Another process won, or the record left `pending` meanwhile: take the store's view, and say why. A
          // record still `pending` refused a claim only because it expired.
          entry.claimed = false
          entry.status = "pending"
          entry.attempts--
          return Effect.flatMap(Effect.orElseSucceed(store.get(entry.id), () => Option.none()), (record) => {
            if (Option.isSome(record)) adopt(entry, record.value)
            if (entry.status === "pending") expire(entry)
            // Another process took it for orphaned (this one's lease lapsed): this process still runs it.
            if (entry.status === "orphaned") return revive(entry, invocation, store)
            return Effect.zipRight(payOwed, Effect.fail(notPending(entry)))
          })
        }
      })
    }

    // Reads a record again after a conditional write found it changed: the mirror takes the store's view.
    const reread = (entry: Entry, store: PendingStore.Service) =>
      Effect.map(Effect.orElseSucceed(store.get(entry.id), () => Option.none()), (record) => {
        if (Option.isSome(record)) adopt(entry, record.value)
      })

    // An action that can only be discarded (orphaned: its stager is gone with its callbacks; unreadable: its stored
    // row cannot be read): a discard ends it, with no callback to run.
    const discardDead = (
      entry: Entry,
      invocation: ResolveParams,
      store: PendingStore.Service
    ): Effect.Effect<ToolResult.ToolResult, ResolveError> =>
      Effect.flatMap(
        store.transition({ id: entry.id, from: [entry.status], to: "discarded", now: now() }),
        (done) => {
          if (!done) return Effect.zipRight(reread(entry, store), Effect.fail(notPending(entry)))
          const result = Invocation.settled(entry, invocation, Option.none())
          finish(entry, "discarded", outcomeText(result))
          return Effect.succeed(result)
        }
      )

    const elsewhere = (entry: Entry) =>
      new PendingActionElsewhere({
        id: entry.id,
        label: entry.label,
        stager: entry.stager ?? "unknown",
        pending: pendingNow()
      })

    // An action this process staged and still runs, which another process took for orphaned (this one's lease
    // lapsed, say while it was paused): it is pending again, staged by this instance, then resolved as usual.
    const revive = (
      entry: Entry,
      invocation: ResolveParams,
      store: PendingStore.Service
    ): Effect.Effect<ToolResult.ToolResult, ResolveError> =>
      Effect.flatMap(
        store.transition({ id: entry.id, from: ["orphaned"], to: "pending", stager: owner, now: now() }),
        (back) => {
          if (back) {
            entry.status = "pending"
            entry.stager = owner
            publish(entry)
            return invoke(entry, invocation)
          }
          return Effect.zipRight(
            reread(entry, store),
            Effect.suspend(() =>
              entry.status === "pending" ? invoke(entry, invocation) : Effect.fail(notPending(entry))
            )
          )
        }
      )

    // A pending action this process cannot run: its stager runs it while it lives; once it is provably gone the
    // action is orphaned (then it can be discarded).
    const notRunnableHere = (
      entry: Entry,
      invocation: ResolveParams,
      store: PendingStore.Service
    ): Effect.Effect<ToolResult.ToolResult, ResolveError> =>
      Effect.flatMap(judge(store, [entry.stager]), (isGone) => {
        if (!isGone(entry.stager)) return Effect.zipRight(payOwed, Effect.fail(elsewhere(entry)))
        return Effect.flatMap(
          store.transition({ id: entry.id, from: ["pending"], to: "orphaned", now: now() }),
          (orphaned) =>
            Effect.zipRight(
              reread(entry, store),
              Effect.suspend(() => {
                if (entry.status === "orphaned" && invocation.action === "discard") {
                  return discardDead(entry, invocation, store)
                }
                return Effect.fail(
                  entry.status === "pending" && !orphaned ? elsewhere(entry) : notPending(entry)
                )
              })
            )
        )
      })

    const invoke = (entry: Entry, invocation: ResolveParams): Effect.Effect<ToolResult.ToolResult, ResolveError> =>
      Effect.uninterruptibleMask((restore) =>
        Effect.withFiberRuntime<ToolResult.ToolResult, ResolveError>((fiber) => {
          if (entry.status === "pending" && isDue(entry)) expire(entry)
          const runner = entry.runner
          if (entry.status === "orphaned" && runner !== undefined && store !== undefined) {
            return revive(entry, invocation, store)
          }
          if (entry.status !== "pending" || runner === undefined) {
            if (store !== undefined) {
              if ((entry.status === "orphaned" || entry.status === "unreadable") && invocation.action === "discard") {
                return discardDead(entry, invocation, store)
              }
              if (entry.status === "pending") return notRunnableHere(entry, invocation, store)
            }
            return Effect.zipRight(payOwed, Effect.fail(notPending(entry)))
          }
          entry.status = "resolving"
          entry.claimed = true
          entry.attempts++
          publish(entry)
          try {
            return store === undefined ?
              runClaimed(entry, runner, invocation, restore, fiber) :
              claimInStore(entry, runner, invocation, restore, fiber, store)
          } catch (defect) {
            // Unreachable by design (callbacks are called through `Invocation.attempt`); the claim is undone.
            finish(entry, entry.dropped ? "cleared" : "pending", entry.outcome)
            return Invocation.failedWith(entry, invocation, Cause.die(defect))
          }
        })
      )

    const unknownAction = (id: string) => new UnknownPendingAction({ id, pending: pendingNow() })

    // Durable: an id the mirror does not know may be a record of this session staged by another process.
    const lookup = (id: string, store: PendingStore.Service) =>
      Effect.flatMap(store.get(id), (record) => {
        if (Option.isNone(record) || record.value.session !== session) return Effect.fail(unknownAction(id))
        return Effect.succeed(restoreEntry(record.value))
      })

    const resolveOr = <E, R>(
      params: ResolveParams,
      fallback: Fallback<E, R>
    ): Effect.Effect<ToolResult.ToolResult, ResolveError | E, R> =>
      Effect.suspend((): Effect.Effect<ToolResult.ToolResult, ResolveError | E, R> => {
        const id = params.id
        if (id !== undefined) {
          const entry = entries.get(id)
          if (entry !== undefined) return invoke(entry, params)
          return store === undefined ?
            Effect.fail(unknownAction(id)) :
            Effect.flatMap(lookup(id, store), (restored) => invoke(restored, params))
        }
        const entry = mostRecent()
        if (entry !== undefined) return invoke(entry, params)
        const last = lastSettled === undefined ?
          Option.none() :
          Option.some({ label: lastSettled.label, status: lastSettled.status })
        return owed.length === 0 ? fallback(last) : Effect.zipRight(payOwed, fallback(last))
      })

    // ---- restoring a durable session ---------------------------------------------------------------------------

    // A record's kind and decoded payload when this process can run it: the kind is registered here and the
    // payload decodes.
    const runnable = (record: PendingRecord) => {
      const kind = kinds.get(record.kind)
      if (kind === undefined || record.status === "unreadable") return undefined
      const decoded = Schema.decodeUnknownOption(kind.payload)(record.payload)
      return Option.isSome(decoded) ? { kind, payload: decoded.value } : undefined
    }

    const runnerFor = (record: PendingRecord, entry: Entry): Runner | undefined => {
      const found = runnable(record)
      return found === undefined ? undefined : kindRunner(found.kind, found.payload, entry, kindContext)
    }

    // An entry for a stored record. A record this process cannot run (a closure, an unregistered kind, a payload
    // that no longer decodes) has no runner: it is listed, never forces and is not picked without an id.
    const restoreEntry = (record: PendingRecord): Entry => {
      const known = entries.get(record.id)
      if (known !== undefined) return known
      const entry: Entry = {
        id: record.id,
        label: record.label,
        sourceToolName: record.sourceToolName,
        kind: record.kind,
        preview: record.preview,
        createdAt: record.createdAt,
        expiresAt: record.expiresAt ?? undefined,
        standing: kinds.get(record.kind)?.standing === true,
        status: record.status,
        attempts: record.attempts,
        outcome: record.outcome ?? undefined,
        dropped: false,
        runner: undefined,
        retired: false,
        claimed: false,
        stager: record.stager,
        order: ++ordinal
      }
      if (isTerminal(entry.status)) {
        // Settled (read by id from the store): kept among the settled ones, never forcing.
        entries.set(entry.id, entry)
        retire(entry)
        return entry
      }
      entry.runner = runnerFor(record, entry)
      entries.set(entry.id, entry)
      if (!entry.standing && entry.runner !== undefined) pushForcing(entry)
      return entry
    }

    /**
     * Which runtime instances are provably gone, judged once for a batch: this one is alive; one this process can
     * judge by itself (its pid on this host, a closed instance of this thread) is as it says; any other is alive
     * while its lease in the store holds. A record without a stager was written before 0.3: its stager is gone.
     */
    const judge = (
      store: PendingStore.Service,
      instances: Iterable<string | null>
    ): Effect.Effect<(instance: string | null) => boolean, PendingStoreError> => {
      const ask = new Set<string>()
      for (const instance of instances) {
        if (instance !== null && instance !== owner && localVerdict(instance) === "unknown") ask.add(instance)
      }
      const leases = ask.size === 0 ? Effect.succeed(new Map<string, number>()) : store.leases([...ask])
      return Effect.map(leases, (found) => (instance) => {
        if (instance === null) return true
        if (instance === owner) return false
        const local = localVerdict(instance)
        return local === "unknown" ? !((found.get(instance) ?? 0) > now()) : local === "gone"
      })
    }

    // What became of an action a dead owner left `resolving`: its kind's `recover`, or `conflict` when nothing can
    // tell (a closure, a kind without `recover`, a payload that no longer decodes).
    // `none`: the kind could not tell now (its `recover` failed: a file still locked, a disk error); the record stays
    // `resolving` under the dead owner, and the next start tries again.
    const recover = (record: PendingRecord): Effect.Effect<Option.Option<ActionKind.Recovery>> => {
      const found = runnable(record)
      const kindRecover = found?.kind.recover
      if (found === undefined || kindRecover === undefined) return Effect.succeed(Option.some("conflict"))
      return Effect.matchCauseEffect(
        Effect.provide(kindRecover(found.payload, { id: record.id, attempts: record.attempts }), kindContext),
        {
          onSuccess: (verdict) => Effect.succeed(Option.some(verdict as ActionKind.Recovery)),
          onFailure: (cause) =>
            Effect.as(
              Effect.logWarning(
                `effect-resolve: recovering ${record.id} failed; it stays resolving and is tried again at the next start`,
                cause
              ),
              Option.none()
            )
        }
      )
    }

    /**
     * A record found when the session opens, made current:
     * - `resolving` under an owner that is gone (its process died on this host, or its lease passed without
     *   renewal): its kind's `recover` says what became of it;
     * - `pending` and not runnable here: left alone while its stager lives, `orphaned` once it is gone;
     * - `orphaned` and runnable here (its durable kind is registered): `pending` again, staged by this instance.
     */
    const reconcile = (
      record: PendingRecord,
      store: PendingStore.Service,
      isGone: (instance: string | null) => boolean
    ): Effect.Effect<PendingRecord, PendingStoreError> =>
      Effect.gen(function*() {
        const runsHere = runnable(record) !== undefined
        if (record.status === "resolving") {
          const gone = record.owner !== null &&
            (localVerdict(record.owner) === "gone" ||
              ((record.leaseUntil ?? 0) <= now() && localVerdict(record.owner) !== "alive"))
          if (!gone) return record
          const verdict = yield* recover(record)
          if (Option.isNone(verdict)) return record
          yield* store.transition({
            id: record.id,
            from: ["resolving"],
            to: verdict.value,
            owner: Option.some(record.owner!),
            now: now()
          })
        } else if (record.status === "pending") {
          if (runsHere || !isGone(record.stager)) return record
          yield* store.transition({ id: record.id, from: ["pending"], to: "orphaned", now: now() })
        } else if (record.status === "orphaned") {
          if (!runsHere) return record
          yield* store.transition({ id: record.id, from: ["orphaned"], to: "pending", stager: owner, now: now() })
        } else {
          return record
        }
        return Option.getOrElse(yield* store.get(record.id), () => record)
      })

    if (store !== undefined) {
      // Oldest first, so that the most recent pending action ends at the head of the queue.
      const records = [...(yield* store.listOpen(session))].reverse()
      const isGone = yield* judge(store, records.map((record) => record.stager))
      for (const stored of records) {
        const record = yield* reconcile(stored, store, isGone)
        const entry = restoreEntry(record)
        if (entry.status === "pending" && !entry.standing && entry.runner !== undefined) {
          yield* pushDirective(entry, startConfig.enforcement === "soft")
        }
      }
      if (retention !== undefined) {
        const plan = retention
        const pruneOnce = Effect.suspend(() =>
          store.prune({
            session,
            keepLast: plan.keepLast,
            settledBefore: Option.map(plan.maxAge, (age) => Math.max(0, now() - age)),
            batch: pruneBatch
          })
        )
        const pruneAll = Effect.gen(function*() {
          while ((yield* pruneOnce) === pruneBatch) yield* Effect.yieldNow()
        })
        yield* Effect.forkScoped(Effect.forever(Effect.zipRight(
          Queue.take(pruneWanted),
          Effect.catchAllCause(
            pruneAll,
            (cause) => Effect.logWarning(`effect-resolve: could not prune the settled records of ${session}`, cause)
          )
        )))
        wantPrune()
      }
    }

    // The mirror takes the store's view of one record, except where it knows better: a claim of this process, or
    // a status this process settled (final; the store's write may still be on its way, as for an expiry). A record
    // it does not hold is taken in unless it is settled (settled elsewhere, or forgotten here: the store has it).
    const mirror = (record: PendingRecord): Entry | undefined => {
      const entry = entries.get(record.id)
      if (entry === undefined) return isTerminal(record.status) ? undefined : restoreEntry(record)
      if (!entry.claimed && !isTerminal(entry.status)) adopt(entry, record)
      return entry
    }

    // One read of the records not yet settled (its cost follows their number, not the session's history); an
    // action the mirror holds open that is no longer among them settled elsewhere, and is read by id.
    const refresh: Effect.Effect<void, PendingStoreError> = store === undefined ?
      Effect.void :
      Effect.flatMap(store.listOpen(session), (records) => {
        const open = new Set<string>()
        for (const record of records) {
          open.add(record.id)
          mirror(record)
        }
        const settledElsewhere: Array<string> = []
        for (const entry of entries.values()) {
          if (!isTerminal(entry.status) && !entry.claimed && !open.has(entry.id)) {
            settledElsewhere.push(entry.id)
          }
        }
        return Effect.forEach(
          settledElsewhere,
          (id) => Effect.map(store.get(id), Option.map(mirror)),
          { discard: true }
        )
      })

    const expireDue = (entry: Entry) => {
      if (entry.status === "pending" && isDue(entry)) expire(entry)
    }

    const infoNow = (entry: Entry): PendingActionInfo => {
      expireDue(entry)
      return infoOf(entry)
    }

    // In memory: the kept actions. Durable: every record of the session, the store's view (the mirror's for what it
    // holds, which is the same once refreshed).
    const list: Effect.Effect<ReadonlyArray<PendingActionInfo>, PendingStoreError> = (store === undefined ?
      Effect.sync(() => [...entries.values()].reverse().map(infoNow)) :
      Effect.map(store.list(session), (records) =>
        records.map((record) => {
          const entry = mirror(record)
          return entry === undefined ? recordInfo(record) : infoNow(entry)
        }))).pipe(Effect.tap(() => payOwed))

    const openNow = (): ReadonlyArray<PendingActionInfo> => {
      const open: Array<PendingActionInfo> = []
      for (const entry of entries.values()) {
        expireDue(entry)
        if (!isTerminal(entry.status)) open.push(infoOf(entry))
      }
      return open.reverse()
    }

    const listOpen: Effect.Effect<ReadonlyArray<PendingActionInfo>, PendingStoreError> = Effect.zipRight(
      refresh,
      Effect.suspend(() => Effect.as(payOwed, openNow()))
    )

    // In memory: the kept actions, by staging order (`m<n>` cursors). Durable: a page of the store.
    const listPage = (
      options: PendingStore.PageOptions
    ): Effect.Effect<PendingStore.Page<PendingActionInfo>, PendingStoreError> =>
      (store === undefined ?
        Effect.suspend(() => {
          const problem = checkPage(options)
          if (problem !== undefined) return Effect.fail(invalidInput("listPage", problem))
          const after = options.cursor === undefined ? Infinity : Number(/^m(\d{1,16})$/.exec(options.cursor)?.[1])
          if (Number.isNaN(after)) return Effect.fail(invalidInput("listPage", badCursor))
          const newer = [...entries.values()].filter((entry) => entry.order < after).reverse()
          const items = newer.slice(0, options.limit)
          const last = items[items.length - 1]
          return Effect.succeed({
            items: items.map(infoNow),
            next: newer.length > options.limit && last !== undefined ? Option.some(`m${last.order}`) : Option.none()
          })
        }) :
        Effect.map(store.listPage(session, options), (page) => ({
          items: page.items.map((record) => {
            const entry = mirror(record)
            return entry === undefined ? recordInfo(record) : infoNow(entry)
          }),
          next: page.next
        }))).pipe(Effect.tap(() => payOwed))

    const get = (id: string): Effect.Effect<Option.Option<PendingActionInfo>, PendingStoreError> =>
      (store === undefined ?
        Effect.sync(() => Option.map(Option.fromNullable(entries.get(id)), infoNow)) :
        Effect.map(store.get(id), (record): Option.Option<PendingActionInfo> => {
          if (Option.isNone(record) || record.value.session !== session) return Option.none()
          const entry = mirror(record.value)
          return Option.some(entry === undefined ? recordInfo(record.value) : infoNow(entry))
        })).pipe(Effect.tap(() => payOwed))

    // Info objects are built only while someone listens (staging is every preview's hot path).
    const subscribe: Effect.Effect<Stream.Stream<PendingActionInfo>, never, Scope.Scope> = Effect.map(
      Effect.zipLeft(
        PubSub.subscribe(hub),
        Effect.acquireRelease(Effect.sync(() => listeners++), () => Effect.sync(() => listeners--))
      ),
      (subscription) => Stream.fromQueue(subscription)
    )

    const clear = (id: string): Effect.Effect<boolean, PendingStoreError> =>
      Effect.suspend(() => {
        const entry = entries.get(id)
        if (entry === undefined) return Effect.succeed(false)
        if (entry.status === "resolving") {
          entry.dropped = true
          return Effect.succeed(false)
        }
        if (
          entry.status !== "pending" && entry.status !== "orphaned" && entry.status !== "conflict" &&
          entry.status !== "unreadable"
        ) {
          return Effect.succeed(false)
        }
        if (store === undefined) {
          finish(entry, "cleared", entry.outcome)
          return Effect.succeed(true)
        }
        return Effect.flatMap(store.transition({ id, from: [entry.status], to: "cleared", now: now() }), (done) => {
          if (!done) return Effect.as(reread(entry, store), false)
          finish(entry, "cleared", entry.outcome)
          return Effect.succeed(true)
        })
      })

    return PendingActions.of({
      session,
      durable: store !== undefined,
      stage,
      stageKind,
      resolveOr,
      hasPending: Effect.sync(() => mostRecent() !== undefined),
      staged: Effect.sync(() => stagedTotal),
      list,
      listPage,
      get,
      changes: Stream.unwrapScoped(subscribe),
      subscribe,
      clear,
      refresh,
      listOpen
    })
  })

/** The handles of actions staged by the current fiber (and those it forks), while `track` runs it. */
const currentTracker: FiberRef.FiberRef<Array<PendingActionHandle> | undefined> = globalValue(
  Symbol.for("effect-resolve/PendingActions/currentTracker"),
  () => FiberRef.unsafeMake<Array<PendingActionHandle> | undefined>(undefined, { fork: (tracker) => tracker })
)

/**
 * Runs `effect` and returns, besides its value, the handles of the actions it staged (in any session), in staging
 * order: the turn driver learns this way which previews a tool call staged.
 *
 * @since 0.3.0
 * @category combinators
 */
export const track = <A, E, R>(
  effect: Effect.Effect<A, E, R>
): Effect.Effect<readonly [A, ReadonlyArray<PendingActionHandle>], E, R> =>
  Effect.suspend(() => {
    const staged: Array<PendingActionHandle> = []
    return Effect.map(Effect.locally(effect, currentTracker, staged), (a) => [a, staged] as const)
  })

const drop = Effect.succeed<RejectDecision>("drop")
const requeue = Effect.succeed<RejectDecision>("requeue")

/**
 * Stages a pending action in the closure form in the current session (see `PendingActions.stage`): pushes a
 * one-shot forced `resolve` directive at the head of the queue (label `pending-action:<sourceToolName>`, requeued
 * while the action is pending), then steers the resolve reminder. A `resolve` call claims the action exactly once;
 * a failed or interrupted call leaves it pending, and a failed one steers the reminder again. With
 * `ResolveConfig.enforcement` `"soft"` the directive serves `"auto"` instead: the turn driver forces `resolve` only
 * after a turn that ignored it.
 *
 * @since 0.1.0
 * @category constructors
 */
export const queueResolveHandler = <E, R>(
  spec: PendingActionSpec<E, R>
): Effect.Effect<PendingActionHandle, PendingStoreError, PendingActions | R> =>
  // No generator and no span: staging is on every preview's hot path (bench/).
  Effect.withFiberRuntime((fiber) =>
    Context.get(fiber.getFiberRef(FiberRef.currentContext) as Context.Context<PendingActions>, PendingActions).stage(
      spec
    )
  )

/**
 * Stages an action of a durable kind in the current session (see `PendingActions.stageKind`).
 *
 * @since 0.2.0
 * @category constructors
 */
export const stageKind = <P, I, E, R>(
  kind: ActionKind.ActionKind<P, I, E, R>,
  payload: P,
  info: StageInfo
): Effect.Effect<PendingActionHandle, PendingStoreError, PendingActions | R> =>
  Effect.flatMap(PendingActions, (pending) => pending.stageKind(kind, payload, info))
