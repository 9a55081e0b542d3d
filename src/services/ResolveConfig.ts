/**
 * Options of the resolve runtime, as a `Context.Reference`: every program sees the defaults unless a layer or
 * `Effect.provideService` gives others.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { ResolveConfig, ResolveTool } from "effect-resolve"
 *
 * // Let "discard" succeed when nothing is pending.
 * const lenient = ResolveTool.execute({ action: "discard", reason: "stale" }).pipe(
 *   Effect.provideService(ResolveConfig, { ...ResolveConfig.defaults, discardWithoutPending: "succeed" })
 * )
 * ```
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import { checkOptions, InvalidOptions, oneOf, type OptionsSpec, wholeNumber } from "../domain/InvalidOptions.js"

/**
 * @since 0.1.0
 * @category models
 */
export interface ResolveConfigShape {
  /**
   * What `resolve` does for `discard` when nothing is pending: `"fail"` with `NoPendingAction` (the reference's
   * behaviour, the default) or `"succeed"` with "Nothing to discard; no pending action remains.".
   */
  readonly discardWithoutPending: "fail" | "succeed"
  /**
   * How a staged preview is enforced. `"force"` (the default): a forced `resolve` directive plus the reminder.
   * `"soft"`: a non-forcing `"auto"` entry plus the reminder once; the turn driver forces `resolve` only after a
   * turn that ignored it. A model whose capabilities cannot force a named tool always gets the soft path.
   */
  readonly enforcement: "force" | "soft"
  /** How many times in a row a directive may be rejected with `"error"` and requeued before it is dropped. */
  readonly maxErrorRequeues: number
  /** How many forced turns in a row the model may ignore a pending preview before the run fails. */
  readonly maxForcedTurns: number
  /** The turn driver's default bound on model requests per run. */
  readonly maxTurns: number
  /** What the model can express as `tool_choice`; decides the enforcement path and the forced choice. */
  readonly modelCapabilities: ModelCapabilities
}

/**
 * What a model can express as `tool_choice`. Where a named tool cannot be forced, the turn driver uses the soft
 * path; where `"required"` cannot be sent either, a forced turn becomes `"auto"` with the reminder again.
 *
 * @since 0.1.0
 * @category models
 */
export interface ModelCapabilities {
  /** `{ type: "tool", name }` can be sent. */
  readonly supportsNamedToolChoice: boolean
  /** `"required"` (any tool) can be sent. */
  readonly supportsRequiredToolChoice: boolean
  /** `"none"` can be sent. */
  readonly supportsNoneToolChoice: boolean
}

const defaults: ResolveConfigShape = {
  discardWithoutPending: "fail",
  enforcement: "force",
  maxErrorRequeues: 3,
  maxForcedTurns: 3,
  maxTurns: 25,
  modelCapabilities: {
    supportsNamedToolChoice: true,
    supportsRequiredToolChoice: true,
    supportsNoneToolChoice: true
  }
}

const spec: OptionsSpec = {
  discardWithoutPending: oneOf("fail", "succeed"),
  enforcement: oneOf("force", "soft"),
  maxErrorRequeues: wholeNumber(0),
  maxForcedTurns: wholeNumber(0),
  maxTurns: wholeNumber(1),
  modelCapabilities: {
    schema: Schema.Struct({
      supportsNamedToolChoice: Schema.Boolean,
      supportsRequiredToolChoice: Schema.Boolean,
      supportsNoneToolChoice: Schema.Boolean
    }),
    expected: "{ supportsNamedToolChoice, supportsRequiredToolChoice, supportsNoneToolChoice }, each true or false"
  }
}

/**
 * The ResolveConfig reference.
 *
 * @since 0.1.0
 * @category tags
 */
export class ResolveConfig extends Context.Reference<ResolveConfig>()("effect-resolve/ResolveConfig", {
  defaultValue: () => defaults
}) {
  /**
   * The values used when nothing else is provided.
   *
   * @since 0.1.0
   */
  static readonly defaults: ResolveConfigShape = defaults

  /**
   * A layer that sets the given options over the defaults. The options are checked when it is built (a JavaScript
   * caller's misspelt key or negative bound): `InvalidOptions` names the key, what it allows and what it got. An
   * option given as `undefined` keeps its default.
   *
   * @since 0.1.0
   * @category layers
   */
  static readonly layer = (options: Partial<ResolveConfigShape>): Layer.Layer<ResolveConfig, InvalidOptions> =>
    Layer.effect(
      ResolveConfig,
      Effect.zipRight(
        checkOptions("ResolveConfig.layer", spec, options),
        Effect.sync(() => ({
          ...defaults,
          ...Object.fromEntries(Object.entries(options).filter(([, value]) => value !== undefined))
        }))
      )
    )
}
