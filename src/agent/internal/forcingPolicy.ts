/**
 * Which `tool_choice` a turn sends, and what a turn's outcome teaches about the next one: the served directive is
 * sent as the model can express it; a pending preview is forced when the enforcement and the model allow it (else
 * the reminder goes again), and forced on its next turn after the model ignored it; a model that keeps ignoring it
 * stops the run after `maxForcedTurns`. How the session forces less when its provider refuses is in `refusals.ts`.
 *
 * @internal
 */
import type * as LanguageModel from "@effect/ai/LanguageModel"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Ref from "effect/Ref"
import { resolveReminderText, type SteeringMessage } from "../../domain/SteeringMessage.js"
import type { ToolChoice } from "../../domain/ToolChoice.js"
import type { ModelCapabilities, ResolveConfigShape } from "../../services/ResolveConfig.js"
import type { InFlightInfo, ToolChoiceQueue } from "../../services/ToolChoiceQueue.js"
import { isPreviewLabel } from "../Forcing.js"
import { type EffectAiToolChoice, toEffectAi } from "../ProviderToolChoice.js"
import { ResolveNotCalled } from "../TurnDriverError.js"
import { type ForcingMap, forcingOf, updateForcing } from "./forcingMap.js"

/** What the policy reads and changes: the session's queue, what it keeps per directive, the last choice sent. */
export interface PolicyContext {
  readonly queue: ToolChoiceQueue.Service
  readonly forcing: Ref.Ref<ForcingMap>
  /** The `tool_choice` of the session's last request, as JSON (to count changes). */
  readonly lastChoice: Ref.Ref<Option.Option<string>>
}

/** What a turn sends, and what it means for the in-flight preview. */
export interface Plan {
  readonly choice: LanguageModel.ToolChoice<string>
  /** The choice forces a tool call. */
  readonly forced: boolean
  /** The turn tries to force the in-flight preview (counts toward `maxForcedTurns`). */
  readonly forcingEntry: boolean
  /** Add the reminder again (a model that can force nothing). */
  readonly resteer: boolean
}

/** The plan that forces `resolve` as hard as a model with these capabilities allows. */
export const forceResolve = (capabilities: ModelCapabilities): Plan =>
  capabilities.supportsNamedToolChoice ?
    { choice: { tool: "resolve" }, forced: true, forcingEntry: true, resteer: false } :
    capabilities.supportsRequiredToolChoice ?
    { choice: { mode: "required", oneOf: ["resolve"] }, forced: true, forcingEntry: true, resteer: false } :
    { choice: "auto", forced: false, forcingEntry: true, resteer: true }

const baseline: Plan = { choice: "auto", forced: false, forcingEntry: false, resteer: false }

const isForcing = (choice: EffectAiToolChoice): boolean => choice === "required" || typeof choice === "object"

/** The reminder, steered again when forcing falls back to it. */
export const reminderMessage: SteeringMessage = {
  customType: "resolve-reminder",
  content: resolveReminderText,
  display: false,
  attribution: "agent",
  timestamp: 0
}

/** The in-flight directive, when it forces a preview's `resolve`. */
export const previewInFlight = (inFlight: Option.Option<InFlightInfo>): Option.Option<InFlightInfo> =>
  Option.filter(inFlight, (i) => isPreviewLabel(i.label))

/** The plan of a turn that serves `served` (the in-flight `info`) to a model with `capabilities`. */
export const plan = (
  context: PolicyContext,
  served: Option.Option<ToolChoice>,
  info: Option.Option<InFlightInfo>,
  capabilities: ModelCapabilities
): Effect.Effect<Plan> =>
  Effect.gen(function*() {
    if (Option.isNone(served)) return baseline
    const entry = previewInFlight(info)
    if (Option.isSome(entry)) {
      const forced = (yield* forcingOf(context.forcing, entry.value)).forceNext
      if (typeof served.value === "object") {
        // A forced preview: sent as is when the model can force it, else the soft path.
        if (served.value.name === "resolve" && !capabilities.supportsNamedToolChoice) {
          return forced ? forceResolve(capabilities) : baseline
        }
      } else if (forced) {
        return forceResolve(capabilities)
      }
    }
    const mapped = toEffectAi(served.value, capabilities)
    if (Option.isNone(mapped)) {
      // The model cannot honour this directive: let its onRejected decide, and send the baseline.
      yield* context.queue.reject("unavailable")
      return baseline
    }
    const choice = mapped.value
    return {
      choice,
      forced: isForcing(choice),
      forcingEntry: Option.isSome(entry) && isForcing(choice),
      resteer: false
    }
  })

/** Counts a request's tool_choice change against the previous request's. */
export const noteChoice = (context: PolicyContext, choice: LanguageModel.ToolChoice<string>): Effect.Effect<boolean> =>
  Effect.map(
    Ref.getAndSet(context.lastChoice, Option.some(JSON.stringify(choice))),
    (previous) => Option.isSome(previous) && previous.value !== JSON.stringify(choice)
  )

/**
 * The model answered a turn that pushed the in-flight preview (`entry`): the push counts as ignored until one of the
 * turn's calls is `resolve`. A turn at the reminder level (nothing forced) counts too, as one that only reminded.
 */
export const countPush = (
  context: PolicyContext,
  entry: Option.Option<InFlightInfo>,
  decided: Plan
): Effect.Effect<void> =>
  decided.forcingEntry && Option.isSome(entry) ?
    updateForcing(context.forcing, entry.value, (f) => ({
      ...f,
      ignored: f.ignored + 1,
      reminded: f.reminded + (decided.forced ? 0 : 1)
    })) :
    Effect.void

/**
 * Compliance with the in-flight preview (`entry`), once the turn's calls ran: a `resolve` call clears what was kept;
 * a turn that pushed and was ignored `maxForcedTurns` times in a row gives the error the run stops with; a turn that
 * did not push (the soft path's first turn) forces the preview the next time it is served.
 */
export const compliance = (
  context: PolicyContext,
  config: ResolveConfigShape,
  entry: Option.Option<InFlightInfo>,
  decided: Plan,
  calledResolve: boolean
): Effect.Effect<Option.Option<ResolveNotCalled>> =>
  Effect.gen(function*() {
    if (Option.isNone(entry)) return Option.none()
    if (calledResolve) {
      yield* updateForcing(context.forcing, entry.value, (f) => ({ ...f, forceNext: false, ignored: 0, reminded: 0 }))
    } else if (decided.forcingEntry) {
      const { ignored, reminded } = yield* forcingOf(context.forcing, entry.value)
      if (ignored >= config.maxForcedTurns) {
        yield* updateForcing(context.forcing, entry.value, (f) => ({ ...f, forceNext: false, ignored: 0, reminded: 0 }))
        return Option.some(
          new ResolveNotCalled({
            directiveId: entry.value.id,
            label: entry.value.label,
            forcedTurns: ignored - reminded,
            remindedTurns: reminded
          })
        )
      }
    } else {
      yield* updateForcing(context.forcing, entry.value, (f) => ({ ...f, forceNext: true }))
    }
    return Option.none()
  })
