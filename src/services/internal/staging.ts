/**
 * How an action enters a session's pending set: its entry (and, durable, its record), its forcing directive at the
 * head of the queue and what the queue's rejections do to it, the resolve reminder, and the handle the producer
 * gets back (also given to `track`).
 *
 * @internal
 */
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import { globalValue } from "effect/GlobalValue"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import type { PendingStoreError } from "../../domain/Errors.js"
import type { PendingRecord } from "../../domain/PendingRecord.js"
import type { ResolveParams } from "../../domain/ResolveParams.js"
import { resolveReminder } from "../../domain/SteeringMessage.js"
import { forceTool } from "../../domain/ToolChoice.js"
import * as ActionKind from "../ActionKind.js"
import type { StageInfo } from "../PendingActions.js"
import { directiveLabel, type Handle, type Spec } from "../Preview.js"
import { ResolveConfig } from "../ResolveConfig.js"
import type { RejectDecision, RejectReason } from "../ToolChoiceQueue.js"
import type * as Invocation from "./invocation.js"
import { type Entry, publish, register, type Runner, type State, wanted, write } from "./pendingSet.js"

/** The handles of actions staged by the current fiber (and those it forks), while `track` runs it. */
export const currentTracker: FiberRef.FiberRef<Array<Handle> | undefined> = globalValue(
  Symbol.for("effect-resolve/PendingActions/currentTracker"),
  () => FiberRef.unsafeMake<Array<Handle> | undefined>(undefined, { fork: (tracker) => tracker })
)

// ---------------------------------------------------------------------------------------------------------------
// The forcing directive
// ---------------------------------------------------------------------------------------------------------------

const drop = Effect.succeed<RejectDecision>("drop")
const requeue = Effect.succeed<RejectDecision>("requeue")

// The queue took the directive out unserved: cleared or removed, the action is `cleared` (or, being resolved, ends
// `cleared` unless that call applies it); otherwise it comes back while the action is pending or being resolved.
const onRejected = (s: State, entry: Entry, reason: RejectReason): Effect.Effect<RejectDecision> => {
  if (reason === "cleared" || reason === "removed") {
    if (entry.status === "pending") {
      entry.status = "cleared"
      publish(s, entry)
      return Effect.as(write(s, entry.id, ["pending"], "cleared"), "drop")
    }
    if (entry.status === "resolving") entry.dropped = true
    return drop
  }
  return entry.status === "pending" || entry.status === "resolving" ? requeue : drop
}

/**
 * Pushes an entry's one-shot directive at the head of the queue (`"auto"` when `soft`): wanted while the entry is
 * pending or being resolved, so the queue never forces `resolve` for nothing.
 */
export const pushDirective = (s: State, entry: Entry, soft: boolean) =>
  s.queue.pushOnce(soft ? "auto" : forceTool("resolve"), {
    id: entry.id,
    label: directiveLabel(entry.sourceToolName),
    now: true,
    active: () => wanted(s, entry),
    onRejected: (reason) => onRejected(s, entry, reason)
  })

// ---------------------------------------------------------------------------------------------------------------
// Staging
// ---------------------------------------------------------------------------------------------------------------

const handleOf = (entry: Entry): Handle => ({
  id: entry.id,
  label: entry.label,
  sourceToolName: entry.sourceToolName,
  status: Effect.sync(() => entry.status)
})

const newEntry = (
  s: State,
  info: { readonly label: string; readonly sourceToolName: string },
  kind: string,
  preview: string | undefined,
  expiresIn: Duration.DurationInput | undefined,
  standing: boolean
): Entry => {
  const createdAt = s.now()
  return {
    id: `${s.prefix}${++s.count}`,
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
    stager: s.store === undefined ? null : s.owner,
    order: ++s.ordinal
  }
}

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

// Records (durable), registers, pushes the forcing directive, steers the reminder; in one uninterruptible
// region, so an action is never recorded without its directive.
const commitStage = (
  s: State,
  entry: Entry,
  payload: unknown,
  context: Context.Context<unknown>,
  tracker: Array<Handle> | undefined
): Effect.Effect<Handle, PendingStoreError> => {
  const soft = Context.get(context as Context.Context<never>, ResolveConfig).enforcement === "soft"
  const publishAll = (): Effect.Effect<Handle> => {
    register(s, entry)
    tracker?.push(handleOf(entry))
    if (entry.standing) return Effect.succeed(handleOf(entry))
    return Effect.flatMap(
      pushDirective(s, entry, soft),
      () => Effect.as(s.bus.steer(resolveReminder(entry.sourceToolName)), handleOf(entry))
    )
  }
  const store = s.store
  return store === undefined ?
    publishAll() :
    Effect.uninterruptible(
      Effect.flatMap(store.insert(recordOf(entry, s.session, payload)), () => Effect.suspend(publishAll))
    )
}

/** See `PendingActions.stage`. The callbacks run with the staging fiber's context. */
export const stage = <E, R>(
  s: State,
  spec: Spec<E, R>
): Effect.Effect<Handle, PendingStoreError, R> =>
  Effect.withFiberRuntime((fiber) => {
    const context = fiber.getFiberRef(FiberRef.currentContext) as Context.Context<unknown>
    const entry = newEntry(s, spec, ActionKind.closureKind, spec.preview, spec.expiresIn, false)
    entry.runner = { callbacks: spec as Invocation.Callbacks<unknown, unknown>, context }
    return commitStage(s, entry, null, context, fiber.getFiberRef(currentTracker))
  })

/**
 * What runs an action of a durable kind: its `apply` and `reject` called with the payload (and `apply` with the
 * reviewer's amendment, decoded before the claim with the kind's `amendment` Schema).
 */
export const kindRunner = <P>(
  kind: ActionKind.ActionKind<P, any, any, any, any, any>,
  payload: P,
  entry: Entry,
  context: Context.Context<unknown>
): Runner => {
  const call = (
    reason: string,
    extra: ResolveParams["extra"] & {},
    amendment: Option.Option<unknown>
  ): ActionKind.Call<any> => ({ id: entry.id, reason, extra, attempt: entry.attempts, amendment })
  const reject = kind.reject
  const amendment = kind.amendment
  return {
    callbacks: {
      label: entry.label,
      sourceToolName: entry.sourceToolName,
      apply: (reason, extra, amended) => kind.apply(payload, call(reason, extra, amended)),
      ...(reject === undefined ? {} : {
        reject: (reason, extra) => reject(payload, call(reason, extra, Option.none()))
      })
    },
    context,
    decodeAmendment: amendment === undefined ? undefined : Schema.decodeUnknownEither(amendment)
  }
}

/** See `PendingActions.stageKind`. */
export const stageKind = <P, I, E, R>(
  s: State,
  given: ActionKind.ActionKind<P, I, E, R> | ActionKind.Contract<P, I, any, any, string>,
  payload: P,
  info: StageInfo
): Effect.Effect<Handle, PendingStoreError, R> =>
  Effect.withFiberRuntime((fiber) => {
    // A contract runs with the handlers the session registers for it (`ActionKind.toLayer`).
    const kind = ActionKind.isRunnable(given) ? given : s.kinds.get(given.name)
    if (kind === undefined) {
      return Effect.dieMessage(
        `stageKind: the session registers no kind ${JSON.stringify(given.name)}; list the contract in ` +
          "layerDurable's kinds with its handlers (ActionKind.toLayer), or stage with the runnable kind"
      )
    }
    const context = fiber.getFiberRef(FiberRef.currentContext) as Context.Context<unknown>
    const entry = newEntry(s, info, kind.name, info.preview, info.expiresIn, kind.standing === true)
    entry.runner = kindRunner(kind, payload, entry, context)
    const tracker = fiber.getFiberRef(currentTracker)
    if (s.store === undefined) return commitStage(s, entry, null, context, tracker)
    // The payload is stored encoded; a payload its own Schema cannot encode is a bug of the producer.
    return Effect.flatMap(
      Effect.orDie(Schema.encode(kind.payload as Schema.Schema<P, I>)(payload)),
      (encoded) => commitStage(s, entry, encoded, context, tracker)
    )
  })
