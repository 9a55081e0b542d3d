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
import * as Chunk from "effect/Chunk"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as PubSub from "effect/PubSub"
import * as Ref from "effect/Ref"
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
export const make: Effect.Effect<SteeringBus.Service, never, Scope.Scope> = Effect.gen(function*() {
  const queued = yield* Ref.make(Chunk.empty<SteeringMessage>())
  const hub = yield* Effect.acquireRelease(PubSub.unbounded<SteeringMessage>(), PubSub.shutdown)
  const steer = (input: SteerInput) =>
    Effect.flatMap(Clock.currentTimeMillis, (timestamp) => {
      const message: SteeringMessage = {
        customType: input.customType,
        content: input.content,
        ...(input.details === undefined ? {} : { details: input.details }),
        display: input.display ?? false,
        attribution: "agent",
        timestamp
      }
      return Ref.update(queued, Chunk.append(message)).pipe(
        Effect.zipRight(PubSub.publish(hub, message)),
        Effect.as(message),
        Effect.uninterruptible
      )
    })
  return SteeringBus.of({
    steer,
    drain: Effect.map(Ref.getAndSet(queued, Chunk.empty()), Chunk.toReadonlyArray),
    pending: Effect.map(Ref.get(queued), Chunk.toReadonlyArray),
    messages: Stream.fromPubSub(hub),
    subscribe: Effect.map(PubSub.subscribe(hub), Stream.fromQueue)
  })
})
