/**
 * The approval inbox's work, apart from HTTP: it reads the same `PendingStore` as the agent sessions (so it may run
 * in another process or machine), lists what waits for a person, records each decision durably, and runs it exactly
 * once when it can.
 *
 * Deciding, in order: the reviewer's permission (a read-only token changes nothing); the action, in the reviewer's
 * sessions; the amendment, checked against the kind's `amendment` Schema; the decision, recorded `requested` in one
 * statement (at most one per action). Then the inbox runs it through the public runtime: it opens the action's
 * session as a second process would (`ResolveRuntime.layerDurable` with the kinds it registers, kept open while in use and
 * for `idleSessionTimeout` after), resolves the action by id with the reviewer's reason (and amendment), and
 * completes the decision `done` or `failed` with the outcome. A record of a kind this inbox does not register is the
 * session's own process's to run: its decision stays `requested`, and the result says so. A background sweep runs
 * what is left `requested` that the inbox can run (after a crash, or a store failure), and completes decisions whose
 * action was settled meanwhile.
 *
 * @example
 * ```ts
 * import { Effect, Layer, Option } from "effect"
 * import { Inbox } from "effect-resolve/inbox"
 * import { SqliteStore } from "effect-resolve/sqlite"
 *
 * const InboxLive = Inbox.layer({ kinds: [] }).pipe(Layer.provide(SqliteStore.layer({ filename: "agent.db" })))
 * const program = Effect.gen(function*() {
 *   const inbox = yield* Inbox
 *   const page = yield* inbox.list({ name: "ann", permission: "read", sessions: Option.none() }, {})
 *   console.log(page.counts.pending, "waiting")
 * }).pipe(Effect.provide(InboxLive))
 * ```
 *
 * @since 0.3.0
 */
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import {
  checkOptions,
  contracts,
  duration,
  durationAtLeast,
  type InvalidOptions,
  type OptionsSpec
} from "../domain/InvalidOptions.js"
import * as ActionKind from "../services/ActionKind.js"
import { PendingStore } from "../services/PendingStore.js"
import {
  type ActionDetail,
  type ActionList,
  ActionNotDecidable,
  ActionNotFound,
  AmendmentRejected,
  type BatchRequest,
  type BatchResult,
  type ChangedEvent,
  type Counts,
  DecisionAlreadyRequested,
  DecisionRequest,
  type DecisionResult,
  InboxForbidden,
  InvalidDecision,
  InvalidQuery,
  type ListParams,
  type ReviewerInfo,
  StoreUnavailable
} from "./InboxApi.js"
import * as Internal from "./internal/inbox.js"

// -----------------------------------------------------------------------------------------------------------------
// options and service
// -----------------------------------------------------------------------------------------------------------------

/**
 * How an inbox runs.
 *
 * @since 0.3.0
 * @category models
 */
export interface Options<Kinds extends ReadonlyArray<ActionKind.AnyContract>> {
  /**
   * The durable kinds this inbox knows. A runnable kind (`ActionKind.make` / `implement`, with its requirements in
   * the layer's context) is run here: a decision about an action of it is applied or discarded at once. A contract
   * (`ActionKind.contract`, since 0.4.0: no requirements) is only read: its actions' payloads decode, their amendment
   * Schema and draft are offered and a reviewer's amendment is checked, and the decision is recorded for the
   * session's own process to run, as any other action's.
   */
  readonly kinds?: Kinds | undefined
  /**
   * How often the change feed is swept (default 250 milliseconds). While an event stream is open it is also read at
   * once when the store signals a change; while none is, only this sweep reads it.
   */
  readonly pollInterval?: Duration.DurationInput | undefined
  /** How often decisions left `requested` are looked at again (default 5 seconds). */
  readonly sweepInterval?: Duration.DurationInput | undefined
  /** How long a session opened to run a decision stays open unused (default 30 seconds). */
  readonly idleSessionTimeout?: Duration.DurationInput | undefined
  /** The lease of the sessions the inbox opens (see `DurableOptions.lease`; default 1 minute). */
  readonly lease?: Duration.DurationInput | undefined
}

const optionsSpec: OptionsSpec = {
  kinds: contracts,
  pollInterval: duration,
  sweepInterval: duration,
  idleSessionTimeout: duration,
  lease: durationAtLeast(3)
}

/**
 * What a reviewer's request may fail with.
 *
 * @since 0.3.0
 * @category models
 */
export type DecideError =
  | InboxForbidden
  | ActionNotFound
  | ActionNotDecidable
  | DecisionAlreadyRequested
  | AmendmentRejected
  | InvalidDecision
  | StoreUnavailable

/**
 * @since 0.3.0
 * @category tags
 */
export declare namespace Inbox {
  /**
   * @since 0.3.0
   * @category models
   */
  export interface Service {
    /** The kinds this inbox runs (it runs their decisions itself); not the contracts it only reads. */
    readonly kinds: ReadonlyArray<string>
    /** A page of the actions in the reviewer's sessions, filtered, with the badge's counts. */
    readonly list: (
      reviewer: ReviewerInfo,
      params: ListParams
    ) => Effect.Effect<ActionList, InvalidQuery | StoreUnavailable>
    /** One action in the reviewer's sessions, whole. */
    readonly get: (reviewer: ReviewerInfo, id: string) => Effect.Effect<ActionDetail, ActionNotFound | StoreUnavailable>
    /** The badge's counts over the reviewer's sessions. */
    readonly counts: (reviewer: ReviewerInfo) => Effect.Effect<Counts, StoreUnavailable>
    /**
     * Decides one action (see the module's overview); nothing changes on a failure. The request is checked at run
     * time first (`InvalidDecision`: a bad action or reason, a time a `Date` cannot hold, nesting deeper than
     * `bodyMaxDepth`).
     */
    readonly decide: (
      reviewer: ReviewerInfo,
      id: string,
      request: DecisionRequest
    ) => Effect.Effect<DecisionResult, DecideError>
    /** Up to 100 decisions, in order, each answered on its own (a batch that is not one: `InvalidDecision`). */
    readonly decideBatch: (
      reviewer: ReviewerInfo,
      request: BatchRequest
    ) => Effect.Effect<BatchResult, InboxForbidden | InvalidDecision | StoreUnavailable>
    /**
     * What changes in the reviewer's sessions (of `sessions`, when given) from now on, from any process: each
     * element names the actions that changed, as they are now, the ids that are gone, and the counts.
     */
    readonly subscribe: (
      reviewer: ReviewerInfo,
      sessions?: ReadonlyArray<string> | undefined
    ) => Effect.Effect<Stream.Stream<ChangedEvent, StoreUnavailable>, never, Scope.Scope>
    /** Runs what the sweep runs, now: decisions left `requested` that this inbox can run. Returns how many ran. */
    readonly sweep: Effect.Effect<number, StoreUnavailable>
  }
}

/**
 * The Inbox service.
 *
 * @since 0.3.0
 * @category tags
 */
export class Inbox extends Context.Tag("effect-resolve/inbox/Inbox")<Inbox, Inbox.Service>() {
  /**
   * An inbox on the `PendingStore` in context, running the decisions of `kinds` (whose requirements the layer
   * needs). Its change-feed poller, sweep and opened sessions live as long as the layer. The options are checked
   * when it is built (`InvalidOptions` names a misspelt key or a bad value).
   *
   * @since 0.3.0
   * @category layers
   */
  static readonly layer = <const Kinds extends ReadonlyArray<ActionKind.AnyContract> = []>(
    options: Options<Kinds> = {}
  ): Layer.Layer<Inbox, InvalidOptions, PendingStore | ActionKind.Requirements<Kinds>> =>
    Layer.scoped(
      Inbox,
      Effect.gen(function*() {
        yield* checkOptions("Inbox.layer", optionsSpec, options)
        const store = yield* PendingStore
        const context = yield* Effect.context<ActionKind.Requirements<Kinds>>()
        return yield* make(store, options.kinds ?? [], context as Context.Context<never>, options)
      })
    )
}

/**
 * Builds an inbox on `store` (what `layer` provides); its background fibers live in the current scope.
 *
 * @since 0.3.0
 * @category constructors
 */
export const make: (
  store: PendingStore.Service,
  kinds: ReadonlyArray<ActionKind.AnyContract>,
  kindContext: Context.Context<never>,
  options?: Options<ReadonlyArray<ActionKind.AnyContract>>
) => Effect.Effect<Inbox.Service, never, Scope.Scope> = Internal.make
