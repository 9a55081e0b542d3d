/**
 * A reviewer's decisions, one path for every process that handles them (the approval inbox, a session's turn
 * driver, a cluster session's owner): `record` a decision (`requested`, at most one per action) or a response (a
 * message that leaves the action pending); `run` a requested decision exactly as a model's `resolve` call would,
 * exactly once (the store's claim makes it so, whoever else tries), completing it `done` or `failed` in the same
 * transaction as the settle of its action; or `decide` one made now where its session runs (the cluster's
 * `SessionClient.decide`), recorded with its settle; `tell` the model through the session's `SteeringBus`, with the
 * reviewer's reason once, what they changed and the result.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Decisions, DecisionRequests } from "effect-resolve"
 *
 * // Run what reviewers decided for session "s1" (in that session's runtime), and tell its model.
 * const runAll = Effect.gen(function*() {
 *   const decisions = yield* Decisions
 *   const requests = yield* DecisionRequests
 *   for (const { decision } of yield* requests.requestedDecisions({ sessions: ["s1"], limit: 20 })) {
 *     const ran = yield* decisions.run(decision, "worker-1")
 *     if (ran._tag === "Done") yield* decisions.tell(ran.decision)
 *   }
 * })
 * ```
 *
 * @since 0.4.0
 */
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import * as DecisionModel from "../domain/Decision.js"
import type { InvalidResolveParams, PendingStoreError } from "../domain/Errors.js"
import { isTerminal, type PendingRecord } from "../domain/PendingRecord.js"
import type { ResolveError } from "../domain/ResolveParams.js"
import * as ReviewerResponse from "../domain/ReviewerResponse.js"
import * as ToolResult from "../domain/ToolResult.js"
import { capText, messageOf } from "../internal/render.js"
import type { DecisionRequests } from "../services/DecisionRequests.js"
import { decidingNow, doneDecision, outcomeMax, runningDecision } from "../services/internal/decisionSettle.js"
import { PendingActions } from "../services/PendingActions.js"
import { PendingStore } from "../services/PendingStore.js"
import { SteeringBus } from "../services/SteeringBus.js"
import { type ResolveServices, resolveWith } from "./Resolve.js"

/**
 * @since 0.4.0
 * @category tags
 */
export declare namespace Decisions {
  /**
   * What running a requested decision did:
   * - `Done`: the action was applied or discarded as decided (here, or by another process after the decision was
   *   made); `decision` as completed, `message` the result;
   * - `Failed`: it ran and did not happen (the apply failed, the preview was stale, the action had been settled
   *   another way first); the decision is completed `failed` with `message`;
   * - `Requested`: left to run later, and why: only the process that staged it can (`elsewhere`), another call is
   *   resolving it right now (`resolving`), the store failed (`store`), or running it died (`died`).
   *
   * @since 0.4.0
   * @category models
   */
  export type Ran =
    | { readonly _tag: "Done"; readonly decision: DecisionModel.Decision; readonly message: string }
    | { readonly _tag: "Failed"; readonly decision: DecisionModel.Decision; readonly message: string }
    | {
      readonly _tag: "Requested"
      readonly why: "elsewhere" | "resolving" | "store" | "died"
      readonly detail: string
    }

  /**
   * `record`'s input: the action, who decided, what and why, and for `apply` the amendment (a JSON value, `null`
   * for none).
   *
   * @since 0.4.0
   * @category models
   */
  export interface DecisionInput {
    readonly actionId: string
    readonly reviewer: string
    readonly action: DecisionModel.DecisionAction
    readonly reason: string
    readonly amendment: unknown
  }

  /**
   * What `decide` did: the action is in the state decided (`applied` or `discarded`); `decision` as completed (`none`
   * when the action was settled that way before, by the model or another path, with no reviewer's decision), the
   * result text, and whether the action was in that state already (a redelivered decision, or the same decision made
   * first by another path).
   *
   * @since 0.4.0
   * @category models
   */
  export interface Decided {
    readonly decision: Option.Option<DecisionModel.Decision>
    readonly message: string
    readonly settledBefore: boolean
  }

  /**
   * @since 0.4.0
   * @category models
   */
  export interface Service {
    /** Records a decision `requested` under a fresh id, at most one per action (see `DecisionRequests`). */
    readonly record: (
      input: Decisions.DecisionInput
    ) => Effect.Effect<DecisionRequests.RecordDecisionResult, PendingStoreError>
    /** Records a reviewer's response: a message to the agent that leaves the action pending. */
    readonly respond: (
      input: { readonly actionId: string; readonly reviewer: string; readonly message: string }
    ) => Effect.Effect<DecisionRequests.RecordResponseResult, PendingStoreError>
    /**
     * Runs a requested decision in the action's session (the `resolve` services in context), by `by` (who is
     * recorded as having run it), exactly as a model's `resolve` would, with the reviewer's reason and amendment;
     * the decision is completed in the same transaction as the settle of its action. Fails only when the store
     * cannot complete the decision (it stays `requested`, and is run or completed later).
     */
    readonly run: (
      decision: DecisionModel.Decision,
      by: string
    ) => Effect.Effect<Decisions.Ran, PendingStoreError, ResolveServices>
    /**
     * Runs a decision as soon as it is made, here (the process that owns the action's session, with the `resolve`
     * services in context), by `by`, exactly as a model's `resolve` would, and records it `done` in the same write
     * as the settle of its action (`DecisionRequests.recordDone`: no `requested` record before it, so no write more
     * than a model's `resolve`). Answered as a model's `resolve` call is, with its typed errors
     * (`UnknownPendingAction`, `PendingActionNotPending`, `ApplyFailed`, ...): a decision that did not take effect
     * records nothing. The same decision again, once it took effect, answers `settledBefore: true` with its result.
     * The session's model is told in its next request, as of every decision stored (see `tell`).
     */
    readonly decide: (
      input: Decisions.DecisionInput,
      by: string
    ) => Effect.Effect<Decisions.Decided, ResolveError | InvalidResolveParams, ResolveServices>
    /**
     * Completes a requested decision whose action is settled already (`record` as it is now): `Done` when it
     * settled as decided after the decision was made, `Failed` otherwise.
     */
    readonly settleAgainst: (
      decision: DecisionModel.Decision,
      record: PendingRecord,
      by: string
    ) => Effect.Effect<Decisions.Ran, PendingStoreError>
    /** Tells the session's model, in its next request, what a reviewer decided: a hidden steering message. */
    readonly tell: (decision: DecisionModel.Decision) => Effect.Effect<void, never, SteeringBus>
    /**
     * Passes a reviewer's response to the session's model, in its next request: a hidden steering message whose
     * `steerId` is the response's id (the request that carries it holds the id, so a save can mark it delivered).
     * `stillPending: false` for an action settled since the response.
     */
    readonly passOn: (
      response: ReviewerResponse.ReviewerResponse,
      stillPending: boolean
    ) => Effect.Effect<void, never, SteeringBus>
  }
}

/**
 * The Decisions service.
 *
 * @since 0.4.0
 * @category tags
 */
export class Decisions extends Context.Tag("effect-resolve/Decisions")<Decisions, Decisions.Service>() {
  /**
   * Decisions on the `PendingStore` in context.
   *
   * @since 0.4.0
   * @category layers
   */
  static readonly layer: Layer.Layer<Decisions, never, PendingStore> = Layer.effect(
    Decisions,
    Effect.map(PendingStore, (store) => make(store))
  )
}

/**
 * The steering message's `customType` of a decision told to the model.
 *
 * @since 0.4.0
 * @category constants
 */
export const decisionMessageType = "reviewer-decision"

/** The longest amendment text put in a message. */
const amendmentMax = 2_000

/** Ends a text with a full stop unless it ends a sentence already. */
const sentence = (text: string): string => /[.!?]$/.test(text.trim()) ? text.trim() : `${text.trim()}.`

/**
 * What the model reads of a completed decision: who decided what and why, what they changed, and the result; the
 * reason once (not again before a result that quotes it).
 *
 * @since 0.4.0
 * @category rendering
 */
export const decisionText = (decision: DecisionModel.Decision): string => {
  const verb = decision.action === "apply" ? "applied" : "discarded"
  const reason = decision.reason.trim() === "" ? "no reason given" : decision.reason.trim()
  const changed = decision.action === "apply" && decision.amendment !== null && decision.amendment !== undefined ?
    ` Before applying, the reviewer changed it to: ${capText(JSON.stringify(decision.amendment), amendmentMax)}.` :
    ""
  const result = decision.outcome === null ? undefined : capText(decision.outcome, amendmentMax)
  // The reason once: a result that quotes it already ("Discarded: … Reason: <reason>") says it.
  const said = result !== undefined && decision.reason.trim() !== "" && result.includes(reason) ?
    "" :
    ` ${sentence(reason)}`
  const outcome = result === undefined ? "" : ` Result: ${sentence(result)}`
  return `A reviewer (${decision.reviewer}) ${verb} ${decision.actionId}:${said}${changed}${outcome} ` +
    `Do not resolve ${decision.actionId} again.`
}

/**
 * The steering message's `customType` of a reviewer's response passed to the model.
 *
 * @since 0.4.0
 * @category constants
 */
export const responseMessageType = "reviewer-response"

/**
 * What the model reads of a reviewer's response: about an action still pending (by default), or one settled since
 * (a decision ran between the response and the session's next turn).
 *
 * @since 0.4.0
 * @category rendering
 */
export const responseText = (response: ReviewerResponse.ReviewerResponse, stillPending = true): string =>
  stillPending ?
    `A reviewer (${response.reviewer}) responded about ${response.actionId}, which stays pending: ` +
    `${sentence(capText(response.message, amendmentMax))} Nothing was applied or discarded. Take it into account: ` +
    `stage a new preview, or resolve ${response.actionId} yourself.` :
    `A reviewer (${response.reviewer}) responded about ${response.actionId}, which is no longer pending: ` +
    `${sentence(capText(response.message, amendmentMax))}`

/** How a decision's write after its action settled is retried: the action is settled, its decision should say so. */
const afterSettleRetry = Schedule.intersect(Schedule.exponential("20 millis"), Schedule.recurs(4))

/**
 * Decisions on `store`.
 *
 * @since 0.4.0
 * @category constructors
 */
export const make = (store: PendingStore.Service): Decisions.Service => {
  const complete = (decision: DecisionModel.Decision, state: "done" | "failed", message: string, by: string) =>
    Effect.flatMap(Clock.currentTimeMillis, (now) => {
      const outcome = capText(message, outcomeMax)
      return Effect.map(
        Effect.retry(store.completeDecision({ id: decision.id, state, outcome, by, now }), afterSettleRetry),
        (): DecisionModel.Decision => ({ ...decision, state, outcome, settledAt: now, settledBy: by })
      )
    })

  const ended = (decision: DecisionModel.Decision, state: "done" | "failed", message: string): Decisions.Ran =>
    state === "done" ? { _tag: "Done", decision, message } : { _tag: "Failed", decision, message }

  const settleAgainst = (decision: DecisionModel.Decision, record: PendingRecord, by: string) => {
    const wanted = decision.action === "apply" ? "applied" : "discarded"
    const done = record.status === wanted && record.updatedAt >= decision.requestedAt
    const message = done ?
      record.outcome ?? `${wanted === "applied" ? "Applied" : "Discarded"}.` :
      `Not run: the action was already ${record.status} before this decision could run.`
    const state = done ? "done" : "failed"
    return Effect.map(complete(decision, state, message, by), (completed) => ended(completed, state, message))
  }

  const run = (decision: DecisionModel.Decision, by: string) =>
    Effect.gen(function*() {
      // Completed in the same transaction as the settle of its action (or after it, if that transaction failed).
      const running = runningDecision(store, decision, by)
      const exit = yield* Effect.exit(resolveWith(running.params, running.options))
      if (Exit.isSuccess(exit)) {
        const message = ToolResult.textOf(exit.value)
        const completed = running.completed()
        if (completed === undefined) return ended(yield* complete(decision, "done", message, by), "done", message)
        if (Option.isSome(completed)) return ended(completed.value, "done", message)
        // Another process completed it first (it ran once, here): the decision as that one stored it.
        const stored = yield* store.getDecision(decision.id)
        return ended(
          Option.getOrElse(stored, () => ({ ...decision, state: "done", outcome: message })),
          "done",
          message
        )
      }
      const failure = Cause.failureOption(exit.cause)
      if (Option.isNone(failure)) {
        yield* Effect.logWarning(`effect-resolve: running the reviewer's decision ${decision.id} died`, exit.cause)
        return requested("died", "running it failed unexpectedly")
      }
      const error = failure.value
      switch (error._tag) {
        case "PendingActionElsewhere":
          return requested("elsewhere", "only the process that staged it can run it")
        case "PendingStoreError":
          return requested("store", error.detail)
        case "PendingActionNotPending": {
          if (error.status === "resolving") return requested("resolving", "another call is resolving it right now")
          const record = yield* store.get(decision.actionId)
          if (Option.isSome(record) && isTerminal(record.value.status)) {
            return yield* settleAgainst(decision, record.value, by)
          }
          break
        }
      }
      // The apply failed or the preview was stale (the action is pending again), or it cannot be resolved.
      const message = messageOf(error)
      return ended(yield* complete(decision, "failed", message, by), "failed", message)
    }).pipe(Effect.withSpan("Decisions.run", { attributes: { decision: decision.id } }))

  const record = (input: Decisions.DecisionInput) =>
    Effect.flatMap(
      DecisionModel.makeId,
      (id) => Effect.flatMap(Clock.currentTimeMillis, (now) => store.recordDecision({ ...input, id, now }))
    )

  /**
   * The answer to a decision on an action settled already: in the state decided, no error (with the outcome of the
   * last decision done, else the record's); in another state, `error`.
   */
  const settledAs = <E>(input: Decisions.DecisionInput, error: E) =>
    Effect.gen(function*() {
      const record = yield* store.get(input.actionId)
      const wanted = input.action === "apply" ? "applied" : "discarded"
      if (Option.isNone(record) || record.value.status !== wanted) return yield* Effect.fail(error)
      const decision = Option.fromNullable(
        (yield* store.decisions(input.actionId)).filter((d) => d.state === "done").at(-1)
      )
      const message = Option.getOrElse(
        Option.flatMap(decision, (d) => Option.fromNullable(d.outcome)),
        () => record.value.outcome ?? ""
      )
      return { decision, message, settledBefore: true } satisfies Decisions.Decided
    })

  const decide = (input: Decisions.DecisionInput, by: string) =>
    Effect.gen(function*() {
      const pending = yield* PendingActions
      const running = decidingNow(store, pending.session, {
        ...input,
        id: yield* DecisionModel.makeId,
        requestedAt: yield* Clock.currentTimeMillis
      }, by)
      const exit = yield* Effect.exit(resolveWith(running.params, running.options))
      if (Exit.isFailure(exit)) {
        const failure = Cause.failureOption(exit.cause)
        // Settled before (this decision sent again, or the same one made first another way): its outcome answers.
        if (
          Option.isSome(failure) && failure.value._tag === "PendingActionNotPending" &&
          isTerminal(failure.value.status)
        ) return yield* settledAs(input, failure.value)
        return yield* Effect.failCause(exit.cause)
      }
      const message = ToolResult.textOf(exit.value)
      let recorded = running.recorded()
      if (recorded === undefined) {
        // The write that held both failed, and the settle was written alone: the decision is recorded after it.
        const row = running.row(message, yield* Clock.currentTimeMillis)
        const done = yield* Effect.retry(store.recordDone(row), afterSettleRetry)
        recorded = done.recorded ? Option.some(doneDecision(row, pending.session)) : Option.none()
      }
      return { decision: recorded, message, settledBefore: false } satisfies Decisions.Decided
    }).pipe(Effect.withSpan("Decisions.decide", { attributes: { action: input.actionId } }))

  return Decisions.of({
    record,
    respond: (input) =>
      Effect.flatMap(
        ReviewerResponse.makeId,
        (id) => Effect.flatMap(Clock.currentTimeMillis, (now) => store.recordResponse({ ...input, id, now }))
      ),
    run,
    decide,
    settleAgainst,
    tell: (decision) =>
      Effect.flatMap(SteeringBus, (bus) =>
        bus.steer({
          customType: decisionMessageType,
          content: decisionText(decision),
          details: { decision: decision.id, action: decision.actionId, reviewer: decision.reviewer }
        })).pipe(Effect.asVoid),
    passOn: (response, stillPending) =>
      Effect.flatMap(SteeringBus, (bus) =>
        bus.steer({
          customType: responseMessageType,
          content: responseText(response, stillPending),
          details: {
            steerId: response.id,
            response: response.id,
            action: response.actionId,
            reviewer: response.reviewer
          }
        })).pipe(Effect.asVoid)
  })
}

const requested = (why: "elsewhere" | "resolving" | "store" | "died", detail: string): Decisions.Ran => ({
  _tag: "Requested",
  why,
  detail
})
