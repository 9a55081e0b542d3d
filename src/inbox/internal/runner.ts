/**
 * Running a reviewer's decision in the inbox: through the action's session (opened here as a second process opens
 * it), at most once at a time per decision in this process, in the inbox's scope (a client that goes away does not
 * stop an apply that started), and completing the decision `done` or `failed`; or leaving it requested, with why,
 * when only another process can run it now.
 *
 * @internal
 */
import type * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as FiberId from "effect/FiberId"
import * as RcMap from "effect/RcMap"
import type * as Scope from "effect/Scope"
import type * as DecisionModel from "../../domain/Decision.js"
import type { PendingStoreError } from "../../domain/Errors.js"
import type { InvalidOptions } from "../../domain/InvalidOptions.js"
import type { PendingRecord } from "../../domain/PendingRecord.js"
import type { Decisions } from "../../tools/Decisions.js"
import type { ResolveServices } from "../../tools/Resolve.js"

/** What running a decision did. */
export interface RunOutcome {
  readonly outcome: "applied" | "discarded" | "failed" | "requested"
  readonly message: string
  /** The decision as this run completed it, when it knows (completed in its action's settle transaction). */
  readonly completed?: DecisionModel.Decision | undefined
}

/** What a runner needs: the store's decisions, the inbox's sessions by name, who it is, its scope and feed's nudge. */
export interface RunnerOptions {
  /** What runs and completes a decision, on the inbox's store. */
  readonly decisions: Decisions.Service
  /** The sessions the inbox opened, by name: what `resolve` needs, and why one could not be opened. */
  readonly runtimes: RcMap.RcMap<string, Context.Context<ResolveServices>, PendingStoreError | InvalidOptions>
  readonly instance: string
  readonly scope: Scope.Scope
  readonly poke: Effect.Effect<void>
}

/** Why a decision is left requested, as the reviewer reads it. */
const requestedText = (ran: Extract<Decisions.Ran, { readonly _tag: "Requested" }>): string => {
  switch (ran.why) {
    case "elsewhere":
      return "Recorded. Only the process that staged it can run it (it registers a kind this inbox does not); it " +
        "runs the decision on its next turn or refresh."
    case "store":
      return `Recorded; the store failed while running it (${ran.detail}). The inbox tries again.`
    case "resolving":
      return "Recorded; another call is resolving the action right now. The inbox looks again."
    case "died":
      return "Recorded; running it failed unexpectedly. The inbox tries again."
  }
}

/** What the inbox says of a decision `Decisions` ran or completed. */
const outcomeOf = (decision: DecisionModel.Decision, ran: Decisions.Ran): RunOutcome =>
  ran._tag === "Done" ?
    { outcome: decision.action === "apply" ? "applied" : "discarded", message: ran.message, completed: ran.decision } :
    ran._tag === "Failed" ?
    { outcome: "failed", message: ran.message, completed: ran.decision } :
    { outcome: "requested", message: requestedText(ran) }

/** The inbox's decision runner: `run` a requested decision, or `settleAgainst` the record it found settled. */
export const make = (options: RunnerOptions) => {
  const { decisions, instance, runtimes, scope } = options

  /**
   * A requested decision whose action is settled: `done` when it settled as decided after the decision was made
   * (this inbox, or the session, ran it), `failed` otherwise (it was settled some other way first).
   */
  const settleAgainst = (
    decision: DecisionModel.Decision,
    record: PendingRecord
  ): Effect.Effect<RunOutcome, PendingStoreError> =>
    Effect.map(decisions.settleAgainst(decision, record, instance), (ran) => outcomeOf(decision, ran))

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
      return outcomeOf(decision, yield* Effect.provide(decisions.run(decision, instance), session.right))
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
