/**
 * The Effect `Metric`s of the turn driver, and the counts of one session. The metrics are process-wide and their tags
 * are bounded (previews by `outcome`, requeues by `reason`, degradations by `to`): a server that runs any number of
 * sessions exports the same few series. One session's counts live in the session (`Counters`, a `Ref`), and
 * `TurnDriver.metrics` reads them.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { ResolveMetrics, TurnDriver } from "effect-resolve/ai"
 *
 * // One session's counts, and the whole process's.
 * const session = Effect.flatMap(TurnDriver, (driver) => driver.metrics)
 * const report = Effect.map(ResolveMetrics.totals, (s) => `${s.toolChoiceChanges} cache-busting changes`)
 * ```
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import * as Ref from "effect/Ref"

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
 * the reminder again). A refusal that leaves the level as it was (a refused `"required"` while a named tool is still
 * accepted) is not counted.
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

/**
 * The forcing levels a session can be degraded to.
 *
 * @since 0.2.0
 * @category models
 */
export type DegradedLevel = "required" | "reminder"

/**
 * The counters of one session (`TurnDriver.metrics`), or of the whole process (`totals`).
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

const zero: Snapshot = {
  turns: 0,
  forcedTurns: 0,
  toolChoiceChanges: 0,
  previews: { staged: 0, applied: 0, discarded: 0, failed: 0 },
  requeues: { error: 0, aborted: 0, not_invoked: 0 },
  forcingDegraded: { required: 0, reminder: 0 }
}

/**
 * The counts of one session, kept in the session: the `record*` functions add to them and to the process-wide
 * metrics. They start at zero when the session's driver is built (a durable session opened again starts afresh).
 *
 * @since 0.3.0
 * @category models
 */
export interface Counters {
  /** The counts so far. */
  readonly snapshot: Effect.Effect<Snapshot>
  /** Changes the counts (what the `record*` functions use). */
  readonly update: (f: (counts: Snapshot) => Snapshot) => Effect.Effect<void>
}

/**
 * Fresh counters for one session, all zero.
 *
 * @since 0.3.0
 * @category constructors
 */
export const makeCounters: Effect.Effect<Counters> = Effect.map(Ref.make(zero), (ref) => ({
  snapshot: Ref.get(ref),
  update: (f) => Ref.update(ref, f)
}))

// The tagged series, made once: their tags are bounded, so the process exports these few series and no more.
const previewsBy: Readonly<Record<PreviewOutcome, Metric.Metric.Counter<number>>> = {
  staged: Metric.tagged(previews, "outcome", "staged"),
  applied: Metric.tagged(previews, "outcome", "applied"),
  discarded: Metric.tagged(previews, "outcome", "discarded"),
  failed: Metric.tagged(previews, "outcome", "failed")
}
const requeuesBy: Readonly<Record<RequeueReason, Metric.Metric.Counter<number>>> = {
  error: Metric.tagged(requeues, "reason", "error"),
  aborted: Metric.tagged(requeues, "reason", "aborted"),
  not_invoked: Metric.tagged(requeues, "reason", "not_invoked")
}
const degradedBy: Readonly<Record<DegradedLevel, Metric.Metric.Counter<number>>> = {
  required: Metric.tagged(forcingDegraded, "to", "required"),
  reminder: Metric.tagged(forcingDegraded, "to", "reminder")
}

/**
 * Counts one turn for the session.
 *
 * @since 0.1.0
 * @category recording
 */
export const recordTurn = (counters: Counters, forced: boolean, changed: boolean): Effect.Effect<void> =>
  Effect.all([
    counters.update((s) => ({
      ...s,
      turns: s.turns + 1,
      forcedTurns: s.forcedTurns + (forced ? 1 : 0),
      toolChoiceChanges: s.toolChoiceChanges + (changed ? 1 : 0)
    })),
    Metric.increment(turns),
    forced ? Metric.increment(forcedTurns) : Effect.void,
    changed ? Metric.increment(toolChoiceChanges) : Effect.void
  ], { discard: true })

/**
 * Counts one more `tool_choice` change for the session: a request of a turn sent again with another choice (forcing
 * degraded).
 *
 * @since 0.2.0
 * @category recording
 */
export const recordToolChoiceChange = (counters: Counters): Effect.Effect<void> =>
  Effect.zipRight(
    counters.update((s) => ({ ...s, toolChoiceChanges: s.toolChoiceChanges + 1 })),
    Metric.increment(toolChoiceChanges)
  )

/**
 * Counts one degradation of forcing for the session, to `level`.
 *
 * @since 0.2.0
 * @category recording
 */
export const recordForcingDegraded = (counters: Counters, level: DegradedLevel): Effect.Effect<void> =>
  Effect.zipRight(
    counters.update((s) => ({
      ...s,
      forcingDegraded: { ...s.forcingDegraded, [level]: s.forcingDegraded[level] + 1 }
    })),
    Metric.increment(degradedBy[level])
  )

/**
 * Counts one preview outcome for the session.
 *
 * @since 0.1.0
 * @category recording
 */
export const recordPreview = (counters: Counters, outcome: PreviewOutcome): Effect.Effect<void> =>
  Effect.zipRight(
    counters.update((s) => ({ ...s, previews: { ...s.previews, [outcome]: s.previews[outcome] + 1 } })),
    Metric.increment(previewsBy[outcome])
  )

/**
 * Counts one requeue for the session.
 *
 * @since 0.1.0
 * @category recording
 */
export const recordRequeue = (counters: Counters, reason: RequeueReason): Effect.Effect<void> =>
  Effect.zipRight(
    counters.update((s) => ({ ...s, requeues: { ...s.requeues, [reason]: s.requeues[reason] + 1 } })),
    Metric.increment(requeuesBy[reason])
  )

const read = (metric: Metric.Metric.Counter<number>) => Effect.map(Metric.value(metric), (state) => state.count)

/**
 * The process-wide counts: every session of the process since it started, read from the metrics.
 *
 * @since 0.3.0
 * @category reading
 */
export const totals: Effect.Effect<Snapshot> = Effect.all({
  turns: read(turns),
  forcedTurns: read(forcedTurns),
  toolChoiceChanges: read(toolChoiceChanges),
  previews: Effect.all({
    staged: read(previewsBy.staged),
    applied: read(previewsBy.applied),
    discarded: read(previewsBy.discarded),
    failed: read(previewsBy.failed)
  }),
  requeues: Effect.all({
    error: read(requeuesBy.error),
    aborted: read(requeuesBy.aborted),
    not_invoked: read(requeuesBy.not_invoked)
  }),
  forcingDegraded: Effect.all({
    required: read(degradedBy.required),
    reminder: read(degradedBy.reminder)
  })
})

/**
 * The process-wide counts, as `totals`: since 0.3 the metrics carry no `session` tag (one series per session grew
 * without bound in a long-running server), so one session's counts cannot be read from them, and `session` is not
 * used.
 *
 * @deprecated Read one session's counts with `TurnDriver.metrics` (`driver.metrics`), and the process's with `totals`.
 * @since 0.1.0
 * @category reading
 */
export const snapshot = (_session: string): Effect.Effect<Snapshot> => totals
