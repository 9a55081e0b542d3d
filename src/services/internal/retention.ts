/**
 * Which settled records a durable session's store keeps, and how the others go: the options checked into a plan,
 * and a background fiber that prunes the session's settled records, woken every `every` settles (and once when the
 * session opens), never on a resolve's path.
 *
 * @internal
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import type * as Scope from "effect/Scope"
import type { ActionRecords } from "../ActionRecords.js"
import type { Retention } from "../PendingActions.js"
import type { State } from "./pendingSet.js"

/** How a session prunes its store: which settled records go, and after how many settles it looks again. */
export interface RetentionPlan {
  readonly keepLast: Option.Option<number>
  readonly maxAge: Option.Option<number>
  readonly every: number
}

/** Settled records a durable session keeps by default (see `DurableOptions.retention`). */
const defaultKeepLast = 10_000

/** Records one `prune` call removes: small, so that a prune never holds the store's write lock for long. */
const pruneBatch = 500

/** The plan of `retention` (`undefined`: `"keep-all"`, nothing is pruned); a value out of range is a defect. */
export const retentionOf = (
  retention: Retention | "keep-all" | undefined
): Effect.Effect<RetentionPlan | undefined> => {
  if (retention === "keep-all") return Effect.succeed(undefined)
  const keepLast = retention?.keepLast ?? (retention?.maxAge === undefined ? defaultKeepLast : undefined)
  if (keepLast !== undefined && !(Number.isSafeInteger(keepLast) && keepLast >= 0)) {
    return Effect.dieMessage(
      `effect-resolve: retention.keepLast must be a whole number of records, 0 or more (got ${String(keepLast)})`
    )
  }
  const maxAge = retention?.maxAge === undefined ? undefined : Duration.toMillis(retention.maxAge)
  if (maxAge !== undefined && !(maxAge >= 0 && Number.isFinite(maxAge))) {
    return Effect.dieMessage(`effect-resolve: retention.maxAge must be a finite duration (got ${String(maxAge)})`)
  }
  return Effect.succeed({
    keepLast: Option.fromNullable(keepLast),
    maxAge: Option.fromNullable(maxAge),
    // A tenth of what is kept between two looks: at most 10% over `keepLast`.
    every: keepLast === undefined ? 100 : Math.max(1, Math.min(1_000, Math.ceil(keepLast / 10)))
  })
}

/** Wakes the pruning fiber. */
export const wantPrune = (s: State): void => {
  s.settledSincePrune = 0
  s.pruneWanted.unsafeOffer(undefined)
}

/**
 * Counts a settle the store has recorded, and wakes the pruning fiber every `retention.every` of them. Counted once
 * the write landed, not when the mirror settled: a prune woken earlier could run before the record it was woken
 * for is settled in the store, and nothing would wake it again.
 */
export const settledInStore = (s: State): void => {
  if (s.retention !== undefined && ++s.settledSincePrune >= s.retention.every) wantPrune(s)
}

/** Forks the pruning fiber in the session's scope, and wakes it once. */
export const startPruning = (
  s: State,
  store: ActionRecords.Service,
  plan: RetentionPlan
): Effect.Effect<void, never, Scope.Scope> => {
  const pruneOnce = Effect.suspend(() =>
    store.prune({
      session: s.session,
      keepLast: plan.keepLast,
      settledBefore: Option.map(plan.maxAge, (age) => Math.max(0, s.now() - age)),
      batch: pruneBatch
    })
  )
  const pruneAll = Effect.gen(function*() {
    while ((yield* pruneOnce) === pruneBatch) yield* Effect.yieldNow()
  })
  return Effect.zipRight(
    Effect.forkScoped(Effect.forever(Effect.zipRight(
      Queue.take(s.pruneWanted),
      Effect.catchAllCause(
        pruneAll,
        (cause) => Effect.logWarning(`effect-resolve: could not prune the settled records of ${s.session}`, cause)
      )
    ))),
    Effect.sync(() => wantPrune(s))
  )
}
