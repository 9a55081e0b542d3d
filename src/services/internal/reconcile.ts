/**
 * What a durable session makes of the records it finds open when it opens: each is made current (a claim a dead
 * owner left `resolving` is settled by its kind's `recover`, a pending record whose stager is gone is `orphaned`,
 * an orphaned one this process can run is taken back), then taken into the set, its directive pushed when it
 * forces.
 *
 * @internal
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import type * as Scope from "effect/Scope"
import { isOwnershipLost, type PendingStoreError } from "../../domain/Errors.js"
import type { PendingRecord } from "../../domain/PendingRecord.js"
import type * as ActionKind from "../ActionKind.js"
import type { ActionRecords } from "../ActionRecords.js"
import type { InstanceLeases } from "../InstanceLeases.js"
import { claimAbandoned, judge } from "./instanceLease.js"
import type { State } from "./pendingSet.js"
import { localVerdict } from "./runtimeInstance.js"
import { pushDirective } from "./staging.js"
import { restoreEntry, runnable } from "./storeMirror.js"

// What became of an action a dead owner left `resolving`: its kind's `recover`, or `conflict` when nothing can
// tell (a closure, a kind without `recover`, a payload that no longer decodes).
// `none`: the kind could not tell now (its `recover` failed: a file still locked, a disk error); the record stays
// `resolving` under the dead owner, asked again in a moment (`watchClaim`) and at the next start.
const recover = (s: State, record: PendingRecord): Effect.Effect<Option.Option<ActionKind.Recovery>> => {
  const found = runnable(s, record)
  const kindRecover = found?.kind.recover
  if (found === undefined || kindRecover === undefined) return Effect.succeed(Option.some("conflict"))
  return Effect.matchCauseEffect(
    Effect.provide(kindRecover(found.payload, { id: record.id, attempts: record.attempts }), s.kindContext),
    {
      onSuccess: (verdict) => Effect.succeed(Option.some(verdict as ActionKind.Recovery)),
      onFailure: (cause) =>
        Effect.as(
          Effect.logWarning(
            `effect-resolve: recovering ${record.id} failed; it stays resolving and is tried again in a moment (and at the next start)`,
            cause
          ),
          Option.none()
        )
    }
  )
}

/**
 * A record found when the session opens, made current:
 * - `resolving` under an owner that is gone (its process died on this host, or its lease passed without
 *   renewal): its kind's `recover` says what became of it;
 * - `pending` and not runnable here: left alone while its stager lives, `orphaned` once it is gone;
 * - `orphaned` and runnable here (its durable kind is registered): `pending` again, staged by this instance.
 */
const reconcile = (
  s: State,
  record: PendingRecord,
  store: ActionRecords.Service,
  isGone: (instance: string | null) => boolean,
  waited = false
): Effect.Effect<PendingRecord, PendingStoreError> =>
  Effect.gen(function*() {
    const runsHere = runnable(s, record) !== undefined
    if (record.status === "resolving") {
      if (!claimAbandoned(s, record.owner, record.leaseUntil)) {
        if (waited || !previousOwnersClaim(s, record)) return record
        // An exclusive session's previous owner can no longer settle this claim nor extend its lease (its writes
        // are fenced), and writes no file once that lease passed by its own clock: wait for that (at most a lease),
        // then recover it before this session serves anything, so that nothing new is built on an apply its owner
        // made but could not record (a later edit of the same file would leave it a conflict, or pending again with
        // its bytes on disk).
        const left = Math.min(Math.max(0, record.leaseUntil! - s.now()), s.lease)
        yield* Effect.sleep(Duration.millis(left + 50))
        const fresh = yield* store.get(record.id)
        return Option.isNone(fresh) ? record : yield* reconcile(s, fresh.value, store, isGone, true)
      }
      const verdict = yield* recover(s, record)
      if (Option.isNone(verdict)) return record
      yield* store.transition({
        id: record.id,
        from: ["resolving"],
        to: verdict.value,
        owner: Option.some(record.owner!),
        now: s.now()
      })
    } else if (record.status === "pending") {
      if (runsHere || !isGone(record.stager)) return record
      yield* store.transition({ id: record.id, from: ["pending"], to: "orphaned", now: s.now() })
    } else if (record.status === "orphaned") {
      if (!runsHere) return record
      yield* store.transition({ id: record.id, from: ["orphaned"], to: "pending", stager: s.owner, now: s.now() })
    } else {
      return record
    }
    return Option.getOrElse(yield* store.get(record.id), () => record)
  })

/**
 * A claim another instance held when this exclusive session acquired the session: its owner is not an instance alive
 * in this thread (which keeps its claim), and its lease will pass.
 */
const previousOwnersClaim = (s: State, record: PendingRecord): boolean =>
  s.ownership !== undefined && record.owner !== null && record.leaseUntil !== null &&
  localVerdict(record.owner) !== "alive"

/** How long a claim whose kind could not tell what became of it (a file still locked) waits before it is asked again. */
const recoverAgainAfter = Duration.seconds(1)

/**
 * A claim another instance held when the session opened, looked at again for as long as the session is open: once
 * its lease passed (a previous owner paused past its lease, or slow, whose lease had not run out yet when this one
 * took the session over), and again while its kind's `recover` cannot tell yet (the paused owner still holds the
 * file lock). Without it, such a record stayed `resolving` until the session's next start. The settle is the same
 * compare-and-set on the claim's owner as at the start: the owner, woken, settles it first or not at all.
 */
const watchClaim = (s: State, store: ActionRecords.Service, id: string): Effect.Effect<void, PendingStoreError> =>
  Effect.gen(function*() {
    for (;;) {
      const found = yield* store.get(id)
      if (Option.isNone(found)) return
      const record = found.value
      if (record.status !== "resolving" || record.owner === s.owner) return
      if (!claimAbandoned(s, record.owner, record.leaseUntil)) {
        // Its owner's lease has not passed yet: asked again right after it does (an owner alive in this thread,
        // whose lease passed, is asked again later).
        const left = (record.leaseUntil ?? 0) - s.now()
        yield* Effect.sleep(left > 0 ? Duration.millis(left + 50) : recoverAgainAfter)
        continue
      }
      const verdict = yield* recover(s, record)
      if (Option.isSome(verdict)) {
        yield* store.transition({
          id: record.id,
          from: ["resolving"],
          to: verdict.value,
          owner: Option.some(record.owner!),
          now: s.now()
        })
        return
      }
      yield* Effect.sleep(recoverAgainAfter)
    }
  })

/**
 * Reads the session's open records, makes each current and takes it into the set; a pending one that forces gets
 * its directive (`"auto"` when `soft`). An exclusive session first waits out the lease of a claim its previous
 * owner still held, and recovers it (see `reconcile`); a claim another instance still holds after that (or in a
 * shared session) is watched in the background (in the session's scope) until it is settled: see `watchClaim`.
 */
export const restoreOpen = (
  s: State,
  store: ActionRecords.Service & InstanceLeases.Service,
  soft: boolean
): Effect.Effect<void, PendingStoreError, Scope.Scope> =>
  Effect.gen(function*() {
    // Oldest first, so that the most recent pending action ends at the head of the queue.
    const records = [...(yield* store.listOpen(s.session))].reverse()
    const isGone = yield* judge(s, store, records.map((record) => record.stager))
    const held: Array<string> = []
    for (const stored of records) {
      const record = yield* reconcile(s, stored, store, isGone)
      if (record.status === "resolving" && record.owner !== s.owner) held.push(record.id)
      const entry = restoreEntry(s, record)
      if (entry.status === "pending" && !entry.standing && entry.runner !== undefined) {
        yield* pushDirective(s, entry, soft)
      }
    }
    if (held.length > 0) {
      yield* Effect.forkScoped(Effect.forEach(
        held,
        (id) =>
          watchClaim(s, store, id).pipe(
            // A store error is asked again; this instance losing the session (fenced) ends the watch.
            Effect.retry({ schedule: Schedule.spaced(recoverAgainAfter), while: (error) => !isOwnershipLost(error) }),
            Effect.catchAllCause((cause) =>
              Effect.logWarning(
                `effect-resolve: ${id} stays resolving here; the session's next start recovers it`,
                cause
              )
            )
          ),
        { concurrency: "unbounded", discard: true }
      ))
    }
  })
