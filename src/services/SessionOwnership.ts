/**
 * One owner for real (0.4): an *exclusive* durable session (`ResolveRuntime.layerDurable({ session, exclusive: true })`,
 * what every cluster runner opens) acquires the session in its store when it opens, under a new owner epoch, and
 * every write it makes is fenced with that epoch: once another instance acquired the session, the store refuses
 * them, changing nothing. `SessionOwnership` is what the session's own code asks before it acts outside the store:
 *
 * - `guard` before each model request: cheap while the lease is fresh; once it is due (a process paused past its
 *   lease wakes here first), it renews it in the store, and fails if it lapsed or another owner took the session;
 * - `check` before an irreversible step outside the store (the edit producer asks it under its file locks, before
 *   its first rename): one read of the session's owner;
 * - `lost`, which fails as soon as the session is known to be lost (a refused write, a renewal that found the lease
 *   lapsed, or renewals failing past the lease): the turn driver races each run against it, so nothing more happens.
 *
 * The edit producer and the turn driver find it with `Effect.serviceOption(SessionOwnership)` (provided to every
 * apply of an exclusive session) or through `PendingActions.Service.ownership`.
 *
 * @example
 * ```ts
 * import { Effect, Option } from "effect"
 * import { SessionOwnership } from "effect-resolve"
 *
 * // Before writing something only the session's owner may write:
 * const beforeWrite = Effect.flatMap(Effect.serviceOption(SessionOwnership), Option.match({
 *   onNone: () => Effect.void, // not an exclusive session: nothing to check
 *   onSome: (ownership) => ownership.check
 * }))
 * ```
 *
 * @since 0.4.0
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type { PendingStoreError } from "../domain/Errors.js"

/**
 * The ownership of an exclusive durable session by this runtime instance.
 *
 * @since 0.4.0
 * @category tags
 */
export class SessionOwnership extends Context.Tag("effect-resolve/SessionOwnership")<
  SessionOwnership,
  SessionOwnership.Service
>() {}

/**
 * @since 0.4.0
 */
export declare namespace SessionOwnership {
  /**
   * @since 0.4.0
   * @category models
   */
  export interface Service {
    /** The session. */
    readonly session: string
    /** This instance's owner epoch (every newer owner has a larger one). */
    readonly epoch: number
    /** This runtime instance (the owner of its claims, the stager of what it stages). */
    readonly instance: string
    /**
     * Succeeds while this instance may act for the session: its lease is fresh by this process's clock, or a
     * renewal in the store just extended it. Fails (with `reason` `"fenced"` or `"leaseLapsed"`) once it lost the
     * session. Cheap when the lease is fresh: no round trip.
     */
    readonly guard: Effect.Effect<void, PendingStoreError>
    /** Succeeds when the store says this instance's epoch is still the session's latest (one read). */
    readonly check: Effect.Effect<void, PendingStoreError>
    /** Never succeeds: fails as soon as this instance is known to have lost the session. */
    readonly lost: Effect.Effect<never, PendingStoreError>
  }
}
