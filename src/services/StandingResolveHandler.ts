/**
 * One optional, long-lived fallback handler for `resolve`, installed by a mode such as plan approval. `resolve`
 * consults it only when no queued preview is in flight, and never consumes it.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { StandingResolveHandler, ToolResult } from "effect-resolve"
 *
 * const planMode = Effect.gen(function*() {
 *   const standing = yield* StandingResolveHandler
 *   // Installed while the scope is open; cleared on close only if still the installed one.
 *   yield* standing.install((call) => Effect.succeed(ToolResult.text(`Plan: ${call.action}`)))
 * }).pipe(Effect.scoped)
 * ```
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Ref from "effect/Ref"
import type * as Scope from "effect/Scope"
import type { Invoker } from "../domain/ResolveParams.js"

/**
 * @since 0.1.0
 * @category tags
 */
export declare namespace StandingResolveHandler {
  /**
   * @since 0.1.0
   * @category models
   */
  export interface Service {
    /** Installs `handler`, replacing any other. */
    readonly set: (handler: Invoker) => Effect.Effect<void>
    /** Removes whatever handler is installed. */
    readonly clear: Effect.Effect<void>
    /** The installed handler, if any. */
    readonly peek: Effect.Effect<Option.Option<Invoker>>
    /** Installs `handler` for the life of the scope; on close, clears it only if it is still the one installed. */
    readonly install: (handler: Invoker) => Effect.Effect<void, never, Scope.Scope>
  }
}

/**
 * The StandingResolveHandler service.
 *
 * @since 0.1.0
 * @category tags
 */
export class StandingResolveHandler extends Context.Tag("effect-resolve/StandingResolveHandler")<
  StandingResolveHandler,
  StandingResolveHandler.Service
>() {
  /**
   * A fresh, empty slot per layer build.
   *
   * @since 0.1.0
   * @category layers
   */
  static readonly layer: Layer.Layer<StandingResolveHandler> = Layer.effect(this, Effect.suspend(() => make))
}

/**
 * Builds an empty slot.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make: Effect.Effect<StandingResolveHandler.Service> = Effect.map(
  // The slot holds a fresh wrapper object per installation, so `install` can tell its own handler apart even
  // when the same function is installed twice.
  Ref.make(Option.none<{ readonly handler: Invoker }>()),
  (slot) =>
    StandingResolveHandler.of({
      set: (handler) => Ref.set(slot, Option.some({ handler })),
      clear: Ref.set(slot, Option.none()),
      peek: Effect.map(Ref.get(slot), Option.map((installed) => installed.handler)),
      install: (handler) =>
        Effect.asVoid(Effect.acquireRelease(
          Effect.sync(() => ({ handler })).pipe(Effect.tap((installed) => Ref.set(slot, Option.some(installed)))),
          (installed) =>
            Ref.update(
              slot,
              (current) => Option.isSome(current) && current.value === installed ? Option.none() : current
            )
        ))
    })
)
