/**
 * What a turn driver's run fails with, besides the model's `AiError`: too many turns, a provider that kept failing
 * while a directive was served, a model that kept ignoring a pending preview. In each case the run stops and nothing
 * staged is lost: a preview stays pending, for the next run, the app or a person.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { TurnDriver } from "effect-resolve/ai"
 *
 * const session = Effect.flatMap(TurnDriver, (driver) => driver.run("Rename foo to bar.")).pipe(
 *   Effect.catchTags({
 *     MaxTurnsExceeded: (error) => Effect.logWarning(error.message),
 *     RequeueLimitExceeded: (error) => Effect.logWarning(`${error.label} is still pending: ${error.message}`),
 *     ResolveNotCalled: (error) => Effect.logWarning(`${error.label} is still pending: ${error.message}`)
 *   })
 * )
 * ```
 *
 * @since 0.3.0
 */
import * as Schema from "effect/Schema"
import { errorText } from "./internal/quote.js"

/**
 * The run reached `maxTurns` model requests while the model still asked for tools or something was pending.
 *
 * @since 0.1.0
 * @category errors
 */
export class MaxTurnsExceeded extends Schema.TaggedError<MaxTurnsExceeded>("effect-resolve/MaxTurnsExceeded")(
  "MaxTurnsExceeded",
  { maxTurns: Schema.Number, pending: Schema.Array(Schema.String) }
) {
  /**
   * @since 0.1.0
   */
  override get message(): string {
    return `The run stopped after ${this.maxTurns} turns without finishing` +
      (this.pending.length === 0 ? "" : ` (still queued: ${this.pending.join(", ")})`) +
      `. Raise maxTurns, or check that the model can finish the task.`
  }
}

/**
 * The model request failed more than `maxErrorRequeues` times in a row (every HTTP attempt counts, retries
 * included) while a directive was served, and forcing less did not help: the run stopped. The directive was rejected
 * with `"error"` like any failed turn, so a preview is **still pending** at the head of the queue (`pending`): the
 * next run serves it again with a fresh count, and only the app (`clear`, `removeByLabel`) or a `discard` ends it.
 * `errors` counts the failed requests up to the limit; `probed` lists the weaker forcing levels then tried once each
 * (all failed too); `cause` is the last error received (the last probe's, when there were probes).
 *
 * @since 0.1.0
 * @category errors
 */
export class RequeueLimitExceeded
  extends Schema.TaggedError<RequeueLimitExceeded>("effect-resolve/RequeueLimitExceeded")("RequeueLimitExceeded", {
    directiveId: Schema.String,
    label: Schema.String,
    errors: Schema.Number,
    /** The directive is back at the head of the queue (a preview: still pending). */
    pending: Schema.Boolean,
    cause: Schema.Defect,
    /**
     * The weaker forcing levels tried once each after the limit, in order (a forced preview only); each failed.
     *
     * @since 0.3.0
     */
    probed: Schema.optionalWith(Schema.Array(Schema.Literal("required", "reminder")), { default: () => [] })
  })
{
  /**
   * @since 0.1.0
   */
  override get message(): string {
    const probes = this.probed.map((level) => `"${level}"`).join(", then ")
    return `The model request failed ${this.errors} times in a row while "${this.label}" was served` +
      (this.probed.length === 0 ? "" : `, then once at each weaker forcing level (${probes})`) +
      `, and the run stopped. ` +
      (this.pending ?
        `It is still pending, at the head of the queue: run again once the provider answers, or resolve, discard ` +
        `or clear it in the app.` :
        `The directive's onRejected dropped it.`) +
      ` The last error${this.probed.length === 0 ? "" : ` (at "${this.probed.at(-1)}")`}: ${errorText(this.cause)}`
  }
}

/**
 * The model ignored a pending preview for `maxForcedTurns` turns in a row that pushed it to resolve: `forcedTurns`
 * forced `resolve`, and `remindedTurns` only repeated the reminder (the session could not force: see
 * `TurnDriver.capabilities`). The run failed instead of looping. The preview stays pending: the app may run again,
 * resolve it itself, or drop it with `ToolChoiceQueue.removeByLabel` / `clear`.
 *
 * @since 0.1.0
 * @category errors
 */
export class ResolveNotCalled extends Schema.TaggedError<ResolveNotCalled>("effect-resolve/ResolveNotCalled")(
  "ResolveNotCalled",
  {
    directiveId: Schema.String,
    label: Schema.String,
    /** Turns whose `tool_choice` forced `resolve`. */
    forcedTurns: Schema.Number,
    /**
     * Turns that could only repeat the reminder, because the session could not force a tool call.
     *
     * @since 0.3.0
     */
    remindedTurns: Schema.optionalWith(Schema.Number, { default: () => 0 })
  }
) {
  /**
   * @since 0.1.0
   */
  override get message(): string {
    const count = (n: number, what: string) => `${n} ${what}${n === 1 ? "" : "s"}`
    const forced = count(this.forcedTurns, "forced turn")
    const reminded = `${count(this.remindedTurns, "turn")} that only repeated the reminder`
    const turns = this.remindedTurns === 0 ? forced : this.forcedTurns === 0 ? reminded : `${forced} and ${reminded}`
    return `The model did not call resolve for "${this.label}" in ${turns}; the run stopped and the preview is ` +
      `still pending. ` +
      (this.remindedTurns === 0 ?
        `Check that the model supports forcing a tool, then run again` :
        `This session cannot force a tool call now (ResolveConfig.modelCapabilities, less the forcing the provider ` +
        `refused), so its last turns only reminded the model: check that the model follows the reminder, then ` +
        `run again`) +
      `, or resolve or clear the preview in the app.`
  }
}

/**
 * An exclusive durable session (`layerDurable({ exclusive: true })`, every cluster runner's) lost its session: another
 * runtime instance acquired it (`reason: "fenced"`), or this one's lease lapsed before it was renewed
 * (`"leaseLapsed"`: the process was paused or cut off from the store). The run stopped at once: no further model
 * request, no file write, no store write. What it staged and saved before is kept; the session's new owner carries
 * on from there.
 *
 * @since 0.4.0
 * @category errors
 */
export class SessionLost extends Schema.TaggedError<SessionLost>("effect-resolve/SessionLost")("SessionLost", {
  session: Schema.String,
  epoch: Schema.Number,
  reason: Schema.Literal("fenced", "leaseLapsed"),
  detail: Schema.String
}) {
  /**
   * @since 0.4.0
   */
  override get message(): string {
    return `This runtime lost session ${JSON.stringify(this.session)} (owner epoch ${this.epoch}): ${this.detail} ` +
      "The run stopped before any further model request or write; open the session again (a new owner) to continue."
  }
}

/**
 * What a run can fail with, besides the model's `AiError`.
 *
 * @since 0.1.0
 * @category errors
 */
export type TurnDriverError = MaxTurnsExceeded | RequeueLimitExceeded | ResolveNotCalled | SessionLost
