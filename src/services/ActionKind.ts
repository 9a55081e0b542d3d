/**
 * Durable pending actions: a *kind* is registered once with a Schema for its payload and its `apply` / `reject`, and
 * a staged action of that kind is plain data (`{ kind, payload }`), so a store can keep it and a restarted process
 * can run it. `recover` decides, from the world, what became of an action that a crashed process left `resolving`.
 *
 * @example
 * ```ts
 * import { Effect, Option, Schema } from "effect"
 * import { ActionKind, ToolResult } from "effect-resolve"
 *
 * const Deploy = ActionKind.make({
 *   name: "deploy",
 *   payload: Schema.Struct({ service: Schema.String }),
 *   apply: ({ service }, call) => Effect.succeed(ToolResult.text(`Deployed ${service} (${call.reason}).`)),
 *   reject: () => Effect.succeed(Option.none()),
 *   recover: () => Effect.succeed("conflict") // a deploy cannot tell afterwards: a person looks
 * })
 * ```
 *
 * @since 0.2.0
 */
import type * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import type * as Schema from "effect/Schema"
import type { ToolError } from "../domain/Errors.js"
import type { Extra } from "../domain/ResolveParams.js"
import type { ToolResult } from "../domain/ToolResult.js"

/**
 * What a kind's `apply` or `reject` is called with: the action's id, the model's reason and `extra`, and which
 * claim of the action this is (1 for the first).
 *
 * @since 0.2.0
 * @category models
 */
export interface Call {
  readonly id: string
  readonly reason: string
  readonly extra: Extra
  readonly attempt: number
}

/**
 * What `recover` found: the action was `applied` (settle it so), never started (`pending`: it can be resolved
 * again), or the world matches neither (`conflict`: a person must look; nothing is run again).
 *
 * @since 0.2.0
 * @category models
 */
export type Recovery = "applied" | "pending" | "conflict"

/**
 * A durable kind of pending action.
 *
 * - `payload`: a Schema whose encoded form is JSON; the staged payload is stored encoded and decoded before every
 *   call (a payload that no longer decodes makes the action `conflict` at recovery, and `apply` fail typed).
 * - `apply` may fail with anything, as a closure's `apply` (see `Preview.Spec`); wrap its irreversible part in
 *   `Preview.commit`.
 * - `reject` returns `Option.none()` for the default `Discarded: <label>. Reason: <reason>`.
 * - `recover` runs for an action a dead process left `resolving`; without it such an action becomes `conflict`. A
 *   `recover` that fails (it cannot tell now: a file still locked) leaves the action `resolving`, and the next start
 *   tries again.
 * - `standing`: the action neither forces `resolve` nor gates other tools, and `resolve` without an id does not
 *   pick it (plan approval: the model writes the plan first, then resolves).
 *
 * @since 0.2.0
 * @category models
 */
export interface ActionKind<P, I, E, R> {
  readonly name: string
  readonly payload: Schema.Schema<P, I>
  readonly apply: (payload: P, call: Call) => Effect.Effect<ToolResult, E, R>
  readonly reject?: (payload: P, call: Call) => Effect.Effect<Option.Option<ToolResult>, ToolError, R>
  readonly recover?: (payload: P, record: { readonly id: string; readonly attempts: number }) => Effect.Effect<
    Recovery,
    unknown,
    R
  >
  readonly standing?: boolean
}

/**
 * Any kind, whatever its payload, errors and requirements.
 *
 * @since 0.2.0
 * @category models
 */
export type Any = ActionKind<any, any, any, any>

/**
 * What the kinds of a list need to run.
 *
 * @since 0.2.0
 * @category models
 */
export type Requirements<K extends ReadonlyArray<Any>> = K[number] extends ActionKind<any, any, any, infer R> ? R
  : never

/**
 * The kind name of the in-process (closure) form: its records can be listed after a restart but never run.
 *
 * @since 0.2.0
 * @category constants
 */
export const closureKind = "closure"

/**
 * Defines a kind (an identity function that checks the definition's types).
 *
 * @since 0.2.0
 * @category constructors
 */
export const make = <P, I, E = never, R = never>(kind: ActionKind<P, I, E, R>): ActionKind<P, I, E, R> => kind
