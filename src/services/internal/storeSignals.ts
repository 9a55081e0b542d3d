/**
 * The in-process half of `PendingStore.Service.changed`: a store whose feed writes (see `feedWrites`) signal a
 * `PubSub` once they succeeded (the memory store, and the SQL store on SQLite); and one subscription to a store's
 * signal shared by all its subscribers (`shared`, for Postgres's `LISTEN`).
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as PubSub from "effect/PubSub"
import * as Stream from "effect/Stream"
import * as Take from "effect/Take"
import type { PendingStore } from "../PendingStore.js"
import { feedWrites } from "./pendingStore.js"

/** `store`, its feed's writes signalling `changed` once they succeeded (a view on the same state). */
export const signalling = (store: PendingStore.Service, changes: PubSub.PubSub<void>): PendingStore.Service => {
  const signalled: Record<string, unknown> = { ...store }
  for (const name of feedWrites) {
    const write = store[name as keyof PendingStore.Service] as (
      ...args: ReadonlyArray<unknown>
    ) => Effect.Effect<unknown, unknown>
    signalled[name] = (...args: ReadonlyArray<unknown>) =>
      Effect.tap(write(...args), () => PubSub.publish(changes, undefined))
  }
  const fenced = store.fenced
  signalled.fenced = (fence: PendingStore.Fence) => signalling(fenced(fence), changes)
  return signalled as unknown as PendingStore.Service
}

interface Hub<A, E> {
  readonly pubsub: PubSub.PubSub<Take.Take<A, E>>
  fiber: Fiber.RuntimeFiber<void> | undefined
  count: number
}

/**
 * `source` (a store's signal), subscribed to once however many subscribe to the result: the first subscriber starts
 * it, the last one to leave stops it, and each sees the signals after it subscribed (the latest 64 a slow one has
 * not taken). A Postgres
 * `LISTEN` is per connection: two listens on one channel of one client would unlisten each other. A failure or end of
 * `source` ends every current subscriber's stream with it; the next subscriber starts it again.
 */
export const shared = <A, E>(source: Stream.Stream<A, E>): Stream.Stream<A, E> => {
  const lock = Effect.unsafeMakeSemaphore(1)
  let hub: Hub<A, E> | undefined
  const start = (h: Hub<A, E>) =>
    Stream.runForEach(source, (a) => PubSub.publish(h.pubsub, Take.of(a))).pipe(
      Effect.exit,
      Effect.flatMap((exit) =>
        Effect.zipRight(
          Effect.sync(() => {
            if (hub === h) hub = undefined
          }),
          PubSub.publish(h.pubsub, Exit.isSuccess(exit) ? Take.end : Take.failCause(exit.cause))
        )
      ),
      Effect.asVoid
    )
  const acquire = Effect.acquireRelease(
    lock.withPermits(1)(Effect.gen(function*() {
      const h: Hub<A, E> = hub ?? { pubsub: yield* PubSub.sliding<Take.Take<A, E>>(64), fiber: undefined, count: 0 }
      hub = h
      h.count++
      return h
    })),
    (h) =>
      lock.withPermits(1)(Effect.suspend(() => {
        h.count--
        if (h.count > 0) return Effect.void
        if (hub === h) hub = undefined
        return h.fiber === undefined ? Effect.void : Fiber.interrupt(h.fiber)
      }))
  )
  return Stream.unwrapScoped(Effect.gen(function*() {
    const h = yield* acquire
    // Subscribed before the source starts: no signal of it is missed.
    const dequeue = yield* PubSub.subscribe(h.pubsub)
    yield* lock.withPermits(1)(
      Effect.suspend(() =>
        h.fiber !== undefined || hub !== h ? Effect.void : Effect.map(Effect.forkDaemon(start(h)), (fiber) => {
          h.fiber = fiber
        })
      )
    )
    return Stream.flattenTake(Stream.fromQueue(dequeue))
  }))
}
