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
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as PubSub from "effect/PubSub"
import * as Queue from "effect/Queue"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import { randomBytes } from "node:crypto"
import type { PendingStoreError } from "../domain/Errors.js"
import {
  boolean,
  checkOptions,
  contracts as kindsSpec,
  duration,
  durationAtLeast,
  InvalidOptions,
  type OptionsSpec,
  text,
  wholeNumber
} from "../domain/InvalidOptions.js"
import type { PendingStatus } from "../domain/PendingRecord.js"
import type { ResolveError, ResolveParams } from "../domain/ResolveParams.js"
import type * as ToolResult from "../domain/ToolResult.js"
import * as ActionKind from "./ActionKind.js"
import type { ActionRecords } from "./ActionRecords.js"
import * as InstanceLease from "./internal/instanceLease.js"
import * as PendingSet from "./internal/pendingSet.js"
import * as Reconcile from "./internal/reconcile.js"
import * as Resolving from "./internal/resolving.js"
import * as StoreRetention from "./internal/retention.js"
import { makeInstanceId, setLive } from "./internal/runtimeInstance.js"
import * as Staging from "./internal/staging.js"
import * as StoreMirror from "./internal/storeMirror.js"
import { PendingStore } from "./PendingStore.js"
import type { Handle, Spec } from "./Preview.js"
import { ResolveConfig } from "./ResolveConfig.js"
import type { SessionOwnership } from "./SessionOwnership.js"
import { SteeringBus } from "./SteeringBus.js"
import { ToolChoiceQueue } from "./ToolChoiceQueue.js"

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
 * What the process running a reviewer's decision passes to `resolveOr` besides the parameters (which a model
 * controls):
 *
 * - `amendment`: the reviewer's amendment of the action it names, decoded with the kind's `amendment` Schema before
 *   the claim and given to `apply` as `call.amendment` (ignored for another action, a discard, or a kind that takes
 *   none; one that no longer decodes fails with `ApplyFailed` and changes nothing).
 * - `settleWith`: wraps each attempt of the store write that settles a durable action once its `apply` (or
 *   discard) succeeded (`action.outcome`: the result's text, as stored). `settle` is that write (`true` when it
 *   settled the record, `false` when another process had recovered it); the wrapper's result is taken as the
 *   write's; `action.settle` is that write's input, for a wrapper that makes the write in a statement of its own. A
 *   reviewer's decision is completed with the settle this way (`Decisions.run`: `DecisionRequests.settleDeciding`),
 *   or recorded with it when it runs as soon as it is made (`Decisions.decide`: `DecisionRequests.recordDone`):
 *   both are stored or neither. A wrapper must make the settle at most once (through `settle`, or with `action.settle`), and
 *   must not turn its failure into `true`.
 *
 * @since 0.4.0
 * @category models
 */
export interface ResolveOptions {
  readonly amendment?: ActionKind.Amendment | undefined
  readonly settleWith?:
    | ((
      settle: Effect.Effect<boolean, PendingStoreError>,
      action: {
        readonly id: string
        readonly label: string
        readonly outcome: string
        /** The store write `settle` makes (since 0.4.0: for a wrapper that makes it in a statement of its own). */
        readonly settle: ActionRecords.SettleInput
      }
    ) => Effect.Effect<boolean, PendingStoreError>)
    | undefined
}

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
     * An exclusive durable session's ownership (0.4: its owner epoch, and how to tell it is still the owner);
     * `none` in memory and for a shared durable session.
     */
    readonly ownership: Option.Option<SessionOwnership.Service>
    /**
     * The store this session writes through (fenced with its owner epoch when exclusive): what the turn driver
     * saves the conversation with. `none` in memory.
     */
    readonly store: Option.Option<PendingStore.Service>
    /**
     * Stages an action in the closure form: records it, pushes its forcing directive at the head of the queue
     * (label `pending-action:<sourceToolName>`, one-shot, requeued while the action is pending; `"auto"` under
     * `enforcement: "soft"`), then steers the resolve reminder. The callbacks run with the staging fiber's context.
     */
    readonly stage: <E, R>(spec: Spec<E, R>) => Effect.Effect<Handle, PendingStoreError, R>
    /**
     * Stages an action of a durable kind: plain data (`kind` + the payload encoded with its Schema) that a store
     * keeps and a restarted session runs again (register the kind with `layerDurable`). Forcing and reminder as
     * `stage`; a `standing` kind neither forces nor gates. A contract (since 0.4.0) runs with the handlers the
     * session registers for it (`ActionKind.toLayer`); one it does not register is a defect.
     */
    readonly stageKind: <P, I, E = never, R = never>(
      kind: ActionKind.ActionKind<P, I, E, R> | ActionKind.Contract<P, I, any, any, string>,
      payload: P,
      info: StageInfo
    ) => Effect.Effect<Handle, PendingStoreError, R>
    /**
     * Resolves the action `params.id` names (unknown: `UnknownPendingAction`; not pending: `PendingActionNotPending`),
     * else the most recent pending one, else runs `fallback`. The action is claimed exactly once (across processes
     * with a store), its callback runs interruptibly, and it ends `applied` / `discarded`, or `pending` again when
     * the callback failed or was interrupted before `PendingAction.commit` (a failure steers the reminder again).
     * `options` carries what only the process running a reviewer's decision passes (see `ResolveOptions`).
     */
    readonly resolveOr: <E, R>(
      params: ResolveParams,
      fallback: Fallback<E, R>,
      options?: ResolveOptions
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
  static readonly layerDurable = <const Kinds extends ReadonlyArray<ActionKind.AnyContract> = []>(
    options: DurableOptions<Kinds>
  ): Layer.Layer<
    PendingActions,
    PendingStoreError | InvalidOptions,
    ToolChoiceQueue | SteeringBus | PendingStore | ActionKind.SessionRequirements<Kinds>
  > =>
    Layer.scoped(
      PendingActions,
      Effect.gen(function*() {
        yield* checkOptions("PendingActions.layerDurable", durableSpec, options)
        const store = yield* PendingStore
        const kindContext = yield* Effect.context<ActionKind.SessionRequirements<Kinds>>()
        return yield* make({
          session: options.session,
          store,
          kinds: yield* runnableKinds("PendingActions.layerDurable", options.kinds ?? [], kindContext),
          kindContext: kindContext as Context.Context<never>,
          lease: options.lease,
          retainSettled: options.retainSettled,
          retention: options.retention,
          exclusive: options.exclusive
        })
      })
    )
}

/**
 * The kinds a session runs: each runnable kind as it is, each contract with the handlers its context holds
 * (`ActionKind.toLayer`); a contract without them is `InvalidOptions` (the types prevent it; JavaScript may not).
 *
 * @internal
 */
export const runnableKinds = (
  of: string,
  kinds: ReadonlyArray<ActionKind.AnyContract>,
  context: Context.Context<any>
): Effect.Effect<ReadonlyArray<ActionKind.Any>, InvalidOptions> =>
  Effect.forEach(kinds, (kind) => {
    if (ActionKind.isRunnable(kind)) return Effect.succeed(kind)
    const handlers = Context.getOption(context, ActionKind.handlerTag(kind.name))
    return Option.isSome(handlers) ?
      Effect.succeed(handlers.value) :
      Effect.fail(
        new InvalidOptions({
          of,
          key: "kinds",
          problem:
            `holds the contract ${
              JSON.stringify(kind.name)
            } with no handlers in context: provide ActionKind.toLayer(contract, handlers), or give a kind made with ` +
            "ActionKind.implement"
        })
      )
  })

/**
 * What `layerDurable` checks its options against, at run time (see `InvalidOptions`).
 *
 * @since 0.4.0
 * @category option specs
 * @internal
 */
export const durableSpec: OptionsSpec = {
  session: { ...text, required: true },
  kinds: kindsSpec,
  lease: durationAtLeast(3),
  retainSettled: wholeNumber(0),
  exclusive: boolean,
  retention: {
    schema: Schema.Union(
      Schema.Literal("keep-all"),
      Schema.Struct({
        keepLast: Schema.optional(Schema.UndefinedOr(Schema.Int.pipe(Schema.nonNegative()))),
        maxAge: Schema.optional(Schema.UndefinedOr(duration.schema))
      })
    ),
    expected: "\"keep-all\" or { keepLast?: a whole number, 0 or more; maxAge?: a duration }"
  }
}

/**
 * Options of a durable pending set.
 *
 * @since 0.2.0
 * @category models
 */
export interface DurableOptions<Kinds extends ReadonlyArray<ActionKind.AnyContract>> {
  /** The session: a restarted process that opens the same session finds its actions. */
  readonly session: string
  /**
   * The durable kinds this process runs. A record of a kind registered here is runnable here, whoever staged it;
   * any other record (a closure, an unregistered kind) is left alone while its stager lives, and `orphaned` once
   * its stager is provably gone. A kind is a runnable one (`ActionKind.make`, `implement`), or a contract whose
   * handlers the layer's context holds (`ActionKind.toLayer`; since 0.4.0).
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
  /**
   * One owner for real (0.4): this runtime acquires the session in the store when it opens (a new owner epoch), and
   * every write it makes for the session is fenced with that epoch. Once another runtime acquires the session (a
   * cluster runner taking it over), this one's writes are refused, changing nothing; its lease, once lapsed, is
   * never renewed; and the session is lost (`SessionOwnership.lost`): its turn driver stops at once, and an edit
   * checks the epoch under its file locks before its first rename. Use it where exactly one process runs the session
   * (what `effect-resolve/cluster` does); an inbox or a second worker sharing the session must not set it. Default
   * `false`.
   */
  readonly exclusive?: boolean | undefined
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
  /** Durable: acquire the session and fence every write (see `DurableOptions.exclusive`). */
  readonly exclusive?: boolean | undefined
}

// ---------------------------------------------------------------------------------------------------------------
// Implementation: the session's state and the rules over it live in `./internal/` (pendingSet: the set in memory;
// staging; resolving; storeMirror, reconcile, instanceLease, retention: the durable side). `make` checks the
// options, builds the state, opens the durable side, and hands the operations out.
// ---------------------------------------------------------------------------------------------------------------

const defaultLease = Duration.minutes(1)

const defaultRetainSettled = 100

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
    const now = () => clock.unsafeCurrentTimeMillis()
    // An exclusive session acquires the session first (a new owner epoch): from here on, every write is fenced.
    const exclusive = options.store !== undefined && options.exclusive === true ?
      yield* InstanceLease.acquire({ session, owner, now }, options.store) :
      undefined
    const store = exclusive === undefined ? options.store : exclusive.store

    const retainSettled = options.retainSettled ?? defaultRetainSettled
    if (!Number.isSafeInteger(retainSettled) || retainSettled < 0) {
      return yield* Effect.dieMessage(
        `effect-resolve: retainSettled must be a whole number of actions, 0 or more (got ${String(retainSettled)})`
      )
    }
    const retention = store === undefined ? undefined : yield* StoreRetention.retentionOf(options.retention)
    const pruneWanted = yield* Queue.sliding<void>(1)
    const s = PendingSet.make({
      session,
      prefix,
      owner,
      lease,
      store,
      kinds,
      kindContext,
      queue,
      bus,
      now,
      retainSettled,
      retention,
      pruneWanted,
      hub
    })

    const ownership = exclusive === undefined || options.store === undefined ?
      undefined :
      InstanceLease.ownershipService(s, exclusive.store, options.store, exclusive.ownership)
    s.ownership = ownership
    if (store !== undefined) {
      yield* InstanceLease.keepAlive(s, store, exclusive?.ownership)
      yield* Reconcile.restoreOpen(s, store, startConfig.enforcement === "soft")
      if (retention !== undefined) yield* StoreRetention.startPruning(s, store, retention)
    }

    const subscribe = PendingSet.subscribe(s)
    return PendingActions.of({
      session,
      durable: store !== undefined,
      ownership: Option.fromNullable(ownership),
      store: Option.fromNullable(store),
      stage: (spec) => Staging.stage(s, spec),
      stageKind: (kind, payload, info) => Staging.stageKind(s, kind, payload, info),
      resolveOr: (params, fallback, options) => Resolving.resolveOr(s, params, fallback, options),
      hasPending: Effect.sync(() => PendingSet.mostRecent(s) !== undefined),
      staged: Effect.sync(() => s.stagedTotal),
      list: store === undefined ? PendingSet.list(s) : StoreMirror.list(s, store),
      listPage: store === undefined ?
        (options) => PendingSet.listPage(s, options) :
        (options) => StoreMirror.listPage(s, store, options),
      get: store === undefined ? (id) => PendingSet.get(s, id) : (id) => StoreMirror.get(s, store, id),
      changes: Stream.unwrapScoped(subscribe),
      subscribe,
      clear: (id) => Resolving.clear(s, id),
      refresh: store === undefined ? Effect.void : StoreMirror.refresh(s, store),
      listOpen: store === undefined ? PendingSet.listOpen(s) : StoreMirror.listOpen(s, store)
    })
  })

/**
 * Runs `effect` and returns, besides its value, the handles of the actions it staged (in any session), in staging
 * order: the turn driver learns this way which previews a tool call staged.
 *
 * @since 0.3.0
 * @category combinators
 */
export const track = <A, E, R>(
  effect: Effect.Effect<A, E, R>
): Effect.Effect<readonly [A, ReadonlyArray<Handle>], E, R> =>
  Effect.suspend(() => {
    const staged: Array<Handle> = []
    return Effect.map(Effect.locally(effect, Staging.currentTracker, staged), (a) => [a, staged] as const)
  })

/**
 * Runs `effect` and returns, besides its value, the ids of the actions its `resolve` calls picked (named by `id`, or
 * the most recent pending one), in order, whether or not they could be resolved: the turn driver serves each id once
 * per model response this way.
 *
 * @since 0.3.0
 * @category combinators
 */
export const trackResolved = <A, E, R>(
  effect: Effect.Effect<A, E, R>
): Effect.Effect<readonly [A, ReadonlyArray<string>], E, R> =>
  Effect.suspend(() => {
    const picked: Array<string> = []
    return Effect.map(
      Effect.locally(effect, Resolving.currentResolveTracker, picked),
      (a) => [a, picked] as const
    )
  })

/**
 * Stages a preview in the closure form in the current session (see `PendingActions.stage`): pushes a one-shot forced
 * `resolve` directive at the head of the queue (label `pending-action:<sourceToolName>`, requeued while the action
 * is pending), then steers the resolve reminder. A `resolve` call claims the action exactly once; a failed or
 * interrupted call leaves it pending, and a failed one steers the reminder again. With `ResolveConfig.enforcement`
 * `"soft"` the directive serves `"auto"` instead: the turn driver forces `resolve` only after a turn that ignored it.
 * (`stageKind` stages a durable kind.)
 *
 * @since 0.3.0
 * @category constructors
 */
export const stage = <E, R>(
  spec: Spec<E, R>
): Effect.Effect<Handle, PendingStoreError, PendingActions | R> =>
  // No generator and no span: staging is on every preview's hot path (bench/).
  Effect.withFiberRuntime((fiber) =>
    Context.get(fiber.getFiberRef(FiberRef.currentContext) as Context.Context<PendingActions>, PendingActions).stage(
      spec
    )
  )

/**
 * @deprecated Renamed `stage` in 0.3.0: one verb for staging (`stage`, `stageKind`); this alias goes in 0.4.0.
 * @since 0.1.0
 * @category constructors
 */
export const queueResolveHandler = stage

/**
 * Stages an action of a durable kind in the current session (see `PendingActions.stageKind`).
 *
 * @since 0.2.0
 * @category constructors
 */
export const stageKind = <P, I, E = never, R = never>(
  kind: ActionKind.ActionKind<P, I, E, R> | ActionKind.Contract<P, I, any, any, string>,
  payload: P,
  info: StageInfo
): Effect.Effect<Handle, PendingStoreError, PendingActions | R> =>
  Effect.flatMap(PendingActions, (pending) => pending.stageKind(kind, payload, info))
