/**
 * Who owns a session, one concern of the `PendingStore`: its owner epochs (`acquire` hands a new owner an epoch
 * larger than every one before; `PendingStore.Service.fenced` refuses the writes of an older one) and its owner log
 * (each open, save and close a cluster runner records). Not to be confused with `SessionOwnership`, what an exclusive
 * session's own code asks before it acts; this is the store's record that it rests on.
 *
 * Every store layer provides it, as a view on the same store as `PendingStore` and the other parts.
 *
 * @example
 * ```ts
 * import { Effect, Option } from "effect"
 * import { SessionOwners } from "effect-resolve"
 *
 * // Who owns session "s1" now, if anyone?
 * const currentOwner = Effect.map(
 *   Effect.flatMap(SessionOwners, (owners) => owners.owner("s1")),
 *   Option.map((owner) => `${owner.owner} (epoch ${owner.epoch})`)
 * )
 * ```
 *
 * @since 0.4.0
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import type { PendingStoreError } from "../domain/Errors.js"

/**
 * The owner epochs and owner log of sessions. A part of `PendingStore` (0.4): hold it to depend on this concern only.
 *
 * @since 0.4.0
 * @category tags
 */
export class SessionOwners
  extends Context.Tag("effect-resolve/SessionOwners")<SessionOwners, SessionOwners.Service>()
{}

/**
 * @since 0.4.0
 * @category tags
 */
export declare namespace SessionOwners {
  /**
   * A session's owner epoch (0.4): `acquire` hands out a new one, larger than every one before, to each new owner of
   * a session. A store `fenced` with it refuses every write once a newer owner acquired the session.
   *
   * @since 0.4.0
   * @category models
   */
  export interface Fence {
    readonly session: string
    readonly epoch: number
  }
  /**
   * `acquire`'s input: the session, the runtime instance that becomes its owner, and the time.
   *
   * @since 0.4.0
   * @category models
   */
  export interface AcquireInput {
    readonly session: string
    readonly owner: string
    readonly now: number
  }
  /**
   * A session's current owner, as `owner` tells it: the latest epoch, the instance that acquired it, and when.
   *
   * @since 0.4.0
   * @category models
   */
  export interface Owner {
    readonly epoch: number
    readonly owner: string
    readonly at: number
  }
  /**
   * One entry of a session's owner log: the runtime instance `owner` opened the session (`open`), saved its state
   * (`save`) or closed it (`close`), at `at` (epoch milliseconds, from `Clock`). A cluster runner keeps this log
   * (`effect-resolve/cluster`: each open and close, and with `logSaves` each save): the next runner opens a session
   * once its last owner closed it or is gone, and with the journal's claims the store shows who ran each session, when.
   *
   * @since 0.3.0
   * @category models
   */
  export interface SessionLogEntry {
    readonly session: string
    readonly owner: string
    readonly event: "open" | "save" | "close"
    readonly at: number
  }

  /**
   * The session owners of a `PendingStore`. Writes are atomic and uninterruptible once started; bad input fails with
   * a `PendingStoreError` and changes nothing.
   *
   * @since 0.4.0
   * @category models
   */
  export interface Service {
    /**
     * Makes `owner` the session's owner: a new epoch, larger than every epoch handed out for the session before, in
     * one statement. Every store `fenced` with an older epoch refuses its writes from then on.
     *
     * @since 0.4.0
     */
    readonly acquire: (input: SessionOwners.AcquireInput) => Effect.Effect<number, PendingStoreError>
    /**
     * The session's current owner (`none` when no owner ever acquired it).
     *
     * @since 0.4.0
     */
    readonly owner: (session: string) => Effect.Effect<Option.Option<SessionOwners.Owner>, PendingStoreError>
    /**
     * Appends one entry to the session's owner log (an append-only table; nothing else reads or prunes it). Bad
     * input fails with a `PendingStoreError` and appends nothing.
     *
     * @since 0.3.0
     */
    readonly logSession: (entry: SessionOwners.SessionLogEntry) => Effect.Effect<void, PendingStoreError>
    /**
     * The session's owner log, in the order it was appended; with `last`, only its last `last` entries (a cluster
     * runner reads the last one before it opens the session).
     *
     * @since 0.3.0
     */
    readonly sessionLog: (
      session: string,
      options?: { readonly last?: number | undefined }
    ) => Effect.Effect<ReadonlyArray<SessionOwners.SessionLogEntry>, PendingStoreError>
  }
}
