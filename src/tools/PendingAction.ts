/**
 * Pending actions: what a preview producer stages with `queueResolveHandler`, and how a `resolve` call runs its
 * `apply` or `reject` exactly once.
 *
 * @example
 * ```ts
 * import { Effect, Option } from "effect"
 * import { PendingAction, ToolResult } from "effect-resolve"
 *
 * // Inside a preview tool: stage the work, return the preview to the model.
 * const stage = PendingAction.queueResolveHandler({
 *   label: "Rename: 3 symbols in 2 files",
 *   sourceToolName: "rename",
 *   apply: (reason) => PendingAction.commit(Effect.succeed(ToolResult.text(`Renamed (${reason})`))),
 *   reject: () => Effect.succeed(Option.none()) // the default "Discarded: ..." text
 * })
 * ```
 *
 * @since 0.1.0
 */
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import type * as Fiber from "effect/Fiber"
import * as FiberRef from "effect/FiberRef"
import * as Option from "effect/Option"
import { ApplyFailed, NoPendingAction, ToolError } from "../domain/Errors.js"
import type { Extra, ResolveDetails, ResolveError, ResolveInvocation } from "../domain/ResolveParams.js"
import { resolveReminder } from "../domain/SteeringMessage.js"
import { forceTool } from "../domain/ToolChoice.js"
import * as ToolResult from "../domain/ToolResult.js"
import { messageOf, safeInstanceOf, safely, UnprintableFailure } from "../internal/render.js"
import { ResolveConfig } from "../services/ResolveConfig.js"
import { SteeringBus } from "../services/SteeringBus.js"
import { ToolChoiceQueue } from "../services/ToolChoiceQueue.js"

/**
 * What a producer stages: a label for humans, the tool that staged it, and the two outcomes.
 *
 * `apply` may fail with anything: a `ToolError` reaches the model unchanged, anything else (and any defect) becomes
 * `ApplyFailed`; either way the action stays pending. Wrap the part after which the action counts as applied (a
 * file write) in `commit`. `reject` returns `Option.none()` for the default text `Discarded: <label>. Reason: ...`;
 * its `ToolError` reaches the model unchanged, and anything else it fails or dies with becomes a `ToolError`
 * ("Discard failed: ..."), the action still pending. Whatever the value (a null-prototype object, a throwing getter,
 * a Proxy), its message is rendered without throwing, and the action is never left `resolving`.
 *
 * @since 0.1.0
 * @category models
 */
export interface PendingActionSpec<E = never, R = never> {
  readonly label: string
  readonly sourceToolName: string
  readonly apply: (reason: string, extra: Extra) => Effect.Effect<ToolResult.ToolResult, E, R>
  readonly reject?: (reason: string, extra: Extra) => Effect.Effect<Option.Option<ToolResult.ToolResult>, ToolError, R>
}

/**
 * What `ApplyFailed.cause` holds instead of the original failure value when effect's own `Cause.pretty` cannot print
 * that value (a bigint inside, a Proxy, a throwing getter): an `Error` whose message is the rendered value, with the
 * original under its non-enumerable `original` property.
 *
 * @since 0.1.0
 * @category errors
 */
export { UnprintableFailure } from "../internal/render.js"

/**
 * Where a staged action is in its life: `pending` until a `resolve` call claims it (`resolving`), then `applied` or
 * `discarded`, or back to `pending` if that call failed or was interrupted before committing. `cleared` when the
 * queue dropped it (`clear`, `removeByLabel`).
 *
 * @since 0.1.0
 * @category models
 */
export type PendingStatus = "pending" | "resolving" | "applied" | "discarded" | "cleared"

/**
 * What `queueResolveHandler` returns: the directive's id and a way to watch the action's status.
 *
 * @since 0.1.0
 * @category models
 */
export interface PendingActionHandle {
  readonly id: string
  readonly label: string
  readonly sourceToolName: string
  readonly status: Effect.Effect<PendingStatus>
}

/**
 * The label of the directive that forces `resolve` for a preview staged by `sourceToolName`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const directiveLabel = (sourceToolName: string): string => `pending-action:${sourceToolName}`

/** Set by `commit` once the irreversible part of `apply` succeeded; one per `resolve` call. */
interface CommitMarker {
  committed: boolean
}

/**
 * A fiber's commit slot: the marker of the `resolve` call running in that fiber. The first call in a fiber installs
 * the fiber's own slot; later calls only swap `current` (writing a FiberRef copies the fiber's whole FiberRef map,
 * about 1 µs a write, and a call used to write twice; bench/). A forked fiber gets a slot of its own holding the
 * marker current at the fork, so `commit` in a fiber that `apply` forked counts; `owner` (the fiber id, claimed on
 * first use) tells a fiber's own slot from one copied into it by `setFiberRefs`, which `commit` must not touch.
 */
interface CommitSlot {
  owner: number | undefined
  current: CommitMarker | undefined
}

const commitSlot = FiberRef.unsafeMake<CommitSlot | undefined>(undefined, {
  fork: (slot) => slot?.current === undefined ? undefined : { owner: undefined, current: slot.current },
  join: (parent) => parent
})

// The fiber's own slot, claimed on first use; `undefined` when the fiber has none yet.
const ownSlot = (fiber: Fiber.RuntimeFiber<unknown, unknown>): CommitSlot | undefined => {
  const id = fiber.id().id
  const slot = fiber.getFiberRef(commitSlot)
  if (slot === undefined || (slot.owner !== id && slot.owner !== undefined)) return undefined
  slot.owner = id
  return slot
}

const currentMarker = (fiber: Fiber.RuntimeFiber<unknown, unknown>): CommitMarker | undefined => {
  const slot = fiber.getFiberRef(commitSlot)
  return slot !== undefined && (slot.owner === undefined || slot.owner === fiber.id().id) ? slot.current : undefined
}

/**
 * Runs `self` uninterruptibly and, once it succeeds, counts the pending action as applied even if the `resolve`
 * fiber is interrupted right after. Use it around the irreversible part of `apply`; outside `apply` it only makes
 * `self` uninterruptible.
 *
 * @since 0.1.0
 * @category combinators
 */
export const commit = <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.uninterruptible(
    Effect.withFiberRuntime<A, E, R>((fiber) => {
      const marker = currentMarker(fiber)
      return marker === undefined ? self : Effect.tap(self, () => {
        marker.committed = true
      })
    })
  )

// Whatever `apply` failed or died with, as the resolve error. Never throws, whatever the value's shape (a Proxy, a
// throwing getter, a null-prototype object, a bigint): the lifecycle is settled before this runs, and a throw here
// would leave the caller with an untyped defect.
const toApplyFailure = (spec: { readonly label: string; readonly sourceToolName: string }) =>
(
  cause: Cause.Cause<unknown>
): Effect.Effect<never, ToolError | ApplyFailed> => {
  if (Cause.isInterruptedOnly(cause)) return Effect.failCause(cause as Cause.Cause<never>)
  const failure = Cause.failureOption(cause)
  if (Option.isSome(failure) && safeInstanceOf(failure.value, ToolError)) return Effect.fail(failure.value as ToolError)
  const original = Option.isSome(failure) ? failure.value : safely(() => Cause.squash(cause), undefined)
  const detail = messageOf(original)
  return Effect.fail(
    new ApplyFailed({
      label: spec.label,
      sourceToolName: spec.sourceToolName,
      detail,
      cause: printable(original) ? original : new UnprintableFailure(original, detail)
    })
  )
}

// Whether effect's `Cause.pretty` can print an error holding `value` as its cause: `ApplyFailed` must stay printable
// (by loggers, by `Effect.runPromise`'s rejection), and `Cause.pretty` follows a `cause` unguarded.
const printable = (value: unknown): boolean =>
  safely(() => {
    Cause.pretty(Cause.die(value))
    return true
  }, false)

// Whatever `reject` failed or died with, as the resolve error: a `ToolError` unchanged, anything else (a failure
// its type did not announce, a defect) a `ToolError` saying the discard failed. Never throws.
const toRejectFailure = (spec: { readonly label: string }) =>
(
  cause: Cause.Cause<unknown>
): Effect.Effect<never, ToolError> => {
  if (Cause.isInterruptedOnly(cause)) return Effect.failCause(cause as Cause.Cause<never>)
  const failure = Cause.failureOption(cause)
  if (Option.isSome(failure) && safeInstanceOf(failure.value, ToolError)) return Effect.fail(failure.value as ToolError)
  const original = Option.isSome(failure) ? failure.value : safely(() => Cause.squash(cause), undefined)
  return Effect.fail(
    new ToolError({
      message: `Discard failed: ${messageOf(original)}. The pending action "${spec.label}" is still pending.`
    })
  )
}

/**
 * Merges the resolve metadata into a callback's result: `details` become `ResolveDetails`, with the callback's own
 * details under `sourceResultDetails`.
 *
 * @since 0.1.0
 * @category combinators
 */
export const withResolveDetails = (
  result: ToolResult.ToolResult,
  invocation: ResolveInvocation,
  source: { readonly label?: string; readonly sourceToolName?: string } = {}
): ToolResult.ToolResult => {
  const details: ResolveDetails = {
    action: invocation.action,
    reason: invocation.reason,
    ...(invocation.extra === undefined ? {} : { extra: invocation.extra }),
    ...(source.sourceToolName === undefined ? {} : { sourceToolName: source.sourceToolName }),
    ...(source.label === undefined ? {} : { label: source.label }),
    ...(result.details === undefined || result.details === null ? {} : { sourceResultDetails: result.details })
  }
  return { ...result, details }
}

/**
 * The default text of a discard: `Discarded: <label>. Reason: <reason>`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const discardedText = (label: string, reason: string): string => `Discarded: ${label}. Reason: ${reason}`

/**
 * Runs one invocation against a spec: `apply` or `reject`, the error mapping of `apply`, the default discard text
 * and the details merge. No exactly-once bookkeeping: standing handlers use it directly, queued previews through
 * `queueResolveHandler`.
 *
 * @since 0.1.0
 * @category combinators
 */
export const runResolveInvocation = <E, R>(
  spec: PendingActionSpec<E, R>,
  invocation: ResolveInvocation
): Effect.Effect<ToolResult.ToolResult, ToolError | ApplyFailed, R> =>
  Effect.suspend(() =>
    Effect.matchCauseEffect(attempt(spec, invocation), {
      onSuccess: (value) => Effect.succeed(settled(spec, invocation, value)),
      onFailure: (cause) => failedWith(spec, invocation, cause)
    })
  )

// Calls a producer callback; a throw becomes a defect, as inside `Effect.suspend`. `Cause.die`, not `Effect.die`:
// `Effect.die` inspects an object defect (to attach the span) and throws itself on a revoked Proxy.
const call = <A, E, R>(f: () => Effect.Effect<A, E, R>): Effect.Effect<A, E, R> => {
  try {
    return f()
  } catch (defect) {
    return Effect.failCause(Cause.die(defect))
  }
}

const noReject = Effect.succeed(Option.none<ToolResult.ToolResult>())

// The callback of an invocation: `apply`'s result, or `reject`'s `Option` (none without `reject`).
const attempt = <E, R>(
  spec: PendingActionSpec<E, R>,
  invocation: ResolveInvocation
): Effect.Effect<ToolResult.ToolResult | Option.Option<ToolResult.ToolResult>, unknown, R> => {
  const extra = invocation.extra ?? {}
  if (invocation.action === "apply") return call(() => spec.apply(invocation.reason, extra))
  return spec.reject === undefined ? noReject : call(() => spec.reject!(invocation.reason, extra))
}

// A callback's success as the resolve result: the default discard text for `Option.none()`, and the details merge.
const settled = (
  spec: { readonly label: string; readonly sourceToolName: string },
  invocation: ResolveInvocation,
  value: ToolResult.ToolResult | Option.Option<ToolResult.ToolResult>
): ToolResult.ToolResult =>
  withResolveDetails(
    invocation.action === "apply" ?
      value as ToolResult.ToolResult :
      Option.getOrElse(
        value as Option.Option<ToolResult.ToolResult>,
        () => ToolResult.text(discardedText(spec.label, invocation.reason))
      ),
    invocation,
    spec
  )

// A callback's failure as the resolve error: `apply`'s through `toApplyFailure`, `reject`'s unchanged.
const failedWith = (
  spec: { readonly label: string; readonly sourceToolName: string },
  invocation: ResolveInvocation,
  cause: Cause.Cause<unknown>
): Effect.Effect<never, ToolError | ApplyFailed> => {
  try {
    return invocation.action === "apply" ? toApplyFailure(spec)(cause) : toRejectFailure(spec)(cause)
  } catch {
    // Unreachable by design (the mappings guard every read); kept so that no failure value can turn the mapping
    // itself into a defect.
    return Effect.fail(
      invocation.action === "apply" ?
        new ApplyFailed({ label: spec.label, sourceToolName: spec.sourceToolName, detail: "[unreadable]", cause }) :
        new ToolError({ message: `Discard failed. The pending action "${spec.label}" is still pending.` })
    )
  }
}

/**
 * A staged action's state. Mutable and closure-local to one staging, read and changed only inside synchronous
 * blocks (`Effect.sync` / `Effect.suspend` thunks): such a block runs to its end before any other fiber runs and
 * cannot be interrupted half-way, so each is atomic exactly like the `Ref.modify` it replaces (bench/).
 */
interface Lifecycle {
  status: PendingStatus
  /** Cleared or removed from the queue while a resolve call was running. */
  dropped: boolean
}

/**
 * Stages a pending action (SPEC §5): pushes a one-shot forced `resolve` directive at the head of the queue
 * (label `pending-action:<sourceToolName>`, requeued whenever it is rejected while still pending), then steers the
 * resolve reminder. A `resolve` call claims the action exactly once; a failed or interrupted call leaves it pending,
 * and a failed one steers the reminder again. With `ResolveConfig.enforcement` `"soft"` the directive serves
 * `"auto"` instead (same label, callbacks and id): the turn driver forces `resolve` only after a turn that ignored it.
 *
 * @since 0.1.0
 * @category constructors
 */
export const queueResolveHandler = <E, R>(
  spec: PendingActionSpec<E, R>
): Effect.Effect<PendingActionHandle, never, ToolChoiceQueue | SteeringBus | R> =>
  // No generator and no span: staging is on every preview's hot path; a span with its captured stack cost about
  // 20 µs and the generators several µs more (bench/).
  Effect.withFiberRuntime((fiber) =>
    stage(spec, fiber.getFiberRef(FiberRef.currentContext) as Context.Context<ToolChoiceQueue | SteeringBus | R>)
  )

// The helpers below are module functions rather than closures made per staging: staging is on every preview's hot
// path, and each named closure costs an allocation (and, under tsx, a `__name` call; bench/).

const alreadyResolved = (label: string, status: PendingStatus) =>
  new NoPendingAction({
    message: status === "resolving" ?
      `The pending action "${label}" is being resolved by another call; wait for its result.` :
      `The pending action "${label}" was already ${status}; nothing else is pending this turn.`
  })

const rejectDecision = (lifecycle: Lifecycle, reason: string): "requeue" | "drop" => {
  if (reason === "cleared" || reason === "removed") {
    if (lifecycle.status === "pending") lifecycle.status = "cleared"
    else if (lifecycle.status === "resolving") lifecycle.dropped = true
    return "drop"
  }
  return lifecycle.status === "pending" || lifecycle.status === "resolving" ? "requeue" : "drop"
}

type Attempt = Effect.Effect<ToolResult.ToolResult | Option.Option<ToolResult.ToolResult>, unknown>

// Claims the action, runs its callback interruptibly and settles it, in one uninterruptible region, with the
// helpers of `runResolveInvocation` called in its match rather than as further combinators: each combinator is a
// step of the run loop, and this is every preview's hot path (bench/).
const invokeStaged = <E, R>(
  spec: PendingActionSpec<E, R>,
  context: Context.Context<R>,
  bus: SteeringBus.Service,
  lifecycle: Lifecycle,
  invocation: ResolveInvocation
): Effect.Effect<ToolResult.ToolResult, ResolveError> =>
  Effect.uninterruptibleMask((restore) =>
    Effect.withFiberRuntime<ToolResult.ToolResult, ResolveError>((fiber) => {
      if (lifecycle.status !== "pending") return Effect.fail(alreadyResolved(spec.label, lifecycle.status))
      lifecycle.status = "resolving"
      try {
        return runClaimed(spec, context, bus, lifecycle, invocation, restore, fiber)
      } catch (defect) {
        // Unreachable by design (the callbacks are called through `call`); the claim is undone whatever happens.
        lifecycle.status = lifecycle.dropped ? "cleared" : "pending"
        return failedWith(spec, invocation, Cause.die(defect))
      }
    })
  )

const runClaimed = <E, R>(
  spec: PendingActionSpec<E, R>,
  context: Context.Context<R>,
  bus: SteeringBus.Service,
  lifecycle: Lifecycle,
  invocation: ResolveInvocation,
  restore: <A, E1, R1>(effect: Effect.Effect<A, E1, R1>) => Effect.Effect<A, E1, R1>,
  fiber: Fiber.RuntimeFiber<unknown, unknown>
): Effect.Effect<ToolResult.ToolResult, ResolveError> => {
  const marker: CommitMarker = { committed: false }
  const owned = ownSlot(fiber)
  const slot: CommitSlot = owned ?? { owner: fiber.id().id, current: undefined }
  const previous = slot.current
  slot.current = marker
  const run = attempt(spec, invocation)
  // Providing the staging context merges it into the caller's (about 3.5 µs, bench/); the usual caller (the
  // same fiber or runtime stages and resolves) already runs with that very context.
  const provided: Attempt = fiber.getFiberRef(FiberRef.currentContext) === context ?
    run as Attempt :
    Effect.provide(run, context)
  // The first call in a fiber installs the fiber's slot: the only FiberRef write.
  const body = owned === undefined
    ? Effect.zipRight(FiberRef.set(commitSlot, slot), restore(provided))
    : restore(provided)
  return Effect.matchCauseEffect(body, {
    onSuccess: (value) => {
      slot.current = previous
      lifecycle.status = invocation.action === "apply" ? "applied" : "discarded"
      return Effect.succeed(settled(spec, invocation, value))
    },
    onFailure: (cause): Effect.Effect<never, ResolveError> => {
      slot.current = previous
      // Settle the status first: nothing below may leave the action `resolving`.
      lifecycle.status = marker.committed ?
        (invocation.action === "apply" ? "applied" : "discarded") :
        lifecycle.dropped ?
        "cleared" :
        "pending"
      const failed = failedWith(spec, invocation, cause)
      if (marker.committed) return failed
      // Not when the queue dropped the action meanwhile: a reminder would point at nothing.
      if (lifecycle.status !== "pending" || Cause.isInterruptedOnly(cause)) return failed
      // Still pending: remind the model; the in-flight directive is requeued when the turn ends.
      return Effect.zipRight(bus.steer(resolveReminder(spec.sourceToolName)), failed)
    }
  })
}

const stage = <E, R>(
  spec: PendingActionSpec<E, R>,
  context: Context.Context<ToolChoiceQueue | SteeringBus | R>
): Effect.Effect<PendingActionHandle> => {
  const queue = Context.get(context, ToolChoiceQueue)
  const bus = Context.get(context, SteeringBus)
  const lifecycle: Lifecycle = { status: "pending", dropped: false }
  // Soft enforcement: a non-forcing entry, in flight while its turn runs; the turn driver forces it only after a
  // turn that ignored it.
  const config = Context.get(context, ResolveConfig)
  return Effect.flatMap(
    queue.pushOnce(config.enforcement === "soft" ? "auto" : forceTool("resolve"), {
      label: directiveLabel(spec.sourceToolName),
      now: true,
      onRejected: (reason) => Effect.sync(() => rejectDecision(lifecycle, reason)),
      onInvoked: (invocation) => invokeStaged(spec, context, bus, lifecycle, invocation)
    }),
    (id) =>
      Effect.as(bus.steer(resolveReminder(spec.sourceToolName)), {
        id,
        label: spec.label,
        sourceToolName: spec.sourceToolName,
        status: Effect.sync(() => lifecycle.status)
      })
  )
}
