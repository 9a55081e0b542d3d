/**
 * Running a reviewer's decision, for every process that runs one (the approval inbox, a session's turn): the
 * `resolve` it makes, with the decision completed with the settle of its action (`ResolveOptions.settleWith` and
 * `DecisionRequests.settleDeciding`: one statement on Postgres, one transaction on SQLite). When that write fails,
 * the settle is written alone (as any resolve's) and the caller completes the decision after it.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { Decision } from "../../domain/Decision.js"
import type { ResolveParams } from "../../domain/ResolveParams.js"
import { capText } from "../../internal/render.js"
import type { DecisionRequests } from "../DecisionRequests.js"
import type { ResolveOptions } from "../PendingActions.js"
import type { PendingStore } from "../PendingStore.js"

/** The most characters of a decision's outcome kept. */
export const outcomeMax = 4_000

/** The `resolve` that runs a reviewer's decision: its parameters, and options with its amendment and `settleWith`. */
const resolving = (
  decision: Pick<Decision, "action" | "actionId" | "amendment" | "reason" | "reviewer">,
  settleWith: NonNullable<ResolveOptions["settleWith"]>
): { readonly params: ResolveParams; readonly options: ResolveOptions } => ({
  params: { action: decision.action, reason: decision.reason, id: decision.actionId },
  options: decision.action === "apply" && decision.amendment !== null ?
    {
      settleWith,
      amendment: { actionId: decision.actionId, reviewer: decision.reviewer, encoded: decision.amendment }
    } :
    { settleWith }
})

/**
 * How a process runs a reviewer's `decision` (by `by`): the `resolve` parameters and options that run it (the
 * reviewer's amendment for an apply, and a `settleWith` that completes the decision `done`, with the apply's result,
 * with the settle of its action: `PendingStore.settleDeciding`, one statement on Postgres), and, once it ran,
 * `completed()`: the
 * decision as that transaction completed it (`none` when another process had completed it first), or `undefined`
 * when it did not get to (the transaction failed and the settle was written alone; the caller completes it).
 */
export const runningDecision = (
  store: PendingStore.Service,
  decision: Decision,
  by: string
): {
  readonly params: ResolveParams
  readonly options: ResolveOptions
  readonly completed: () => Option.Option<Decision> | undefined
} => {
  let completed: Option.Option<Decision> | undefined
  const settleWith: NonNullable<ResolveOptions["settleWith"]> = (settle, action) => {
    if (action.id !== decision.actionId) return settle
    const outcome = capText(action.outcome, outcomeMax)
    const at = action.settle.now
    const both = Effect.map(
      store.settleDeciding(action.settle, { id: decision.id, outcome, by }),
      ({ completed: done, settled }) => {
        if (settled) {
          completed = done ?
            Option.some({ ...decision, state: "done", outcome, settledAt: at, settledBy: by }) :
            Option.none()
        }
        return settled
      }
    )
    return Effect.catchAll(both, () => {
      completed = undefined
      return settle
    })
  }
  return { ...resolving(decision, settleWith), completed: () => completed }
}

/**
 * How a process runs a reviewer's decision as soon as it is made, with no `requested` record before it
 * (`Decisions.decide`): the `resolve` parameters and options that run it (an amendment also as `extra.amendment`,
 * as in 0.3), with a `settleWith` that records the
 * decision `done`, with the apply's result, in the same write as the settle of its action (`recordDone`, one
 * statement on Postgres); once it ran, `recorded()`: the decision as that write recorded it (`none` when a decision
 * had its id already), or `undefined` when it did not get to (the write failed and the settle was written alone: the
 * caller records it with `row`).
 */
export const decidingNow = (
  store: PendingStore.Service,
  session: string,
  decision: Omit<DecisionRequests.DoneInput, "outcome" | "by" | "now">,
  by: string
): {
  readonly params: ResolveParams
  readonly options: ResolveOptions
  readonly recorded: () => Option.Option<Decision> | undefined
  readonly row: (outcome: string, now: number) => DecisionRequests.DoneInput
} => {
  let recorded: Option.Option<Decision> | undefined
  const row = (outcome: string, now: number): DecisionRequests.DoneInput => ({
    ...decision,
    outcome: capText(outcome, outcomeMax),
    by,
    now
  })
  const settleWith: NonNullable<ResolveOptions["settleWith"]> = (settle, action) => {
    if (action.id !== decision.actionId) return settle
    const done = row(action.outcome, action.settle.now)
    const both = Effect.map(store.recordDone(done, action.settle), ({ recorded: inserted, settled }) => {
      if (settled) recorded = inserted ? Option.some(doneDecision(done, session)) : Option.none()
      return settled
    })
    return Effect.catchAll(both, () => {
      recorded = undefined
      return settle
    })
  }
  const { options, params } = resolving(decision, settleWith)
  // As the cluster's `decide` did in 0.3, an amendment is also the call's `extra.amendment` (a kind written for 0.3
  // reads it there; `call.amendment` is the decoded one).
  const amended = decision.action === "apply" && decision.amendment !== null
  return {
    params: amended ? { ...params, extra: { amendment: decision.amendment } } : params,
    options,
    recorded: () => recorded,
    row
  }
}

/** The decision `recordDone` stores for `input` in `session`. */
export const doneDecision = (input: DecisionRequests.DoneInput, session: string): Decision => ({
  id: input.id,
  actionId: input.actionId,
  session,
  reviewer: input.reviewer,
  action: input.action,
  reason: input.reason,
  amendment: input.amendment,
  state: "done",
  outcome: input.outcome,
  requestedAt: input.requestedAt,
  settledAt: input.now,
  settledBy: input.by
})
