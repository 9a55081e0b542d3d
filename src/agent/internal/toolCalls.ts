/**
 * How the turn driver runs a response's tool calls itself, in order: a model's mistake (an unknown tool, arguments
 * that fail the tool's real schema) gets a failure result at once; while a preview is pending only `resolve` runs
 * and every other call is skipped; once a call of the batch stages a preview, nothing after it runs, not even
 * `resolve` (the model has not read it); each call gets a result the model reads, and the conversation gains them
 * all, one per call, so it stays valid whatever happened.
 *
 * @internal
 */
import type * as LanguageModel from "@effect/ai/LanguageModel"
import * as Prompt from "@effect/ai/Prompt"
import type * as Response from "@effect/ai/Response"
import * as Tool from "@effect/ai/Tool"
import type * as Toolkit from "@effect/ai/Toolkit"
import * as Cause from "effect/Cause"
import type * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as Ref from "effect/Ref"
import * as Schema from "effect/Schema"
import { tooDeepField } from "../../internal/untrusted.js"
import type * as ResolveRuntime from "../../layers/ResolveRuntime.js"
import { type PendingActions, track } from "../../services/PendingActions.js"
import { ResolveConfig, type ResolveConfigShape } from "../../services/ResolveConfig.js"
import { ResolveTool } from "../../tools/Resolve.js"
import { toFailure, tool as resolveTool } from "../AiResolveTool.js"
import * as ResolveMetrics from "../ResolveMetrics.js"
import type { ToolCallRecord } from "../TurnDriver.js"
import { permissiveTools } from "./permissive.js"
import { quote } from "./quote.js"

/** The text of the result a skipped tool call gets. */
export const skippedText = "Skipped: a preview is pending. Call `resolve` to apply or discard it first, " +
  "then issue this call again."

/**
 * The text of the result a `resolve` call gets when an earlier call of the same batch staged the preview: the
 * model has not read that preview yet.
 */
export const skippedResolveText = "Skipped: this preview was staged by an earlier call of the same turn. Read it, " +
  "then call `resolve` to apply or discard it."

/** What running calls reads and changes: the session's services, its pending set, counts and conversation. */
export interface ToolCallContext {
  /** The session's services, provided to every handler and to `resolve`. */
  readonly runtime: Context.Context<ResolveRuntime.Services>
  readonly pending: PendingActions.Service
  readonly counters: ResolveMetrics.Counters
  readonly history: Ref.Ref<Prompt.Prompt>
}

/** The tools of one run: the app's, and what each request carries. */
export interface RunTools {
  readonly appToolkit: Toolkit.WithHandler<any> | undefined
  readonly appTools: Record<string, Tool.Any>
  /** Every tool a request carries: the app's, made permissive, and `resolve`. */
  readonly wireTools: Record<string, Tool.Any>
  /** `wireTools` as a toolkit whose handler is never called: the driver runs the calls itself. */
  readonly wireToolkit: Toolkit.WithHandler<any>
  /** The names an unknown tool's result lists, `resolve` last. */
  readonly available: ReadonlyArray<string>
}

/** The tools of a run over the app's toolkit (none: only `resolve`). */
export const runTools = (appToolkit: Toolkit.WithHandler<any> | undefined): RunTools => {
  const appTools: Record<string, Tool.Any> = appToolkit?.tools ?? {}
  // The request carries every tool's real JSON Schema, but arguments decode as `unknown`: each call is decoded
  // here, against the real schema, so a bad call gets a failure result instead of failing the whole response
  // (permissive.ts).
  const wireTools: Record<string, Tool.Any> = { ...permissiveTools(appTools), resolve: resolveTool }
  const wireToolkit: Toolkit.WithHandler<any> = {
    tools: wireTools,
    handle: () => Effect.dieMessage("effect-resolve: the turn driver runs tool calls itself")
  }
  const available = [...Object.keys(appTools).filter((name) => name !== "resolve"), "resolve"]
  return { appToolkit, appTools, wireTools, wireToolkit, available }
}

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

const record = (
  call: Response.ToolCallPart<string, unknown>,
  outcome: ToolCallRecord["outcome"],
  isFailure: boolean,
  result: unknown
): ToolCallRecord => ({ id: call.id, name: call.name, params: call.params, outcome, isFailure, result })

/** Runs one call of the batch, or skips it while a preview is pending. */
const runCall = (
  context: ToolCallContext,
  tools: RunTools,
  effectiveNow: Effect.Effect<ResolveConfigShape>,
  call: Response.ToolCallPart<string, unknown>,
  stagedInBatch: Ref.Ref<boolean>,
  stagedIds: Array<string>
) =>
  Effect.gen(function*() {
    const { appToolkit, appTools, available } = tools
    const { counters, runtime } = context
    /** A preview is pending: the pending set has an action that forces `resolve` (the same set `resolve` reads). */
    const previewPending = context.pending.hasPending
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

/** Runs an effect interruptibly inside an uninterruptible region (`Effect.uninterruptibleMask`'s `restore`). */
export type Restore = <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>

/** What became of a response's calls. */
export interface Ran {
  /** One record per call, in order: a call interrupted before it ran is `interrupted`. */
  readonly records: ReadonlyArray<ToolCallRecord>
  /** How running them ended: a failure is an interruption or a defect (a tool's failure is a result). */
  readonly executed: Exit.Exit<void, unknown>
  /** The pending actions the calls staged. */
  readonly staged: ReadonlyArray<string>
}

/**
 * Runs a response's calls in order (interruptibly, through `restore`), and adds a tool message with one result per
 * call to the conversation, those interrupted before they ran included. It requires what the app's handlers require
 * (the run's `Tool.Requirements`).
 */
export const runCalls = (
  context: ToolCallContext,
  tools: RunTools,
  effectiveNow: Effect.Effect<ResolveConfigShape>,
  response: LanguageModel.GenerateTextResponse<any>,
  restore: Restore
): Effect.Effect<Ran, never, any> =>
  Effect.gen(function*() {
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
          runCall(context, tools, effectiveNow, call, stagedInBatch, stagedIds),
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
      yield* Ref.update(context.history, (current) =>
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
    }
    return { records: all, executed, staged: stagedIds }
  })
