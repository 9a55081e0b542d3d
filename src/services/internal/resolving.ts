/**
 * How one action leaves pending: a `resolve` call picks it (by id, else the most recent pending one, else the
 * fallback), claims it exactly once (in memory, or with a conditional update of the store), runs its callback and
 * settles it; or says why it cannot: not pending, only discardable (orphaned, unreadable: `discardDead`), taken for
 * orphaned while this process still runs it (`revive`), or left to the live process that staged it
 * (`notRunnableHere`). `clear` ends one without running anything.
 *
 * @internal
 */
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import type * as Fiber from "effect/Fiber"
import * as FiberRef from "effect/FiberRef"
import { globalValue } from "effect/GlobalValue"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import {
  ApplyFailed,
  PendingActionElsewhere,
  PendingActionNotPending,
  type PendingStoreError,
  UnknownPendingAction
} from "../../domain/Errors.js"
import type { PendingStatus } from "../../domain/PendingRecord.js"
import type { ResolveError, ResolveParams } from "../../domain/ResolveParams.js"
import { resolveReminder } from "../../domain/SteeringMessage.js"
import * as ToolResult from "../../domain/ToolResult.js"
import { capText, messageOf, safely } from "../../internal/render.js"
import type { ActionRecords } from "../ActionRecords.js"
import type { InstanceLeases } from "../InstanceLeases.js"
import type { Fallback, ResolveOptions } from "../PendingActions.js"
import { SessionOwnership } from "../SessionOwnership.js"
import { judge } from "./instanceLease.js"
import * as Invocation from "./invocation.js"
import {
  type Entry,
  expire,
  isDue,
  mostRecent,
  payOwed,
  pendingNow,
  publish,
  type Runner,
  type State,
  storeRetry,
  write
} from "./pendingSet.js"
import { settledInStore } from "./retention.js"
import { adopt, reread, restoreEntry } from "./storeMirror.js"

type Restore = <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>

const notPending = (s: State, entry: Entry) =>
  new PendingActionNotPending({ id: entry.id, label: entry.label, status: entry.status, pending: pendingNow(s) })

const elsewhere = (s: State, entry: Entry) =>
  new PendingActionElsewhere({
    id: entry.id,
    label: entry.label,
    stager: entry.stager ?? "unknown",
    pending: pendingNow(s)
  })

const unknownAction = (s: State, id: string) => new UnknownPendingAction({ id, pending: pendingNow(s) })

const outcomeText = (result: ToolResult.ToolResult) => capText(ToolResult.textOf(result))

// ---------------------------------------------------------------------------------------------------------------
// Settling
// ---------------------------------------------------------------------------------------------------------------

/** An entry leaves its claim with `status` and `outcome`. */
const finish = (s: State, entry: Entry, status: PendingStatus, outcome: Entry["outcome"]) => {
  entry.claimed = false
  entry.status = status
  entry.outcome = outcome
  entry.dropped = false
  publish(s, entry)
}

// Records how a claim ended. Never fails: the world has changed, and a lost write leaves the record
// `resolving` for recovery to reconcile.
// `settleWith` (a caller's `ResolveOptions`) wraps each attempt of the write, e.g. in a transaction with its own.
const settleStore = (
  s: State,
  entry: Entry,
  to: ActionRecords.SettleStatus,
  outcome: string | undefined,
  settleWith?: ResolveOptions["settleWith"]
) =>
  s.store === undefined ? Effect.void : Effect.matchCauseEffect(
    Effect.retry(
      Effect.suspend(() => {
        const input: ActionRecords.SettleInput = {
          id: entry.id,
          owner: s.owner,
          to,
          outcome: Option.fromNullable(outcome),
          now: s.now()
        }
        const settle = s.store!.settle(input)
        return settleWith === undefined ?
          settle :
          settleWith(settle, { id: entry.id, label: entry.label, outcome: outcome ?? "", settle: input })
      }),
      storeRetry
    ),
    {
      onFailure: (cause) =>
        Effect.logError(
          `effect-resolve: could not record ${entry.id} as ${to}; it stays resolving in the store until a ` +
            "restart recovers it",
          cause
        ),
      onSuccess: (settled) =>
        settled ?
          Effect.sync(() => to !== "pending" && settledInStore(s)) :
          Effect.logWarning(`effect-resolve: ${entry.id} was recovered by another process while it was resolved`)
    }
  )

// ---------------------------------------------------------------------------------------------------------------
// Running a claimed action
// ---------------------------------------------------------------------------------------------------------------

const runClaimed = (
  s: State,
  entry: Entry,
  runner: Runner,
  invocation: ResolveParams,
  restore: Restore,
  fiber: Fiber.RuntimeFiber<unknown, unknown>,
  amendment: Option.Option<unknown>,
  options: ResolveOptions
): Effect.Effect<ToolResult.ToolResult, ResolveError> => {
  const run = Invocation.attempt(runner.callbacks, invocation, amendment)
  // Providing the staging context merges it into the caller's (about 3.5 µs, bench/); the usual caller (the same
  // fiber or runtime stages and resolves) already runs with that very context.
  const inContext = fiber.getFiberRef(FiberRef.currentContext) === runner.context ?
    run as Effect.Effect<ToolResult.ToolResult | Option.Option<ToolResult.ToolResult>, unknown> :
    Effect.provide(run, runner.context)
  // An exclusive session's apply can ask whether it still owns the session (the edit producer does, before it writes).
  const provided = s.ownership === undefined
    ? inContext
    : Effect.provideService(inContext, SessionOwnership, s.ownership)
  const done = invocation.action === "apply" ? "applied" : "discarded"
  return Invocation.withCommitMarker(fiber, restore(provided), {
    onSuccess: (value) => {
      const result = Invocation.settled(entry, invocation, value)
      if (s.store === undefined) {
        finish(s, entry, done, () => outcomeText(result))
        return Effect.succeed(result)
      }
      const outcome = outcomeText(result)
      finish(s, entry, done, outcome)
      return Effect.as(settleStore(s, entry, done, outcome, options.settleWith), result)
    },
    onFailure: (cause, marker): Effect.Effect<never, ResolveError> => {
      // Settle first: nothing below may leave the action `resolving`.
      const dropped = entry.dropped
      const status: PendingStatus = marker.committed ? done : dropped ? "cleared" : "pending"
      const failed = Invocation.failedWith(entry, invocation, cause)
      const interrupted = Cause.isInterruptedOnly(cause)
      // Whatever the failure holds, rendering it never throws (`messageOf`, a guarded `Cause.squash`).
      const outcome = interrupted ? undefined : messageOf(safely(() => Cause.squash(cause), undefined))
      finish(s, entry, status, outcome)
      const recorded = s.store === undefined ? Effect.void : status === "cleared" ?
        Effect.zipRight(settleStore(s, entry, "pending", outcome), write(s, entry.id, ["pending"], "cleared")) :
        settleStore(s, entry, status === "pending" ? "pending" : done, outcome)
      // Still pending after a failure: remind the model (not after an interruption, nor for a dropped action,
      // where a reminder would point at nothing, nor for a standing one, which is no preview). The forcing
      // directive is requeued when the turn ends.
      const remind = status === "pending" && !interrupted && !entry.standing ?
        Effect.asVoid(s.bus.steer(resolveReminder(entry.sourceToolName))) :
        Effect.void
      return Effect.zipRight(Effect.zipRight(recorded, remind), failed)
    }
  })
}

// ---------------------------------------------------------------------------------------------------------------
// Claiming in the store, and the ways a durable claim is refused
// ---------------------------------------------------------------------------------------------------------------

const claimInStore = (
  s: State,
  entry: Entry,
  runner: Runner,
  invocation: ResolveParams,
  restore: Restore,
  fiber: Fiber.RuntimeFiber<unknown, unknown>,
  store: ActionRecords.Service,
  amendment: Option.Option<unknown>,
  options: ResolveOptions
): Effect.Effect<ToolResult.ToolResult, ResolveError> => {
  const at = s.now()
  return Effect.matchCauseEffect(store.claim({ id: entry.id, owner: s.owner, leaseUntil: at + s.lease, now: at }), {
    onFailure: (cause) => {
      const dropped = entry.dropped
      finish(s, entry, "pending", entry.outcome)
      entry.attempts--
      return Effect.zipRight(honourDrop(s, entry, dropped), Effect.failCause(cause))
    },
    onSuccess: (claimed) => {
      if (Option.isSome(claimed) && claimed.value.status === "unreadable") {
        // The stored row cannot be read (corrupted outside the store): never applied. The claim is given back
        // and the action shows as unreadable; it can be discarded.
        entry.claimed = false
        entry.attempts--
        return Effect.zipRight(
          settleStore(s, entry, "pending", claimed.value.outcome ?? undefined),
          Effect.suspend(() => {
            const dropped = entry.dropped
            entry.dropped = false
            entry.status = "unreadable"
            entry.outcome = claimed.value.outcome ?? undefined
            publish(s, entry)
            return Effect.zipRight(honourDrop(s, entry, dropped), Effect.fail(notPending(s, entry)))
          })
        )
      }
      if (Option.isSome(claimed)) {
        entry.attempts = claimed.value.attempts
        return runClaimed(s, entry, runner, invocation, restore, fiber, amendment, options)
      }
      // Another process won, or the record left `pending` meanwhile: take the store's view, and say why. A
      // record still `pending` refused a claim only because it expired.
      const dropped = entry.dropped
      entry.claimed = false
      entry.dropped = false
      entry.status = "pending"
      entry.attempts--
      return Effect.flatMap(Effect.orElseSucceed(store.get(entry.id), () => Option.none()), (record) => {
        if (Option.isSome(record)) adopt(s, entry, record.value)
        if (entry.status === "pending") expire(s, entry)
        // Another process took it for orphaned (this one's lease lapsed): this process still runs it, unless it
        // was cleared meanwhile.
        if (entry.status === "orphaned" && !dropped) return revive(s, entry, invocation, store, options)
        return Effect.zipRight(
          honourDrop(s, entry, dropped),
          Effect.zipRight(payOwed(s), Effect.suspend(() => Effect.fail(notPending(s, entry))))
        )
      })
    }
  })
}

// `clear` met the entry while it was being claimed; the claim failed, so the entry is back where `clear` can end
// it. A store that refuses the write leaves it as it is (the caller's resolve fails anyway), logged.
const honourDrop = (s: State, entry: Entry, dropped: boolean): Effect.Effect<void> =>
  dropped ?
    Effect.catchAllCause(
      Effect.asVoid(Effect.suspend(() => clear(s, entry.id))),
      (cause) => Effect.logError(`effect-resolve: could not clear ${entry.id} in the pending store`, cause)
    ) :
    Effect.void

// An action that can only be discarded (orphaned: its stager is gone with its callbacks; unreadable: its stored
// row cannot be read): a discard ends it, with no callback to run.
const discardDead = (
  s: State,
  entry: Entry,
  invocation: ResolveParams,
  store: ActionRecords.Service
): Effect.Effect<ToolResult.ToolResult, ResolveError> =>
  Effect.flatMap(
    store.transition({ id: entry.id, from: [entry.status], to: "discarded", now: s.now() }),
    (done) => {
      if (!done) return Effect.zipRight(reread(s, entry, store), Effect.fail(notPending(s, entry)))
      const result = Invocation.settled(entry, invocation, Option.none())
      finish(s, entry, "discarded", outcomeText(result))
      settledInStore(s)
      return Effect.succeed(result)
    }
  )

// An action this process staged and still runs, which another process took for orphaned (this one's lease
// lapsed, say while it was paused): it is pending again, staged by this instance, then resolved as usual.
const revive = (
  s: State,
  entry: Entry,
  invocation: ResolveParams,
  store: ActionRecords.Service,
  options: ResolveOptions
): Effect.Effect<ToolResult.ToolResult, ResolveError> =>
  Effect.flatMap(
    store.transition({ id: entry.id, from: ["orphaned"], to: "pending", stager: s.owner, now: s.now() }),
    (back) => {
      if (back) {
        entry.status = "pending"
        entry.stager = s.owner
        publish(s, entry)
        return invoke(s, entry, invocation, options)
      }
      return Effect.zipRight(
        reread(s, entry, store),
        Effect.suspend(() =>
          entry.status === "pending" ? invoke(s, entry, invocation, options) : Effect.fail(notPending(s, entry))
        )
      )
    }
  )

// A pending action this process cannot run: its stager runs it while it lives; once it is provably gone the
// action is orphaned (then it can be discarded).
const notRunnableHere = (
  s: State,
  entry: Entry,
  invocation: ResolveParams,
  store: ActionRecords.Service & InstanceLeases.Service
): Effect.Effect<ToolResult.ToolResult, ResolveError> =>
  Effect.flatMap(judge(s, store, [entry.stager]), (isGone) => {
    if (!isGone(entry.stager)) return Effect.zipRight(payOwed(s), Effect.fail(elsewhere(s, entry)))
    return Effect.flatMap(
      store.transition({ id: entry.id, from: ["pending"], to: "orphaned", now: s.now() }),
      (orphaned) =>
        Effect.zipRight(
          reread(s, entry, store),
          Effect.suspend(() => {
            if (entry.status === "orphaned" && invocation.action === "discard") {
              return discardDead(s, entry, invocation, store)
            }
            return Effect.fail(
              entry.status === "pending" && !orphaned ? elsewhere(s, entry) : notPending(s, entry)
            )
          })
        )
    )
  })

// ---------------------------------------------------------------------------------------------------------------
// Resolving
// ---------------------------------------------------------------------------------------------------------------

/**
 * The reviewer's amendment for this call, decoded with the kind's Schema: `none` without one, for a discard, for
 * another action's amendment, or for a kind that takes none; `ApplyFailed` when it no longer decodes (checked before
 * the claim: nothing changes).
 */
const amendmentFor = (
  entry: Entry,
  runner: Runner,
  invocation: ResolveParams,
  options: ResolveOptions
): Either.Either<Option.Option<unknown>, ApplyFailed> => {
  const amendment = options.amendment
  const decode = runner.decodeAmendment
  if (
    amendment === undefined || decode === undefined || invocation.action !== "apply" || amendment.actionId !== entry.id
  ) return Either.right(Option.none())
  return Either.match(decode(amendment.encoded), {
    onRight: (decoded) => Either.right(Option.some(decoded)),
    onLeft: (error) =>
      Either.left(
        new ApplyFailed({
          label: entry.label,
          sourceToolName: entry.sourceToolName,
          detail: `the reviewer's amendment (by ${
            capText(amendment.reviewer, 200)
          }) no longer matches what the kind takes: ${
            capText(ParseResult.TreeFormatter.formatErrorSync(error), 1_000)
          }. Nothing was run; the action is still pending`,
          cause: error
        })
      )
  })
}

/** Claims `entry` and runs its callback, or fails saying why it cannot. */
const invoke = (
  s: State,
  entry: Entry,
  invocation: ResolveParams,
  options: ResolveOptions
): Effect.Effect<ToolResult.ToolResult, ResolveError> =>
  Effect.uninterruptibleMask((restore) =>
    Effect.withFiberRuntime<ToolResult.ToolResult, ResolveError>((fiber) => {
      if (entry.status === "pending" && isDue(s, entry)) expire(s, entry)
      const runner = entry.runner
      const store = s.store
      if (entry.status === "orphaned" && runner !== undefined && store !== undefined) {
        return revive(s, entry, invocation, store, options)
      }
      if (entry.status !== "pending" || runner === undefined) {
        if (store !== undefined) {
          if ((entry.status === "orphaned" || entry.status === "unreadable") && invocation.action === "discard") {
            return discardDead(s, entry, invocation, store)
          }
          if (entry.status === "pending") return notRunnableHere(s, entry, invocation, store)
        }
        return Effect.zipRight(payOwed(s), Effect.fail(notPending(s, entry)))
      }
      const amendment = amendmentFor(entry, runner, invocation, options)
      if (Either.isLeft(amendment)) return Effect.fail(amendment.left)
      entry.status = "resolving"
      entry.claimed = true
      entry.attempts++
      publish(s, entry)
      try {
        return store === undefined ?
          runClaimed(s, entry, runner, invocation, restore, fiber, amendment.right, options) :
          claimInStore(s, entry, runner, invocation, restore, fiber, store, amendment.right, options)
      } catch (defect) {
        // Unreachable by design (callbacks are called through `Invocation.attempt`); the claim is undone.
        finish(s, entry, entry.dropped ? "cleared" : "pending", entry.outcome)
        return Invocation.failedWith(entry, invocation, Cause.die(defect))
      }
    })
  )

// Durable: an id the set does not know may be a record of this session staged by another process.
const lookup = (s: State, id: string, store: ActionRecords.Service) =>
  Effect.flatMap(store.get(id), (record) => {
    if (Option.isNone(record) || record.value.session !== s.session) return Effect.fail(unknownAction(s, id))
    return Effect.succeed(restoreEntry(s, record.value))
  })

/**
 * The ids of the actions the current fiber's `resolve` calls picked (by id or as the most recent), while
 * `trackResolved` runs it.
 */
export const currentResolveTracker: FiberRef.FiberRef<Array<string> | undefined> = globalValue(
  Symbol.for("effect-resolve/PendingActions/currentResolveTracker"),
  () => FiberRef.unsafeMake<Array<string> | undefined>(undefined, { fork: (tracker) => tracker })
)

const noOptions: ResolveOptions = {}

/** See `PendingActions.resolveOr`. */
export const resolveOr = <E, R>(
  s: State,
  params: ResolveParams,
  fallback: Fallback<E, R>,
  options: ResolveOptions = noOptions
): Effect.Effect<ToolResult.ToolResult, ResolveError | E, R> =>
  Effect.withFiberRuntime((fiber): Effect.Effect<ToolResult.ToolResult, ResolveError | E, R> => {
    // The entry this call picked is told to the tracker (the turn driver serves each id once per response).
    const tracker = fiber.getFiberRef(currentResolveTracker)
    const served = (entry: Entry): Entry => {
      tracker?.push(entry.id)
      return entry
    }
    const id = params.id
    if (id !== undefined) {
      const entry = s.entries.get(id)
      if (entry !== undefined) return invoke(s, served(entry), params, options)
      const store = s.store
      return store === undefined ?
        Effect.fail(unknownAction(s, id)) :
        Effect.flatMap(lookup(s, id, store), (restored) => invoke(s, served(restored), params, options))
    }
    const entry = mostRecent(s)
    if (entry !== undefined) return invoke(s, served(entry), params, options)
    const last = s.lastSettled === undefined ?
      Option.none() :
      Option.some({ label: s.lastSettled.label, status: s.lastSettled.status })
    return s.owed.length === 0 ? fallback(last) : Effect.zipRight(payOwed(s), fallback(last))
  })

// ---------------------------------------------------------------------------------------------------------------
// Clearing
// ---------------------------------------------------------------------------------------------------------------

/** See `PendingActions.clear`. */
export const clear = (s: State, id: string): Effect.Effect<boolean, PendingStoreError> =>
  Effect.suspend(() => {
    const entry = s.entries.get(id)
    if (entry === undefined) return Effect.succeed(false)
    if (entry.status === "resolving") {
      entry.dropped = true
      return Effect.succeed(false)
    }
    if (
      entry.status !== "pending" && entry.status !== "orphaned" && entry.status !== "conflict" &&
      entry.status !== "unreadable"
    ) {
      return Effect.succeed(false)
    }
    const store = s.store
    if (store === undefined) {
      finish(s, entry, "cleared", entry.outcome)
      return Effect.succeed(true)
    }
    return Effect.flatMap(store.transition({ id, from: [entry.status], to: "cleared", now: s.now() }), (done) => {
      if (!done) return Effect.as(reread(s, entry, store), false)
      finish(s, entry, "cleared", entry.outcome)
      settledInStore(s)
      return Effect.succeed(true)
    })
  })
