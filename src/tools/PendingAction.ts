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
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FiberRef from "effect/FiberRef"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import * as Ref from "effect/Ref"
import { ApplyFailed, NoPendingAction, ToolError } from "../domain/Errors.js"
import type { Extra, Invoker, ResolveDetails, ResolveInvocation } from "../domain/ResolveParams.js"
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

const currentCommit = FiberRef.unsafeMake<Option.Option<Ref.Ref<boolean>>>(Option.none())

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
      Option.isNone(marker) ? self : Effect.tap(self, () => Ref.set(marker.value, true)))
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

interface Lifecycle {
  readonly status: PendingStatus
  /** Cleared or removed from the queue while a resolve call was running. */
  readonly dropped: boolean
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
export const queueResolveHandler: <E, R>(
  spec: PendingActionSpec<E, R>
) => Effect.Effect<PendingActionHandle, never, ToolChoiceQueue | SteeringBus | R> = Effect.fnUntraced(
  // Untraced: staging is on every preview's hot path and a span with its captured stack cost about 20 µs (bench/).
  function*<E, R>(spec: PendingActionSpec<E, R>) {
    const queue = yield* ToolChoiceQueue
    const bus = yield* SteeringBus
    const context = yield* Effect.context<R>()
    const lifecycle = yield* Ref.make<Lifecycle>({ status: "pending", dropped: false })

    const settle = (committed: boolean, exit: Exit.Exit<ToolResult.ToolResult, unknown>, action: string) =>
      Ref.updateAndGet(lifecycle, (s): Lifecycle => {
        if (Exit.isSuccess(exit) || committed) return { ...s, status: action === "apply" ? "applied" : "discarded" }
        return { ...s, status: s.dropped ? "cleared" : "pending" }
      })

    const alreadyResolved = (status: PendingStatus) =>
      new NoPendingAction({
        message: status === "resolving" ?
          `The pending action "${spec.label}" is being resolved by another call; wait for its result.` :
          `The pending action "${spec.label}" was already ${status}; nothing else is pending this turn.`
      })

    const invoke: Invoker = (invocation) =>
      Effect.uninterruptibleMask((restore) =>
        Effect.gen(function*() {
          const claimed = yield* Ref.modify(
            lifecycle,
            (s): [PendingStatus | true, Lifecycle] =>
              s.status === "pending" ? [true, { ...s, status: "resolving" }] : [s.status, s]
          )
          if (claimed !== true) return yield* Effect.fail(alreadyResolved(claimed))
          const committed = yield* Ref.make(false)
          const exit = yield* restore(runResolveInvocation(spec, invocation)).pipe(
            Effect.provide(context),
            Effect.locally(currentCommit, Option.some(committed)),
            Effect.exit
          )
          const didCommit = yield* Ref.get(committed)
          const settled = yield* settle(didCommit, exit, invocation.action)
          // Not when the queue dropped the action meanwhile: a reminder would point at nothing.
          if (settled.status === "pending" && Exit.isFailure(exit) && !Cause.isInterruptedOnly(exit.cause)) {
            // Still pending: remind the model; the in-flight directive is requeued when the turn ends.
            yield* bus.steer(resolveReminder(spec.sourceToolName))
          }
          return yield* exit
        })
      )

    const onRejected = (reason: string) =>
      Ref.modify(lifecycle, (s): ["requeue" | "drop", Lifecycle] => {
        if (reason === "cleared" || reason === "removed") {
          if (s.status === "pending") return ["drop", { ...s, status: "cleared" }]
          return ["drop", s.status === "resolving" ? { ...s, dropped: true } : s]
        }
        return [s.status === "pending" || s.status === "resolving" ? "requeue" : "drop", s]
      })

    // Soft enforcement: a non-forcing entry, in flight while its turn runs; the turn driver forces it only after a
    // turn that ignored it.
    const config = yield* ResolveConfig
    const id = yield* queue.pushOnce(config.enforcement === "soft" ? "auto" : forceTool("resolve"), {
      label: directiveLabel(spec.sourceToolName),
      now: true,
      onRejected,
      onInvoked: invoke
    })
    yield* bus.steer(resolveReminder(spec.sourceToolName))
    return {
      id,
      label: spec.label,
      sourceToolName: spec.sourceToolName,
      status: Effect.map(Ref.get(lifecycle), (s) => s.status)
    }
  }
)
