/**
 * The leases of runtime instances, one concern of the `PendingStore`: each instance says it is alive until a time
 * (`heartbeat`), and recovery asks which instances still are (`leases`) before it takes back what a gone one held.
 *
 * Every store layer provides it, as a view on the same store as `PendingStore` and the other parts.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { InstanceLeases } from "effect-resolve"
 *
 * // Is instance "a" still alive at `now`?
 * const alive = (now: number) =>
 *   Effect.map(
 *     Effect.flatMap(InstanceLeases, (leases) => leases.leases(["a"])),
 *     (found) => (found.get("a") ?? 0) > now
 *   )
 * ```
 *
 * @since 0.4.0
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type { PendingStoreError } from "../domain/Errors.js"

/**
 * The leases of runtime instances. A part of `PendingStore` (0.4): hold it to depend on this concern only.
 *
 * @since 0.4.0
 * @category tags
 */
export class InstanceLeases
  extends Context.Tag("effect-resolve/InstanceLeases")<InstanceLeases, InstanceLeases.Service>()
{}

/**
 * @since 0.4.0
 * @category tags
 */
export declare namespace InstanceLeases {
  /**
   * `heartbeat`'s input: a runtime instance, the new end of its lease (after `now`), and the time.
   *
   * @since 0.3.0
   * @category models
   */
  export interface HeartbeatInput {
    readonly instance: string
    readonly leaseUntil: number
    readonly now: number
    /**
     * A renewal (0.4): the instance's lease is extended only while it still holds at `now`; a lease that lapsed (or
     * was released, or forgotten) is never taken again, and the heartbeat fails with `reason: "leaseLapsed"`.
     * Without it (the first heartbeat of an instance), the lease is recorded whatever was there.
     */
    readonly renew?: boolean | undefined
  }

  /**
   * The instance leases of a `PendingStore`. Writes are atomic and uninterruptible once started; bad input fails
   * with a `PendingStoreError` and changes nothing.
   *
   * @since 0.4.0
   * @category models
   */
  export interface Service {
    /**
     * A runtime instance says it is alive until `leaseUntil`: its lease is recorded, and so is the lease of every
     * record it holds `resolving` (so a long apply is never recovered while its owner lives). Instances whose lease
     * passed at `now` are forgotten.
     */
    readonly heartbeat: (input: InstanceLeases.HeartbeatInput) => Effect.Effect<void, PendingStoreError>
    /** A runtime instance closed: it is forgotten (it counts as gone from now on). */
    readonly release: (instance: string) => Effect.Effect<void, PendingStoreError>
    /**
     * The lease ends of the given runtime instances that the store knows; an instance it does not know closed, or
     * its lease passed and it was forgotten.
     */
    readonly leases: (
      instances: ReadonlyArray<string>
    ) => Effect.Effect<ReadonlyMap<string, number>, PendingStoreError>
  }
}
