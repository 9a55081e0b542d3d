/**
 * The Effect `Metric`s of the turn driver. Every counter is tagged with the session id (`session`), previews with
 * their `outcome` and requeues with their `reason`, so one session's values can be read apart from another's.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { ResolveMetrics } from "effect-resolve/ai"
 *
 * const report = Effect.map(ResolveMetrics.snapshot("session-1"), (s) => `${s.toolChoiceChanges} cache-busting changes`)
 * ```
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"

/**
 * Logical turns driven by the turn driver (one per turn; a request retried, or sent again forcing less, is not
 * counted again).
 *
 * @since 0.1.0
 * @category metrics
 */
export const turns = Metric.counter("effect_resolve_turns_total", {
  description: "Model turns driven by the turn driver",
  incremental: true
})

/**
 * Turns whose `tool_choice` forced a tool call (a named tool or `"required"`).
 *
 * @since 0.1.0
 * @category metrics
 */
export const forcedTurns = Metric.counter("effect_resolve_forced_turns_total", {
  description: "Turns whose tool_choice forced a tool call",
  incremental: true
})

/**
 * Requests whose `tool_choice` differs from the previous request's (a turn sent again forcing less counts too); each
 * one can invalidate a provider's prompt cache.
 *
 * @since 0.1.0
 * @category metrics
 */
export const toolChoiceChanges = Metric.counter("effect_resolve_tool_choice_changes_total", {
  description: "tool_choice changes between consecutive requests",
  incremental: true
})

/**
 * Previews by `outcome`: `staged`, `applied`, `discarded`, `failed` (an apply that failed; the preview stays
 * pending).
 *
 * @since 0.1.0
 * @category metrics
 */
export const previews = Metric.counter("effect_resolve_previews_total", {
  description: "Previews staged, applied, discarded and failed",
  incremental: true
})

/**
 * Directives put back at the head of the queue, by `reason`: `error`, `aborted`, `not_invoked`.
 *
 * @since 0.1.0
 * @category metrics
 */
export const requeues = Metric.counter("effect_resolve_requeues_total", {
  description: "Directives requeued, by reject reason",
  incremental: true
})

/**
 * Times a session's forcing of `resolve` was degraded because the provider refused a forced `tool_choice`, by the
 * level it went down to (`to`): `required` (`"required"` with only `resolve` offered) or `reminder` (`"auto"` with
 * the reminder again).
 *
 * @since 0.2.0
 * @category metrics
 */
export const forcingDegraded = Metric.counter("effect_resolve_forcing_degraded_total", {
  description: "Forcing of resolve degraded after the provider refused a forced tool_choice",
  incremental: true
})

/**
 * What a preview became.
 *
 * @since 0.1.0
 * @category models
 */
export type PreviewOutcome = "staged" | "applied" | "discarded" | "failed"

/**
 * The reasons that requeue a directive.
 *
 * @since 0.1.0
 * @category models
 */
export type RequeueReason = "error" | "aborted" | "not_invoked"

const bump = (metric: Metric.Metric.Counter<number>, tags: Record<string, string>) =>
  Metric.increment(Object.entries(tags).reduce((m, [key, value]) => Metric.tagged(m, key, value), metric))

/**
 * Counts one turn for `session`.
 *
 * @since 0.1.0
 * @category recording
 */
export const recordTurn = (session: string, forced: boolean, changed: boolean): Effect.Effect<void> =>
  Effect.all([
    bump(turns, { session }),
    forced ? bump(forcedTurns, { session }) : Effect.void,
    changed ? bump(toolChoiceChanges, { session }) : Effect.void
  ], { discard: true })

/**
 * Counts one more `tool_choice` change for `session`: a request of a turn sent again with another choice (forcing
 * degraded).
 *
 * @since 0.2.0
 * @category recording
 */
export const recordToolChoiceChange = (session: string): Effect.Effect<void> => bump(toolChoiceChanges, { session })

/**
 * The forcing levels a session can be degraded to.
 *
 * @since 0.2.0
 * @category models
 */
export type DegradedLevel = "required" | "reminder"

/**
 * Counts one degradation of forcing for `session`, to `level`.
 *
 * @since 0.2.0
 * @category recording
 */
export const recordForcingDegraded = (session: string, level: DegradedLevel): Effect.Effect<void> =>
  bump(forcingDegraded, { session, to: level })

/**
 * Counts one preview outcome for `session`.
 *
 * @since 0.1.0
 * @category recording
 */
export const recordPreview = (session: string, outcome: PreviewOutcome): Effect.Effect<void> =>
  bump(previews, { session, outcome })

/**
 * Counts one requeue for `session`.
 *
 * @since 0.1.0
 * @category recording
 */
export const recordRequeue = (session: string, reason: RequeueReason): Effect.Effect<void> =>
  bump(requeues, { session, reason })

/**
 * The counters of one session.
 *
 * @since 0.1.0
 * @category models
 */
export interface Snapshot {
  readonly turns: number
  readonly forcedTurns: number
  readonly toolChoiceChanges: number
  readonly previews: Readonly<Record<PreviewOutcome, number>>
  readonly requeues: Readonly<Record<RequeueReason, number>>
  /** Degradations of forcing, by the level reached. */
  readonly forcingDegraded: Readonly<Record<DegradedLevel, number>>
}

const read = (metric: Metric.Metric.Counter<number>, tags: Record<string, string>) =>
  Effect.map(
    Metric.value(Object.entries(tags).reduce((m, [key, value]) => Metric.tagged(m, key, value), metric)),
    (state) => state.count
  )

/**
 * Reads every counter of `session`.
 *
 * @since 0.1.0
 * @category reading
 */
export const snapshot = (session: string): Effect.Effect<Snapshot> =>
  Effect.all({
    turns: read(turns, { session }),
    forcedTurns: read(forcedTurns, { session }),
    toolChoiceChanges: read(toolChoiceChanges, { session }),
    previews: Effect.all({
      staged: read(previews, { session, outcome: "staged" }),
      applied: read(previews, { session, outcome: "applied" }),
      discarded: read(previews, { session, outcome: "discarded" }),
      failed: read(previews, { session, outcome: "failed" })
    }),
    requeues: Effect.all({
      error: read(requeues, { session, reason: "error" }),
      aborted: read(requeues, { session, reason: "aborted" }),
      not_invoked: read(requeues, { session, reason: "not_invoked" })
    }),
    forcingDegraded: Effect.all({
      required: read(forcingDegraded, { session, to: "required" }),
      reminder: read(forcingDegraded, { session, to: "reminder" })
    })
  })
