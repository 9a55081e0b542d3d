/**
 * Whether a runtime instance is alive, as a durable session tells it: the session keeps its own instance's lease in
 * the store alive while it is open (a heartbeat every third of the lease), and judges another instance by what this
 * process knows of it (`localVerdict`: its pid on this host, a closed instance of this thread), else by that
 * instance's lease in the store.
 *
 * @internal
 */
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import type * as Scope from "effect/Scope"
import { isOwnershipLost, type PendingStoreError } from "../../domain/Errors.js"
import type { InstanceLeases } from "../InstanceLeases.js"
import { fencedOut, leaseLapsed, type PendingStore } from "../PendingStore.js"
import type { SessionOwnership } from "../SessionOwnership.js"
import type { State } from "./pendingSet.js"
import { fencedWrites } from "./pendingStore.js"
import { localVerdict } from "./runtimeInstance.js"

/**
 * The ownership of an exclusive session (`SessionOwnership`), as this module keeps it: the fence, when its lease was
 * last extended to, and the signal of its loss.
 */
export interface Ownership {
  readonly fence: PendingStore.Fence
  /** Completed (failed) once the session is lost; never succeeds. */
  readonly lostSignal: Deferred.Deferred<never, PendingStoreError>
  /** The end of the lease as the last successful heartbeat set it (0 before the first). */
  renewedUntil: number
  /** Whether the session is known lost (the signal completed). */
  lost: boolean
}

/**
 * Acquires `session` for this instance (a new owner epoch) and fences the store with it. The fenced store signals
 * the loss of the session on any write it refuses.
 */
export const acquire = (
  s: { readonly session: string; readonly owner: string; readonly now: () => number },
  store: PendingStore.Service
): Effect.Effect<{ readonly ownership: Ownership; readonly store: PendingStore.Service }, PendingStoreError> =>
  Effect.gen(function*() {
    const epoch = yield* store.acquire({ session: s.session, owner: s.owner, now: s.now() })
    const lostSignal = yield* Deferred.make<never, PendingStoreError>()
    const ownership: Ownership = {
      fence: { session: s.session, epoch },
      lostSignal,
      renewedUntil: 0,
      lost: false
    }
    const fenced = store.fenced(ownership.fence)
    const signalled: Record<string, unknown> = { ...fenced }
    for (const name of fencedWrites) {
      const write = fenced[name] as (...args: ReadonlyArray<unknown>) => Effect.Effect<unknown, PendingStoreError>
      signalled[name] = (...args: ReadonlyArray<unknown>) =>
        Effect.tapError(write(...args), (error) => isOwnershipLost(error) ? lose(ownership, error) : Effect.void)
    }
    return { ownership, store: signalled as unknown as PendingStore.Service }
  })

/** The session is lost: the signal fails (once; later losses change nothing). */
const lose = (ownership: Ownership, error: PendingStoreError) =>
  Effect.suspend(() => {
    ownership.lost = true
    return Effect.asVoid(Deferred.fail(ownership.lostSignal, error))
  })

/**
 * This instance says it is alive before it stages anything, and renews that (and the lease of every claim it
 * holds) every third of its lease while the session is open; closing the session forgets it. A renewal extends only
 * a lease that still holds: a lease that lapsed (the process was paused, or cut off from the store) is never taken
 * again. An exclusive session (`ownership`) is then lost, and so it is when its renewals keep failing until the
 * lease ends; a shared one registers again, with a warning.
 */
export const keepAlive = (
  s: State,
  store: PendingStore.Service,
  ownership?: Ownership
): Effect.Effect<void, PendingStoreError, Scope.Scope> => {
  const beat = (renew: boolean) =>
    Effect.suspend(() => {
      const at = s.now()
      const leaseUntil = at + s.lease
      return Effect.tap(
        store.heartbeat({ instance: s.owner, leaseUntil, now: at, ...(renew ? { renew } : {}) }),
        () =>
          Effect.sync(() => {
            if (ownership !== undefined) ownership.renewedUntil = leaseUntil
          })
      )
    })
  const renew = Effect.catchAll(beat(true), (error) => {
    if (ownership !== undefined) {
      if (isOwnershipLost(error)) return lose(ownership, error)
      return Effect.zipRight(
        Effect.logWarning("effect-resolve: could not renew this session's lease in the store", error),
        s.now() >= ownership.renewedUntil ? lose(ownership, leaseLapsed(s.owner)) : Effect.void
      )
    }
    return error.reason === "leaseLapsed" ?
      Effect.zipRight(
        Effect.logWarning(
          `effect-resolve: the lease of runtime instance ${s.owner} lapsed before it was renewed (the process was ` +
            "paused or cut off from the store); it registers again, and what others did meanwhile stands"
        ),
        Effect.catchAll(
          beat(false),
          (cause) => Effect.logWarning("effect-resolve: could not register this session's lease again", cause)
        )
      ) :
      Effect.logWarning("effect-resolve: could not renew this session's lease in the store", error)
  })
  const renewals = ownership === undefined ?
    Effect.repeat(renew, Schedule.spaced(Duration.millis(Math.max(1, Math.floor(s.lease / 3))))) :
    // An exclusive session stops renewing once it is lost: it writes nothing more.
    Effect.repeat(renew, {
      schedule: Schedule.spaced(Duration.millis(Math.max(1, Math.floor(s.lease / 3)))),
      until: () => ownership.lost
    })
  return Effect.zipRight(
    beat(false),
    Effect.zipRight(
      Effect.addFinalizer(() =>
        Effect.catchAllCause(
          Effect.suspend(() => ownership?.lost === true ? Effect.void : store.release(s.owner)),
          (cause) => Effect.logWarning("effect-resolve: could not release this session's lease", cause)
        )
      ),
      Effect.asVoid(Effect.forkScoped(renewals))
    )
  )
}

/**
 * The `SessionOwnership` service of an exclusive session: `guard` renews the lease in the store when a third of it or
 * less is left by this process's clock (a process paused past its lease finds it lapsed here, before it acts), and
 * fails once the session is lost; `check` reads the session's owner.
 */
export const ownershipService = (
  s: State,
  store: PendingStore.Service,
  base: PendingStore.Service,
  ownership: Ownership
): SessionOwnership.Service => {
  const lost = Deferred.await(ownership.lostSignal)
  const ifNotLost = <A>(effect: Effect.Effect<A, PendingStoreError>) =>
    Effect.flatMap(Deferred.poll(ownership.lostSignal), Option.match({ onNone: () => effect, onSome: (done) => done }))
  const renewNow = Effect.suspend(() => {
    const at = s.now()
    const leaseUntil = at + s.lease
    return Effect.tap(
      store.heartbeat({ instance: s.owner, leaseUntil, now: at, renew: true }),
      () => Effect.sync(() => void (ownership.renewedUntil = Math.max(ownership.renewedUntil, leaseUntil)))
    )
  })
  return {
    session: ownership.fence.session,
    epoch: ownership.fence.epoch,
    instance: s.owner,
    guard: ifNotLost(Effect.suspend(() =>
      s.now() < ownership.renewedUntil - Math.floor(s.lease / 3) ?
        Effect.void :
        Effect.tapError(renewNow, (error) =>
          s.now() >= ownership.renewedUntil || isOwnershipLost(error) ?
            lose(ownership, isOwnershipLost(error) ? error : leaseLapsed(s.owner)) :
            Effect.void)
    )),
    check: ifNotLost(Effect.flatMap(base.owner(ownership.fence.session), (owner) => {
      if (Option.isSome(owner) && owner.value.epoch === ownership.fence.epoch) return Effect.void
      const error = fencedOut("check", ownership.fence)
      return Effect.zipRight(lose(ownership, error), Effect.fail(error))
    })),
    lost
  }
}

/**
 * Which runtime instances are provably gone, judged once for a batch: this one is alive; one this process can
 * judge by itself (its pid on this host, a closed instance of this thread) is as it says; any other is alive
 * while its lease in the store holds. A record without a stager was written before 0.3: its stager is gone.
 */
export const judge = (
  s: State,
  store: InstanceLeases.Service,
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
