/**
 * Completing a reviewer's decision in the same transaction as the settle of its action (`ResolveOptions.settleWith`):
 * one commit for both, for every process that runs a decision (the approval inbox, a session's turn). When that
 * transaction fails, the settle is written alone (as any resolve's) and the caller completes the decision after it.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import type { Decision } from "../../domain/Decision.js"
import { capText } from "../../internal/render.js"
import type { ResolveOptions } from "../PendingActions.js"
import type { PendingStore } from "../PendingStore.js"

/** The most characters of a decision's outcome kept. */
export const outcomeMax = 4_000

/** How the settle's transaction completed the decision: not at all (`undefined`), or what `completeDecision` said. */
export interface Completion {
  readonly completed: boolean
  readonly outcome: string
  readonly at: number
}

/**
 * `settleWith` for running `decision`: completes it `done` (by `by`, with the apply's result) in the settle's
 * transaction; `completion()` says whether it did.
 */
export const completingWithSettle = (
  store: PendingStore.Service,
  decision: Decision,
  by: string,
  now: Effect.Effect<number>
) => {
  let completion: Completion | undefined
  const settleWith: NonNullable<ResolveOptions["settleWith"]> = (settle, action) => {
    if (action.id !== decision.actionId) return settle
    const outcome = capText(action.outcome, outcomeMax)
    const both = Effect.flatMap(settle, (settled) =>
      settled ?
        Effect.flatMap(now, (at) =>
          Effect.map(store.completeDecision({ id: decision.id, state: "done", outcome, by, now: at }), (completed) => {
            completion = { completed, outcome, at }
            return true
          })) :
        Effect.succeed(false))
    return Effect.catchAll(store.transaction(both), () => {
      completion = undefined
      return settle
    })
  }
  return { settleWith, completion: () => completion }
}
