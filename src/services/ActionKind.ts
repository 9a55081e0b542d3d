/**
 * Durable pending actions: a *kind* is registered once with a Schema for its payload and its `apply` / `reject`, and
 * a staged action of that kind is plain data (`{ kind, payload }`), so a store can keep it and a restarted process
 * can run it. `recover` decides, from the world, what became of an action that a crashed process left `resolving`.
 *
 * A kind comes in two parts, as `@effect/ai`'s `Tool` / `Toolkit.toLayer` and `@effect/cluster`'s `Entity` /
 * `toLayer` split them (since 0.4.0): its **contract** (`contract`: the name, the payload Schema, what a reviewer may
 * amend and the draft they start from) is data with no requirements, which an approval inbox can hold to list, decode
 * and check actions it does not run; its **handlers** (`implement`: `apply`, `reject`, `recover`) make it runnable.
 * `apply` gets a reviewer's amendment decoded, typed by the contract, as `call.amendment`. `make` does both at once.
 *
 * @example
 * ```ts
 * import { Effect, Option, Schema } from "effect"
 * import { ActionKind, ToolResult } from "effect-resolve"
 *
 * // The contract: what an inbox needs to show and check a deploy, without what it takes to run one.
 * const DeployContract = ActionKind.contract({
 *   name: "deploy",
 *   payload: Schema.Struct({ service: Schema.String }),
 *   amendment: Schema.Struct({ service: Schema.String }),
 *   amendmentDraft: ({ service }) => Option.some({ service })
 * })
 *
 * // The handlers: the reviewer's amendment arrives decoded, typed `Option<{ readonly service: string }>`.
 * const Deploy = ActionKind.implement(DeployContract, {
 *   apply: (payload, call) => {
 *     const { service } = Option.getOrElse(call.amendment, () => payload)
 *     return Effect.succeed(ToolResult.text(`Deployed ${service} (${call.reason}).`))
 *   },
 *   reject: () => Effect.succeed(Option.none()),
 *   recover: () => Effect.succeed("conflict") // a deploy cannot tell afterwards: a person looks
 * })
 * ```
 *
 * @since 0.2.0
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type { ParseError } from "effect/ParseResult"
import type * as Schema from "effect/Schema"
import type { ToolError } from "../domain/Errors.js"
import type { Extra } from "../domain/ResolveParams.js"
import type { ToolResult } from "../domain/ToolResult.js"

/**
 * What a kind's `apply` or `reject` is called with: the action's id, the model's reason and `extra`, which claim of
 * the action this is (1 for the first), and (since 0.4.0) the reviewer's amendment of this very action, decoded with
 * the contract's `amendment` Schema: `none` without one, always `none` for `reject` and for a model's `resolve`.
 *
 * @since 0.2.0
 * @category models
 */
export interface Call<A = unknown> {
  readonly id: string
  readonly reason: string
  readonly extra: Extra
  readonly attempt: number
  readonly amendment: Option.Option<A>
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
 * A kind's contract: what anything that stores, lists, decodes or checks its actions needs, and nothing it takes to
 * run one (no requirements: an approval inbox can hold it without the kind's environment).
 *
 * - `payload`: a Schema whose encoded form is JSON; the staged payload is stored encoded and decoded before every
 *   call (a payload that no longer decodes makes the action `conflict` at recovery, and `apply` fail typed).
 * - `standing`: the action neither forces `resolve` nor gates other tools, and `resolve` without an id does not
 *   pick it (plan approval: the model writes the plan first, then resolves).
 * - `amendment`: what a reviewer may change before applying (an approval inbox's "edit before apply"), a Schema
 *   whose encoded form is JSON, decoded synchronously. Without it the kind is applied as staged or not at all. A
 *   reviewer's amendment is checked against it before anything is recorded, and decoded again before `apply` runs
 *   (`call.amendment`; a model's `extra` never is one). An amendment that no longer decodes (the Schema changed since
 *   it was recorded) fails the `resolve` with `ApplyFailed` before the action is claimed: nothing changes.
 * - `amendmentDraft`: the amendment a reviewer starts from, encoded (what `apply` would write unamended, as an
 *   amendment): an approval inbox fills its editor with it. A draft of the form `{ files: [{ path, text }] }` gets
 *   one text box per file there.
 *
 * @since 0.4.0
 * @category models
 */
export interface Contract<P, I, A = unknown, AI = unknown, Name extends string = string> {
  readonly name: Name
  readonly payload: Schema.Schema<P, I>
  readonly standing?: boolean
  readonly amendment?: Schema.Schema<A, AI>
  readonly amendmentDraft?: (payload: P) => Option.Option<AI>
}

/**
 * A kind's handlers, given to `implement` with its contract.
 *
 * - `apply` may fail with anything, as a closure's `apply` (see `Preview.Spec`); wrap its irreversible part in
 *   `Preview.commit`. It must give an amended action (`call.amendment` is `some`) every guarantee of a plain one.
 * - `reject` returns `Option.none()` for the default `Discarded: <label>. Reason: <reason>`.
 * - `recover` runs for an action a dead process left `resolving`; without it such an action becomes `conflict`. A
 *   `recover` that fails (it cannot tell now: a file still locked) leaves the action `resolving`, and the next start
 *   tries again.
 *
 * @since 0.4.0
 * @category models
 */
export interface Handlers<P, A, E, R> {
  readonly apply: (payload: P, call: Call<A>) => Effect.Effect<ToolResult, E, R>
  readonly reject?: (payload: P, call: Call<A>) => Effect.Effect<Option.Option<ToolResult>, ToolError, R>
  readonly recover?: (payload: P, record: { readonly id: string; readonly attempts: number }) => Effect.Effect<
    Recovery,
    unknown,
    R
  >
}

/**
 * A durable kind of pending action, runnable: its contract and its handlers (see `Contract` and `Handlers`). `A` and
 * `AI` are its amendment's types (`any` by default, so a kind annotated with four type parameters, as in 0.3, still
 * checks).
 *
 * @since 0.2.0
 * @category models
 */
export interface ActionKind<P, I, E, R, A = any, AI = any> extends Contract<P, I, A, AI>, Handlers<P, A, E, R> {}

/**
 * Any kind, whatever its payload, amendment, errors and requirements.
 *
 * @since 0.2.0
 * @category models
 */
export type Any = ActionKind<any, any, any, any, any, any>

/**
 * Any contract (a runnable kind is one too): what an approval inbox takes.
 *
 * @since 0.4.0
 * @category models
 */
export type AnyContract = Contract<any, any, any, any, string>

/**
 * The context entry of a kind's handlers, provided by `toLayer` under the kind's name: a session given the contract
 * alone (`ResolveRuntime.layerDurable({ kinds: [contract] })`) finds its handlers there.
 *
 * @since 0.4.0
 * @category models
 */
export interface Handler<Name extends string> {
  readonly _ActionKindHandler: Name
}

/**
 * The tag of a kind's handlers in a context (see `toLayer`): one per kind name.
 *
 * @since 0.4.0
 * @category tags
 */
export const handlerTag = <const Name extends string>(name: Name): Context.Tag<Handler<Name>, Any> =>
  Context.GenericTag<Handler<Name>, Any>(`effect-resolve/ActionKind/Handler/${name}`)

/**
 * What the kinds of a list need to run: the union of their requirements, and `never` for an empty list (since 0.4.0;
 * before, `kinds: []` or no kinds at all left `unknown` in a layer's requirements) and for a contract.
 *
 * @since 0.2.0
 * @category models
 */
export type Requirements<K extends ReadonlyArray<AnyContract>> = K[number] extends infer Kind
  ? Kind extends ActionKind<any, any, any, infer R, any, any> ? R : never
  : never

/**
 * What a session that runs the kinds of a list needs: a runnable kind's requirements, and for a contract given
 * alone its handlers (`Handler<Name>`, which `toLayer` provides).
 *
 * @since 0.4.0
 * @category models
 */
export type SessionRequirements<K extends ReadonlyArray<AnyContract>> = K[number] extends infer Kind
  ? Kind extends ActionKind<any, any, any, infer R, any, any> ? R
  : Kind extends Contract<any, any, any, any, infer Name> ? Handler<Name>
  : never
  : never

/**
 * The kind name of the in-process (closure) form: its records can be listed after a restart but never run.
 *
 * @since 0.2.0
 * @category constants
 */
export const closureKind = "closure"

/**
 * Defines a kind's contract (an identity function that checks the definition's types): plain data and Schemas, no
 * requirements. Give it to an approval inbox that only lists and checks such actions; `implement` makes it runnable.
 *
 * @since 0.4.0
 * @category constructors
 */
export const contract = <P, I, A = unknown, AI = unknown, const Name extends string = string>(
  contract: Contract<P, I, A, AI, Name>
): Contract<P, I, A, AI, Name> => contract

/**
 * A runnable kind: `contract` with its `handlers`. Its `apply` gets the reviewer's amendment typed by the contract's
 * `amendment` Schema (`call.amendment`).
 *
 * @since 0.4.0
 * @category constructors
 */
export const implement = <P, I, A, AI, E = never, R = never>(
  contract: Contract<P, I, A, AI, string>,
  handlers: Handlers<P, A, E, R>
): ActionKind<P, I, E, R, A, AI> => {
  const kind: { -readonly [K in keyof ActionKind<P, I, E, R, A, AI>]: ActionKind<P, I, E, R, A, AI>[K] } = {
    name: contract.name,
    payload: contract.payload,
    apply: handlers.apply
  }
  if (contract.standing !== undefined) kind.standing = contract.standing
  if (contract.amendment !== undefined) kind.amendment = contract.amendment
  if (contract.amendmentDraft !== undefined) kind.amendmentDraft = contract.amendmentDraft
  if (handlers.reject !== undefined) kind.reject = handlers.reject
  if (handlers.recover !== undefined) kind.recover = handlers.recover
  return kind
}

/**
 * A contract's handlers as a layer, as `@effect/ai`'s `Toolkit.toLayer` provides a toolkit's: the handlers (or an
 * effect that builds them) with their requirements taken from the layer's context when it is built, provided under
 * the kind's name (`Handler<Name>`). A session given the contract alone
 * (`ResolveRuntime.layerDurable({ session, kinds: [contract] })`) runs it with these handlers; the contract stays
 * data an approval inbox can hold without them.
 *
 * @example
 * ```ts
 * import { Effect, Layer, Schema } from "effect"
 * import { ActionKind, PendingStore, ResolveRuntime, ToolResult } from "effect-resolve"
 *
 * const Deploy = ActionKind.contract({ name: "deploy", payload: Schema.Struct({ service: Schema.String }) })
 * const DeployHandlers = ActionKind.toLayer(Deploy, {
 *   apply: ({ service }, call) => Effect.succeed(ToolResult.text(`Deployed ${service} (${call.reason}).`))
 * })
 * const Session = ResolveRuntime.layerDurable({ session: "s1", kinds: [Deploy] }).pipe(
 *   Layer.provide(DeployHandlers),
 *   Layer.provideMerge(PendingStore.layerMemory)
 * )
 * ```
 *
 * @since 0.4.0
 * @category layers
 */
export const toLayer = <P, I, A, AI, const Name extends string, E = never, R = never, EB = never, RB = never>(
  contract: Contract<P, I, A, AI, Name>,
  handlers: Handlers<P, A, E, R> | Effect.Effect<Handlers<P, A, E, R>, EB, RB>
): Layer.Layer<Handler<Name>, EB, R | RB> =>
  Layer.effect(
    handlerTag(contract.name),
    Effect.gen(function*() {
      const context = yield* Effect.context<R>()
      const built = Effect.isEffect(handlers) ? yield* handlers : handlers
      const provided = <X, Y>(effect: Effect.Effect<X, Y, R>) => Effect.provide(effect, context)
      const kind: Handlers<P, A, E, never> = {
        apply: (payload, call) => provided(built.apply(payload, call)),
        ...(built.reject === undefined ? {} : {
          reject: (payload: P, call: Call<A>) => provided(built.reject!(payload, call))
        }),
        ...(built.recover === undefined ? {} : {
          recover: (payload: P, record: { readonly id: string; readonly attempts: number }) =>
            provided(built.recover!(payload, record))
        })
      }
      return implement(contract, kind) as Any
    })
  )

/**
 * Defines a kind, contract and handlers in one (an identity function that checks the definition's types).
 *
 * @since 0.2.0
 * @category constructors
 */
export const make = <P, I, E = never, R = never, A = unknown, AI = unknown>(
  kind: ActionKind<P, I, E, R, A, AI>
): ActionKind<P, I, E, R, A, AI> => kind

/**
 * Whether a kind (or contract) has handlers: what an approval inbox runs itself rather than leaving to the session.
 *
 * @since 0.4.0
 * @category guards
 */
export const isRunnable = (kind: AnyContract): kind is Any => typeof (kind as Partial<Any>).apply === "function"

/**
 * A reviewer's amendment of one action, as the process that runs the reviewer's decision passes it to `resolve`
 * (an internal option, never part of the parameters a model sends): the action's id, who amended it, and the
 * amendment, encoded (the JSON that was recorded). The kind decodes it for `apply` (`call.amendment`).
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
 * The reviewer's amendment of this call's action: `call.amendment`, already decoded.
 *
 * @deprecated since 0.4.0: read `call.amendment` (decoded before `apply` runs, typed by the contract).
 * @since 0.3.0
 * @category amendments
 */
export const amendmentOf = <P, I, E, R, A>(
  _kind: ActionKind<P, I, E, R, A, any>,
  call: Call<A>
): Effect.Effect<Option.Option<A>, ParseError> => Effect.succeed(call.amendment)
