/**
 * The loop of a run: each logical turn serves the ToolChoiceQueue once, plans its `tool_choice`, injects every
 * steering message, sends the request (retried as the run's schedule says; sent again forcing less when the
 * provider refuses; stopped after `maxErrorRequeues` failures while a directive is served), runs the response's
 * tool calls and ends the served directive. A run drives turns until the model stops asking for tools and nothing
 * is queued, or `maxTurns`; the session is saved after every turn, however it ended.
 *
 * @internal
 */
import type * as AiError from "@effect/ai/AiError"
import * as LanguageModel from "@effect/ai/LanguageModel"
import * as Prompt from "@effect/ai/Prompt"
import type * as Tool from "@effect/ai/Tool"
import type * as Toolkit from "@effect/ai/Toolkit"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Ref from "effect/Ref"
import * as Schedule from "effect/Schedule"
import type { PendingStoreError } from "../../domain/Errors.js"
import type { SteeringMessage } from "../../domain/SteeringMessage.js"
import { type ModelCapabilities, ResolveConfig } from "../../services/ResolveConfig.js"
import type { SessionOwnership } from "../../services/SessionOwnership.js"
import type { InFlightInfo, RejectReason } from "../../services/ToolChoiceQueue.js"
import { isForcingRefusal, isPreviewLabel } from "../Forcing.js"
import * as ResolveMetrics from "../ResolveMetrics.js"
import type { RunOptions, RunResult, TurnRecord } from "../TurnDriver.js"
import { MaxTurnsExceeded, RequeueLimitExceeded, SessionLost, type TurnDriverError } from "../TurnDriverError.js"
import { forcingOf, prune, updateForcing } from "./forcingMap.js"
import {
  compliance,
  countPush,
  mergeReminders,
  noteChoice,
  plan,
  previewInFlight,
  reminderMessage
} from "./forcingPolicy.js"
import { recoverResponse } from "./permissive.js"
import { capabilitiesOf, effectiveConfig, learnRefusal, type ProbedLevel, probeWeaker } from "./refusals.js"
import type { Session } from "./session.js"
import { markShown, persist, refresh } from "./sessionState.js"
import { steeringUserMessage, uniqueSteers } from "./steerIds.js"
import { runCalls, runTools } from "./toolCalls.js"

/**
 * What a turn sends after the history: its steering messages, each as a user message (one with an id carries it, so
 * that the saved conversation says it was delivered).
 */
const steeringPrompt = (steering: ReadonlyArray<SteeringMessage>): Prompt.Prompt =>
  Prompt.fromMessages(steering.map(steeringUserMessage))

/** The ids of the previews this session can resolve now, oldest first (what one reminder for a batch names). */
const pendingNow = (session: Session) =>
  Effect.map(
    Effect.orElseSucceed(session.pending.listOpen, () => []),
    (open) => open.filter((info) => info.status === "pending" && info.runnable).reverse()
  )

/** Ends the served value and counts a requeue when it came back at the head; whether it did. */
const finish = (session: Session, info: Option.Option<InFlightInfo>, end: "resolve" | RejectReason) =>
  Effect.gen(function*() {
    const { counters, queue } = session
    const before = yield* queue.inspect
    yield* end === "resolve" ? queue.resolve : queue.reject(end)
    if (Option.isNone(info)) return false
    const after = yield* queue.inspect
    if (after.length === before.length + 1 && after[0] === info.value.label) {
      const reason = end === "resolve" ? "not_invoked" : end
      if (reason === "error" || reason === "aborted" || reason === "not_invoked") {
        yield* ResolveMetrics.recordRequeue(counters, reason)
      }
      return true
    }
    return false
  })

/** The run's error when its exclusive session was lost. */
const sessionLost = (ownership: SessionOwnership.Service, error: PendingStoreError) =>
  new SessionLost({
    session: ownership.session,
    epoch: ownership.epoch,
    reason: error.reason ?? "fenced",
    detail: error.detail
  })

/** The session's `run` (see `TurnDriver.Service`). */
export const run = (session: Session) =>
<Tools extends Record<string, Tool.Any> = {}, E = never, R = never>(
  prompt: Prompt.RawInput,
  runOptions: RunOptions<Tools, E, R> = {}
): Effect.Effect<
  RunResult,
  TurnDriverError | AiError.AiError | E,
  LanguageModel.LanguageModel | R | Tool.Requirements<Tools[keyof Tools]>
> =>
  Effect.gen(function*() {
    const { bus, carry, counters, history, queue, transcript, turnCount } = session
    const ownershipGuard = Option.match(session.pending.ownership, {
      onNone: () => Effect.void,
      onSome: (ownership) => Effect.mapError(ownership.guard, (error) => sessionLost(ownership, error))
    })
    const config = yield* ResolveConfig
    const capabilitiesNow = capabilitiesOf(session.refused, config)
    const effectiveNow = effectiveConfig(session.refused, config)
    const appToolkit: Toolkit.WithHandler<any> | undefined = runOptions.toolkit === undefined ?
      undefined :
      Effect.isEffect(runOptions.toolkit) ?
      yield* runOptions.toolkit :
      runOptions.toolkit
    const tools = runTools(appToolkit)
    const maxTurns = runOptions.maxTurns ?? config.maxTurns

    /** One request: the history plus `requestPrompt`; on success the history gains both and the answer. */
    const send = (requestPrompt: Prompt.Prompt, choice: LanguageModel.ToolChoice<string>) =>
      Effect.gen(function*() {
        const fullPrompt = Prompt.merge(yield* Ref.get(history), requestPrompt)
        const response = yield* LanguageModel.generateText({
          prompt: fullPrompt,
          toolkit: tools.wireToolkit,
          toolChoice: choice as any,
          disableToolCallResolution: true
        }).pipe(
          Effect.catchTag("MalformedOutput", (error) => recoverResponse(error, tools.wireTools))
        ) as Effect.Effect<LanguageModel.GenerateTextResponse<any>, AiError.AiError, LanguageModel.LanguageModel>
        yield* Ref.set(history, Prompt.merge(fullPrompt, Prompt.fromResponseParts(response.content)))
        return response
      }).pipe(Effect.withSpan("TurnDriver.request", { attributes: { toolChoice: JSON.stringify(choice) } }))

    const turn = () =>
      Effect.uninterruptibleMask((restore) =>
        Effect.gen(function*() {
          yield* refresh(session)
          const index = yield* Ref.updateAndGet(turnCount, (n) => n + 1)
          const served = yield* queue.nextToolChoice
          const info = yield* queue.inFlight
          yield* prune(session.forcing, queue, info)
          let decided = yield* plan(session, served, info, yield* capabilitiesNow)
          let infoNow = yield* queue.inFlight
          let steering = [
            ...(yield* mergeReminders(
              uniqueSteers([...(yield* Ref.getAndSet(carry, [])), ...(yield* bus.drain)]),
              pendingNow(session)
            )),
            ...(decided.resteer ? [reminderMessage] : [])
          ]
          yield* ResolveMetrics.recordTurn(counters, decided.forced, yield* noteChoice(session, decided.choice))
          const base = () => ({
            turn: index,
            served,
            toolChoice: decided.choice,
            forced: decided.forced,
            steering
          })
          const save = (record: TurnRecord) => Ref.update(transcript, (all) => [...all, record])
          /** The turn failed: its steering goes with the next request, its directive is ended with `end`. */
          const failTurn = (end: RejectReason) =>
            Effect.gen(function*() {
              yield* Ref.set(carry, steering.filter((m) => m !== reminderMessage))
              yield* save({ ...base(), outcome: end === "aborted" ? "aborted" : "error", text: "", toolCalls: [] })
              return yield* finish(session, infoNow, end)
            })
          /** Sends the turn again at the forcing level of `capabilities` (the in-flight preview is forced). */
          const replan = (capabilities: ModelCapabilities) =>
            Effect.gen(function*() {
              const entry = previewInFlight(infoNow)
              if (Option.isSome(entry)) {
                yield* updateForcing(session.forcing, entry.value, (f) => ({ ...f, forceNext: true }))
              }
              decided = yield* plan(session, served, infoNow, capabilities)
              infoNow = yield* queue.inFlight
              if (decided.resteer && !steering.includes(reminderMessage)) steering = [...steering, reminderMessage]
              if (yield* noteChoice(session, decided.choice)) yield* ResolveMetrics.recordToolChoiceChange(counters)
            })
          const retries = runOptions.retry === undefined ? undefined : yield* Schedule.driver(runOptions.retry)
          /** Waits as the retry schedule says: whether to retry. Interrupting the wait aborts the turn. */
          const retry = (error: AiError.AiError) =>
            Effect.gen(function*() {
              if (retries === undefined) return false
              const next = yield* Effect.exit(restore(retries.next(error)))
              if (Exit.isSuccess(next)) return true
              if (Option.isSome(Cause.failureOption(next.cause))) return false
              yield* failTurn("aborted")
              return yield* Effect.failCause(next.cause as Cause.Cause<never>)
            })

          let response: LanguageModel.GenerateTextResponse<any> | undefined
          while (response === undefined) {
            // An exclusive session sends nothing once it lost the session (a paused process finds out here).
            yield* ownershipGuard
            const requested = yield* Effect.exit(restore(send(steeringPrompt(steering), decided.choice)))
            if (Exit.isSuccess(requested)) {
              response = requested.value
              break
            }
            const failure = Cause.failureOption(requested.cause)
            if (Option.isNone(failure)) {
              yield* failTurn("aborted")
              return yield* Effect.failCause(requested.cause)
            }
            const error = failure.value
            // 1. The provider refused the forcing: learn it, and send the same turn again, forcing less. A
            // model's refusal is not a failure of the request: it does not count toward the requeue limit.
            if (decided.forced && isForcingRefusal(error)) {
              const capabilities = yield* learnRefusal(session, config, decided.choice, error)
              if (Option.isSome(capabilities)) {
                yield* replan(capabilities.value)
                continue
              }
            }
            if (Option.isNone(infoNow)) {
              // Nothing served: only the retry schedule decides.
              if (yield* retry(error)) continue
              yield* failTurn("error")
              return yield* Effect.failCause(requested.cause)
            }
            // 2. Every failed attempt counts, retries included.
            const served_ = infoNow.value
            const streak = (yield* forcingOf(session.forcing, served_)).errors + 1
            yield* updateForcing(session.forcing, served_, (f) => ({ ...f, errors: streak }))
            if (streak > config.maxErrorRequeues) {
              /** The last error received, and the weaker levels tried after the limit (each failed). */
              let lastError = error
              let probed: ReadonlyArray<ProbedLevel> = []
              // 3. A forced preview that keeps failing: try forcing less, one attempt per level (refusals.ts).
              if (decided.forced && isPreviewLabel(served_.label)) {
                const outcome = yield* probeWeaker(
                  session,
                  config,
                  { choice: decided.choice, streak, error },
                  (probe) =>
                    Effect.gen(function*() {
                      if (probe.resteer && !steering.includes(reminderMessage)) {
                        steering = [...steering, reminderMessage]
                      }
                      if (yield* noteChoice(session, probe.choice)) {
                        yield* ResolveMetrics.recordToolChoiceChange(counters)
                      }
                      return yield* Effect.exit(restore(send(steeringPrompt(steering), probe.choice)))
                    })
                )
                if (outcome._tag === "Accepted") {
                  yield* replan(outcome.capabilities)
                  response = outcome.response
                  break
                }
                if (outcome._tag === "Halted") {
                  yield* failTurn("aborted")
                  return yield* Effect.failCause(outcome.cause)
                }
                lastError = outcome.lastError
                probed = outcome.probed
              }
              // 4. The run stops; the served directive is rejected with "error" like any failed turn, so a
              // preview stays pending at the head of the queue. The next run starts a new streak.
              yield* updateForcing(session.forcing, served_, (f) => ({ ...f, errors: 0 }))
              const pending = yield* failTurn("error")
              const limit = new RequeueLimitExceeded({
                directiveId: served_.id,
                label: served_.label,
                errors: streak,
                pending,
                cause: lastError,
                probed
              })
              yield* Effect.logError(`effect-resolve: ${limit.message}`, lastError)
              return yield* limit
            }
            if (yield* retry(error)) continue
            yield* Effect.logWarning(
              `effect-resolve: model request failed while "${served_.label}" was served; requeued ` +
                `(${streak}/${config.maxErrorRequeues})`
            )
            yield* failTurn("error")
            return yield* Effect.failCause(requested.cause)
          }
          const servedNow = infoNow
          const entry = previewInFlight(servedNow)
          if (Option.isSome(servedNow)) {
            yield* updateForcing(session.forcing, servedNow.value, (f) => ({ ...f, errors: 0 }))
          }
          yield* countPush(session, entry, decided)

          const ran = yield* runCalls(session, tools, effectiveNow, response, restore)
          yield* markShown(session, ran.staged)
          const saved: TurnRecord = {
            ...base(),
            outcome: Exit.isSuccess(ran.executed) ? "completed" : "aborted",
            text: response.text,
            toolCalls: ran.records
          }
          yield* save(saved)
          if (Exit.isFailure(ran.executed)) {
            yield* finish(session, infoNow, "aborted")
            return yield* Effect.failCause(ran.executed.cause)
          }

          // Compliance with the in-flight preview.
          const notCalled = yield* compliance(
            session,
            config,
            entry,
            decided,
            ran.records.some((r) => r.name === "resolve")
          )
          yield* finish(session, infoNow, "resolve")
          if (Option.isSome(notCalled)) {
            // The preview stays pending (requeued as not_invoked by `finish`): the run stops, nothing staged is lost.
            yield* Effect.logError(`effect-resolve: ${notCalled.value.message}`)
            return yield* notCalled.value
          }
          return saved
        })
      ).pipe(Effect.withSpan("TurnDriver.turn"))

    const records: Array<TurnRecord> = []
    // The prompt joins the conversation first: a run whose first request fails (or is interrupted) keeps it,
    // and the next run's request still holds it. Each turn then sends the history and its own steering.
    yield* Ref.update(history, (current) => Prompt.merge(current, Prompt.make(prompt)))
    for (let i = 0; i < maxTurns; i++) {
      const saved = yield* Effect.ensuring(turn(), persist(session))
      records.push(saved)
      const idle = saved.toolCalls.length === 0 && !(yield* queue.hasInFlight) &&
        (yield* queue.inspect).length === 0
      if (idle) return { text: saved.text, turns: records }
    }
    return yield* new MaxTurnsExceeded({ maxTurns, pending: yield* queue.inspect })
  }).pipe(
    (running) =>
      Option.match(session.pending.ownership, {
        onNone: () => running,
        // Nothing more happens once the session is lost: the run is interrupted at once.
        onSome: (ownership) =>
          Effect.raceFirst(running, Effect.mapError(ownership.lost, (error) => sessionLost(ownership, error)))
      }),
    session.lock.withPermits(1),
    Effect.withSpan("TurnDriver.run", { attributes: { session: session.id } })
  ) as any
