/**
 * Hidden steering messages for the next model turn. Producers `steer`; the turn driver takes them all, in order,
 * with `drain` before each request; observers follow `messages`.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { SteeringBus } from "effect-resolve"
 *
 * const program = Effect.gen(function*() {
 *   const bus = yield* SteeringBus
 *   yield* bus.steer({ customType: "note", content: "Prefer small diffs." })
 *   const messages = yield* bus.drain // [{ customType: "note", display: false, attribution: "agent", ... }]
 * }).pipe(Effect.provide(SteeringBus.layer))
 * ```
 *
 * @since 0.1.0
 */
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as DefaultServices from "effect/DefaultServices"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as PubSub from "effect/PubSub"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import type { SteeringMessage, SteerInput } from "../domain/SteeringMessage.js"

/**
 * @since 0.1.0
 * @category tags
 */
export declare namespace SteeringBus {
  /**
   * @since 0.1.0
   * @category models
   */
  export interface Service {
    /** Queues a hidden message (timestamp from `Clock`) and publishes it to `messages`. */
    readonly steer: (input: SteerInput) => Effect.Effect<SteeringMessage>
    /** Takes every queued message, oldest first, leaving the bus empty. */
    readonly drain: Effect.Effect<ReadonlyArray<SteeringMessage>>
    /** The queued messages, without taking them. */
    readonly pending: Effect.Effect<ReadonlyArray<SteeringMessage>>
    /** Every message steered after the stream starts. */
    readonly messages: Stream.Stream<SteeringMessage>
    /** A subscription that sees every message steered after it is taken, even before the stream is read. */
    readonly subscribe: Effect.Effect<Stream.Stream<SteeringMessage>, never, Scope.Scope>
  }
}

/**
 * The SteeringBus service.
 *
 * @since 0.1.0
 * @category tags
 */
export class SteeringBus extends Context.Tag("effect-resolve/SteeringBus")<SteeringBus, SteeringBus.Service>() {
  /**
   * A fresh, empty bus per layer build; its PubSub shuts down with the layer's scope.
   *
   * @since 0.1.0
   * @category layers
   */
  static readonly layer: Layer.Layer<SteeringBus> = Layer.scoped(this, Effect.suspend(() => make))
}

/**
 * Builds a bus in the current scope.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make: Effect.Effect<SteeringBus.Service, never, Scope.Scope> = Effect.map(
  Effect.acquireRelease(PubSub.unbounded<SteeringMessage>(), PubSub.shutdown),
  (hub) => {
    // Closure-local and changed only inside synchronous blocks, each atomic like a `Ref.modify` (see the
    // ToolChoiceQueue's `State`): steering is on every preview's hot path (bench/).
    let queued: Array<SteeringMessage> = []
    const steer = (input: SteerInput) =>
      Effect.withFiberRuntime<SteeringMessage>((fiber) => {
        const message: SteeringMessage = {
          customType: input.customType,
          content: input.content,
          ...(input.details === undefined ? {} : { details: input.details }),
          display: input.display ?? false,
          attribution: "agent",
          timestamp: Context.get(fiber.getFiberRef(DefaultServices.currentServices), Clock.Clock)
            .unsafeCurrentTimeMillis()
        }
        queued.push(message)
        // An unbounded hub never refuses a message; once it is shut down (the layer's scope closed) nobody listens.
        hub.unsafeOffer(message)
        return Effect.succeed(message)
      })
    return SteeringBus.of({
      steer,
      drain: Effect.sync(() => {
        const taken = queued
        if (taken.length > 0) queued = []
        return taken.length > 0 ? taken : none
      }),
      pending: Effect.sync(() => queued.slice()),
      messages: Stream.fromPubSub(hub),
      subscribe: Effect.map(PubSub.subscribe(hub), Stream.fromQueue)
    })
  }
)

const none: ReadonlyArray<SteeringMessage> = Object.freeze([])
