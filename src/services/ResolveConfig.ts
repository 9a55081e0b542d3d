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
import * as Layer from "effect/Layer"

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
}

const defaults: ResolveConfigShape = {
  discardWithoutPending: "fail"
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
   * A layer that sets the given options over the defaults.
   *
   * @since 0.1.0
   * @category layers
   */
  static readonly layer = (options: Partial<ResolveConfigShape>): Layer.Layer<ResolveConfig> =>
    Layer.succeed(ResolveConfig, { ...defaults, ...options })
}
