/**
 * The `resolve` program and the model-facing `resolve` tool: decode the model's parameters, find the pending
 * action (the in-flight queued preview, else the standing handler), invoke it once, return its result.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { ResolveRuntime, ResolveTool } from "effect-resolve"
 *
 * const answer = ResolveTool.execute({ action: "apply", reason: "The diff matches the request." }).pipe(
 *   Effect.provide(ResolveRuntime.layer)
 * ) // fails with NoPendingAction: nothing was staged in this fresh session
 * ```
 *
 * @since 0.1.0
 */
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as FiberRef from "effect/FiberRef"
import type * as JSONSchema from "effect/JSONSchema"
import type * as ManagedRuntime from "effect/ManagedRuntime"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import { InvalidResolveParams, NoPendingAction, type UnknownTool } from "../domain/Errors.js"
import { limits, type ResolveError, ResolveParams } from "../domain/ResolveParams.js"
import * as ToolResult from "../domain/ToolResult.js"
import { loneSurrogate, show, tooDeepField, valueAt } from "../internal/untrusted.js"
import type * as ActionKind from "../services/ActionKind.js"
import { PendingActions, type ResolveOptions } from "../services/PendingActions.js"
import { withResolveDetails } from "../services/Preview.js"
import { ResolveConfig } from "../services/ResolveConfig.js"
import { StandingResolveHandler } from "../services/StandingResolveHandler.js"
import { ToolChoiceQueue } from "../services/ToolChoiceQueue.js"
import { selectTools, type ToolDefinition } from "./ToolDefinition.js"

export {
  /**
   * @since 0.1.0
   * @category schemas
   */
  ResolveDetails,
  /**
   * @since 0.1.0
   * @category schemas
   */
  ResolveInvocation,
  /**
   * @since 0.1.0
   * @category schemas
   */
  ResolveParams
} from "../domain/ResolveParams.js"

const decodeParams = Schema.decodeUnknown(ResolveParams, { onExcessProperty: "error", errors: "first" })

const fieldOf = (path: ReadonlyArray<PropertyKey>): string =>
  path.length === 0 ? "(root)" : path.map((key) => String(key)).join(".")

/**
 * The longest `extra` accepted as JSON text, in UTF-16 code units, before it is parsed: four times
 * `limits.extraMaxBytes`, room for whitespace and escapes (the parsed object must then fit `extraMaxBytes`).
 *
 * @since 0.2.0
 * @category constants
 */
export const extraTextMaxLength = 4 * limits.extraMaxBytes

const extraExample = "\"{\\\"title\\\": \\\"my-plan\\\"}\""

// What the wire form of `extra` is, as every problem with it says.
const extraWire = (problem: string) => `must be a JSON object as text, such as ${extraExample}, or null; ${problem}`

const extraTextProblem = (problem: string) => new InvalidResolveParams({ field: "extra", problem: extraWire(problem) })

/**
 * The wire form of `extra` (what the model-facing schema asks for: a JSON object as text, or `null`) turned into
 * the decoded form: `null` means none (the key is dropped), a string is parsed and must hold a JSON object, which
 * then goes through the usual `Extra` checks. An object is kept as it is (lenient providers, and callers that pass
 * decoded values). Anything else is left for the Schema to report. The input is never modified: a copy with the
 * same prototype and the other properties' descriptors untouched is returned (no getter runs).
 */
const fromWire = (input: unknown): Either.Either<unknown, InvalidResolveParams> => {
  if (typeof input !== "object" || input === null || Array.isArray(input)) return Either.right(input)
  const id = Object.getOwnPropertyDescriptor(input, "id")
  if (id !== undefined && "value" in id && id.value === null) {
    // `id: null` (the strict wire form of "no id") is the same as no `id`.
    const descriptors = Object.getOwnPropertyDescriptors(input)
    delete (descriptors as Record<string, PropertyDescriptor>).id
    return fromWire(Object.create(Object.getPrototypeOf(input), descriptors))
  }
  const descriptor = Object.getOwnPropertyDescriptor(input, "extra")
  if (descriptor === undefined || !("value" in descriptor)) return Either.right(input)
  const extra: unknown = descriptor.value
  if (extra !== null && typeof extra !== "string") return Either.right(input)
  const descriptors = Object.getOwnPropertyDescriptors(input)
  delete (descriptors as Record<string, PropertyDescriptor>).extra
  if (typeof extra === "string") {
    if (extra.length > extraTextMaxLength) {
      return Either.left(extraTextProblem(`got ${extra.length} characters of text, at most ${extraTextMaxLength}`))
    }
    let parsed: unknown
    try {
      parsed = JSON.parse(extra)
    } catch {
      return Either.left(extraTextProblem(`got ${show(extra)}, which is not valid JSON`))
    }
    if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
      return Either.left(extraTextProblem(`got text holding ${show(parsed)}`))
    }
    ;(descriptors as Record<string, PropertyDescriptor>).extra = {
      value: parsed,
      writable: true,
      enumerable: true,
      configurable: true
    }
  }
  return Either.right(Object.create(Object.getPrototypeOf(input), descriptors))
}

/**
 * Decodes untrusted `resolve` input, in its wire form (`extra` as JSON text or `null`, see
 * `ResolveTool.parameters`) or with `extra` as an object. A failure names the first bad field and what is wrong
 * with it.
 *
 * @since 0.1.0
 * @category decoding
 */
export const decodeResolveParams = (input: unknown): Effect.Effect<ResolveParams, InvalidResolveParams> => {
  const fast = decodeCommon(input)
  if (fast !== undefined) return Effect.succeed(fast)
  const wire = fromWire(input)
  if (Either.isLeft(wire)) return Effect.fail(wire.left)
  return decodeDecoded(wire.right)
}

const decodeDecoded = (input: unknown): Effect.Effect<ResolveParams, InvalidResolveParams> => {
  // Schema's error formatting prints the offending value recursively: a value nested thousands of levels deep
  // would overflow the stack (a defect instead of a typed error), so such values are refused first.
  const deep = tooDeepField(input, maxScanDepth)
  if (deep !== undefined) {
    return Effect.fail(
      new InvalidResolveParams({ field: deep, problem: `is nested deeper than ${limits.extraMaxDepth} levels` })
    )
  }
  return decodeUnchecked(input)
}

const isDataProperty = (input: object, key: string): boolean => {
  const descriptor = Object.getOwnPropertyDescriptor(input, key)
  return descriptor !== undefined && "value" in descriptor
}

/**
 * The common call, `{ action, reason }` (or `{ action, reason, extra: null, id: null | "<id>" }`, its strict wire
 * form) with valid values and nothing else, decoded without Schema (Schema's decode and the depth pre-scan cost about 4 µs a call,
 * bench/). It accepts only what `ResolveParams` accepts without an issue (the same checks as its filters) and
 * returns the same new object; everything else (a non-null `extra`, any bad value, accessors) goes through Schema,
 * which produces the errors.
 */
const decodeCommon = (input: unknown): ResolveParams | undefined => {
  if (typeof input !== "object" || input === null) return undefined
  const keys = Reflect.ownKeys(input)
  if (keys.length < 2 || keys.length > 4) return undefined
  let id: string | undefined
  for (const key of keys) {
    if (key === "action" || key === "reason") continue
    const descriptor = typeof key === "string" ? Object.getOwnPropertyDescriptor(input, key) : undefined
    if (descriptor === undefined || !("value" in descriptor)) return undefined
    if (key === "extra" && descriptor.value === null) continue
    if (key !== "id") return undefined
    if (descriptor.value === null) continue
    if (!isCommonId(descriptor.value)) return undefined
    id = descriptor.value
  }
  if (!isDataProperty(input, "action") || !isDataProperty(input, "reason")) return undefined
  const { action, reason } = input as { readonly action: unknown; readonly reason: unknown }
  if (action !== "apply" && action !== "discard") return undefined
  if (
    typeof reason !== "string" || reason.length > limits.reasonMaxLength || reason.trim().length === 0 ||
    loneSurrogate.test(reason)
  ) return undefined
  return id === undefined ? { action, reason } : { action, reason, id }
}

// An id the Schema accepts without an issue (the same checks as its filters).
const isCommonId = (value: unknown): value is string =>
  typeof value === "string" && value.length > 0 && value.length <= limits.idMaxLength && !loneSurrogate.test(value)

const maxScanDepth = 32

const decodeUnchecked = (input: unknown): Effect.Effect<ResolveParams, InvalidResolveParams> =>
  Effect.mapError(decodeParams(input), (error) => {
    const [issue] = ParseResult.ArrayFormatter.formatErrorSync(error)
    const field = fieldOf(issue?.path ?? [])
    const value = issue === undefined ? undefined : valueAt(input, issue.path)
    // Every problem is told in the wire form the model was sent (`parameters`): all four keys, `extra` as text or
    // null, `id` a string or null.
    const problem = issue === undefined ?
      "could not be decoded" :
      issue.path.length === 0 ?
      "must be a JSON object with \"action\", \"reason\", \"extra\" and \"id\"" :
      issue._tag === "Unexpected" ?
      (issue.path.length === 1 ?
        "is not a resolve parameter (only action, reason, extra and id are)" :
        "is not an allowed key (it could rewrite a prototype)") :
      issue._tag === "Missing" ?
      "is required" :
      issue._tag === "Type" && field === "action" ?
      `must be "apply" or "discard", got ${show(value)}` :
      issue._tag === "Type" && field === "extra" ?
      extraWire(`got ${show(value)}`) :
      issue._tag === "Type" && field === "id" ?
      `must be the id of a pending action (a string), or null for the most recent one; got ${show(value)}` :
      field === "id" && value === "" ?
      "must not be empty: pass null to resolve the most recent pending action" :
      issue.message
    return new InvalidResolveParams({ field, problem })
  })

/**
 * The text returned for `discard` with nothing pending when `ResolveConfig.discardWithoutPending` is `"succeed"`.
 *
 * @since 0.1.0
 * @category constants
 */
export const nothingToDiscardText = "Nothing to discard; no pending action remains."

/**
 * What the `resolve` program reads: the session's pending set, its queue (a generic directive's handler) and its
 * standing handler.
 *
 * @since 0.2.0
 * @category models
 */
export type ResolveServices = PendingActions | ToolChoiceQueue | StandingResolveHandler

/**
 * The `resolve` program: the pending action `params.id` names (`UnknownPendingAction` / `PendingActionNotPending`
 * when it cannot be resolved), else the most recent pending one, else the in-flight directive's handler
 * (`onInvoked`), else the standing handler, else `NoPendingAction`. Interrupting it before the action's `apply`
 * commits leaves the action pending.
 *
 * `params` is checked at run time first, as the model's input is (`decodeResolveParams`): from JavaScript, or
 * through `as any`, `{ action: "approve" }` fails with the same `InvalidResolveParams` the model would get, and
 * nothing is resolved.
 *
 * @since 0.1.0
 * @category programs
 */
export const resolve = (
  params: ResolveParams
): Effect.Effect<ToolResult.ToolResult, ResolveError | InvalidResolveParams, ResolveServices> => {
  // The common call is checked without Schema (bench/).
  const checked = decodeCommon(params)
  return checked !== undefined ? resolveDecoded(checked) : Effect.flatMap(decodeResolveParams(params), resolveDecoded)
}

/**
 * `resolve`, run for a reviewer who amended the action (what replaces 0.3's `ActionKind.withAmendment`): the action
 * `amendment.actionId` names is applied with the amendment, decoded with its kind's `amendment` Schema before it is
 * claimed and given to `apply` as `call.amendment`. Only the process running the reviewer's decision calls this (an
 * approval inbox, a session running a recorded decision); a model's `resolve` has no way to pass an amendment, its
 * `extra` is never one. An amendment that no longer decodes fails with `ApplyFailed`, and nothing changes.
 *
 * @since 0.4.0
 * @category programs
 */
export const resolveAmended = (
  params: Omit<ResolveParams, "id" | "action">,
  amendment: ActionKind.Amendment
): Effect.Effect<ToolResult.ToolResult, ResolveError | InvalidResolveParams, ResolveServices> =>
  resolveWith({ ...params, action: "apply", id: amendment.actionId }, { amendment })

/**
 * `resolve` with what only the process running a reviewer's decision passes (see `PendingActions.ResolveOptions`).
 *
 * @internal
 */
export const resolveWith = (
  params: ResolveParams,
  options: ResolveOptions
): Effect.Effect<ToolResult.ToolResult, ResolveError | InvalidResolveParams, ResolveServices> => {
  const checked = decodeCommon(params)
  return checked !== undefined ?
    resolveDecoded(checked, options) :
    Effect.flatMap(decodeResolveParams(params), (decoded) => resolveDecoded(decoded, options))
}

/** `resolve` on parameters already decoded. */
const resolveDecoded = (
  params: ResolveParams,
  options?: ResolveOptions
): Effect.Effect<ToolResult.ToolResult, ResolveError, ResolveServices> =>
  // Untraced: a span per call cost about 8 µs and a captured stack 12 µs more (bench/); the turn driver's
  // tool-call span already covers a resolve call. (No `annotateCurrentSpan` either: without a span it fails
  // internally with a NoSuchElementException, whose stack capture cost more than the whole call.) No generator
  // either: it cost about 2 µs a call (bench/).
  Effect.withFiberRuntime((fiber) => {
    const context = fiber.getFiberRef(FiberRef.currentContext) as Context.Context<ResolveServices>
    return Context.get(context, PendingActions).resolveOr(params, (last) => fallback(context, params, last), options)
  })

// Nothing pending: a generic directive's handler in flight, else the standing handler, else `NoPendingAction`
// (naming the last action that was resolved, if any).
const fallback = (
  context: Context.Context<ToolChoiceQueue | StandingResolveHandler>,
  params: ResolveParams,
  last: Option.Option<{ readonly label: string; readonly status: string }>
): Effect.Effect<ToolResult.ToolResult, ResolveError> =>
  Effect.flatMap(Context.get(context, ToolChoiceQueue).peekInFlightInvoker, (queued) => {
    if (Option.isSome(queued)) return queued.value(params)
    return Effect.flatMap(
      Context.get(context, StandingResolveHandler).peek,
      (invoker): Effect.Effect<ToolResult.ToolResult, ResolveError> => {
        if (Option.isSome(invoker)) return invoker.value(params)
        const config = Context.get(context, ResolveConfig)
        if (params.action === "discard" && config.discardWithoutPending === "succeed") {
          return Effect.succeed(withResolveDetails(ToolResult.text(nothingToDiscardText), params))
        }
        return Effect.fail(
          Option.match(last, {
            onNone: () => new NoPendingAction(),
            onSome: ({ label, status }) =>
              new NoPendingAction({
                message: `No pending action to resolve: the last one, "${label}", was already ${status}. ` +
                  `Nothing else is pending.`
              })
          })
        )
      }
    )
  })

const description = [
  "Finish the pending preview: apply it or discard it.",
  "",
  "Some tools show a preview instead of changing anything; the change waits until you call this tool.",
  "Call it as soon as you have read the preview, before any other tool:",
  "- action \"apply\" commits exactly what the preview showed;",
  "- action \"discard\" drops it; nothing is changed.",
  "Give a one-sentence reason (it is shown to the user). Pass `extra` as null, except for a plan approval, which",
  "reads a JSON object given as text, for example \"{\\\"title\\\": \\\"my-plan\\\"}\".",
  "Pass `id` as null to resolve the most recent preview; each preview names its id, so you can pass one to",
  "resolve an older preview first.",
  "If applying fails, the preview stays pending: fix the cause and apply again, or discard it."
].join("\n")

/**
 * The model-facing JSON Schema of `resolve`: every property required, `extra` a JSON object as text or `null`, no
 * other properties, and only keywords every provider's default mode accepts (OpenAI strict function calling,
 * Anthropic `input_schema`; Gemini through `ProviderToolChoice.toGeminiSchema`). Bounds such as the reason's length
 * are stated in the descriptions and enforced when decoding.
 */
const parameters: JSONSchema.JsonSchema7Root = {
  type: "object",
  properties: {
    action: {
      type: "string",
      enum: ["apply", "discard"],
      description: "\"apply\" to commit the pending action, \"discard\" to drop it."
    },
    reason: {
      type: "string",
      description: `One sentence saying why you apply or discard (at most ${limits.reasonMaxLength} characters).`
    },
    extra: {
      anyOf: [{ type: "string" }, { type: "null" }],
      description: `null, or a JSON object as text for the handler, such as ${extraExample} for a plan approval.`
    },
    id: {
      anyOf: [{ type: "string" }, { type: "null" }],
      description: "null for the most recent pending action, or the id of the one to resolve (the preview names it)."
    }
  },
  required: ["action", "reason", "extra", "id"],
  additionalProperties: false
}

/**
 * The model-facing `resolve` tool: hidden (never selected by name; `toolsFor` appends it), with JSON Schema
 * parameters every provider accepts (see `decodeResolveParams` for the wire form of `extra`) and an `execute` that
 * decodes untrusted input and runs `resolve`.
 *
 * @since 0.1.0
 * @category tools
 */
export const ResolveTool = {
  name: "resolve",
  label: "Resolve",
  hidden: true,
  description,
  parameters,
  execute: (input: unknown) => {
    // The common call skips a step of the run loop (bench/).
    const fast = decodeCommon(input)
    return fast !== undefined ? resolveDecoded(fast) : Effect.flatMap(decodeResolveParams(input), resolveDecoded)
  }
} as const satisfies ToolDefinition<ResolveError | InvalidResolveParams, ResolveServices>

/**
 * The tool list of a request: the requested tools in order (`resolve` and other hidden tools filtered out of the
 * request), with `resolve` always appended last.
 *
 * @since 0.1.0
 * @category tools
 */
export const toolsFor = <T extends ToolDefinition<any, any>>(
  requested: Iterable<string>,
  available: Iterable<T>
): Effect.Effect<ReadonlyArray<T | typeof ResolveTool>, UnknownTool> =>
  selectTools<T | typeof ResolveTool>(requested, available, [ResolveTool])

// A call, not a property read, so TypeScript does not narrow `aborted` across the await.
const isAborted = (signal: AbortSignal | undefined): boolean => signal?.aborted === true

/**
 * Runs the `resolve` tool for a host that does not use Effect. The Promise resolves with the tool result, rejects
 * with the typed error (`NoPendingAction`, `InvalidResolveParams`, ...), and `signal` interrupts the fiber: an abort
 * before the handler commits leaves the action pending, and the Promise rejects with `signal.reason`.
 *
 * @example
 * ```ts
 * import { ManagedRuntime } from "effect"
 * import { ResolveRuntime, runResolve } from "effect-resolve"
 *
 * const session = ManagedRuntime.make(ResolveRuntime.layer)
 * const controller = new AbortController()
 * await runResolve(session, { action: "discard", reason: "Not needed." }, { signal: controller.signal })
 * ```
 *
 * @since 0.1.0
 * @category running
 */
export const runResolve = async <ER>(
  runtime: ManagedRuntime.ManagedRuntime<ResolveServices, ER>,
  input: unknown,
  options: { readonly signal?: AbortSignal } = {}
): Promise<ToolResult.ToolResult> => {
  // Effect runs a forked fiber synchronously before it looks at an already aborted signal: check it first.
  if (isAborted(options.signal)) throw options.signal!.reason
  const exit = await runtime.runPromiseExit(
    ResolveTool.execute(input),
    options.signal === undefined ? undefined : { signal: options.signal }
  )
  if (Exit.isSuccess(exit)) return exit.value
  if (Cause.isInterruptedOnly(exit.cause) && isAborted(options.signal)) throw options.signal!.reason
  throw Cause.squash(exit.cause)
}
