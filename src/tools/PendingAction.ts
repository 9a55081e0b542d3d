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
import * as Exit from "effect/Exit"
import * as FiberRef from "effect/FiberRef"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import { ApplyFailed, NoPendingAction, ToolError } from "../domain/Errors.js"
import type { Extra, ResolveDetails, ResolveError, ResolveInvocation } from "../domain/ResolveParams.js"
import { resolveReminder } from "../domain/SteeringMessage.js"
import { forceTool } from "../domain/ToolChoice.js"
import * as ToolResult from "../domain/ToolResult.js"
import { ResolveConfig } from "../services/ResolveConfig.js"
import { SteeringBus } from "../services/SteeringBus.js"
import { ToolChoiceQueue } from "../services/ToolChoiceQueue.js"

/**
 * What a producer stages: a label for humans, the tool that staged it, and the two outcomes.
 *
 * `apply` may fail with anything: a `ToolError` reaches the model unchanged, anything else (and any defect) becomes
 * `ApplyFailed`; either way the action stays pending. Wrap the part after which the action counts as applied (a
 * file write) in `commit`. `reject` returns `Option.none()` for the default text `Discarded: <label>. Reason: ...`.
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

// `undefined` rather than `Option`: setting a FiberRef compares the old and new values with `Equal.equals`, and two
// `Option.some` of plain objects are compared by hashing them (a WeakMap entry per marker, bench/).
const currentCommit = FiberRef.unsafeMake<CommitMarker | undefined>(undefined)

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
    Effect.flatMap(FiberRef.get(currentCommit), (marker) =>
      marker === undefined ? self : Effect.tap(self, () =>
        Effect.sync(() => {
          marker.committed = true
        })))
  )

const messageOf = (error: unknown): string => {
  if (Predicate.hasProperty(error, "message") && typeof error.message === "string" && error.message !== "") {
    return error.message
  }
  if (typeof error === "string" && error !== "") return error
  try {
    return JSON.stringify(error) ?? String(error)
  } catch {
    return String(error)
  }
}

const toApplyFailure = (spec: { readonly label: string; readonly sourceToolName: string }) =>
(
  cause: Cause.Cause<unknown>
): Effect.Effect<never, ToolError | ApplyFailed> => {
  if (Cause.isInterruptedOnly(cause)) return Effect.failCause(cause as Cause.Cause<never>)
  const failure = Cause.failureOption(cause)
  if (Option.isSome(failure) && failure.value instanceof ToolError) return Effect.fail(failure.value)
  const original = Option.isSome(failure) ? failure.value : Cause.squash(cause)
  return Effect.fail(
    new ApplyFailed({
      label: spec.label,
      sourceToolName: spec.sourceToolName,
      detail: messageOf(original),
      cause: original
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
): Effect.Effect<ToolResult.ToolResult, ToolError | ApplyFailed, R> => {
  const extra = invocation.extra ?? {}
  const run: Effect.Effect<ToolResult.ToolResult, ToolError | ApplyFailed, R> = invocation.action === "apply" ?
    Effect.catchAllCause(Effect.suspend(() => spec.apply(invocation.reason, extra)), toApplyFailure(spec)) :
    spec.reject === undefined ?
    Effect.succeed(ToolResult.text(discardedText(spec.label, invocation.reason))) :
    Effect.map(
      Effect.suspend(() => spec.reject!(invocation.reason, extra)),
      Option.getOrElse(() => ToolResult.text(discardedText(spec.label, invocation.reason)))
    )
  return Effect.map(run, (result) => withResolveDetails(result, invocation, spec))
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
  Effect.flatMap(Effect.context<ToolChoiceQueue | SteeringBus | R>(), (context) => stage(spec, context))

// The helpers below are module functions rather than closures made per staging: staging is on every preview's hot
// path, and each named closure costs an allocation (and, under tsx, a `__name` call; bench/).

// Providing the staging context merges it into the caller's (about 3.5 µs a call, bench/); when the call runs with
// that very context (the usual case: the same fiber or runtime stages and resolves), the merge is a no-op.
const withStagingContext = <A, E, R>(
  context: Context.Context<R>,
  effect: Effect.Effect<A, E, R>
): Effect.Effect<A, E> =>
  Effect.contextWithEffect((current: Context.Context<never>) =>
    current === (context as Context.Context<unknown>) ?
      (effect as Effect.Effect<A, E>) :
      Effect.provide(effect, context)
  )

const settle = (
  lifecycle: Lifecycle,
  committed: boolean,
  exit: Exit.Exit<ToolResult.ToolResult, unknown>,
  action: string
) => {
  if (Exit.isSuccess(exit) || committed) lifecycle.status = action === "apply" ? "applied" : "discarded"
  else lifecycle.status = lifecycle.dropped ? "cleared" : "pending"
}

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

const invokeStaged = <E, R>(
  spec: PendingActionSpec<E, R>,
  context: Context.Context<R>,
  bus: SteeringBus.Service,
  lifecycle: Lifecycle,
  invocation: ResolveInvocation
): Effect.Effect<ToolResult.ToolResult, ResolveError> =>
  Effect.uninterruptibleMask((restore) =>
    Effect.suspend((): Effect.Effect<ToolResult.ToolResult, ResolveError> => {
      if (lifecycle.status !== "pending") return Effect.fail(alreadyResolved(spec.label, lifecycle.status))
      lifecycle.status = "resolving"
      const marker: CommitMarker = { committed: false }
      // What `Effect.locally` does, without its acquire/release machinery (about 3 µs a call, bench/): this
      // region is uninterruptible, so the previous marker is always restored.
      return Effect.flatMap(FiberRef.getAndSet(currentCommit, marker), (previousCommit) =>
        Effect.flatMap(
          Effect.exit(withStagingContext(context, restore(runResolveInvocation(spec, invocation)))),
          (exit) =>
            Effect.zipRight(
              FiberRef.set(currentCommit, previousCommit),
              Effect.suspend(() => {
                settle(lifecycle, marker.committed, exit, invocation.action)
                // Not when the queue dropped the action meanwhile: a reminder would point at nothing.
                if (lifecycle.status === "pending" && Exit.isFailure(exit) && !Cause.isInterruptedOnly(exit.cause)) {
                  // Still pending: remind the model; the in-flight directive is requeued when the turn ends.
                  return Effect.zipRight(bus.steer(resolveReminder(spec.sourceToolName)), exit)
                }
                return exit
              })
            )
        ))
    })
  )

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
