/**
 * The agent-turn driver on `@effect/ai`: one session's conversation over `Chat` and `LanguageModel`, with the app's
 * toolkit plus the `resolve` tool. Each logical turn serves the ToolChoiceQueue once, injects every steering
 * message, sends the request, runs the tool calls itself (every preview call of a response stages its own action,
 * several `resolve` calls of a response are each served once per id, in order; a model's malformed call gets a
 * failure result) and finalizes the served directive. Enforcement is `"force"` or
 * `"soft"` (`ResolveConfig`), degraded for the session when the provider refuses forcing; metrics and spans on
 * every turn.
 *
 * This module is the service: what a session's driver offers, what a run takes and returns, and how a session is
 * built. What a run fails with is in `TurnDriverError`, what the driver forces and how hard in `Forcing` (both
 * re-exported here); the loop, the forcing policy, the tool calls and the durable state are in `internal/`.
 *
 * @example
 * ```ts
 * import { Tool, Toolkit } from "@effect/ai"
 * import { Effect, Layer, Schema } from "effect"
 * import { ResolveConfig } from "effect-resolve"
 * import { ScriptedModel, TurnDriver } from "effect-resolve/ai"
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
import type * as LanguageModel from "@effect/ai/LanguageModel"
import type * as Prompt from "@effect/ai/Prompt"
import type * as Tool from "@effect/ai/Tool"
import type * as Toolkit from "@effect/ai/Toolkit"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Option from "effect/Option"
import * as Ref from "effect/Ref"
import type * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import type { PendingStoreError } from "../domain/Errors.js"
import { checkOptions, type InvalidOptions, type OptionsSpec, text } from "../domain/InvalidOptions.js"
import type { SteeringMessage } from "../domain/SteeringMessage.js"
import type { ToolChoice } from "../domain/ToolChoice.js"
import * as ResolveRuntime from "../layers/ResolveRuntime.js"
import { type ModelCapabilities, ResolveConfig } from "../services/ResolveConfig.js"
import { awaitDecision } from "./internal/awaitDecision.js"
import * as Loop from "./internal/loop.js"
import { capabilitiesOf } from "./internal/refusals.js"
import { makeSession } from "./internal/session.js"
import * as SessionState from "./internal/sessionState.js"
import * as ToolCalls from "./internal/toolCalls.js"
import type * as ResolveMetrics from "./ResolveMetrics.js"
import type { TurnDriverError } from "./TurnDriverError.js"

/**
 * What a run fails with (`TurnDriverError.ts`).
 *
 * @since 0.1.0
 * @category errors
 */
export {
  MaxTurnsExceeded,
  RequeueLimitExceeded,
  ResolveNotCalled,
  SessionLost,
  type TurnDriverError
} from "./TurnDriverError.js"

/**
 * What the driver forces, and how hard it can (`Forcing.ts`).
 *
 * @since 0.1.0
 * @category forcing
 */
export { type ForcingLevel, forcingLevel, isForcingRefusal, isPreviewLabel } from "./Forcing.js"

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
  /**
   * `executed`; `skipped`: a `resolve` call after a call of the same response staged a preview, without an id or with
   * that preview's (the model has not read it); `interrupted` before it ran.
   */
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
  /**
   * Retries of a failed request inside one logical turn; a retried request reuses the turn's tool choice. While a
   * directive is served, every failed attempt counts toward `ResolveConfig.maxErrorRequeues`, retries included.
   */
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
  /** The session's id (`driver.id`, the `session` attribute of its spans); default a fresh `session-<n>`. */
  readonly sessionId?: string | undefined
  /**
   * Steering messages recorded durably outside the session's saves (a cluster's `SteeringJournal`), each with an id
   * in `details.steerId`. A durable session queues again, when it opens, every one its saved conversation and saved
   * steering do not hold, and reports the ids each saved turn carried (`delivered`). See `DurableSteering`.
   */
  readonly steering?: DurableSteering | undefined
}

/**
 * Steering messages that are durable before the session's next save (0.4): the messages a durable session must still
 * deliver after a restart, and where it reports those a saved turn delivered. The request that carries a message with
 * an id (`details.steerId`) holds the id in its user message's options (`{ "effect-resolve": { steerId } }`, which no
 * provider reads), so the saved conversation is the truth; `delivered` only keeps the undelivered set small (a lost
 * report is made good when the session opens next).
 *
 * @since 0.4.0
 * @category models
 */
export interface DurableSteering {
  /** The recorded messages not yet reported delivered, oldest first; each with `details.steerId`. */
  readonly undelivered: Effect.Effect<ReadonlyArray<SteeringMessage>, PendingStoreError>
  /** A saved turn (or the saved conversation the session opened with) carried these ids. */
  readonly delivered: (ids: ReadonlyArray<string>) => Effect.Effect<void, PendingStoreError>
}

const sessionSpec: OptionsSpec = {
  system: { schema: Schema.String, expected: "a string (the system prompt)" },
  sessionId: text,
  steering: { schema: Schema.Object, expected: "a DurableSteering (the cluster's steering journal)" }
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
    /** The session id (the `session` attribute of its spans). */
    readonly id: string
    /**
     * Adds `prompt` (a user message) and drives turns until the model stops asking for tools and nothing is
     * queued, or `maxTurns` is reached. The conversation (and anything still pending) carries over to the next run;
     * steering messages of a request that failed or was interrupted are sent with the next one. Runs of one session
     * take turns (a second run waits for the first). A tool whose handler fails gets a failure result the model
     * reads, and so does a model's mistake (a call to an unknown tool, arguments that fail the tool's schema); the
     * run goes on. A provider that refuses forced tool choice makes the session force less; a preview is never
     * dropped by the driver.
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
    /**
     * This session's counts, kept in the session since its driver was built; the process-wide `ResolveMetrics`
     * carry no session tag.
     */
    readonly metrics: Effect.Effect<ResolveMetrics.Snapshot>
    /**
     * What the session's model can be sent: `ResolveConfig.modelCapabilities` less the forcing the provider refused
     * during this session (learned once, kept for the session's later turns and previews).
     */
    readonly capabilities: Effect.Effect<ModelCapabilities>
    /**
     * Waits until a reviewer decides one of the session's previews that wait now (`pending`), and returns the ids
     * decided: an action settled meanwhile by anyone else (the approval inbox that ran the decision, another
     * process), or one with a requested decision that is this session's to run (a closure it staged, or a kind no
     * inbox ran within two seconds); the next `run` runs those. Or a reviewer responded about one (a message to the
     * agent that leaves it pending; `Inbox`'s `respond`). At once when some are decided already; `[]` when no
     * preview waits. Then `run` again: its request tells the model what the reviewer did or said.
     *
     * Pushed, not polled: a durable session is woken by its store's change signal (`ChangeFeed.changed`:
     * `LISTEN`/`NOTIFY` on Postgres, from any process; the store layer's own writes on SQLite and in memory), and
     * looks again every second for what no signal reaches (another process writing the same SQLite file, a dropped
     * connection); a session in memory, by its pending set's changes. It only reads, and is interruptible: race it
     * with a timeout or a user's next prompt.
     *
     * @since 0.4.0
     */
    readonly awaitDecision: Effect.Effect<ReadonlyArray<string>, PendingStoreError>
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
  static readonly layer = (
    options: SessionOptions = {}
  ): Layer.Layer<TurnDriver | ResolveRuntime.Services, InvalidOptions> =>
    Layer.provideMerge(
      Layer.effect(
        TurnDriver,
        Effect.zipRight(checkOptions("TurnDriver.layer", sessionSpec, options), Effect.orDie(make(options)))
      ),
      ResolveRuntime.layer
    )

  /**
   * A driver over the session services the app provides (`ResolveRuntime.layer`, or `ResolveRuntime.layerDurable`
   * for a session that resumes where it stopped: its conversation, steering, forcing state and pending actions); a
   * durable session's id is the pending set's session. (`Effect.Service`'s `DefaultWithoutDependencies`, by name.)
   *
   * @since 0.3.0
   * @category layers
   */
  static readonly layerWithoutDependencies = (
    options: Omit<SessionOptions, "sessionId"> = {}
  ): Layer.Layer<TurnDriver, PendingStoreError | InvalidOptions, ResolveRuntime.Services> =>
    Layer.effect(
      TurnDriver,
      Effect.zipRight(
        checkOptions(
          "TurnDriver.layerWithoutDependencies",
          { system: sessionSpec.system!, steering: sessionSpec.steering! },
          options
        ),
        make(options)
      )
    )

  /**
   * @deprecated Renamed `layerWithoutDependencies` in 0.3.0; this alias goes in 0.4.0.
   * @since 0.2.0
   * @category layers
   */
  static readonly layerOn = this.layerWithoutDependencies
}

// ---------------------------------------------------------------------------------------------------------------
// What the model reads from the driver
// ---------------------------------------------------------------------------------------------------------------

/**
 * The text of the result a tool call got when it was skipped because a preview was pending.
 *
 * @deprecated Since 0.3.0 no call is skipped because a preview is pending: every preview call of a response stages
 * its own action (only a `resolve` the model cannot have meant for an older preview is skipped, with
 * `skippedResolveText`). This constant goes in 0.4.0.
 * @since 0.1.0
 * @category constants
 */
export const skippedText: string = ToolCalls.skippedText

/**
 * The text of the result a `resolve` call gets when an earlier call of the same batch staged the preview: the
 * model has not read that preview yet.
 *
 * @since 0.1.0
 * @category constants
 */
export const skippedResolveText: string = ToolCalls.skippedResolveText

/**
 * The text that shows the model a preview it staged before a restart when the restored conversation does not hold
 * it (the process died during the turn that staged it).
 *
 * @since 0.2.0
 * @category constructors
 */
export const restoredPreviewText: (
  info: { readonly id: string; readonly label: string; readonly preview: string }
) => string = SessionState.restoredPreviewText

// ---------------------------------------------------------------------------------------------------------------
// Constructors
// ---------------------------------------------------------------------------------------------------------------

/**
 * Builds a session's driver on the current ToolChoiceQueue, SteeringBus and StandingResolveHandler.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (
  options: SessionOptions = {}
): Effect.Effect<TurnDriver.Service, PendingStoreError, ResolveRuntime.Services> =>
  Effect.gen(function*() {
    const session = yield* makeSession(options)
    // A durable session: continue from what the last turn saved, and show the model any pending preview the saved
    // conversation does not hold.
    yield* SessionState.restore(session)
    return TurnDriver.of({
      id: session.id,
      run: Loop.run(session),
      history: Ref.get(session.history),
      transcript: Ref.get(session.transcript),
      metrics: session.counters.snapshot,
      capabilities: Effect.flatMap(ResolveConfig, (config) => capabilitiesOf(session.refused, config)),
      awaitDecision: awaitDecision(session)
    })
  })
