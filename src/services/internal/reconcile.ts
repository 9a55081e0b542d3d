/**
 * What a durable session makes of the records it finds open when it opens: each is made current (a claim a dead
 * owner left `resolving` is settled by its kind's `recover`, a pending record whose stager is gone is `orphaned`,
 * an orphaned one this process can run is taken back), then taken into the set, its directive pushed when it
 * forces.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { PendingStoreError } from "../../domain/Errors.js"
import type { PendingRecord } from "../../domain/PendingRecord.js"
import type * as ActionKind from "../ActionKind.js"
import type { ActionRecords } from "../ActionRecords.js"
import type { InstanceLeases } from "../InstanceLeases.js"
import { claimAbandoned, judge } from "./instanceLease.js"
import type { State } from "./pendingSet.js"
import { pushDirective } from "./staging.js"
import { restoreEntry, runnable } from "./storeMirror.js"

// What became of an action a dead owner left `resolving`: its kind's `recover`, or `conflict` when nothing can
// tell (a closure, a kind without `recover`, a payload that no longer decodes).
// `none`: the kind could not tell now (its `recover` failed: a file still locked, a disk error); the record stays
// `resolving` under the dead owner, and the next start tries again.
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
            `effect-resolve: recovering ${record.id} failed; it stays resolving and is tried again at the next start`,
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
  isGone: (instance: string | null) => boolean
): Effect.Effect<PendingRecord, PendingStoreError> =>
  Effect.gen(function*() {
    const runsHere = runnable(s, record) !== undefined
    if (record.status === "resolving") {
      if (!claimAbandoned(s, record.owner, record.leaseUntil)) return record
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
 * Reads the session's open records, makes each current and takes it into the set; a pending one that forces gets
 * its directive (`"auto"` when `soft`).
 */
export const restoreOpen = (
  s: State,
  store: ActionRecords.Service & InstanceLeases.Service,
  soft: boolean
): Effect.Effect<void, PendingStoreError> =>
  Effect.gen(function*() {
    // Oldest first, so that the most recent pending action ends at the head of the queue.
    const records = [...(yield* store.listOpen(s.session))].reverse()
    const isGone = yield* judge(s, store, records.map((record) => record.stager))
    for (const stored of records) {
      const record = yield* reconcile(s, stored, store, isGone)
      const entry = restoreEntry(s, record)
      if (entry.status === "pending" && !entry.standing && entry.runner !== undefined) {
        yield* pushDirective(s, entry, soft)
      }
    }
  })
