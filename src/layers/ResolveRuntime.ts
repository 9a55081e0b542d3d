/**
 * The composed layers of one resolve session: its queue, steering bus, standing handler and pending set. `layer`
 * keeps everything in memory; `durable` keeps the pending set in a `PendingStore` (SQLite, Postgres), so a session
 * resumes after a restart.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { PendingActions, ResolveRuntime } from "effect-resolve"
 *
 * // Each build is a new session: its own queue, steering bus, standing handler and pending set.
 * const program = Effect.flatMap(PendingActions, (pending) => pending.list).pipe(
 *   Effect.provide(ResolveRuntime.layer)
 * )
 * ```
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { PendingStoreError } from "../domain/Errors.js"
import { checkOptions, type InvalidOptions } from "../domain/InvalidOptions.js"
import type * as ActionKind from "../services/ActionKind.js"
import { type DurableOptions, durableSpec, PendingActions } from "../services/PendingActions.js"
import type { PendingStore } from "../services/PendingStore.js"
import { StandingResolveHandler } from "../services/StandingResolveHandler.js"
import { SteeringBus } from "../services/SteeringBus.js"
import { ToolChoiceQueue } from "../services/ToolChoiceQueue.js"

/**
 * The services one session needs.
 *
 * @since 0.1.0
 * @category models
 */
export type Services = ToolChoiceQueue | SteeringBus | StandingResolveHandler | PendingActions

const base = Layer.mergeAll(ToolChoiceQueue.layer, SteeringBus.layer, StandingResolveHandler.layer)

/**
 * Every service of a session, fresh per build and in memory. Provide it once per agent session.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<Services> = Layer.provideMerge(PendingActions.layer(), base)

/**
 * `layer` with options: `retainSettled`, how many settled actions the session keeps for `PendingActions.list` and
 * `get` besides those not yet settled (default 100; a long session's memory stays flat).
 *
 * @since 0.2.0
 * @category layers
 */
export const layerWith = (options: { readonly retainSettled?: number }): Layer.Layer<Services> =>
  Layer.provideMerge(PendingActions.layer(options), base)

/**
 * A session whose pending set lives in the `PendingStore` the app provides (`SqliteStore.layer`,
 * `PostgresStore.layer`, or `PendingStore.layerMemory` to share one between sessions of a process). Building it
 * opens `session`: its pending actions come back (those of the registered `kinds` run again), actions a crashed
 * process left `resolving` are recovered by their kind, and what another live process staged is left to it (see
 * docs/durable-sessions.md, "Sharing a session").
 *
 * @example
 * ```ts
 * import { Layer } from "effect"
 * import { ResolveRuntime } from "effect-resolve"
 * import { SqliteStore } from "effect-resolve/sqlite"
 *
 * const Session = ResolveRuntime.layerDurable({ session: "agent-1" }).pipe(
 *   Layer.provideMerge(SqliteStore.layer({ filename: "agent.db" }))
 * )
 * ```
 *
 * @since 0.3.0
 * @category layers
 */
export const layerDurable = <const Kinds extends ReadonlyArray<ActionKind.AnyContract> = []>(
  options: DurableOptions<Kinds>
): Layer.Layer<Services, PendingStoreError | InvalidOptions, PendingStore | ActionKind.SessionRequirements<Kinds>> =>
  Layer.provideMerge(
    Layer.unwrapEffect(
      Effect.as(checkOptions("ResolveRuntime.layerDurable", durableSpec, options), PendingActions.layerDurable(options))
    ),
    base
  )

/**
 * `layerDurable` with the store given as an argument, and provided too.
 *
 * @deprecated Use `layerDurable(options)` and provide the store with `Layer.provideMerge(store)`; this goes in 0.4.0.
 * @since 0.2.0
 * @category layers
 */
export const durable = <const Kinds extends ReadonlyArray<ActionKind.AnyContract> = [], E = never, R = never>(
  options: DurableOptions<Kinds> & { readonly store: Layer.Layer<PendingStore, E, R> }
): Layer.Layer<
  Services | PendingStore,
  PendingStoreError | InvalidOptions | E,
  R | ActionKind.SessionRequirements<Kinds>
> => Layer.provideMerge(layerDurable(withoutStore(options)), options.store)

const withoutStore = <T extends { readonly store: unknown }>(options: T): Omit<T, "store"> => {
  const { store: _, ...rest } = options
  return rest
}
