/**
 * Running one `apply` or `reject` of a pending action: the commit marker that tells an applied action from one
 * interrupted before its irreversible part, the mapping of whatever a callback fails or dies with into the typed
 * resolve error (never throwing, whatever the value), the default discard text and the details merge.
 *
 * @internal
 */
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import type * as Fiber from "effect/Fiber"
import * as FiberRef from "effect/FiberRef"
import * as Option from "effect/Option"
import { ApplyFailed, ToolError } from "../../domain/Errors.js"
import type { Extra, ResolveDetails, ResolveInvocation } from "../../domain/ResolveParams.js"
import * as ToolResult from "../../domain/ToolResult.js"
import { messageOf, safeInstanceOf, safely, UnprintableFailure } from "../../internal/render.js"

/** What a staged action runs: its label and source for messages, and its two callbacks. */
export interface Callbacks<E, R> {
  readonly label: string
  readonly sourceToolName: string
  /** `amendment`: the reviewer's amendment, decoded (a closure ignores it; a kind passes it on as `call.amendment`). */
  readonly apply: (
    reason: string,
    extra: Extra,
    amendment: Option.Option<unknown>
  ) => Effect.Effect<ToolResult.ToolResult, E, R>
  readonly reject?: (reason: string, extra: Extra) => Effect.Effect<Option.Option<ToolResult.ToolResult>, ToolError, R>
}

/** Where an action is described in messages. */
export interface Source {
  readonly label: string
  readonly sourceToolName: string
}

// ---------------------------------------------------------------------------------------------------------------
// The commit marker
// ---------------------------------------------------------------------------------------------------------------

/** Set by `commit` once the irreversible part of `apply` succeeded; one per `resolve` call. */
export interface CommitMarker {
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

/** See `PendingAction.commit`. */
export const commit = <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.uninterruptible(
    Effect.withFiberRuntime<A, E, R>((fiber) => {
      const marker = currentMarker(fiber)
      return marker === undefined ? self : Effect.tap(self, () => {
        marker.committed = true
      })
    })
  )

/**
 * Runs `body` (the callback, made interruptible by the caller's `restore`) with a fresh commit marker current in
 * this fiber; `settle` gets the marker, and the marker is swapped back before it runs, whatever the outcome.
 */
export const withCommitMarker = <A, E, B, E2>(
  fiber: Fiber.RuntimeFiber<unknown, unknown>,
  body: Effect.Effect<A, E>,
  settle: {
    readonly onSuccess: (value: A, marker: CommitMarker) => Effect.Effect<B, E2>
    readonly onFailure: (cause: Cause.Cause<E>, marker: CommitMarker) => Effect.Effect<B, E2>
  }
): Effect.Effect<B, E2> => {
  const marker: CommitMarker = { committed: false }
  const owned = ownSlot(fiber)
  const slot: CommitSlot = owned ?? { owner: fiber.id().id, current: undefined }
  const previous = slot.current
  slot.current = marker
  // The first call in a fiber installs the fiber's slot: the only FiberRef write.
  const run = owned === undefined ? Effect.zipRight(FiberRef.set(commitSlot, slot), body) : body
  return Effect.matchCauseEffect(run, {
    onSuccess: (value) => {
      slot.current = previous
      return settle.onSuccess(value, marker)
    },
    onFailure: (cause) => {
      slot.current = previous
      return settle.onFailure(cause, marker)
    }
  })
}

// ---------------------------------------------------------------------------------------------------------------
// Calling the callbacks, and what their outcomes become
// ---------------------------------------------------------------------------------------------------------------

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

/**
 * The callback of an invocation: `apply`'s result (given the reviewer's decoded `amendment`), or `reject`'s `Option`
 * (none without `reject`).
 */
export const attempt = <E, R>(
  spec: Callbacks<E, R>,
  invocation: ResolveInvocation,
  amendment: Option.Option<unknown> = Option.none()
): Effect.Effect<ToolResult.ToolResult | Option.Option<ToolResult.ToolResult>, unknown, R> => {
  const extra = invocation.extra ?? {}
  if (invocation.action === "apply") return call(() => spec.apply(invocation.reason, extra, amendment))
  return spec.reject === undefined ? noReject : call(() => spec.reject!(invocation.reason, extra))
}

/** See `PendingAction.discardedText`. */
export const discardedText = (label: string, reason: string): string => `Discarded: ${label}. Reason: ${reason}`

/** See `PendingAction.withResolveDetails`. */
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

/** A callback's success as the resolve result: the default discard text for `Option.none()`, and the details merge. */
export const settled = (
  spec: Source,
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

// What a callback failed or died with, as the resolve error: an interruption stays one, a `ToolError` is passed on
// unchanged, anything else (a failure, a defect) becomes `other(original)`. Never throws, whatever the value's shape
// (a Proxy, a throwing getter, a null-prototype object, a bigint): the lifecycle is settled before this runs, and a
// throw here would leave the caller with an untyped defect.
const toResolveFailure = <E>(
  cause: Cause.Cause<unknown>,
  other: (original: unknown) => E
): Effect.Effect<never, ToolError | E> => {
  if (Cause.isInterruptedOnly(cause)) return Effect.failCause(cause as Cause.Cause<never>)
  const failure = Cause.failureOption(cause)
  if (Option.isSome(failure) && safeInstanceOf(failure.value, ToolError)) return Effect.fail(failure.value as ToolError)
  return Effect.fail(other(Option.isSome(failure) ? failure.value : safely(() => Cause.squash(cause), undefined)))
}

// `apply`'s failure: `ApplyFailed`, holding the original value as its cause.
const toApplyFailure = (spec: Source, cause: Cause.Cause<unknown>): Effect.Effect<never, ToolError | ApplyFailed> =>
  toResolveFailure(cause, (original) => {
    const detail = messageOf(original)
    return new ApplyFailed({
      label: spec.label,
      sourceToolName: spec.sourceToolName,
      detail,
      cause: printable(original) ? original : new UnprintableFailure(original, detail)
    })
  })

// Whether effect's `Cause.pretty` can print an error holding `value` as its cause: `ApplyFailed` must stay printable
// (by loggers, by `Effect.runPromise`'s rejection), and `Cause.pretty` follows a `cause` unguarded.
const printable = (value: unknown): boolean =>
  safely(() => {
    Cause.pretty(Cause.die(value))
    return true
  }, false)

// `reject`'s failure that is not a `ToolError` (one its type did not announce, a defect): a `ToolError` saying the
// discard failed and the action is still pending.
const toRejectFailure = (spec: Source, cause: Cause.Cause<unknown>): Effect.Effect<never, ToolError> =>
  toResolveFailure(cause, (original) =>
    new ToolError({
      message: `Discard failed: ${messageOf(original)}. The pending action "${spec.label}" is still pending; ` +
        `call resolve with action "discard" again to retry.`
    }))

/** A callback's failure as the resolve error: `apply`'s as `ApplyFailed` (a `ToolError` unchanged), `reject`'s as a `ToolError`. */
export const failedWith = (
  spec: Source,
  invocation: ResolveInvocation,
  cause: Cause.Cause<unknown>
): Effect.Effect<never, ToolError | ApplyFailed> => {
  try {
    return invocation.action === "apply" ? toApplyFailure(spec, cause) : toRejectFailure(spec, cause)
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
