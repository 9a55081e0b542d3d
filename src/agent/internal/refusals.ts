/**
 * How a session forces less when its provider refuses forcing: what it learned the provider refuses (a named tool
 * choice, `"required"`, or both), the capabilities it has left, the refusal learned from an HTTP 400, and the
 * probes that try each weaker level once when a forced preview keeps failing. What is learned holds for the rest of
 * the session (a durable one saves it), and the driver never drops a preview for it.
 *
 * @internal
 */
import type * as AiError from "@effect/ai/AiError"
import type * as LanguageModel from "@effect/ai/LanguageModel"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Ref from "effect/Ref"
import type { ModelCapabilities, ResolveConfigShape } from "../../services/ResolveConfig.js"
import { forcingLevel } from "../Forcing.js"
import * as ResolveMetrics from "../ResolveMetrics.js"
import { forceResolve, type Plan } from "./forcingPolicy.js"
import { errorText } from "./quote.js"

/** The forcing the provider refused in this session. */
export interface Refused {
  readonly named: boolean
  readonly required: boolean
}

/** What a session that refused nothing yet starts with. */
export const refusedNothing: Refused = { named: false, required: false }

/** What the refusal rules read and change: what the session learned, and its counts. */
export interface RefusalContext {
  readonly refused: Ref.Ref<Refused>
  readonly counters: ResolveMetrics.Counters
}

export const withRefused = (capabilities: ModelCapabilities, refused: Refused): ModelCapabilities => ({
  ...capabilities,
  supportsNamedToolChoice: capabilities.supportsNamedToolChoice && !refused.named,
  supportsRequiredToolChoice: capabilities.supportsRequiredToolChoice && !refused.required
})

/** What the session's model can be sent now: the configured capabilities less the forcing refused. */
export const capabilitiesOf = (
  refused: Ref.Ref<Refused>,
  config: ResolveConfigShape
): Effect.Effect<ModelCapabilities> => Effect.map(Ref.get(refused), (r) => withRefused(config.modelCapabilities, r))

/**
 * The configuration tool handlers and `resolve` see now: the session's capabilities, and `"soft"` enforcement once
 * the session cannot force `resolve` by name.
 */
export const effectiveConfig = (
  refused: Ref.Ref<Refused>,
  config: ResolveConfigShape
): Effect.Effect<ResolveConfigShape> =>
  Effect.map(capabilitiesOf(refused, config), (capabilities): ResolveConfigShape => ({
    ...config,
    modelCapabilities: capabilities,
    enforcement: config.enforcement === "soft" || !capabilities.supportsNamedToolChoice ? "soft" : "force"
  }))

/**
 * The forcing level a request's `tool_choice` used: a named tool is `named`; `"required"`, or `required` among some
 * tools, is `required`; a choice that forces nothing has none.
 */
const levelOf = (choice: LanguageModel.ToolChoice<string>): "named" | "required" | undefined =>
  choice === "required" ?
    "required" :
    typeof choice !== "object" ?
    undefined :
    "tool" in choice ?
    "named" :
    choice.mode === "required" ?
    "required" :
    undefined

/**
 * The refusals once the level `choice` used is refused too: exactly that level, the others kept; `undefined` when
 * `choice` forces nothing or its level was already refused (nothing to learn).
 */
const refuse = (refused: Refused, choice: LanguageModel.ToolChoice<string>): Refused | undefined => {
  const level = levelOf(choice)
  return level === undefined || refused[level] ? undefined : { ...refused, [level]: true }
}

/**
 * Records forcing the provider refused: the session's capabilities from now on, a warning, and a metric when the
 * level `resolve` is forced at went down (a refused `"required"` leaves named forcing as it was).
 */
const learn = (
  context: RefusalContext,
  config: ResolveConfigShape,
  next: Refused,
  how: string,
  error: AiError.AiError
) =>
  Effect.gen(function*() {
    const before = forcingLevel(withRefused(config.modelCapabilities, yield* Ref.getAndSet(context.refused, next)))
    const level = forcingLevel(withRefused(config.modelCapabilities, next))
    if (level !== "named" && level !== before) yield* ResolveMetrics.recordForcingDegraded(context.counters, level)
    const flags = [
      ...(next.named ? ["supportsNamedToolChoice: false"] : []),
      ...(next.required ? ["supportsRequiredToolChoice: false"] : [])
    ].join(", ")
    yield* Effect.logWarning(
      `effect-resolve: the provider refused forced tool_choice (${how}: ${errorText(error)}); ` +
        (level === before ?
          `the session no longer sends it, and forcing resolve stays "${level}".` :
          `forcing resolve is degraded to "${level}" for the rest of this session.`) +
        ` Set ResolveConfig.modelCapabilities (${flags}) to start there.`
    )
  })

/**
 * The provider refused the forcing of a request that sent `choice` (`isForcingRefusal`): learns it, and gives the
 * capabilities to send the same turn again at, forcing less; `none` when there is nothing to learn (`choice` forced
 * nothing, or its level was refused already). Exactly the level this request used is refused: a provider that
 * refuses "required" may still accept a named tool, and the other way round.
 */
export const learnRefusal = (
  context: RefusalContext,
  config: ResolveConfigShape,
  choice: LanguageModel.ToolChoice<string>,
  error: AiError.AiError
): Effect.Effect<Option.Option<ModelCapabilities>> =>
  Effect.gen(function*() {
    const next = refuse(yield* Ref.get(context.refused), choice)
    if (next === undefined) return Option.none()
    yield* learn(context, config, next, `HTTP 400 to ${JSON.stringify(choice)}`, error)
    return Option.some(withRefused(config.modelCapabilities, next))
  })

/** A weaker forcing level a probe tried. */
export type ProbedLevel = "required" | "reminder"

/** How the probes of a failing forced preview ended. */
export type ProbeOutcome =
  /** A weaker level was accepted (and learned): send the turn at `capabilities`; `response` is its answer. */
  | {
    readonly _tag: "Accepted"
    readonly response: LanguageModel.GenerateTextResponse<any>
    readonly capabilities: ModelCapabilities
  }
  /** Every weaker level failed too (or there was none): the run stops, citing `lastError`. */
  | { readonly _tag: "Failed"; readonly lastError: AiError.AiError; readonly probed: ReadonlyArray<ProbedLevel> }
  /** A probe was interrupted, or died: the turn is aborted with `cause`. */
  | { readonly _tag: "Halted"; readonly cause: Cause.Cause<never> }

/**
 * A forced preview that keeps failing: try forcing less, one attempt per level. If one succeeds, the failures were
 * a refusal (learned); if none does, the provider is failing. `failing` is the choice the failing requests sent
 * (`streak` of them, the last with `error`); `attempt` sends the turn with a probe's plan.
 */
export const probeWeaker = <R>(
  context: RefusalContext,
  config: ResolveConfigShape,
  failing: {
    readonly choice: LanguageModel.ToolChoice<string>
    readonly streak: number
    readonly error: AiError.AiError
  },
  attempt: (probe: Plan) => Effect.Effect<Exit.Exit<LanguageModel.GenerateTextResponse<any>, AiError.AiError>, never, R>
): Effect.Effect<ProbeOutcome, never, R> =>
  Effect.gen(function*() {
    /** The last error received. */
    let lastError = failing.error
    const probes: Array<{ readonly level: ProbedLevel; readonly choice: unknown }> = []
    // The level the failing requests used is taken as refused, then each level left below it.
    let next = refuse(yield* Ref.get(context.refused), failing.choice)
    while (next !== undefined) {
      const capabilities = withRefused(config.modelCapabilities, next)
      const level = forcingLevel(capabilities)
      // Never named: the failing requests forced the preview at the session's highest level.
      if (level === "named") break
      const probe = forceResolve(capabilities)
      const exit = yield* attempt(probe)
      if (Exit.isSuccess(exit)) {
        const how = `${failing.streak} failed requests with tool_choice ${JSON.stringify(failing.choice)}` +
          probes.map((p) => `, 1 with ${JSON.stringify(p.choice)}`).join("") +
          `, then one accepted with ${JSON.stringify(probe.choice)}`
        yield* learn(context, config, next, how, lastError)
        return { _tag: "Accepted", response: exit.value, capabilities } as const
      }
      const failed = Cause.failureOption(exit.cause)
      if (Option.isNone(failed)) return { _tag: "Halted", cause: exit.cause as Cause.Cause<never> } as const
      lastError = failed.value
      probes.push({ level, choice: probe.choice })
      // This level failed too: the next one down, if the probe forced anything.
      next = refuse(next, probe.choice)
    }
    return { _tag: "Failed", lastError, probed: probes.map((p) => p.level) } as const
  })
