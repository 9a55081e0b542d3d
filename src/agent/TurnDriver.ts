/**
 * The agent-turn driver on `@effect/ai`: one session's conversation over `Chat` and `LanguageModel`, with the app's
 * toolkit plus the `resolve` tool. Each logical turn serves the ToolChoiceQueue once, injects every steering
 * message, sends the request, runs the tool calls itself (gating them while a preview is pending, answering a
 * model's malformed call with a failure result) and finalizes the served directive. Enforcement is `"force"` or
 * `"soft"` (`ResolveConfig`), degraded for the session when the provider refuses forcing; metrics and spans on
 * every turn.
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
import * as LanguageModel from "@effect/ai/LanguageModel"
import * as Prompt from "@effect/ai/Prompt"
import type * as Response from "@effect/ai/Response"
import * as Tool from "@effect/ai/Tool"
import type * as Toolkit from "@effect/ai/Toolkit"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as Ref from "effect/Ref"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import type { PendingStoreError } from "../domain/Errors.js"
import { resolveReminderText, SteeringMessage } from "../domain/SteeringMessage.js"
import type { ToolChoice } from "../domain/ToolChoice.js"
import { tooDeepField } from "../internal/untrusted.js"
import * as ResolveRuntime from "../layers/ResolveRuntime.js"
import { directiveLabel } from "../services/PendingAction.js"
import { PendingActions, track } from "../services/PendingActions.js"
import { PendingStore } from "../services/PendingStore.js"
import { type ModelCapabilities, ResolveConfig, type ResolveConfigShape } from "../services/ResolveConfig.js"
import { StandingResolveHandler } from "../services/StandingResolveHandler.js"
import { SteeringBus } from "../services/SteeringBus.js"
import { type InFlightInfo, type RejectReason, ToolChoiceQueue } from "../services/ToolChoiceQueue.js"
import { ResolveTool } from "../tools/Resolve.js"
import { ResolveAiTool, toFailure } from "./AiResolveTool.js"
import { forcingLevel, isForcingRefusal, isPreviewLabel } from "./Forcing.js"
import { permissiveTools, recoverResponse } from "./internal/permissive.js"
import { errorText, quote } from "./internal/quote.js"
import { type EffectAiToolChoice, toEffectAi } from "./ProviderToolChoice.js"
import * as ResolveMetrics from "./ResolveMetrics.js"
import { MaxTurnsExceeded, RequeueLimitExceeded, ResolveNotCalled, type TurnDriverError } from "./TurnDriverError.js"

/**
 * What a run fails with (`TurnDriverError.ts`).
 *
 * @since 0.1.0
 * @category errors
 */
export { MaxTurnsExceeded, RequeueLimitExceeded, ResolveNotCalled, type TurnDriverError } from "./TurnDriverError.js"

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
    Layer.provideMerge(Layer.effect(TurnDriver, Effect.orDie(make(options))), ResolveRuntime.layer)

  /**
   * A driver over the session services already provided, such as `ResolveRuntime.durable(...)`: a durable session
   * resumes where it stopped (its conversation, steering, forcing state and pending actions), and its id is the
   * pending set's session.
   *
   * @since 0.2.0
   * @category layers
   */
  static readonly layerOn = (
    options: Omit<SessionOptions, "sessionId"> = {}
  ): Layer.Layer<TurnDriver, PendingStoreError, ResolveRuntime.Services> => Layer.effect(TurnDriver, make(options))
}

// ---------------------------------------------------------------------------------------------------------------
// Implementation
// ---------------------------------------------------------------------------------------------------------------

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

/** What a turn sends after the history: its steering messages, each as a user message. */
const steeringPrompt = (steering: ReadonlyArray<SteeringMessage>): Prompt.Prompt =>
  Prompt.fromMessages(steering.map((m) => userMessage(m.content)))

const reminderMessage: SteeringMessage = {
  customType: "resolve-reminder",
  content: resolveReminderText,
  display: false,
  attribution: "agent",
  timestamp: 0
}

/** The forcing the provider refused in this session. */
interface Refused {
  readonly named: boolean
  readonly required: boolean
}

const withRefused = (capabilities: ModelCapabilities, refused: Refused): ModelCapabilities => ({
  ...capabilities,
  supportsNamedToolChoice: capabilities.supportsNamedToolChoice && !refused.named,
  supportsRequiredToolChoice: capabilities.supportsRequiredToolChoice && !refused.required
})

/**
 * The forcing level a request's `tool_choice` used: a named tool is `named`; `"required"`, or `required` among some
 * tools, is `required`; a choice that forces nothing has none.
 */
const levelOf = (choice: LanguageModel.ToolChoice<string>): "named" | "required" | undefined =>
  choice === "required" ?
    "required" :
    typeof choice !== "object" ?
    undefined :
    "tool" in choice ?
    "named" :
    choice.mode === "required" ?
    "required" :
    undefined

/**
 * The refusals once the level `choice` used is refused too: exactly that level, the others kept; `undefined` when
 * `choice` forces nothing or its level was already refused (nothing to learn).
 */
const refuse = (refused: Refused, choice: LanguageModel.ToolChoice<string>): Refused | undefined => {
  const level = levelOf(choice)
  return level === undefined || refused[level] ? undefined : { ...refused, [level]: true }
}

/** At most this many characters of a tool name or a decode error are quoted back to the model. */
/** How deep a call's arguments may nest before they are refused without being decoded (the error formatting recurses). */
const argumentsMaxDepth = 64

/**
 * A call's arguments decoded against its tool's real schema: the failure result the model reads, if they do not.
 * Effectful, so a schema with an asynchronous or context-dependent part decodes as `@effect/ai` would decode it.
 */
const invalidArguments = (
  name: string,
  tool: Tool.Any,
  params: unknown
): Effect.Effect<Option.Option<{ readonly error: "InvalidToolParams"; readonly message: string }>> => {
  const invalid = (problem: string) =>
    Option.some({
      error: "InvalidToolParams" as const,
      message: `The arguments of "${quote(name)}" do not match its schema: ${problem}. Call it again with ` +
        `arguments that match the schema.`
    })
  const deep = tooDeepField(params, argumentsMaxDepth)
  if (deep !== undefined) {
    return Effect.succeed(invalid(`${quote(deep)}: is nested deeper than ${argumentsMaxDepth} levels`))
  }
  const decode = Schema.decodeUnknown(tool.parametersSchema as Schema.Schema<unknown, unknown>)
  return Effect.match(decode(params, { errors: "first" }), {
    onSuccess: () => Option.none(),
    onFailure: (error) => {
      const [issue] = ParseResult.ArrayFormatter.formatErrorSync(error)
      if (issue === undefined) return invalid("they could not be decoded")
      const field = issue.path.length === 0 ? "(root)" : issue.path.map(String).join(".")
      return invalid(quote(`${field}: ${issue.message}`))
    }
  })
}

/**
 * What the driver keeps about one directive it served, by the directive's id (a preview's is its pending action's id,
 * stable across a restart). An entry with nothing left to keep is not kept, and neither is the entry of a directive
 * that is gone (see `pruneForcing`).
 */
interface Forcing {
  /** The directive's label, to tell whether the queue still holds it. */
  readonly label: string
  /** Failed requests in a row while it was served (toward `maxErrorRequeues`). */
  readonly errors: number
  /** Turns in a row that pushed the model to resolve it and were ignored (toward `maxForcedTurns`). */
  readonly ignored: number
  /** Of `ignored`, the turns that could only repeat the reminder (the session could not force). */
  readonly reminded: number
  /** Force it the next time it is served: the model ignored it on a turn that did not force it. */
  readonly forceNext: boolean
}

const noForcing = (label: string): Forcing => ({ label, errors: 0, ignored: 0, reminded: 0, forceNext: false })

const keepsSomething = (entry: Forcing): boolean => entry.errors > 0 || entry.ignored > 0 || entry.forceNext

/**
 * The entries worth keeping: the in-flight directive's (`inFlight`), and of the others, for each label, at most as
 * many as the queue still holds with that label (`queued`, from `inspect`, which lists only the directives still
 * wanted), the most recently changed first. A directive that was resolved, dropped, cleared, removed or satisfied
 * leaves no entry behind, so there are never more entries than live directives.
 */
const pruneForcing = (
  all: ReadonlyMap<string, Forcing>,
  inFlight: string | undefined,
  queued: ReadonlyArray<string>
): ReadonlyMap<string, Forcing> => {
  const room = new Map<string, number>()
  for (const label of queued) room.set(label, (room.get(label) ?? 0) + 1)
  const kept: Array<readonly [string, Forcing]> = []
  // Newest first: a Map keeps insertion order, and an entry is moved to the end whenever it changes.
  for (const [id, entry] of [...all].reverse()) {
    const left = room.get(entry.label) ?? 0
    if (id !== inFlight) {
      if (left === 0) continue
      room.set(entry.label, left - 1)
    }
    kept.push([id, entry])
  }
  return kept.length === all.size ? all : new Map(kept.reverse())
}

/**
 * What a durable session stores after every turn, to continue after a restart exactly where it stopped: the
 * conversation, the steering messages not yet sent, the forcing state (keyed by pending-action id, stable across a
 * restart) and the forcing the provider refused.
 */
const SessionState = Schema.Struct({
  version: Schema.Literal(1),
  history: Prompt.Prompt,
  steering: Schema.Array(SteeringMessage),
  forceNext: Schema.Array(Schema.String),
  ignoredForced: Schema.Array(Schema.Tuple(Schema.String, Schema.Number)),
  /** Of `ignoredForced`, the turns that only repeated the reminder (absent in a state saved before 0.3). */
  ignoredReminded: Schema.optionalWith(Schema.Array(Schema.Tuple(Schema.String, Schema.Number)), {
    default: () => []
  }),
  errorStreak: Schema.Array(Schema.Tuple(Schema.String, Schema.Number)),
  refused: Schema.Struct({ named: Schema.Boolean, required: Schema.Boolean }),
  lastChoice: Schema.NullOr(Schema.String),
  turns: Schema.Number,
  /**
   * The pending actions whose preview the conversation holds (a tool result of the turn that staged them); absent
   * in a state saved before 0.3, where the history's text is searched for their ids instead.
   */
  shown: Schema.optional(Schema.Array(Schema.String))
})

const SessionStateJson = Schema.parseJson(SessionState)

/**
 * The text that shows the model a preview it staged before a restart when the restored conversation does not hold
 * it (the process died during the turn that staged it).
 *
 * @since 0.2.0
 * @category constructors
 */
export const restoredPreviewText = (info: { readonly id: string; readonly label: string; readonly preview: string }) =>
  "<system-reminder>\n" +
  `A preview staged before a restart is still pending: ${info.label} (id ${info.id}). Nothing of it is applied yet. ` +
  "Call the `resolve` tool to apply or discard it." +
  (info.preview === "" ? "" : `\nThe preview:\n${info.preview}`) +
  "\n</system-reminder>"

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
    const queue = yield* ToolChoiceQueue
    const bus = yield* SteeringBus
    const standing = yield* StandingResolveHandler
    const pending = yield* PendingActions
    const runtime = Context.make(ToolChoiceQueue, queue).pipe(
      Context.add(SteeringBus, bus),
      Context.add(StandingResolveHandler, standing),
      Context.add(PendingActions, pending)
    )
    // A durable session is named by its pending set; an in-memory one by the option, else a fresh name.
    const id = pending.durable ?
      pending.session :
      options.sessionId ?? `session-${++sessions}-${Math.random().toString(36).slice(2, 8)}`
    const history = yield* Ref.make(
      options.system === undefined ? Prompt.empty : Prompt.make([{ role: "system", content: options.system }])
    )

    const lastChoice = yield* Ref.make(Option.none<string>())
    // The session's own counts (the process-wide metrics carry no session tag).
    const counters = yield* ResolveMetrics.makeCounters
    const forcing = yield* Ref.make<ReadonlyMap<string, Forcing>>(new Map())
    const carry = yield* Ref.make<ReadonlyArray<SteeringMessage>>([])
    const transcript = yield* Ref.make<ReadonlyArray<TurnRecord>>([])
    const turnCount = yield* Ref.make(0)
    const refused = yield* Ref.make<Refused>({ named: false, required: false })
    // Durable: the pending actions whose preview the conversation holds, saved with it.
    const shown = yield* Ref.make<ReadonlySet<string>>(new Set())
    // One run at a time per session: a run owns the queue's in-flight slot for each of its turns.
    const lock = yield* Effect.makeSemaphore(1)

    // A durable session: continue from what the last turn saved, and show the model any pending preview the saved
    // conversation does not hold.
    const store = pending.durable ? Option.getOrUndefined(yield* Effect.serviceOption(PendingStore)) : undefined
    if (store !== undefined) {
      const actions = yield* pending.listOpen
      const saved = yield* store.loadSession(id)
      let savedShown: ReadonlySet<string> | undefined
      if (Option.isSome(saved)) {
        const decoded = Schema.decodeUnknownEither(SessionStateJson)(saved.value)
        if (decoded._tag === "Right") {
          const state = decoded.right
          yield* Ref.set(history, state.history)
          yield* Ref.set(carry, state.steering)
          // Only the entries of actions still pending: a directive that is gone (an action resolved by another
          // process) would never be served, and its entry never forgotten.
          const labels = new Map(
            actions.filter((info) => info.status === "pending" || info.status === "resolving").map((info) =>
              [info.id, directiveLabel(info.sourceToolName)] as const
            )
          )
          const restored = new Map<string, Forcing>()
          const restoreEntry = (key: string, f: (entry: Forcing) => Forcing) => {
            const label = labels.get(key)
            if (label !== undefined) restored.set(key, f(restored.get(key) ?? noForcing(label)))
          }
          for (const key of state.forceNext) restoreEntry(key, (entry) => ({ ...entry, forceNext: true }))
          for (const [key, n] of state.ignoredForced) restoreEntry(key, (entry) => ({ ...entry, ignored: n }))
          for (const [key, n] of state.ignoredReminded) {
            restoreEntry(key, (entry) => ({ ...entry, reminded: Math.min(n, entry.ignored) }))
          }
          for (const [key, n] of state.errorStreak) restoreEntry(key, (entry) => ({ ...entry, errors: n }))
          yield* Ref.set(forcing, restored)
          yield* Ref.set(refused, state.refused)
          yield* Ref.set(lastChoice, Option.fromNullable(state.lastChoice))
          yield* Ref.set(turnCount, state.turns)
          if (state.shown !== undefined) savedShown = new Set(state.shown)
        } else {
          yield* Effect.logError(
            `effect-resolve: the saved state of session ${id} does not decode; the conversation starts afresh ` +
              "(its pending actions are kept)",
            decoded.left
          )
        }
      }
      // A state saved before 0.3 does not say which previews it showed: its history's text is searched for ids.
      const shownBefore = savedShown ?? ((text: string) => ({ has: (id: string) => text.includes(id) }))(
        JSON.stringify(Schema.encodeSync(Prompt.Prompt)(yield* Ref.get(history)))
      )
      const open = actions.filter((info) => info.status === "pending" && info.runnable)
      yield* Ref.set(shown, new Set(open.filter((info) => shownBefore.has(info.id)).map((info) => info.id)))
      const unseen = open.filter((info) => !shownBefore.has(info.id))
      if (unseen.length > 0) {
        const now = yield* Clock.currentTimeMillis
        yield* Ref.update(carry, (messages) => [
          ...messages,
          ...unseen.reverse().map((info): SteeringMessage => ({
            customType: "resolve-restored",
            content: restoredPreviewText(info),
            details: { actionId: info.id },
            display: false,
            attribution: "agent",
            timestamp: now
          }))
        ])
      }
    }

    /** Saves the session for a restart (durable sessions only); a failed save is logged, never fails the run. */
    const persist: Effect.Effect<void> = store === undefined ? Effect.void : Effect.gen(function*() {
      const entries = [...(yield* Ref.get(forcing))]
      const state: typeof SessionState.Type = {
        version: 1,
        history: yield* Ref.get(history),
        steering: [...(yield* Ref.get(carry)), ...(yield* bus.pending)],
        forceNext: entries.filter(([, entry]) => entry.forceNext).map(([key]) => key),
        ignoredForced: entries.filter(([, entry]) => entry.ignored > 0).map(([key, entry]) => [key, entry.ignored]),
        ignoredReminded: entries.filter(([, entry]) => entry.reminded > 0).map(([key, entry]) => [
          key,
          entry.reminded
        ]),
        errorStreak: entries.filter(([, entry]) => entry.errors > 0).map(([key, entry]) => [key, entry.errors]),
        refused: yield* Ref.get(refused),
        lastChoice: Option.getOrNull(yield* Ref.get(lastChoice)),
        turns: yield* Ref.get(turnCount),
        shown: [...(yield* Ref.get(shown))]
      }
      const json = yield* Schema.encode(SessionStateJson)(state)
      yield* store.saveSession(id, json)
    }).pipe(
      Effect.catchAllCause((cause) =>
        Effect.logError(`effect-resolve: could not save session ${id}; a restart resumes from an earlier turn`, cause)
      )
    )

    /** What is kept about the directive `info` names (nothing: an empty entry). */
    const forcingOf = (info: InFlightInfo) =>
      Effect.map(Ref.get(forcing), (all) => all.get(info.id) ?? noForcing(info.label))
    /** Changes the entry of the directive `info` names; it becomes the most recent, and goes when it keeps nothing. */
    const updateForcing = (info: InFlightInfo, f: (entry: Forcing) => Forcing) =>
      Ref.update(forcing, (all) => {
        const entry = f(all.get(info.id) ?? noForcing(info.label))
        const next = new Map(all)
        next.delete(info.id)
        if (keepsSomething(entry)) next.set(info.id, { ...entry, label: info.label })
        return next
      })
    /** Forgets the entries of directives that are gone, against what is in flight and queued now. */
    const prune = (inFlight: Option.Option<InFlightInfo>) =>
      Effect.gen(function*() {
        if ((yield* Ref.get(forcing)).size === 0) return
        const queued = yield* queue.inspect
        const keep = Option.isSome(inFlight) ? inFlight.value.id : undefined
        yield* Ref.update(forcing, (all) => pruneForcing(all, keep, queued))
      })

    /** A preview is pending: the pending set has an action that forces `resolve` (the same set `resolve` reads). */
    const previewPending = pending.hasPending

    /** Ends the served value and counts a requeue when it came back at the head; whether it did. */
    const finish = (info: Option.Option<InFlightInfo>, end: "resolve" | RejectReason) =>
      Effect.gen(function*() {
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

    const plan = (
      served: Option.Option<ToolChoice>,
      info: Option.Option<InFlightInfo>,
      capabilities: ModelCapabilities
    ) =>
      Effect.gen(function*() {
        if (Option.isNone(served)) return baseline
        const entry = Option.filter(info, (i) => isPreviewLabel(i.label))
        if (Option.isSome(entry)) {
          const forced = (yield* forcingOf(entry.value)).forceNext
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

    /** Counts a request's tool_choice change against the previous request's. */
    const noteChoice = (choice: LanguageModel.ToolChoice<string>) =>
      Effect.map(
        Ref.getAndSet(lastChoice, Option.some(JSON.stringify(choice))),
        (previous) => Option.isSome(previous) && previous.value !== JSON.stringify(choice)
      )

    /**
     * Records forcing the provider refused: the session's capabilities from now on, a warning, and a metric when the
     * level `resolve` is forced at went down (a refused `"required"` leaves named forcing as it was).
     */
    const learn = (
      config: ResolveConfigShape,
      next: Refused,
      how: string,
      error: AiError.AiError
    ) =>
      Effect.gen(function*() {
        const before = forcingLevel(withRefused(config.modelCapabilities, yield* Ref.getAndSet(refused, next)))
        const level = forcingLevel(withRefused(config.modelCapabilities, next))
        if (level !== "named" && level !== before) yield* ResolveMetrics.recordForcingDegraded(counters, level)
        const flags = [
          ...(next.named ? ["supportsNamedToolChoice: false"] : []),
          ...(next.required ? ["supportsRequiredToolChoice: false"] : [])
        ].join(", ")
        yield* Effect.logWarning(
          `effect-resolve: the provider refused forced tool_choice (${how}: ${errorText(error)}); ` +
            (level === before ?
              `the session no longer sends it, and forcing resolve stays "${level}".` :
              `forcing resolve is degraded to "${level}" for the rest of this session.`) +
            ` Set ResolveConfig.modelCapabilities (${flags}) to start there.`
        )
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
        const capabilitiesNow = Effect.map(Ref.get(refused), (r) => withRefused(config.modelCapabilities, r))
        const effectiveNow = Effect.map(capabilitiesNow, (capabilities): ResolveConfigShape => ({
          ...config,
          modelCapabilities: capabilities,
          enforcement: config.enforcement === "soft" || !capabilities.supportsNamedToolChoice ? "soft" : "force"
        }))
        const appToolkit: Toolkit.WithHandler<any> | undefined = runOptions.toolkit === undefined ?
          undefined :
          Effect.isEffect(runOptions.toolkit) ?
          yield* runOptions.toolkit :
          runOptions.toolkit
        const appTools: Record<string, Tool.Any> = appToolkit?.tools ?? {}
        // The request carries every tool's real JSON Schema, but arguments decode as `unknown`: each call is
        // decoded below, against the real schema, so a bad call gets a failure result instead of failing the
        // whole response (src/internal/permissive.ts).
        const wireTools: Record<string, Tool.Any> = { ...permissiveTools(appTools), resolve: ResolveAiTool }
        const wireToolkit: Toolkit.WithHandler<any> = {
          tools: wireTools,
          handle: () => Effect.dieMessage("effect-resolve: the turn driver runs tool calls itself")
        }
        const available = [...Object.keys(appTools).filter((name) => name !== "resolve"), "resolve"]
        const maxTurns = runOptions.maxTurns ?? config.maxTurns

        /** One request: the history plus `requestPrompt`; on success the history gains both and the answer. */
        const send = (requestPrompt: Prompt.Prompt, choice: LanguageModel.ToolChoice<string>) =>
          Effect.gen(function*() {
            const fullPrompt = Prompt.merge(yield* Ref.get(history), requestPrompt)
            const response = yield* LanguageModel.generateText({
              prompt: fullPrompt,
              toolkit: wireToolkit,
              toolChoice: choice as any,
              disableToolCallResolution: true
            }).pipe(
              Effect.catchTag("MalformedOutput", (error) => recoverResponse(error, wireTools))
            ) as Effect.Effect<LanguageModel.GenerateTextResponse<any>, AiError.AiError, LanguageModel.LanguageModel>
            yield* Ref.set(history, Prompt.merge(fullPrompt, Prompt.fromResponseParts(response.content)))
            return response
          }).pipe(Effect.withSpan("TurnDriver.request", { attributes: { toolChoice: JSON.stringify(choice) } }))

        /** Runs one call of the batch, or skips it while a preview is pending. */
        const runCall = (
          call: Response.ToolCallPart<string, unknown>,
          stagedInBatch: Ref.Ref<boolean>,
          stagedIds: Array<string>
        ) =>
          Effect.gen(function*() {
            const tool = call.name === "resolve" ? undefined : appTools[call.name]
            if (call.name !== "resolve") {
              // A model's mistake is answered at once, whatever is pending: nothing runs.
              if (tool === undefined || appToolkit === undefined) {
                return record(call, "executed", true, {
                  error: "UnknownTool",
                  message: `No tool named "${quote(call.name)}". Available tools: ${available.join(", ")}.`
                })
              }
              if (Tool.isUserDefined(tool)) {
                const invalid = yield* invalidArguments(call.name, tool, call.params)
                if (Option.isSome(invalid)) return record(call, "executed", true, invalid.value)
              }
            }
            if (yield* Ref.get(stagedInBatch)) {
              // A call of this batch staged a preview: nothing after it runs, not even resolve.
              const message = call.name === "resolve" ? skippedResolveText : skippedText
              return record(call, "skipped", true, { skipped: true, message })
            }
            const effective = yield* effectiveNow
            if (tool === undefined) {
              const wasPending = yield* previewPending
              const action = typeof call.params === "object" && call.params !== null ?
                Object.getOwnPropertyDescriptor(call.params, "action")?.value :
                undefined
              const exit = yield* Effect.exit(
                ResolveTool.execute(call.params).pipe(
                  Effect.provideService(ResolveConfig, effective),
                  Effect.provide(runtime),
                  Effect.withSpan("TurnDriver.resolve", { attributes: { action: String(action) } })
                )
              )
              if (wasPending) {
                if (Exit.isSuccess(exit)) {
                  yield* ResolveMetrics.recordPreview(counters, action === "discard" ? "discarded" : "applied")
                } else if (action === "apply" && Option.isSome(Cause.failureOption(exit.cause))) {
                  const failure = Cause.failureOption(exit.cause)
                  const tag = Option.isSome(failure) ? (failure.value as { _tag?: string })._tag : undefined
                  if (tag === "ApplyFailed" || tag === "ToolError") {
                    yield* ResolveMetrics.recordPreview(counters, "failed")
                  }
                }
              }
              if (Exit.isSuccess(exit)) {
                return record(call, "executed", false, exit.value)
              }
              const failure = Cause.failureOption(exit.cause)
              if (Option.isSome(failure)) return record(call, "executed", true, toFailure(failure.value))
              return yield* Effect.failCause(exit.cause)
            }
            if (yield* previewPending) return record(call, "skipped", true, { skipped: true, message: skippedText })
            // User-defined tools were sent permissive: the call holds the model's raw (encoded) arguments. A
            // provider-defined tool's arguments were decoded by `@effect/ai`: encode them back for the handler.
            const params = Tool.isUserDefined(tool) ? call.params : yield* Effect.orElseSucceed(
              Schema.encodeUnknown(tool.parametersSchema as Schema.Schema<unknown, unknown>)(call.params),
              () => call.params
            )
            const [outcome, staged] = yield* appToolkit!.handle(call.name, params).pipe(
              Effect.map((result) => record(call, "executed", result.isFailure, result.encodedResult)),
              Effect.catchAll((error) => Effect.succeed(record(call, "executed", true, toFailure(error)))),
              Effect.provideService(ResolveConfig, effective),
              Effect.provide(runtime),
              track
            )
            for (const handle of staged) {
              stagedIds.push(handle.id)
              yield* ResolveMetrics.recordPreview(counters, "staged")
            }
            if (staged.length > 0) yield* Ref.set(stagedInBatch, true)
            return outcome
          }).pipe(Effect.withSpan("TurnDriver.toolCall", { attributes: { tool: call.name } }))

        const turn = () =>
          Effect.uninterruptibleMask((restore) =>
            Effect.gen(function*() {
              // A durable session reads its actions again first (one round trip): another process (an approval
              // inbox, a second worker) may have resolved one, and the queue must not force resolve for it.
              if (pending.durable) {
                yield* Effect.matchCauseEffect(pending.listOpen, {
                  onFailure: (cause) =>
                    Effect.logWarning("effect-resolve: could not read the pending set again", cause),
                  // The previews shown that are no longer pending are forgotten: `shown` stays as small as the set.
                  onSuccess: (open) => {
                    const pendingIds = new Set(open.filter((i) => i.status === "pending").map((i) => i.id))
                    return Ref.update(shown, (ids) => new Set([...ids].filter((id) => pendingIds.has(id))))
                  }
                })
              }
              const index = yield* Ref.updateAndGet(turnCount, (n) => n + 1)
              const served = yield* queue.nextToolChoice
              const info = yield* queue.inFlight
              yield* prune(info)
              let decided = yield* plan(served, info, yield* capabilitiesNow)
              let infoNow = yield* queue.inFlight
              let steering = [
                ...(yield* Ref.getAndSet(carry, [])),
                ...(yield* bus.drain),
                ...(decided.resteer ? [reminderMessage] : [])
              ]
              const entryOf = (inFlight: Option.Option<InFlightInfo>) =>
                Option.filter(inFlight, (i) => isPreviewLabel(i.label))
              yield* ResolveMetrics.recordTurn(counters, decided.forced, yield* noteChoice(decided.choice))
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
                  return yield* finish(infoNow, end)
                })
              /** Sends the turn again at the forcing level of `capabilities` (the in-flight preview is forced). */
              const replan = (capabilities: ModelCapabilities) =>
                Effect.gen(function*() {
                  const entry = entryOf(infoNow)
                  if (Option.isSome(entry)) yield* updateForcing(entry.value, (f) => ({ ...f, forceNext: true }))
                  decided = yield* plan(served, infoNow, capabilities)
                  infoNow = yield* queue.inFlight
                  if (decided.resteer && !steering.includes(reminderMessage)) steering = [...steering, reminderMessage]
                  if (yield* noteChoice(decided.choice)) yield* ResolveMetrics.recordToolChoiceChange(counters)
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
                  // Exactly the level this request used is refused: a provider that refuses "required" may still
                  // accept a named tool, and the other way round.
                  const next = refuse(yield* Ref.get(refused), decided.choice)
                  if (next !== undefined) {
                    yield* learn(config, next, `HTTP 400 to ${JSON.stringify(decided.choice)}`, error)
                    yield* replan(withRefused(config.modelCapabilities, next))
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
                const streak = (yield* forcingOf(served_)).errors + 1
                yield* updateForcing(served_, (f) => ({ ...f, errors: streak }))
                if (streak > config.maxErrorRequeues) {
                  /** The last error received, and the weaker levels tried after the limit (each failed). */
                  let lastError = error
                  const probes: Array<{ readonly level: "required" | "reminder"; readonly choice: unknown }> = []
                  // 3. A forced preview that keeps failing: try forcing less, one attempt per level. If one
                  // succeeds, the failures were a refusal (learned); if none does, the provider is failing.
                  if (decided.forced && isPreviewLabel(served_.label)) {
                    // The level the failing requests used is taken as refused, then each level left below it.
                    let next = refuse(yield* Ref.get(refused), decided.choice)
                    let probed: LanguageModel.GenerateTextResponse<any> | undefined
                    while (next !== undefined) {
                      const capabilities = withRefused(config.modelCapabilities, next)
                      const level = forcingLevel(capabilities)
                      // Never named: the failing requests forced the preview at the session's highest level.
                      if (level === "named") break
                      const probe = forceResolve(capabilities)
                      if (probe.resteer && !steering.includes(reminderMessage)) {
                        steering = [...steering, reminderMessage]
                      }
                      if (yield* noteChoice(probe.choice)) yield* ResolveMetrics.recordToolChoiceChange(counters)
                      const attempt = yield* Effect.exit(restore(send(steeringPrompt(steering), probe.choice)))
                      if (Exit.isSuccess(attempt)) {
                        const how = `${streak} failed requests with tool_choice ${JSON.stringify(decided.choice)}` +
                          probes.map((p) => `, 1 with ${JSON.stringify(p.choice)}`).join("") +
                          `, then one accepted with ${JSON.stringify(probe.choice)}`
                        yield* learn(config, next, how, lastError)
                        yield* replan(capabilities)
                        probed = attempt.value
                        break
                      }
                      const failed = Cause.failureOption(attempt.cause)
                      if (Option.isNone(failed)) {
                        yield* failTurn("aborted")
                        return yield* Effect.failCause(attempt.cause)
                      }
                      lastError = failed.value
                      probes.push({ level, choice: probe.choice })
                      // This level failed too: the next one down, if the probe forced anything.
                      next = refuse(next, probe.choice)
                    }
                    if (probed !== undefined) {
                      response = probed
                      break
                    }
                  }
                  // 4. The run stops; the served directive is rejected with "error" like any failed turn, so a
                  // preview stays pending at the head of the queue. The next run starts a new streak.
                  yield* updateForcing(served_, (f) => ({ ...f, errors: 0 }))
                  const pending = yield* failTurn("error")
                  const limit = new RequeueLimitExceeded({
                    directiveId: served_.id,
                    label: served_.label,
                    errors: streak,
                    pending,
                    cause: lastError,
                    probed: probes.map((p) => p.level)
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
              const entry = entryOf(servedNow)
              if (Option.isSome(servedNow)) yield* updateForcing(servedNow.value, (f) => ({ ...f, errors: 0 }))
              if (decided.forcingEntry && Option.isSome(entry)) {
                // A turn at the reminder level (nothing forced) counts too, as one that only reminded.
                yield* updateForcing(entry.value, (f) => ({
                  ...f,
                  ignored: f.ignored + 1,
                  reminded: f.reminded + (decided.forced ? 0 : 1)
                }))
              }

              const calls = response.toolCalls.filter((call) => call.providerExecuted !== true) as Array<
                Response.ToolCallPart<string, unknown>
              >
              const records = yield* Ref.make<ReadonlyArray<ToolCallRecord>>([])
              const stagedInBatch = yield* Ref.make(false)
              const stagedIds: Array<string> = []
              const executed = yield* Effect.exit(restore(Effect.forEach(
                calls,
                (call) =>
                  Effect.flatMap(
                    runCall(call, stagedInBatch, stagedIds),
                    (r) => Ref.update(records, (all) => [...all, r])
                  ),
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
                yield* Ref.update(history, (current) =>
                  Prompt.merge(
                    current,
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
                // Their tool results now show these previews: a resumed session does not show them again.
                if (pending.durable && stagedIds.length > 0) {
                  yield* Ref.update(shown, (ids) => new Set([...ids, ...stagedIds]))
                }
              }
              const saved: TurnRecord = {
                ...base(),
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
                  yield* updateForcing(entry.value, (f) => ({ ...f, forceNext: false, ignored: 0, reminded: 0 }))
                } else if (decided.forcingEntry) {
                  const { ignored, reminded } = yield* forcingOf(entry.value)
                  if (ignored >= config.maxForcedTurns) {
                    yield* updateForcing(entry.value, (f) => ({ ...f, forceNext: false, ignored: 0, reminded: 0 }))
                    // The preview stays pending (requeued as not_invoked): the run stops, nothing staged is lost.
                    yield* finish(infoNow, "resolve")
                    const notCalled = new ResolveNotCalled({
                      directiveId: entryId,
                      label: entry.value.label,
                      forcedTurns: ignored - reminded,
                      remindedTurns: reminded
                    })
                    yield* Effect.logError(`effect-resolve: ${notCalled.message}`)
                    return yield* notCalled
                  }
                } else {
                  yield* updateForcing(entry.value, (f) => ({ ...f, forceNext: true }))
                }
              }
              yield* finish(infoNow, "resolve")
              return saved
            })
          ).pipe(Effect.withSpan("TurnDriver.turn"))

        const records: Array<TurnRecord> = []
        // The prompt joins the conversation first: a run whose first request fails (or is interrupted) keeps it,
        // and the next run's request still holds it. Each turn then sends the history and its own steering.
        yield* Ref.update(history, (current) => Prompt.merge(current, Prompt.make(prompt)))
        for (let i = 0; i < maxTurns; i++) {
          const saved = yield* Effect.ensuring(turn(), persist)
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
      history: Ref.get(history),
      transcript: Ref.get(transcript),
      metrics: counters.snapshot,
      capabilities: Effect.flatMap(
        ResolveConfig,
        (config) => Effect.map(Ref.get(refused), (r) => withRefused(config.modelCapabilities, r))
      )
    })
  })

const record = (
  call: Response.ToolCallPart<string, unknown>,
  outcome: ToolCallRecord["outcome"],
  isFailure: boolean,
  result: unknown
): ToolCallRecord => ({ id: call.id, name: call.name, params: call.params, outcome, isFailure, result })
