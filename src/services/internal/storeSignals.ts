/**
 * The in-process half of `PendingStore.Service.changed`: a store whose feed writes (see `feedWrites`) signal a
 * `PubSub` once they succeeded (the memory store, and the SQL store on SQLite).
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as PubSub from "effect/PubSub"
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
