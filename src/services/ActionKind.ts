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
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import { dual } from "effect/Function"
import { globalValue } from "effect/GlobalValue"
import * as Option from "effect/Option"
import type { ParseError } from "effect/ParseResult"
import * as Schema from "effect/Schema"
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
 * - `amendment`: what a reviewer may change before applying (an approval inbox's "edit before apply"), a Schema
 *   whose encoded form is JSON. Without it the kind is applied as staged or not at all. A reviewer's amendment is
 *   checked against it before anything is recorded; `apply` reads it with `amendmentOf(kind, call)` (never from
 *   `call.extra`, which a model controls) and must give an amended action every guarantee of a plain one.
 * - `amendmentDraft`: the amendment a reviewer starts from, encoded (what `apply` would write unamended, as an
 *   amendment): an approval inbox fills its editor with it. A draft of the form `{ files: [{ path, text }] }` gets
 *   one text box per file there.
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
  readonly amendment?: Schema.Schema<any, any>
  readonly amendmentDraft?: (payload: P) => Option.Option<unknown>
}

/**
 * Any kind, whatever its payload, errors and requirements.
 *
 * @since 0.2.0
 * @category models
 */
export type Any = ActionKind<any, any, any, any>

/**
 * What the kinds of a list need to run: the union of their requirements, and `never` for an empty list (since 0.4.0;
 * before, `kinds: []` or no kinds at all left `unknown` in a layer's requirements).
 *
 * @since 0.2.0
 * @category models
 */
export type Requirements<K extends ReadonlyArray<Any>> = K[number] extends infer Kind
  ? Kind extends ActionKind<any, any, any, infer R> ? R : never
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

/**
 * A reviewer's amendment of one action, as the process that runs the reviewer's decision passes it to the kind's
 * `apply`: the action's id, who amended it, and the amendment, encoded (the JSON that was recorded).
 *
 * @since 0.3.0
 * @category models
 */
export interface Amendment {
  readonly actionId: string
  readonly reviewer: string
  readonly encoded: unknown
}

/**
 * The amendment the current fiber applies with, if any: set only by `withAmendment` (an approval inbox, or a
 * session running a reviewer's decision), never by a model's `resolve` call, whose `extra` a model controls.
 *
 * @since 0.3.0
 * @category amendments
 */
export const currentAmendment: FiberRef.FiberRef<Option.Option<Amendment>> = globalValue(
  Symbol.for("effect-resolve/ActionKind/currentAmendment"),
  () => FiberRef.unsafeMake(Option.none<Amendment>())
)

/**
 * Runs `effect` (a `resolve` of the amended action) with a reviewer's amendment for the kind's `apply` to read.
 *
 * @since 0.3.0
 * @category amendments
 */
export const withAmendment: {
  (amendment: Amendment): <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  <A, E, R>(effect: Effect.Effect<A, E, R>, amendment: Amendment): Effect.Effect<A, E, R>
} = dual(
  2,
  <A, E, R>(effect: Effect.Effect<A, E, R>, amendment: Amendment) =>
    Effect.locally(effect, currentAmendment, Option.some(amendment))
)

/**
 * What `apply` reads to honour an amendment: the reviewer's amendment of this very call's action, decoded with the
 * kind's `amendment` Schema; `none` when there is none (or the kind declares no amendment). A failure when it does
 * not decode: it was checked before it was recorded, so the kind's Schema changed since.
 *
 * @since 0.3.0
 * @category amendments
 */
export const amendmentOf = <P, I, E, R>(
  kind: ActionKind<P, I, E, R>,
  call: Call
): Effect.Effect<Option.Option<unknown>, ParseError> =>
  Effect.flatMap(FiberRef.get(currentAmendment), (current) => {
    const schema = kind.amendment
    if (schema === undefined || Option.isNone(current) || current.value.actionId !== call.id) {
      return Effect.succeed(Option.none())
    }
    return Effect.map(Schema.decodeUnknown(schema)(current.value.encoded), Option.some)
  })
