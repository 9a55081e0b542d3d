/**
 * The agent-turn driver on `@effect/ai`: one session's conversation over `Chat` and `LanguageModel`, with the app's
 * toolkit plus the `resolve` tool. Each logical turn serves the ToolChoiceQueue once, injects every steering
 * message, sends the request, runs the tool calls itself (gating them while a preview is pending) and finalizes
 * the served directive. Enforcement is `"force"` or `"soft"` (`ResolveConfig`); metrics and spans on every turn.
 *
 * @example
 * ```ts
 * import { Tool, Toolkit } from "@effect/ai"
 * import { Effect, Layer, Schema } from "effect"
 * import { ResolveConfig, ScriptedModel, TurnDriver } from "effect-resolve"
 *
 * const Search = Tool.make("search", { parameters: { query: Schema.String }, success: Schema.String })
 * const Tools = Toolkit.make(Search)
 *
 * const session = Effect.gen(function*() {
 *   const driver = yield* TurnDriver
 *   const result = yield* driver.run("Where is greet used?", { toolkit: Tools, maxTurns: 10 })
 *   yield* Effect.log(result.text, yield* driver.metrics)
 * }).pipe(
 *   Effect.provide(Layer.mergeAll(
 *     TurnDriver.layer({ system: "You are a careful coding agent." }), // one session: fresh queue, bus, slot
 *     Tools.toLayer({ search: ({ query }) => Effect.succeed(`2 usages of ${query}`) }),
 *     ScriptedModel.layer([ScriptedModel.toolCall("search", { query: "greet" }), "Used twice."]),
 *     ResolveConfig.layer({ enforcement: "soft" })
 *   ))
 * )
 * ```
 *
 * @since 0.1.0
 */
import type * as AiError from "@effect/ai/AiError"
import * as Chat from "@effect/ai/Chat"
import type * as LanguageModel from "@effect/ai/LanguageModel"
import * as Prompt from "@effect/ai/Prompt"
import type * as Response from "@effect/ai/Response"
import type * as Tool from "@effect/ai/Tool"
import type * as Toolkit from "@effect/ai/Toolkit"
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Ref from "effect/Ref"
import type * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import type { SteeringMessage } from "../domain/SteeringMessage.js"
import { resolveReminderText } from "../domain/SteeringMessage.js"
import type { ToolChoice } from "../domain/ToolChoice.js"
import * as ResolveRuntime from "../layers/ResolveRuntime.js"
import { handle as handleResolve, ResolveAiTool, toFailure } from "../tools/AiResolveTool.js"
import { directiveLabel } from "../tools/PendingAction.js"
import { type EffectAiToolChoice, toEffectAi } from "../tools/ProviderToolChoice.js"
import { ResolveTool } from "../tools/Resolve.js"
import { type ModelCapabilities, ResolveConfig, type ResolveConfigShape } from "./ResolveConfig.js"
import * as ResolveMetrics from "./ResolveMetrics.js"
import { StandingResolveHandler } from "./StandingResolveHandler.js"
import { SteeringBus } from "./SteeringBus.js"
import { type InFlightInfo, type RejectReason, ToolChoiceQueue } from "./ToolChoiceQueue.js"

// ---------------------------------------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------------------------------------

/**
 * The run reached `maxTurns` model requests while the model still asked for tools or something was pending.
 *
 * @since 0.1.0
 * @category errors
 */
export class MaxTurnsExceeded extends Schema.TaggedError<MaxTurnsExceeded>("effect-resolve/MaxTurnsExceeded")(
  "MaxTurnsExceeded",
  { maxTurns: Schema.Number, pending: Schema.Array(Schema.String) }
) {
  /**
   * @since 0.1.0
   */
  override get message(): string {
    return `The run stopped after ${this.maxTurns} turns without finishing` +
      (this.pending.length === 0 ? "" : ` (still queued: ${this.pending.join(", ")})`) +
      `. Raise maxTurns, or check that the model can finish the task.`
  }
}

/**
 * A directive was rejected with `"error"` (a failed model request) more than `maxErrorRequeues` times in a row:
 * it was dropped instead of being requeued forever. `cause` is the last model error.
 *
 * @since 0.1.0
 * @category errors
 */
export class RequeueLimitExceeded
  extends Schema.TaggedError<RequeueLimitExceeded>("effect-resolve/RequeueLimitExceeded")("RequeueLimitExceeded", {
    directiveId: Schema.String,
    label: Schema.String,
    errors: Schema.Number,
    cause: Schema.Defect
  })
{
  /**
   * @since 0.1.0
   */
  override get message(): string {
    return `The model request failed ${this.errors} times in a row while "${this.label}" was served; the directive ` +
      `was dropped. If the provider rejects forced tool choice, set ResolveConfig.modelCapabilities or use ` +
      `enforcement "soft".`
  }
}

/**
 * The model ignored a pending preview for `maxForcedTurns` forced turns in a row; the run failed instead of
 * looping. The preview stays pending: the app may run again, resolve it itself, or drop it with
 * `ToolChoiceQueue.removeByLabel` / `clear`.
 *
 * @since 0.1.0
 * @category errors
 */
export class ResolveNotCalled extends Schema.TaggedError<ResolveNotCalled>("effect-resolve/ResolveNotCalled")(
  "ResolveNotCalled",
  { directiveId: Schema.String, label: Schema.String, forcedTurns: Schema.Number }
) {
  /**
   * @since 0.1.0
   */
  override get message(): string {
    return `The model did not call resolve for "${this.label}" in ${this.forcedTurns} forced turns; the run ` +
      `stopped and the preview is still pending. Check that the model supports forcing a tool, then run again, ` +
      `or resolve or clear the preview in the app.`
  }
}

/**
 * What a run can fail with, besides the model's `AiError`.
 *
 * @since 0.1.0
 * @category errors
 */
export type TurnDriverError = MaxTurnsExceeded | RequeueLimitExceeded | ResolveNotCalled

// ---------------------------------------------------------------------------------------------------------------
// Models
// ---------------------------------------------------------------------------------------------------------------

/**
 * One tool call of a turn and what became of it.
 *
 * @since 0.1.0
 * @category models
 */
export interface ToolCallRecord {
  readonly id: string
  readonly name: string
  readonly params: unknown
  /** `executed`; `skipped` because a preview was pending; `interrupted` before it ran. */
  readonly outcome: "executed" | "skipped" | "interrupted"
  readonly isFailure: boolean
  /** What the model reads back (encoded). */
  readonly result: unknown
}

/**
 * One logical turn of the session.
 *
 * @since 0.1.0
 * @category models
 */
export interface TurnRecord {
  /** 1-based index in the session. */
  readonly turn: number
  /** The queue's value served for this turn (`none`: the queue was empty). */
  readonly served: Option.Option<ToolChoice>
  /** The `toolChoice` sent to `@effect/ai`. */
  readonly toolChoice: LanguageModel.ToolChoice<string>
  /** Whether `toolChoice` forced a tool call. */
  readonly forced: boolean
  /** The steering messages injected before the request. */
  readonly steering: ReadonlyArray<SteeringMessage>
  /** `completed`, or how the turn ended early. */
  readonly outcome: "completed" | "error" | "aborted"
  readonly text: string
  readonly toolCalls: ReadonlyArray<ToolCallRecord>
}

/**
 * What a finished run returns.
 *
 * @since 0.1.0
 * @category models
 */
export interface RunResult {
  /** The text of the last response. */
  readonly text: string
  /** The turns of this run. */
  readonly turns: ReadonlyArray<TurnRecord>
}

/**
 * Options of one run.
 *
 * @since 0.1.0
 * @category models
 */
export interface RunOptions<Tools extends Record<string, Tool.Any>, E, R> {
  /** The app's tools (a `Toolkit` with its handler layer provided, or a built `WithHandler`). `resolve` is added. */
  readonly toolkit?: Toolkit.WithHandler<Tools> | Effect.Effect<Toolkit.WithHandler<Tools>, E, R> | undefined
  /** Bound on model requests in this run; default `ResolveConfig.maxTurns`. */
  readonly maxTurns?: number | undefined
  /** Retries of a failed request inside one logical turn; a retried request reuses the turn's tool choice. */
  readonly retry?: Schedule.Schedule<unknown, AiError.AiError> | undefined
}

/**
 * Options of a session.
 *
 * @since 0.1.0
 * @category models
 */
export interface SessionOptions {
  /** The system prompt of the conversation. */
  readonly system?: string | undefined
  /** The id that tags this session's metrics; default a fresh `session-<n>`. */
  readonly sessionId?: string | undefined
}

/**
 * @since 0.1.0
 * @category tags
 */
export declare namespace TurnDriver {
  /**
   * @since 0.1.0
   * @category models
   */
  export interface Service {
    /** The session id (the `session` tag of its metrics). */
    readonly id: string
    /**
     * Adds `prompt` (a user message) and drives turns until the model stops asking for tools and nothing is
     * queued, or `maxTurns` is reached. The conversation (and anything still pending) carries over to the next run;
     * steering messages of a request that failed or was interrupted are sent with the next one. Runs of one session
     * take turns (a second run waits for the first). A tool whose handler fails gets a failure result the model
     * reads; the run goes on.
     */
    readonly run: <Tools extends Record<string, Tool.Any> = {}, E = never, R = never>(
      prompt: Prompt.RawInput,
      options?: RunOptions<Tools, E, R>
    ) => Effect.Effect<
      RunResult,
      TurnDriverError | AiError.AiError | E,
      LanguageModel.LanguageModel | R | Tool.Requirements<Tools[keyof Tools]>
    >
    /** The conversation so far. */
    readonly history: Effect.Effect<Prompt.Prompt>
    /** Every turn of the session, oldest first. */
    readonly transcript: Effect.Effect<ReadonlyArray<TurnRecord>>
    /** This session's metric values. */
    readonly metrics: Effect.Effect<ResolveMetrics.Snapshot>
  }
}

/**
 * The TurnDriver service.
 *
 * @since 0.1.0
 * @category tags
 */
export class TurnDriver extends Context.Tag("effect-resolve/TurnDriver")<TurnDriver, TurnDriver.Service>() {
  /**
   * One session: a driver over a fresh `ResolveRuntime` (queue, steering bus, standing handler), which the layer
   * also provides. A new build cannot see another session's pending actions.
   *
   * @since 0.1.0
   * @category layers
   */
  static readonly layer = (options: SessionOptions = {}): Layer.Layer<TurnDriver | ResolveRuntime.Services> =>
    Layer.provideMerge(Layer.effect(TurnDriver, make(options)), ResolveRuntime.layer)
}

// ---------------------------------------------------------------------------------------------------------------
// Implementation
// ---------------------------------------------------------------------------------------------------------------

const previewPrefix = directiveLabel("")

/**
 * Whether a directive label is the one `queueResolveHandler` gives a preview.
 *
 * @since 0.1.0
 * @category guards
 */
export const isPreviewLabel = (label: string): boolean => label.startsWith(previewPrefix)

/**
 * The text of the result a skipped tool call gets.
 *
 * @since 0.1.0
 * @category constants
 */
export const skippedText = "Skipped: a preview is pending. Call `resolve` to apply or discard it first, " +
  "then issue this call again."

/**
 * The text of the result a `resolve` call gets when an earlier call of the same batch staged the preview: the
 * model has not read that preview yet.
 *
 * @since 0.1.0
 * @category constants
 */
export const skippedResolveText = "Skipped: this preview was staged by an earlier call of the same turn. Read it, " +
  "then call `resolve` to apply or discard it."

let sessions = 0

interface Plan {
  readonly choice: LanguageModel.ToolChoice<string>
  /** The choice forces a tool call. */
  readonly forced: boolean
  /** The turn tries to force the in-flight preview (counts toward `maxForcedTurns`). */
  readonly forcingEntry: boolean
  /** Add the reminder again (a model that can force nothing). */
  readonly resteer: boolean
}

const forceResolve = (capabilities: ModelCapabilities): Plan =>
  capabilities.supportsNamedToolChoice ?
    { choice: { tool: "resolve" }, forced: true, forcingEntry: true, resteer: false } :
    capabilities.supportsRequiredToolChoice ?
    { choice: { mode: "required", oneOf: ["resolve"] }, forced: true, forcingEntry: true, resteer: false } :
    { choice: "auto", forced: false, forcingEntry: true, resteer: true }

const baseline: Plan = { choice: "auto", forced: false, forcingEntry: false, resteer: false }

const isForcing = (choice: EffectAiToolChoice): boolean => choice === "required" || typeof choice === "object"

const userMessage = (text: string): Prompt.Message =>
  Prompt.makeMessage("user", { content: [Prompt.makePart("text", { text })] })

const reminderMessage: SteeringMessage = {
  customType: "resolve-reminder",
  content: resolveReminderText,
  display: false,
  attribution: "agent",
  timestamp: 0
}

/**
 * Builds a session's driver on the current ToolChoiceQueue, SteeringBus and StandingResolveHandler.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (
  options: SessionOptions = {}
): Effect.Effect<TurnDriver.Service, never, ToolChoiceQueue | SteeringBus | StandingResolveHandler> =>
  Effect.gen(function*() {
    const queue = yield* ToolChoiceQueue
    const bus = yield* SteeringBus
    const standing = yield* StandingResolveHandler
    const runtime = Context.make(ToolChoiceQueue, queue).pipe(
      Context.add(SteeringBus, bus),
      Context.add(StandingResolveHandler, standing)
    )
    const id = options.sessionId ?? `session-${++sessions}-${Math.random().toString(36).slice(2, 8)}`
    const chat = yield* (options.system === undefined ?
      Chat.empty :
      Chat.fromPrompt([{ role: "system", content: options.system }]))

    const lastChoice = yield* Ref.make(Option.none<string>())
    const errorStreak = yield* Ref.make(new Map<string, number>())
    const ignoredForced = yield* Ref.make(new Map<string, number>())
    const forceNext = yield* Ref.make(new Set<string>())
    const carry = yield* Ref.make<ReadonlyArray<SteeringMessage>>([])
    const transcript = yield* Ref.make<ReadonlyArray<TurnRecord>>([])
    const turnCount = yield* Ref.make(0)
    // One run at a time per session: a run owns the queue's in-flight slot for each of its turns.
    const lock = yield* Effect.makeSemaphore(1)

    const mapUpdate = <K, V>(ref: Ref.Ref<Map<K, V>>, f: (map: Map<K, V>) => void) =>
      Ref.update(ref, (map) => {
        const next = new Map(map)
        f(next)
        return next
      })
    const setUpdate = <K>(ref: Ref.Ref<Set<K>>, f: (set: Set<K>) => void) =>
      Ref.update(ref, (set) => {
        const next = new Set(set)
        f(next)
        return next
      })

    /** A preview is pending: the in-flight preview is not resolved yet, or one is queued. */
    const previewPending = Effect.gen(function*() {
      const inFlight = yield* queue.inFlight
      if (Option.isSome(inFlight) && isPreviewLabel(inFlight.value.label) && !inFlight.value.invoked) return true
      return (yield* queue.inspect).some(isPreviewLabel)
    })

    /** Ends the served value and counts a requeue when it came back at the head. */
    const finish = (info: Option.Option<InFlightInfo>, end: "resolve" | RejectReason) =>
      Effect.gen(function*() {
        const before = yield* queue.inspect
        yield* end === "resolve" ? queue.resolve : queue.reject(end)
        if (Option.isNone(info)) return
        const after = yield* queue.inspect
        if (after.length === before.length + 1 && after[0] === info.value.label) {
          const reason = end === "resolve" ? "not_invoked" : end
          if (reason === "error" || reason === "aborted" || reason === "not_invoked") {
            yield* ResolveMetrics.recordRequeue(id, reason)
          }
        }
      })

    const plan = (
      served: Option.Option<ToolChoice>,
      info: Option.Option<InFlightInfo>,
      capabilities: ModelCapabilities
    ) =>
      Effect.gen(function*() {
        if (Option.isNone(served)) return baseline
        const entry = Option.filter(info, (i) => isPreviewLabel(i.label))
        if (Option.isSome(entry)) {
          const forced = (yield* Ref.get(forceNext)).has(entry.value.id)
          if (typeof served.value === "object") {
            // A forced preview: sent as is when the model can force it, else the soft path.
            if (served.value.name === "resolve" && !capabilities.supportsNamedToolChoice) {
              return forced ? forceResolve(capabilities) : baseline
            }
          } else if (forced) {
            return forceResolve(capabilities)
          }
        }
        const mapped = toEffectAi(served.value, capabilities)
        if (Option.isNone(mapped)) {
          // The model cannot honour this directive: let its onRejected decide, and send the baseline.
          yield* queue.reject("unavailable")
          return baseline
        }
        const choice = mapped.value
        return {
          choice,
          forced: isForcing(choice),
          forcingEntry: Option.isSome(entry) && isForcing(choice),
          resteer: false
        }
      })

    const run = <Tools extends Record<string, Tool.Any> = {}, E = never, R = never>(
      prompt: Prompt.RawInput,
      runOptions: RunOptions<Tools, E, R> = {}
    ): Effect.Effect<
      RunResult,
      TurnDriverError | AiError.AiError | E,
      LanguageModel.LanguageModel | R | Tool.Requirements<Tools[keyof Tools]>
    > =>
      Effect.gen(function*() {
        const config = yield* ResolveConfig
        const capabilities = config.modelCapabilities
        const effective: ResolveConfigShape = {
          ...config,
          enforcement: config.enforcement === "soft" || !capabilities.supportsNamedToolChoice ? "soft" : "force"
        }
        const appToolkit: Toolkit.WithHandler<any> | undefined = runOptions.toolkit === undefined ?
          undefined :
          Effect.isEffect(runOptions.toolkit) ?
          yield* runOptions.toolkit :
          runOptions.toolkit
        const appTools: Record<string, Tool.Any> = appToolkit?.tools ?? {}
        const toolkit: Toolkit.WithHandler<any> = {
          tools: { ...appTools, resolve: ResolveAiTool },
          handle: ((name: string, params: unknown) =>
            name === "resolve" ?
              Effect.map(
                Effect.either(Effect.provide(handleResolve(params), runtime)),
                (either) => ({
                  isFailure: either._tag === "Left",
                  result: either._tag === "Left" ? either.left : either.right,
                  encodedResult: either._tag === "Left" ? either.left : either.right
                })
              ) :
              appToolkit!.handle(name, params)) as any
        }
        const maxTurns = runOptions.maxTurns ?? config.maxTurns

        /** Runs one call of the batch, or skips it while a preview is pending. */
        const runCall = (call: Response.ToolCallPart<string, unknown>, stagedInBatch: Ref.Ref<boolean>) =>
          Effect.gen(function*() {
            if (yield* Ref.get(stagedInBatch)) {
              // A call of this batch staged a preview: nothing after it runs, not even resolve.
              const message = call.name === "resolve" ? skippedResolveText : skippedText
              return record(call, "skipped", true, { skipped: true, message })
            }
            if (call.name === "resolve") {
              const inFlight = yield* queue.inFlight
              const wasPending = Option.isSome(inFlight) && isPreviewLabel(inFlight.value.label) &&
                !inFlight.value.invoked
              const exit = yield* Effect.exit(
                ResolveTool.execute(call.params).pipe(
                  Effect.provideService(ResolveConfig, effective),
                  Effect.provide(runtime),
                  Effect.withSpan("TurnDriver.resolve", {
                    attributes: { action: String((call.params as { action?: unknown } | null)?.action) }
                  })
                )
              )
              if (wasPending) {
                const action = (call.params as any)?.action
                if (Exit.isSuccess(exit)) {
                  yield* ResolveMetrics.recordPreview(id, action === "discard" ? "discarded" : "applied")
                } else if (action === "apply" && Option.isSome(Cause.failureOption(exit.cause))) {
                  const failure = Cause.failureOption(exit.cause)
                  const tag = Option.isSome(failure) ? (failure.value as { _tag?: string })._tag : undefined
                  if (tag === "ApplyFailed" || tag === "ToolError") yield* ResolveMetrics.recordPreview(id, "failed")
                }
              }
              if (Exit.isSuccess(exit)) return record(call, "executed", false, exit.value)
              const failure = Cause.failureOption(exit.cause)
              if (Option.isSome(failure)) return record(call, "executed", true, toFailure(failure.value))
              return yield* Effect.failCause(exit.cause)
            }
            if (yield* previewPending) return record(call, "skipped", true, { skipped: true, message: skippedText })
            const tool = appTools[call.name]
            if (tool === undefined || appToolkit === undefined) {
              return record(call, "executed", true, {
                error: "UnknownTool",
                message: `No tool named "${call.name}". Available tools: ${
                  [...Object.keys(appTools), "resolve"].join(", ")
                }.`
              })
            }
            const before = (yield* queue.inspect).filter(isPreviewLabel).length
            const encoded = yield* Effect.orElseSucceed(
              Schema.encodeUnknown(tool.parametersSchema as Schema.Schema<unknown, unknown>)(call.params),
              () => call.params
            )
            const outcome = yield* appToolkit.handle(call.name, encoded).pipe(
              Effect.map((result) => record(call, "executed", result.isFailure, result.encodedResult)),
              Effect.catchAll((error) => Effect.succeed(record(call, "executed", true, toFailure(error)))),
              Effect.provideService(ResolveConfig, effective),
              Effect.provide(runtime)
            )
            const staged = (yield* queue.inspect).filter(isPreviewLabel).length - before
            for (let i = 0; i < staged; i++) yield* ResolveMetrics.recordPreview(id, "staged")
            if (staged > 0) yield* Ref.set(stagedInBatch, true)
            return outcome
          }).pipe(Effect.withSpan("TurnDriver.toolCall", { attributes: { tool: call.name } }))

        const turn = (newPrompt: Prompt.Prompt) =>
          Effect.uninterruptibleMask((restore) =>
            Effect.gen(function*() {
              const index = yield* Ref.updateAndGet(turnCount, (n) => n + 1)
              const served = yield* queue.nextToolChoice
              const info = yield* queue.inFlight
              const decided = yield* plan(served, info, capabilities)
              const infoNow = yield* queue.inFlight
              const steering = [
                ...(yield* Ref.getAndSet(carry, [])),
                ...(yield* bus.drain),
                ...(decided.resteer ? [reminderMessage] : [])
              ]
              const entry = Option.filter(infoNow, (i) => isPreviewLabel(i.label))
              if (decided.forcingEntry && Option.isSome(entry)) {
                yield* mapUpdate(ignoredForced, (m) => m.set(entry.value.id, (m.get(entry.value.id) ?? 0) + 1))
              }
              const key = JSON.stringify(decided.choice)
              const previous = yield* Ref.getAndSet(lastChoice, Option.some(key))
              yield* ResolveMetrics.recordTurn(
                id,
                decided.forced,
                Option.isSome(previous) && previous.value !== key
              )
              const requestPrompt = Prompt.merge(
                newPrompt,
                Prompt.fromMessages(steering.map((m) => userMessage(m.content)))
              )
              const base = {
                turn: index,
                served,
                toolChoice: decided.choice,
                forced: decided.forced,
                steering
              }
              const save = (record: TurnRecord) => Ref.update(transcript, (all) => [...all, record])

              const request = chat.generateText({
                prompt: requestPrompt,
                toolkit,
                toolChoice: decided.choice as any,
                disableToolCallResolution: true
              }).pipe(
                (effect) => runOptions.retry === undefined ? effect : Effect.retry(effect, runOptions.retry),
                Effect.withSpan("TurnDriver.request", { attributes: { toolChoice: key } })
              ) as Effect.Effect<LanguageModel.GenerateTextResponse<any>, AiError.AiError>

              const requested = yield* Effect.exit(restore(request))
              if (Exit.isFailure(requested)) {
                yield* Ref.set(carry, steering.filter((m) => m !== reminderMessage))
                const error = Cause.failureOption(requested.cause)
                if (Option.isNone(error)) {
                  yield* finish(infoNow, "aborted")
                  yield* save({ ...base, outcome: "aborted", text: "", toolCalls: [] })
                  return yield* Effect.failCause(requested.cause)
                }
                yield* save({ ...base, outcome: "error", text: "", toolCalls: [] })
                if (Option.isNone(infoNow)) return yield* Effect.failCause(requested.cause)
                const streak = ((yield* Ref.get(errorStreak)).get(infoNow.value.id) ?? 0) + 1
                if (streak > config.maxErrorRequeues) {
                  yield* mapUpdate(errorStreak, (m) => m.delete(infoNow.value.id))
                  yield* finish(infoNow, "removed")
                  const limit = new RequeueLimitExceeded({
                    directiveId: infoNow.value.id,
                    label: infoNow.value.label,
                    errors: streak,
                    cause: error.value
                  })
                  yield* Effect.logError(`effect-resolve: ${limit.message}`, error.value)
                  return yield* limit
                }
                yield* mapUpdate(errorStreak, (m) => m.set(infoNow.value.id, streak))
                yield* Effect.logWarning(
                  `effect-resolve: model request failed while "${infoNow.value.label}" was served; requeued ` +
                    `(${streak}/${config.maxErrorRequeues})`
                )
                yield* finish(infoNow, "error")
                return yield* Effect.failCause(requested.cause)
              }
              const response = requested.value
              if (Option.isSome(infoNow)) yield* mapUpdate(errorStreak, (m) => m.delete(infoNow.value.id))

              const calls = response.toolCalls.filter((call) => call.providerExecuted !== true) as Array<
                Response.ToolCallPart<string, unknown>
              >
              const records = yield* Ref.make<ReadonlyArray<ToolCallRecord>>([])
              const stagedInBatch = yield* Ref.make(false)
              const executed = yield* Effect.exit(restore(Effect.forEach(
                calls,
                (call) =>
                  Effect.flatMap(runCall(call, stagedInBatch), (r) => Ref.update(records, (all) => [...all, r])),
                { discard: true }
              )))
              const done = yield* Ref.get(records)
              const all = [
                ...done,
                ...calls.slice(done.length).map((call) =>
                  record(call, "interrupted", true, { interrupted: true, message: "Interrupted before it ran." })
                )
              ]
              if (all.length > 0) {
                yield* Ref.update(chat.history, (history) =>
                  Prompt.merge(
                    history,
                    Prompt.fromMessages([Prompt.makeMessage("tool", {
                      content: all.map((r) =>
                        Prompt.makePart("tool-result", {
                          id: r.id,
                          name: r.name,
                          isFailure: r.isFailure,
                          result: r.result,
                          providerExecuted: false
                        })
                      )
                    })])
                  ))
              }
              const saved: TurnRecord = {
                ...base,
                outcome: Exit.isSuccess(executed) ? "completed" : "aborted",
                text: response.text,
                toolCalls: all
              }
              yield* save(saved)
              if (Exit.isFailure(executed)) {
                yield* finish(infoNow, "aborted")
                return yield* Effect.failCause(executed.cause)
              }

              // Compliance with the in-flight preview.
              if (Option.isSome(entry)) {
                const entryId = entry.value.id
                if (all.some((r) => r.name === "resolve")) {
                  yield* setUpdate(forceNext, (s) => s.delete(entryId))
                  yield* mapUpdate(ignoredForced, (m) => m.delete(entryId))
                } else if (decided.forcingEntry) {
                  const ignored = (yield* Ref.get(ignoredForced)).get(entryId) ?? 0
                  if (ignored >= config.maxForcedTurns) {
                    yield* setUpdate(forceNext, (s) => s.delete(entryId))
                    yield* mapUpdate(ignoredForced, (m) => m.delete(entryId))
                    // The preview stays pending (requeued as not_invoked): the run stops, nothing staged is lost.
                    yield* finish(infoNow, "resolve")
                    const notCalled = new ResolveNotCalled({
                      directiveId: entryId,
                      label: entry.value.label,
                      forcedTurns: ignored
                    })
                    yield* Effect.logError(`effect-resolve: ${notCalled.message}`)
                    return yield* notCalled
                  }
                } else {
                  yield* setUpdate(forceNext, (s) => s.add(entryId))
                }
              }
              yield* finish(infoNow, "resolve")
              return saved
            })
          ).pipe(Effect.withSpan("TurnDriver.turn"))

        const records: Array<TurnRecord> = []
        let next = Prompt.make(prompt)
        for (let i = 0; i < maxTurns; i++) {
          const saved = yield* turn(next)
          next = Prompt.empty
          records.push(saved)
          const idle = saved.toolCalls.length === 0 && !(yield* queue.hasInFlight) &&
            (yield* queue.inspect).length === 0
          if (idle) return { text: saved.text, turns: records }
        }
        return yield* new MaxTurnsExceeded({ maxTurns, pending: yield* queue.inspect })
      }).pipe(
        lock.withPermits(1),
        Effect.withSpan("TurnDriver.run", { attributes: { session: id } })
      ) as any

    return TurnDriver.of({
      id,
      run,
      history: Ref.get(chat.history),
      transcript: Ref.get(transcript),
      metrics: ResolveMetrics.snapshot(id)
    })
  })

const record = (
  call: Response.ToolCallPart<string, unknown>,
  outcome: ToolCallRecord["outcome"],
  isFailure: boolean,
  result: unknown
): ToolCallRecord => ({ id: call.id, name: call.name, params: call.params, outcome, isFailure, result })
