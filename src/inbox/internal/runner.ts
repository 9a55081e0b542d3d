/**
 * Running a reviewer's decision in the inbox: through the action's session (opened here as a second process opens
 * it), at most once at a time per decision in this process, in the inbox's scope (a client that goes away does not
 * stop an apply that started), and completing the decision `done` or `failed`; or leaving it requested, with why,
 * when only another process can run it now.
 *
 * @internal
 */
import * as Cause from "effect/Cause"
import type * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FiberId from "effect/FiberId"
import * as Option from "effect/Option"
import * as RcMap from "effect/RcMap"
import * as Schedule from "effect/Schedule"
import type * as Scope from "effect/Scope"
import type * as DecisionModel from "../../domain/Decision.js"
import type { PendingStoreError } from "../../domain/Errors.js"
import type { InvalidOptions } from "../../domain/InvalidOptions.js"
import { isTerminal, type PendingRecord } from "../../domain/PendingRecord.js"
import * as ToolResult from "../../domain/ToolResult.js"
import { capText, messageOf } from "../../internal/render.js"
import { outcomeMax, runningDecision } from "../../services/internal/decisionSettle.js"
import type { PendingStore } from "../../services/PendingStore.js"
import { type ResolveServices, resolveWith } from "../../tools/Resolve.js"

/** What running a decision did. */
export interface RunOutcome {
  readonly outcome: "applied" | "discarded" | "failed" | "requested"
  readonly message: string
  /** The decision as this run completed it, when it knows (completed in its action's settle transaction). */
  readonly completed?: DecisionModel.Decision | undefined
}

/** What a runner needs: the store, the inbox's sessions by name, who it is, its clock, scope and feed's nudge. */
export interface RunnerOptions {
  readonly store: PendingStore.Service
  /** The sessions the inbox opened, by name: what `resolve` needs, and why one could not be opened. */
  readonly runtimes: RcMap.RcMap<string, Context.Context<ResolveServices>, PendingStoreError | InvalidOptions>
  readonly instance: string
  readonly now: () => number
  readonly scope: Scope.Scope
  readonly poke: Effect.Effect<void>
}

/** The inbox's decision runner: `run` a requested decision, or `settleAgainst` the record it found settled. */
export const make = (options: RunnerOptions) => {
  const { instance, now, runtimes, scope, store } = options

  const complete = (decision: DecisionModel.Decision, state: "done" | "failed", message: string) =>
    Effect.as(
      Effect.retry(
        store.completeDecision({
          id: decision.id,
          state,
          outcome: capText(message, outcomeMax),
          by: instance,
          now: now()
        }),
        Schedule.intersect(Schedule.exponential("20 millis"), Schedule.recurs(4))
      ),
      undefined
    )

  /**
   * A requested decision whose action is settled: `done` when it settled as decided after the decision was made
   * (this inbox, or the session, ran it), `failed` otherwise (it was settled some other way first).
   */
  const settleAgainst = (
    decision: DecisionModel.Decision,
    record: PendingRecord
  ): Effect.Effect<RunOutcome, PendingStoreError> => {
    const wanted = decision.action === "apply" ? "applied" : "discarded"
    const done = record.status === wanted && record.updatedAt >= decision.requestedAt
    const message = done ?
      record.outcome ?? `${wanted === "applied" ? "Applied" : "Discarded"}.` :
      `Not run: the action was already ${record.status} before this decision could run.`
    return Effect.as(complete(decision, done ? "done" : "failed", message), {
      outcome: done ? wanted : "failed",
      message
    })
  }

  const leftRequested = (message: string): RunOutcome => ({ outcome: "requested", message })

  // Runs one decision through the action's session, opened here as a second process opens it.
  const execute = (decision: DecisionModel.Decision): Effect.Effect<RunOutcome, PendingStoreError> =>
    Effect.gen(function*() {
      const session = yield* Effect.either(RcMap.get(runtimes, decision.session))
      if (session._tag === "Left") {
        return leftRequested(
          `Recorded; the session could not be opened to run it now (${
            session.left._tag === "PendingStoreError" ? session.left.detail : session.left.message
          }). The inbox tries again.`
        )
      }
      // The decision is completed in the same transaction as the settle of its action (or after it, if that fails).
      const run = runningDecision(store, decision, instance, Effect.sync(now))
      const exit = yield* Effect.exit(Effect.provide(resolveWith(run.params, run.options), session.right))
      if (Exit.isSuccess(exit)) {
        const message = ToolResult.textOf(exit.value)
        const completed = run.completed()
        if (completed === undefined) yield* complete(decision, "done", message)
        const ran: RunOutcome = {
          outcome: decision.action === "apply" ? "applied" : "discarded",
          message,
          completed: completed === undefined ? undefined : Option.getOrUndefined(completed)
        }
        return ran
      }
      const failure = Cause.failureOption(exit.cause)
      if (Option.isNone(failure)) {
        yield* Effect.logWarning(`effect-resolve inbox: running decision ${decision.id} died`, exit.cause)
        return leftRequested("Recorded; running it failed unexpectedly. The inbox tries again.")
      }
      const error = failure.value
      switch (error._tag) {
        case "PendingActionElsewhere":
          return leftRequested(
            "Recorded. Only the process that staged it can run it (it registers a kind this inbox does not); it " +
              "runs the decision on its next turn or refresh."
          )
        case "PendingStoreError":
          return leftRequested(
            `Recorded; the store failed while running it (${error.detail}). The inbox tries again.`
          )
        case "PendingActionNotPending": {
          if (error.status === "resolving") {
            return leftRequested("Recorded; another call is resolving the action right now. The inbox looks again.")
          }
          const record = yield* store.get(decision.actionId)
          if (Option.isSome(record) && isTerminal(record.value.status)) {
            return yield* settleAgainst(decision, record.value)
          }
          const message = messageOf(error)
          yield* complete(decision, "failed", message)
          return { outcome: "failed", message } as const
        }
        default: {
          // ApplyFailed, ToolError (the action is pending again), UnknownPendingAction, NoPendingAction.
          const message = messageOf(error)
          yield* complete(decision, "failed", message)
          return { outcome: "failed", message } as const
        }
      }
    }).pipe(Effect.scoped, Effect.withSpan("Inbox.execute", { attributes: { decision: decision.id } }))

  // One run per decision in this process: a request and the sweep never run it twice at once.
  const running = new Map<string, Deferred.Deferred<RunOutcome, PendingStoreError>>()
  const run = (decision: DecisionModel.Decision): Effect.Effect<RunOutcome, PendingStoreError> =>
    Effect.suspend(() => {
      const known = running.get(decision.id)
      if (known !== undefined) return Deferred.await(known)
      const done = Deferred.unsafeMake<RunOutcome, PendingStoreError>(FiberId.none)
      running.set(decision.id, done)
      // In the inbox's scope: a client that goes away does not stop an apply that started.
      return Effect.forkIn(
        Effect.ensuring(
          Effect.tap(Effect.exit(execute(decision)), (exit) => Deferred.done(done, exit)),
          Effect.zipRight(Effect.sync(() => running.delete(decision.id)), options.poke)
        ),
        scope
      ).pipe(Effect.zipRight(Deferred.await(done)))
    })

  return { leftRequested, run, settleAgainst }
}
