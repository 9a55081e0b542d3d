/**
 * Whether a runtime instance is alive, as a durable session tells it: the session keeps its own instance's lease in
 * the store alive while it is open (a heartbeat every third of the lease), and judges another instance by what this
 * process knows of it (`localVerdict`: its pid on this host, a closed instance of this thread), else by that
 * instance's lease in the store.
 *
 * @internal
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Schedule from "effect/Schedule"
import type * as Scope from "effect/Scope"
import type { PendingStoreError } from "../../domain/Errors.js"
import type { PendingStore } from "../PendingStore.js"
import type { State } from "./pendingSet.js"
import { localVerdict } from "./runtimeInstance.js"

/**
 * This instance says it is alive before it stages anything, and renews that (and the lease of every claim it
 * holds) every third of its lease while the session is open; closing the session forgets it.
 */
export const keepAlive = (
  s: State,
  store: PendingStore.Service
): Effect.Effect<void, PendingStoreError, Scope.Scope> => {
  const beat = Effect.suspend(() => {
    const at = s.now()
    return store.heartbeat({ instance: s.owner, leaseUntil: at + s.lease, now: at })
  })
  return Effect.zipRight(
    beat,
    Effect.zipRight(
      Effect.addFinalizer(() =>
        Effect.catchAllCause(
          store.release(s.owner),
          (cause) => Effect.logWarning("effect-resolve: could not release this session's lease", cause)
        )
      ),
      Effect.asVoid(Effect.forkScoped(Effect.repeat(
        Effect.catchAllCause(
          beat,
          (cause) => Effect.logWarning("effect-resolve: could not renew this session's lease in the store", cause)
        ),
        Schedule.spaced(Duration.millis(Math.max(1, Math.floor(s.lease / 3))))
      )))
    )
  )
}

/**
 * Which runtime instances are provably gone, judged once for a batch: this one is alive; one this process can
 * judge by itself (its pid on this host, a closed instance of this thread) is as it says; any other is alive
 * while its lease in the store holds. A record without a stager was written before 0.3: its stager is gone.
 */
export const judge = (
  s: State,
  store: PendingStore.Service,
  instances: Iterable<string | null>
): Effect.Effect<(instance: string | null) => boolean, PendingStoreError> => {
  const ask = new Set<string>()
  for (const instance of instances) {
    if (instance !== null && instance !== s.owner && localVerdict(instance) === "unknown") ask.add(instance)
  }
  const leases = ask.size === 0 ? Effect.succeed(new Map<string, number>()) : store.leases([...ask])
  return Effect.map(leases, (found) => (instance) => {
    if (instance === null) return true
    if (instance === s.owner) return false
    const local = localVerdict(instance)
    return local === "unknown" ? !((found.get(instance) ?? 0) > s.now()) : local === "gone"
  })
}

/**
 * Whether the owner of a claim is gone: its process died on this host, or its lease passed without renewal and
 * this process cannot see it alive.
 */
export const claimAbandoned = (s: State, owner: string | null, leaseUntil: number | null): boolean =>
  owner !== null &&
  (localVerdict(owner) === "gone" || ((leaseUntil ?? 0) <= s.now() && localVerdict(owner) !== "alive"))
