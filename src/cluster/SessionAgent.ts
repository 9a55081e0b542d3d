/**
 * What a runner runs in every session it owns: the app's agent. The app builds one `SessionAgent` layer into its
 * runner, with its model (`LanguageModel`), its tools (a `Toolkit` with its handler layer), the durable kinds its
 * tools stage, and the services those need; the `Session` entity opens each session it runs on them. Every runner
 * of a cluster must be built with the same agent (kinds by the same names): a session moves between runners.
 *
 * @example
 * ```ts
 * import { Tool, Toolkit } from "@effect/ai"
 * import { Effect, Layer, Schema } from "effect"
 * import { ScriptedModel } from "effect-resolve/ai"
 * import { SessionAgent } from "effect-resolve/cluster"
 *
 * const Search = Tool.make("search", { parameters: { query: Schema.String }, success: Schema.String })
 * const Tools = Toolkit.make(Search)
 *
 * // The agent every session of this runner runs: model, tools, kinds.
 * const Agent = SessionAgent.layer({ system: "You are a careful coding agent.", toolkit: Tools, maxTurns: 20 }).pipe(
 *   Layer.provide(Tools.toLayer({ search: ({ query }) => Effect.succeed(`2 usages of ${query}`) })),
 *   Layer.provide(ScriptedModel.layer(["Nothing to do."])) // or a real provider's LanguageModel layer
 * )
 * ```
 *
 * @since 0.3.0
 */
import type * as AiError from "@effect/ai/AiError"
import type * as LanguageModel from "@effect/ai/LanguageModel"
import type * as Tool from "@effect/ai/Tool"
import type * as Toolkit from "@effect/ai/Toolkit"
import * as Context from "effect/Context"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type * as Schedule from "effect/Schedule"
import type * as ResolveRuntime from "../layers/ResolveRuntime.js"
import type * as ActionKind from "../services/ActionKind.js"
import type { Retention } from "../services/PendingActions.js"
import type { PendingStore } from "../services/PendingStore.js"

/**
 * @since 0.3.0
 * @category tags
 */
export declare namespace SessionAgent {
  /**
   * @since 0.3.0
   * @category models
   */
  export interface Service {
    /** The system prompt of a session that has no saved conversation yet (a resumed one keeps its own). */
    readonly system: (session: string) => Option.Option<string>
    /** The durable kinds the sessions stage and run (`ResolveRuntime.layerDurable`'s `kinds`). */
    readonly kinds: ReadonlyArray<ActionKind.Any>
    /** The app's tools, with their handlers; `resolve` is added by the turn driver. */
    readonly toolkit: Option.Option<Toolkit.WithHandler<any>>
    /** Bound on model requests per run (default `ResolveConfig.maxTurns`). */
    readonly maxTurns: Option.Option<number>
    /** Retries of a failed model request inside one turn (`TurnDriver` `RunOptions.retry`). */
    readonly retry: Option.Option<Schedule.Schedule<unknown, AiError.AiError>>
    /** The lease of each session's runtime instance in the store (`ResolveRuntime.layerDurable`'s `lease`). */
    readonly lease: Option.Option<Duration.DurationInput>
    /** Which settled records each session keeps (`ResolveRuntime.layerDurable`'s `retention`). */
    readonly retention: Option.Option<Retention | "keep-all">
    /**
     * Everything a session's runs need, captured when the layer was built: the `LanguageModel`, the tool handlers
     * and what they and the kinds use, and a `ResolveConfig` if one was provided.
     */
    readonly context: Context.Context<never>
  }

  /**
   * Options of `SessionAgent.layer`.
   *
   * @since 0.3.0
   * @category models
   */
  export interface Options<Tools extends Record<string, Tool.Any>, Kinds extends ReadonlyArray<ActionKind.Any>> {
    /** The system prompt of a new session: one text, or one per session id. */
    readonly system?: string | ((session: string) => string) | undefined
    /** The app's tools; provide their handler layer (`Toolkit.toLayer`) to the agent layer. */
    readonly toolkit?: Toolkit.Toolkit<Tools> | undefined
    /** The durable kinds the tools stage; provide what they need to the agent layer. */
    readonly kinds?: Kinds | undefined
    readonly maxTurns?: number | undefined
    readonly retry?: Schedule.Schedule<unknown, AiError.AiError> | undefined
    readonly lease?: Duration.DurationInput | undefined
    readonly retention?: Retention | "keep-all" | undefined
  }

  /**
   * What building an agent with these tools and kinds needs: the model, the tools' handlers, what the tool calls use
   * (less the session's own services, which each session provides) and what the kinds use.
   *
   * @since 0.3.0
   * @category models
   */
  export type Requirements<Tools extends Record<string, Tool.Any>, Kinds extends ReadonlyArray<ActionKind.Any>> =
    | LanguageModel.LanguageModel
    | Tool.HandlersFor<Tools>
    | Exclude<Tool.Requirements<Tools[keyof Tools]>, ResolveRuntime.Services | PendingStore>
    | ActionKind.Requirements<Kinds>
}

/**
 * The agent a runner runs in each session it owns.
 *
 * @since 0.3.0
 * @category tags
 */
export class SessionAgent extends Context.Tag("effect-resolve/cluster/SessionAgent")<
  SessionAgent,
  SessionAgent.Service
>() {
  /**
   * The agent from its tools, kinds and options, capturing the model, the handlers and the services they need from
   * the layer's context.
   *
   * @since 0.3.0
   * @category layers
   */
  static readonly layer = <
    Tools extends Record<string, Tool.Any> = {},
    const Kinds extends ReadonlyArray<ActionKind.Any> = []
  >(
    options: SessionAgent.Options<Tools, Kinds>
  ): Layer.Layer<SessionAgent, never, SessionAgent.Requirements<Tools, Kinds>> =>
    Layer.effect(SessionAgent, make(options))
}

/**
 * Builds the agent (what `SessionAgent.layer` provides).
 *
 * @since 0.3.0
 * @category constructors
 */
export const make = <Tools extends Record<string, Tool.Any>, const Kinds extends ReadonlyArray<ActionKind.Any>>(
  options: SessionAgent.Options<Tools, Kinds>
): Effect.Effect<SessionAgent.Service, never, SessionAgent.Requirements<Tools, Kinds>> =>
  Effect.gen(function*() {
    const toolkit = options.toolkit === undefined ? undefined : yield* options.toolkit
    const context = yield* Effect.context<SessionAgent.Requirements<Tools, Kinds>>()
    const system = options.system
    return SessionAgent.of({
      system: (session) =>
        Option.fromNullable(system === undefined ? undefined : typeof system === "string" ? system : system(session)),
      kinds: options.kinds ?? [],
      toolkit: Option.fromNullable(toolkit as Toolkit.WithHandler<any> | undefined),
      maxTurns: Option.fromNullable(options.maxTurns),
      retry: Option.fromNullable(options.retry),
      lease: Option.fromNullable(options.lease),
      retention: Option.fromNullable(options.retention),
      context: context as Context.Context<never>
    })
  })
