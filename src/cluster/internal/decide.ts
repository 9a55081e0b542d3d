/**
 * A person's decision through the cluster's store, the same for the client and the entity: checked (a bad one is a
 * typed error and records nothing), recorded with one insert (`Decisions.record`, which signals the session's owner),
 * and answered from the decision once it is completed (by the runner where the session is open: see
 * `decisionPickup`).
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import * as Stream from "effect/Stream"
import type { Decision } from "../../domain/Decision.js"
import {
  ApplyFailed,
  InvalidResolveParams,
  PendingActionElsewhere,
  PendingActionNotPending,
  PendingStoreError,
  ToolError,
  UnknownPendingAction
} from "../../domain/Errors.js"
import { isTerminal, type PendingStatus } from "../../domain/PendingRecord.js"
import { decisionLimits } from "../../services/internal/pendingStore.js"
import type { PendingStore } from "../../services/PendingStore.js"
import type { Decisions } from "../../tools/Decisions.js"
import { decodeResolveParams } from "../../tools/Resolve.js"
import type { DecisionError, DecisionKind, DecisionReply } from "../SessionProtocol.js"
import { sweepInterval } from "./decisionPickup.js"

/** A person's decision as the protocol carries it. */
export interface DecisionPayload {
  readonly id: string
  readonly decision: DecisionKind
  readonly reason: string
  readonly by: string
  readonly amendment?: string | undefined
}

/** The status a decision asks for. */
export const targetOf = (decision: DecisionKind): "applied" | "discarded" =>
  decision === "discard" ? "discarded" : "applied"

/** What recording a decision gave: one to wait for (`own`: recorded now, else another's for the action), or the answer. */
export type Recorded =
  | { readonly _tag: "Waiting"; readonly decision: Decision; readonly own: boolean }
  | { readonly _tag: "Answered"; readonly reply: DecisionReply }

/** The decision's checks, as a model's `resolve` and the store make them: a typed error, nothing recorded. */
const check = (payload: DecisionPayload): Effect.Effect<void, InvalidResolveParams> =>
  Effect.zipRight(
    decodeResolveParams({
      action: payload.decision === "discard" ? "discard" : "apply",
      reason: payload.reason,
      extra: payload.decision === "amend" ? { amendment: payload.amendment ?? "" } : null,
      id: payload.id
    }),
    typeof payload.by === "string" && payload.by.length > 0 && payload.by.length <= decisionLimits.reviewerMaxLength &&
      payload.reason.length <= decisionLimits.reasonMaxLength ?
      Effect.void :
      Effect.fail(
        new InvalidResolveParams({
          field: payload.reason.length > decisionLimits.reasonMaxLength ? "reason" : "by",
          problem: payload.reason.length > decisionLimits.reasonMaxLength ?
            `must be at most ${decisionLimits.reasonMaxLength} characters` :
            `must name who decided in 1 to ${decisionLimits.reviewerMaxLength} characters`
        })
      )
  )

/** Checks and records `payload` on an action of `session` (one insert), or answers at once when nothing is to run. */
export const record = (
  decisions: Decisions.Service,
  session: string,
  payload: DecisionPayload
): Effect.Effect<Recorded, DecisionError> =>
  Effect.gen(function*() {
    yield* check(payload)
    const recorded = yield* decisions.record({
      actionId: payload.id,
      session,
      reviewer: payload.by,
      action: payload.decision === "discard" ? "discard" : "apply",
      reason: payload.reason,
      amendment: payload.decision === "amend" ? payload.amendment ?? "" : null
    })
    switch (recorded._tag) {
      case "UnknownAction":
        return yield* Effect.fail(new UnknownPendingAction({ id: payload.id, pending: [] }))
      case "NotDecidable": {
        const { record } = recorded
        if (record.status === targetOf(payload.decision)) {
          return { _tag: "Answered", reply: replyOf(record.id, record.status, record.outcome ?? "", true) }
        }
        return yield* Effect.fail(
          new PendingActionNotPending({ id: record.id, label: record.label, status: record.status, pending: [] })
        )
      }
      case "Recorded":
        return { _tag: "Waiting", decision: recorded.decision, own: true }
      case "AlreadyRequested":
        return { _tag: "Waiting", decision: recorded.decision, own: false }
    }
  })

const replyOf = (id: string, status: PendingStatus, text: string, settledBefore: boolean): DecisionReply => ({
  id,
  status,
  text,
  settledBefore
})

/**
 * Waits until the decision `id` is completed (`done` or `failed`): the store's change signal, then one read; a sweep
 * for what no signal reaches. Reads only; interruptible.
 */
export const awaitCompleted = (store: PendingStore.Service, id: string): Effect.Effect<Decision, PendingStoreError> =>
  Effect.scoped(Effect.gen(function*() {
    const wake = yield* Queue.sliding<void>(1)
    // Listening, then looking: a completion before the listener is in place is found by the first read.
    yield* Effect.forkScoped(
      Stream.runForEach(store.changed, () => Queue.offer(wake, undefined)).pipe(Effect.catchAllCause(() => Effect.void))
    )
    for (;;) {
      const found = yield* store.getDecision(id)
      if (Option.isNone(found)) {
        return yield* Effect.fail(
          new PendingStoreError({ operation: "decide", detail: `the decision ${id} is no longer in the store` })
        )
      }
      if (found.value.state !== "requested") return found.value
      yield* Effect.race(Queue.take(wake), Effect.sleep(sweepInterval))
    }
  }))

/**
 * The answer to `payload`, from its completed `decision`: what it did, or the typed error of why it did not happen
 * (the action settled another way first, the apply failed, the preview was stale).
 */
export const answer = (
  store: PendingStore.Service,
  payload: DecisionPayload,
  decision: Decision,
  own: boolean
): Effect.Effect<DecisionReply, DecisionError> =>
  Effect.gen(function*() {
    const target = targetOf(payload.decision)
    const asked = decision.action === "discard" ? "discarded" : "applied"
    if (decision.state === "done" && asked === target) {
      return replyOf(decision.actionId, target, decision.outcome ?? "", !own)
    }
    const found = yield* store.get(decision.actionId)
    if (Option.isNone(found)) {
      return yield* Effect.fail(new UnknownPendingAction({ id: decision.actionId, pending: [] }))
    }
    const record = found.value
    if (isTerminal(record.status) || record.status === "resolving") {
      if (record.status === target) return replyOf(record.id, target, record.outcome ?? "", true)
      return yield* Effect.fail(
        new PendingActionNotPending({ id: record.id, label: record.label, status: record.status, pending: [] })
      )
    }
    // Still pending: the apply failed, or the preview was stale.
    const message = decision.outcome ?? "The decision did not take effect."
    const prefix = "Apply failed: "
    return yield* Effect.fail(
      message.startsWith(prefix) ?
        new ApplyFailed({
          label: record.label,
          sourceToolName: record.sourceToolName,
          detail: message.slice(prefix.length),
          cause: undefined
        }) :
        new ToolError({ message })
    )
  })

/** The typed error of a decision its session's runner could not run (`Decisions.run` left it requested). */
export const notRun = (
  decision: Decision,
  ran: { readonly why: "elsewhere" | "resolving" | "store" | "died"; readonly detail: string }
): PendingActionElsewhere | PendingStoreError =>
  ran.why === "elsewhere" ?
    new PendingActionElsewhere({ id: decision.actionId, label: decision.actionId, stager: "", pending: [] }) :
    new PendingStoreError({ operation: "decide", detail: ran.detail })
