/**
 * The behaviour of the `Session` entity on a runner: the only place a session's agent loop runs. When the cluster
 * gives this runner a session (its first message here, or its shard moved here from a runner that stopped or died),
 * the entity opens the durable session of today, `ResolveRuntime.layerDurable({ session, kinds })` with
 * `TurnDriver.layerWithoutDependencies(...)` on top, on the runner's `PendingStore` and the app's `SessionAgent`: pending actions come
 * back (a dead owner's `resolving` ones are recovered by their kind), the conversation and forcing state continue
 * from the last saved turn. The entity closes the session when it goes idle or its shard moves.
 *
 * - `Run`: one run at a time per session, in arrival order. The prompt carries the run's id in the conversation
 *   itself (a provider option no provider reads), saved with each turn: a runner that receives the run again after
 *   another died continues it without adding the prompt twice, and replies at once if it had already finished.
 * - `Decide`: a person's decision by id, through `Decisions` like every reviewer's decision: run here alongside a run
 *   (the claim is exactly-once) and recorded with the settle of its action (`Decisions.decide`); the model is told
 *   with its next request, from the decision as stored (durable before the decision is answered).
 * - `Steer`: recorded in the `SteeringJournal` before it is answered, then queued for the next request; a session
 *   that opens (after its runner died) queues again every recorded message its saved conversation does not hold.
 * - `List`, `Get`: the pending set of the session.
 *
 * One owner at a time, even when the cluster errs: the session's runtime instance logs in the store when it opens
 * and closes the session (`PendingStore.logSession`; with `logSaves`, every save too), and a runner opens a session
 * only once its previous owner closed it or is provably gone (`previousOwnerDone`). The cluster moves a shard only
 * after its runner stopped its entities, but a runner whose shard lock was lost (its lock connection dropped, a lock
 * query timed out) or whose entity was still opening can be a moment late: the next owner waits for it.
 *
 * @example
 * ```ts
 * import { Layer } from "effect"
 * import { SessionEntity } from "effect-resolve/cluster"
 *
 * // Registers the entity with the runner's Sharding; needs the SessionAgent and the PendingStore.
 * const Behaviour: Layer.Layer<never, never, any> = SessionEntity.layer({ logSaves: true })
 * ```
 *
 * @since 0.3.0
 */
import * as Prompt from "@effect/ai/Prompt"
import * as Entity from "@effect/cluster/Entity"
import type { Sharding } from "@effect/cluster/Sharding"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as ExecutionStrategy from "effect/ExecutionStrategy"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import * as Scope from "effect/Scope"
import { type DurableSteering, TurnDriver } from "../agent/TurnDriver.js"
import { isOwnershipLost, type PendingStoreError } from "../domain/Errors.js"
import type { SteeringMessage } from "../domain/SteeringMessage.js"
import * as ResolveRuntime from "../layers/ResolveRuntime.js"
import { localVerdict } from "../services/internal/runtimeInstance.js"
import { type PendingActionInfo, PendingActions } from "../services/PendingActions.js"
import { PendingStore } from "../services/PendingStore.js"
import type { SessionOwnership } from "../services/SessionOwnership.js"
import { SteeringBus } from "../services/SteeringBus.js"
import { ToolChoiceQueue } from "../services/ToolChoiceQueue.js"
import { make as decisionsOn } from "../tools/Decisions.js"
import { decodeResolveParams } from "../tools/Resolve.js"
import { SessionAgent } from "./SessionAgent.js"
import { type DecisionKind, type DecisionReply, Session, type SessionAction } from "./SessionProtocol.js"
import { SteeringJournal } from "./SteeringJournal.js"

/**
 * Options of the entity on a runner.
 *
 * @since 0.3.0
 * @category models
 */
export interface Options {
  /**
   * Log every save of a session's state too (one more insert per turn, never pruned), not only when a runner opens
   * and closes it: with the journal's claims, the store then shows who ran each turn, when. Default `false`.
   */
  readonly logSaves?: boolean | undefined
  /** Close a session that received no message for this long (default: `ShardingConfig.entityMaxIdleTime`). */
  readonly maxIdleTime?: Duration.DurationInput | undefined
  /** How often an opening session checks whether its previous owner is gone (default 100 milliseconds). */
  readonly handoffPoll?: Duration.DurationInput | undefined
}

/**
 * The provider-option key under which a `Run`'s prompt carries its run id (no provider reads it).
 *
 * @since 0.3.0
 * @category constants
 */
export const runOptionKey = "effect-resolve"

/**
 * The `customType` of the steering message a `Steer` sends.
 *
 * @since 0.3.0
 * @category constants
 */
export const steerType = "session-steer"

/**
 * The `customType` of the steering message that told the model about a person's decision in 0.3.
 *
 * @deprecated Since 0.4 a decision through the cluster is a reviewer's decision like any other, told to the model as
 * `Decisions.decisionMessageType` with `Decisions.decisionText`.
 * @since 0.3.0
 * @category constants
 */
export const decisionType = "resolve-decision"

/**
 * The text that told the model in 0.3 that a person decided one of its pending actions.
 *
 * @deprecated Since 0.4 the model reads `Decisions.decisionText` of the decision as stored.
 * @since 0.3.0
 * @category constructors
 */
export const decisionText = (
  decision: { readonly by: string; readonly decision: DecisionKind; readonly reason: string },
  action: { readonly id: string; readonly label: string }
): string =>
  "<system-reminder>\n" +
  `${decision.by} ${
    decision.decision === "discard"
      ? "discarded"
      : decision.decision === "amend"
      ? "applied with an amendment"
      : "applied"
  } the pending action "${action.label}" (id ${action.id}): ${decision.reason}\n` +
  "Do not resolve it again.\n" +
  "</system-reminder>"

/** The run id a message carries, if it is a `Run`'s prompt. */
const runIdOf = (message: Prompt.Message): string | undefined => {
  const options = message.options[runOptionKey]
  const runId = options === undefined ? undefined : options.runId
  return typeof runId === "string" ? runId : undefined
}

/** The prompt of a run: one user message carrying the run id. */
const runPrompt = (runId: string, text: string): Prompt.Prompt =>
  Prompt.fromMessages([
    Prompt.makeMessage("user", {
      content: [Prompt.makePart("text", { text })],
      options: { [runOptionKey]: { runId } }
    })
  ])

/** The text of the conversation's last message, when it is the model's answer with no tool call (a run's end). */
const finalAnswer = (history: Prompt.Prompt): Option.Option<string> => {
  const last = history.content[history.content.length - 1]
  if (last === undefined || last.role !== "assistant") return Option.none()
  if (last.content.some((part) => part.type === "tool-call")) return Option.none()
  return Option.some(last.content.flatMap((part) => part.type === "text" ? [part.text] : []).join(""))
}

/**
 * An action as the protocol sends it.
 *
 * @since 0.3.0
 * @category constructors
 */
export const toSessionAction = (info: PendingActionInfo): SessionAction => ({
  id: info.id,
  label: info.label,
  sourceToolName: info.sourceToolName,
  kind: info.kind,
  preview: info.preview,
  status: info.status,
  attempts: info.attempts,
  createdAt: info.createdAt,
  expiresAt: info.expiresAt,
  outcome: info.outcome,
  runnable: info.runnable
})

/**
 * The store a session's runtime uses, logging its owner: the session's runtime instance is learned from its first
 * heartbeat (the first thing a durable session does when it opens); its open and close are logged, and with
 * `saves`, each save of its state, each before it happens.
 *
 * @since 0.3.0
 * @category constructors
 */
export const withOwnerLog = (
  store: PendingStore.Service,
  session: string,
  options: { readonly saves: boolean }
): PendingStore.Service => {
  let owner: string | undefined
  const log = (instance: string, event: PendingStore.SessionLogEntry["event"]) =>
    Effect.flatMap(Clock.currentTimeMillis, (at) => store.logSession({ session, owner: instance, event, at }))
  return PendingStore.of({
    ...store,
    heartbeat: (input) => {
      if (owner !== undefined) return store.heartbeat(input)
      owner = input.instance
      return Effect.zipRight(log(input.instance, "open"), store.heartbeat(input))
    },
    saveSession: (id, state) =>
      !options.saves || owner === undefined || id !== session ?
        store.saveSession(id, state) :
        Effect.zipRight(log(owner, "save"), store.saveSession(id, state)),
    saveConversation: (id, save) =>
      !options.saves || owner === undefined || id !== session ?
        store.saveConversation(id, save) :
        Effect.zipRight(log(owner, "save"), store.saveConversation(id, save)),
    release: (instance) =>
      instance !== owner ? store.release(instance) : Effect.zipRight(log(instance, "close"), store.release(instance)),
    // The session's fenced store logs too (and, fenced, logs only while it owns the session).
    fenced: (fence) => withOwnerLog(store.fenced(fence), session, options)
  })
}

/**
 * Whether the runtime instance that last opened `session` is done with it: the owner log's last entry is a close,
 * or that instance is provably gone (its process died on this host, or its lease in the store lapsed or was
 * released). The next owner waits for this before it opens the session, so two runners never run it at once, even
 * when the cluster moved the session before the previous runner stopped it (its shard lock was lost, or the session
 * was still opening there).
 *
 * @since 0.3.0
 * @category constructors
 */
export const previousOwnerDone = (
  store: PendingStore.Service,
  session: string
): Effect.Effect<Option.Option<string>, PendingStoreError> =>
  Effect.gen(function*() {
    const [last] = yield* store.sessionLog(session, { last: 1 })
    if (last === undefined || last.event === "close") return Option.none()
    const verdict = localVerdict(last.owner)
    if (verdict === "gone") return Option.none()
    if (verdict === "unknown") {
      const until = (yield* store.leases([last.owner])).get(last.owner)
      if (until === undefined || until <= (yield* Clock.currentTimeMillis)) return Option.none()
    }
    return Option.some(last.owner)
  })

/**
 * The session's durable steering for its turn driver, on the journal: what it recorded and has not delivered (each
 * message carrying its id), and where delivered ids are marked.
 *
 * @since 0.4.0
 * @category constructors
 */
export const durableSteering = (journal: SteeringJournal.Service, session: string): DurableSteering => ({
  undelivered: Effect.map(journal.undelivered(session), (entries) =>
    entries.map(({ id, message }) => ({
      ...message,
      details: {
        ...(typeof message.details === "object" && message.details !== null ? message.details : {}),
        steerId: id
      }
    }))),
  delivered: (ids) => journal.markDelivered(session, ids)
})

const targetOf = (decision: DecisionKind) => decision === "discard" ? "discarded" : "applied"

/** A session opened on this runner: its services, and what its handlers need. */
interface Opened {
  /** The session's scope: closed when the session is lost, so that the next message opens it again. */
  readonly scope: Scope.CloseableScope
  /** The session's ownership (every session a runner opens is exclusive). */
  readonly ownership: Option.Option<SessionOwnership.Service>
  readonly context: Context.Context<never>
  readonly driver: TurnDriver.Service
  readonly pending: PendingActions.Service
  readonly queue: ToolChoiceQueue.Service
  readonly bus: SteeringBus.Service
}

/**
 * Builds the handlers of one session on this runner. The durable session opens with the first message, inside its
 * handler, not while the entity is built: the cluster stops a shard's entities (and waits for them) before it lets
 * another runner take the shard, but an entity still being built is not among them yet, and opening a session can take
 * a while (recovering what a dead runner left, waiting for its file locks). Opened by a message, it is always waited
 * for.
 *
 * @since 0.3.0
 * @category constructors
 */
export const make = (options: Options = {}) =>
  Effect.gen(function*() {
    const address = yield* Entity.CurrentAddress
    const session: string = address.entityId
    const agent = yield* SessionAgent
    const journal = yield* SteeringJournal
    const baseStore = yield* PendingStore
    const scope = yield* Scope.Scope
    const store = withOwnerLog(baseStore, session, { saves: options.logSaves === true })
    const poll = options.handoffPoll ?? Duration.millis(100)
    /** Waits until the previous owner is done with the session (see `previousOwnerDone`). */
    const handoff = Effect.gen(function*() {
      let since: number | undefined
      for (;;) {
        const previous = yield* previousOwnerDone(baseStore, session)
        if (Option.isNone(previous)) {
          if (since !== undefined) {
            yield* Effect.logInfo(
              `effect-resolve: session ${session} opens after waiting ${(yield* Clock.currentTimeMillis) - since} ms ` +
                "for its previous owner"
            )
          }
          return
        }
        if (since === undefined) {
          since = yield* Clock.currentTimeMillis
          yield* Effect.logInfo(
            `effect-resolve: session ${session} waits for its previous owner ${previous.value} to close it`
          )
        }
        yield* Effect.sleep(poll)
      }
    })
    const system = agent.system(session)
    const durable = ResolveRuntime.layerDurable({
      session,
      kinds: agent.kinds,
      // One owner for real: the session is acquired under a new owner epoch, and every write is fenced with it.
      exclusive: true,
      ...Option.match(agent.lease, { onNone: () => ({}), onSome: (lease) => ({ lease }) }),
      ...Option.match(agent.retention, { onNone: () => ({}), onSome: (retention) => ({ retention }) })
    }).pipe(Layer.provideMerge(Layer.succeedContext(PendingStore.contextWithParts(store))))
    const sessionLayer = Layer.provideMerge(
      TurnDriver.layerWithoutDependencies({
        ...Option.match(system, { onNone: () => ({}), onSome: (text) => ({ system: text }) }),
        steering: durableSteering(journal, session)
      }),
      durable
    ) as Layer.Layer<TurnDriver | ResolveRuntime.Services | PendingStore, PendingStoreError>
    // Forked now, before the entity's RPC server exists: the entity's scope closes it after the server stopped the
    // handlers (finalizers run in reverse order), so a session never closes under a run still ending its turn.
    const sessions = yield* Scope.fork(scope, ExecutionStrategy.sequential)
    const opening = yield* Effect.makeSemaphore(1)
    let opened: Opened | undefined
    /**
     * Opens the session once, in the entity's scope; a failed open leaves nothing behind, the next message retries.
     * An open that finds another owner took the session meanwhile (its acquire came later) waits for it again.
     */
    const open: Effect.Effect<Opened, PendingStoreError> = opening.withPermits(1)(Effect.suspend(() => {
      if (opened !== undefined) return Effect.succeed(opened)
      const attempt = Effect.gen(function*() {
        yield* handoff
        const child = yield* Scope.fork(sessions, ExecutionStrategy.sequential)
        const built = yield* Layer.buildWithScope(sessionLayer, child).pipe(
          Effect.provide(agent.context),
          Effect.onError((cause) => Scope.close(child, Exit.failCause(cause)))
        )
        const pending = Context.get(built, PendingActions)
        opened = {
          scope: child,
          ownership: pending.ownership,
          context: Context.merge(agent.context, built) as Context.Context<never>,
          driver: Context.get(built, TurnDriver),
          pending: Context.get(built, PendingActions),
          queue: Context.get(built, ToolChoiceQueue),
          bus: Context.get(built, SteeringBus)
        }
        return opened
      })
      return Effect.retry(attempt, { while: isOwnershipLost }).pipe(
        // A store error while opening (a pool still holding connections the database cut, e.g. after a pause) is
        // asked again a few times before it becomes the message's answer: a pool drops a dead connection on error.
        Effect.retry({
          times: 5,
          schedule: Schedule.exponential(Duration.millis(50)),
          while: (error) => !isOwnershipLost(error)
        })
      )
    }))
    /** The session was lost (a newer owner, a lapsed lease): it closes, writing nothing; the next open waits. */
    const closeLost = (s: Opened) =>
      opening.withPermits(1)(Effect.suspend(() => {
        if (opened !== s) return Effect.void
        opened = undefined
        return Effect.zipRight(
          Effect.logWarning(
            `effect-resolve: session ${session} was lost by this runner (another owner took it, or its lease lapsed); ` +
              "it stopped at once, and opens again here only once the other owner is done with it"
          ),
          Scope.close(s.scope, Exit.void)
        )
      }))
    /**
     * Another failure of `f` is its answer only while this runner still owns the session: one read of the session's
     * owner first. A runner woken after a pause past its lease, whose connections were cut meanwhile, fails its first
     * statements with a connection error, not a refusal; answered, that error would end a run (a persisted message)
     * that the session's new owner is running. Lost, it is treated as lost; if the read keeps failing, `error` stands.
     */
    const answerIfOwned = <E>(s: Opened, error: E): Effect.Effect<never, E | PendingStoreError> =>
      Option.match(s.ownership, {
        onNone: () => Effect.fail(error),
        onSome: (ownership) =>
          Effect.flatMap(
            // A read on a connection cut meanwhile fails too: asked again (a pool drops a dead connection on error).
            Effect.either(Effect.retry(ownership.check, {
              times: 5,
              schedule: Schedule.spaced(Duration.millis(50)),
              while: (error) => !isOwnershipLost(error)
            })),
            (checked): Effect.Effect<never, E | PendingStoreError> =>
              Either.isLeft(checked) && isOwnershipLost(checked.left) ? Effect.fail(checked.left) : Effect.fail(error)
          )
      })
    const isLost = (error: unknown): boolean =>
      isOwnershipLost(error) || (error as { readonly _tag?: unknown } | null)?._tag === "SessionLost"
    /**
     * Runs `f` on the open session, stopped at once if the session is lost meanwhile; then the session closes and
     * `f` runs again once this runner may open it again (after the new owner closed it or is gone; a message whose
     * shard moved is interrupted meanwhile, and the cluster delivers it to the new owner).
     */
    const withSession = <A, E, R>(
      f: (s: Opened) => Effect.Effect<A, E, R>
    ): Effect.Effect<A, E | PendingStoreError, R> =>
      Effect.flatMap(open, (s) => {
        const lost = Option.match(s.ownership, { onNone: () => Effect.never, onSome: (o) => o.lost })
        return Effect.raceFirst(f(s), lost).pipe(
          Effect.catchAll((error) => isLost(error) ? Effect.fail(error) : answerIfOwned(s, error)),
          Effect.catchIf(
            (error): error is E | PendingStoreError => isLost(error),
            () => Effect.zipRight(closeLost(s), withSession(f))
          )
        )
      })
    const runs = yield* Effect.makeSemaphore(1)
    const runOptions = {
      ...Option.match(agent.toolkit, { onNone: () => ({}), onSome: (toolkit) => ({ toolkit }) }),
      ...Option.match(agent.maxTurns, { onNone: () => ({}), onSome: (maxTurns) => ({ maxTurns }) }),
      ...Option.match(agent.retry, { onNone: () => ({}), onSome: (retry) => ({ retry }) })
    }
    const openActions = (s: Opened) => Effect.map(s.pending.listOpen, (infos) => infos.map(toSessionAction))

    /** Whether nothing is left to do: no directive served or queued (a pending preview queues one). */
    const idle = (s: Opened) =>
      Effect.map(Effect.zip(s.queue.hasInFlight, s.queue.inspect), ([inFlight, queued]) =>
        !inFlight && queued.length === 0)

    const run = Effect.fn("SessionEntity.run")(function*(
      s: Opened,
      payload: { readonly runId: string; readonly prompt: string }
    ) {
      const history = yield* s.driver.history
      const resumed = history.content.some((message) =>
        runIdOf(message) === payload.runId
      )
      if (resumed) {
        // The run started before (on a runner that died, or an earlier activation); a saved turn holds its prompt.
        const answer = finalAnswer(history)
        if (Option.isSome(answer) && (yield* idle(s))) {
          return { text: answer.value, turns: 0, resumed, open: yield* openActions(s) }
        }
      }
      const result = yield* s.driver.run(resumed ? Prompt.empty : runPrompt(payload.runId, payload.prompt), runOptions)
      return { text: result.text, turns: result.turns.length, resumed, open: yield* openActions(s) }
    })

    /** Queues a recorded steering message for the session's next request (its `details` carry its `steerId`). */
    const queue = (s: Opened, message: SteeringMessage) =>
      s.bus.steer({ customType: message.customType, content: message.content, details: message.details })

    /**
     * Records a steered message in the journal under `steerId` (durable before this returns), then queues it for the
     * session's next request; one recorded before (the same steer delivered again) is queued or delivered already.
     */
    const steerDurably = Effect.fn("SessionEntity.steer")(function*(s: Opened, steerId: string, text: string) {
      const message: SteeringMessage = {
        customType: steerType,
        content: text,
        details: { steerId },
        display: false,
        attribution: "agent",
        timestamp: yield* Clock.currentTimeMillis
      }
      if (yield* journal.record(session, steerId, message)) yield* queue(s, message)
    })

    /**
     * A person's decision, through `Decisions` as every reviewer's decision goes: run here exactly as a model's
     * `resolve` would (the claim makes it once), and recorded in the same write as the settle of its action. The
     * model hears it in its next request, from the decision as stored (a session tells the model of every preview it
     * was shown that a reviewer settled): durable before the answer, whichever runner owns the session next.
     */
    const decide = Effect.fn("SessionEntity.decide")(function*(s: Opened, payload: {
      readonly id: string
      readonly decision: DecisionKind
      readonly reason: string
      readonly by: string
      readonly amendment?: string | undefined
    }) {
      const action = payload.decision === "discard" ? "discard" : "apply"
      // Bad parameters are refused as a model's `resolve` call's are, before anything is recorded.
      yield* decodeResolveParams({
        action,
        reason: payload.reason,
        extra: payload.decision === "amend" ? { amendment: payload.amendment ?? "" } : null,
        id: payload.id
      })
      const decisions = decisionsOn(Option.getOrElse(s.pending.store, () => store))
      // An amendment reaches the kind's `apply` decoded with its `amendment` Schema (`call.amendment`; the text, the
      // Schema's encoded form here), and, as in 0.3, as `extra.amendment`.
      const decided = yield* decisions.decide({
        actionId: payload.id,
        reviewer: payload.by,
        action,
        reason: payload.reason,
        amendment: payload.decision === "amend" ? payload.amendment ?? "" : null
      }, `session:${session}`)
      return {
        id: payload.id,
        status: targetOf(payload.decision),
        text: decided.message,
        settledBefore: decided.settledBefore
      } satisfies DecisionReply
    })

    return Session.of({
      Run: ({ payload }) => withSession((s) => runs.withPermits(1)(run(s, payload)).pipe(Effect.provide(s.context))),
      Steer: ({ payload }) => withSession((s) => steerDurably(s, payload.steerId, payload.text)),
      Decide: ({ payload }) => withSession((s) => decide(s, payload).pipe(Effect.provide(s.context))),
      List: ({ payload }) =>
        withSession((s) =>
          s.pending.listPage({
            limit: payload.limit ?? 100,
            ...(payload.cursor === undefined ? {} : { cursor: payload.cursor })
          })
        ).pipe(Effect.map((page) => ({ items: page.items.map(toSessionAction), next: page.next }))),
      Get: ({ payload }) => withSession((s) => s.pending.get(payload.id)).pipe(Effect.map(Option.map(toSessionAction)))
    })
  })

/**
 * Registers the `Session` entity with the runner's `Sharding`: this runner runs the sessions whose shards it holds.
 * Messages of one session are handled concurrently (a `Decide` while a `Run` is in progress), runs one at a time.
 *
 * @since 0.3.0
 * @category layers
 */
export const layer = (
  options: Options = {}
): Layer.Layer<never, never, Sharding | SessionAgent | PendingStore | SteeringJournal> =>
  Session.toLayer(make(options), {
    concurrency: "unbounded",
    ...(options.maxIdleTime === undefined ? {} : { maxIdleTime: options.maxIdleTime })
  })
