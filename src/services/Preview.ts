/**
 * One preview: what a producer stages (`stage` in the closure form, or `stageKind` for a durable `ActionKind` with a
 * payload), the handle it gets back, and the `commit` point of its `apply`. Once staged it is a pending action of
 * the session's set, the `PendingActions` service.
 *
 * @example
 * ```ts
 * import { Effect, Option } from "effect"
 * import { Preview, stage, ToolResult } from "effect-resolve"
 *
 * // Inside a preview tool: stage the work, return the preview to the model.
 * const staged = stage({
 *   label: "Rename: 3 symbols in 2 files",
 *   sourceToolName: "rename",
 *   preview: "greet → hello in a.ts, b.ts",
 *   apply: (reason) => Preview.commit(Effect.succeed(ToolResult.text(`Renamed (${reason})`))),
 *   reject: () => Effect.succeed(Option.none()) // the default "Discarded: ..." text
 * })
 * ```
 *
 * @since 0.3.0
 */
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import type { ApplyFailed, ToolError } from "../domain/Errors.js"
import type { PendingStatus } from "../domain/PendingRecord.js"
import type { Extra, ResolveInvocation } from "../domain/ResolveParams.js"
import type * as ToolResult from "../domain/ToolResult.js"
import * as Invocation from "./internal/invocation.js"

/**
 * What a producer stages in the closure form: a label for humans, the tool that staged it, the two outcomes, and
 * optionally the preview text the model saw and an expiry.
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
export interface Spec<E = never, R = never> {
  readonly label: string
  readonly sourceToolName: string
  readonly apply: (reason: string, extra: Extra) => Effect.Effect<ToolResult.ToolResult, E, R>
  readonly reject?: (reason: string, extra: Extra) => Effect.Effect<Option.Option<ToolResult.ToolResult>, ToolError, R>
  /** The text the model saw (a diff, a summary): listed with the action, and shown to the model after a restart. */
  readonly preview?: string
  /** Resolving fails with `PendingActionNotPending` (status `expired`) once this much time has passed. */
  readonly expiresIn?: Duration.DurationInput
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
 * Where a staged action is in its life (see `PendingRecord.PendingStatus`): `pending` until a `resolve` call claims
 * it (`resolving`), then `applied` or `discarded`, or back to `pending` if that call failed or was interrupted before
 * committing; `cleared` when the app dropped it, `expired` after its expiry, `orphaned` when its stager is gone and
 * nothing here can run it, `conflict` when recovery could not tell whether it was applied, `unreadable` when its
 * stored row cannot be read.
 *
 * @since 0.1.0
 * @category models
 */
export type { PendingStatus } from "../domain/PendingRecord.js"

/**
 * What staging returns: the action's id (the one the model may name in `resolve`, and the app in `PendingActions`)
 * and a way to watch its status.
 *
 * @since 0.1.0
 * @category models
 */
export interface Handle {
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

/**
 * Runs `self` uninterruptibly and, once it succeeds, counts the pending action as applied even if the `resolve`
 * fiber is interrupted right after. Use it around the irreversible part of `apply`; outside `apply` it only makes
 * `self` uninterruptible.
 *
 * @since 0.1.0
 * @category combinators
 */
export const commit: <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R> = Invocation.commit

/**
 * Merges the resolve metadata into a callback's result: `details` become `ResolveDetails`, with the callback's own
 * details under `sourceResultDetails`.
 *
 * @since 0.1.0
 * @category combinators
 */
export const withResolveDetails: (
  result: ToolResult.ToolResult,
  invocation: ResolveInvocation,
  source?: { readonly label?: string; readonly sourceToolName?: string }
) => ToolResult.ToolResult = Invocation.withResolveDetails

/**
 * The default text of a discard: `Discarded: <label>. Reason: <reason>`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const discardedText: (label: string, reason: string) => string = Invocation.discardedText

/**
 * Runs one invocation against a spec: `apply` or `reject`, the error mapping of `apply`, the default discard text
 * and the details merge. No exactly-once bookkeeping: standing handlers use it directly, staged actions through
 * `PendingActions`.
 *
 * @since 0.1.0
 * @category combinators
 */
export const runResolveInvocation = <E, R>(
  spec: Spec<E, R>,
  invocation: ResolveInvocation
): Effect.Effect<ToolResult.ToolResult, ToolError | ApplyFailed, R> =>
  Effect.suspend(() =>
    Effect.matchCauseEffect(Invocation.attempt(spec, invocation), {
      onSuccess: (value) => Effect.succeed(Invocation.settled(spec, invocation, value)),
      onFailure: (cause) => Invocation.failedWith(spec, invocation, cause)
    })
  )
