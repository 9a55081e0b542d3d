/**
 * Custom tools for authors who do not write Effect. `stage` stages a pending action whose callbacks
 * return Promises; it forwards into the core `stage`, so the action behaves like any preview: reminded,
 * forced, resolved exactly once, kept pending when apply fails. `fromCustomTool` / `registerCustomTools` turn
 * `{ name, description, parameters, execute(params, api) }` objects into `ToolDefinition`s, with
 * `api.stage` bound to the session that runs the tool.
 *
 * Errors: a thrown `Error` in `apply` becomes `ApplyFailed` ("Apply failed: <message>"); a thrown object carrying
 * the tool-error marker (`isToolError: true`, see `toolError`) reaches the model unchanged as a `ToolError`.
 *
 * @example
 * ```ts
 * import { CustomTools } from "effect-resolve/custom"
 *
 * const deploy: CustomTools.CustomTool = {
 *   name: "deploy",
 *   description: "Deploy a service (as a preview).",
 *   parameters: { type: "object", properties: { service: { type: "string" } }, required: ["service"] },
 *   execute: async (params, api) => {
 *     await api.stage({
 *       label: `Deploy: ${params.service}`,
 *       apply: async (reason) => {
 *         if (params.service === "prod") throw CustomTools.toolError("Deploying prod needs a ticket.")
 *         return `Deployed ${params.service} (${reason}).`
 *       }
 *     })
 *     return `Ready to deploy ${params.service}. Call resolve to apply or discard.`
 *   }
 * }
 * // const [tool] = yield* CustomTools.registerCustomTools([deploy])
 * ```
 *
 * @since 0.1.0
 */
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as JSONSchema from "effect/JSONSchema"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as Runtime from "effect/Runtime"
import * as Schema from "effect/Schema"
import { type PendingStoreError, ToolError } from "../domain/Errors.js"
import { type Extra, forbiddenKeys } from "../domain/ResolveParams.js"
import * as ToolResult from "../domain/ToolResult.js"
import { messageOf, safeGet, safeInstanceOf, safely } from "../internal/render.js"
import {
  inlineDefinitions,
  type StrictProblem,
  type StrictSchema,
  toStrict,
  withoutValueBounds
} from "../internal/strictSchema.js"
import { tooDeepField } from "../internal/untrusted.js"
import { type PendingActions, stage as stagePreview } from "../services/PendingActions.js"
import * as Preview from "../services/Preview.js"
import type { ToolDefinition } from "../tools/ToolDefinition.js"

// -----------------------------------------------------------------------------------------------------------------
// the tool-error marker
// -----------------------------------------------------------------------------------------------------------------

/**
 * The property that marks a thrown object as a tool error: `{ isToolError: true, message }`.
 *
 * @since 0.1.0
 * @category tool errors
 */
export const toolErrorMarker = "isToolError" as const

/**
 * A thrown value that reaches the model unchanged as a `ToolError`.
 *
 * @since 0.1.0
 * @category tool errors
 */
export interface ToolErrorLike {
  readonly isToolError: true
  readonly message: string
}

/**
 * An `Error` carrying the tool-error marker; `toolError(message)` builds one.
 *
 * @since 0.1.0
 * @category tool errors
 */
export class CustomToolError extends Error implements ToolErrorLike {
  /**
   * @since 0.1.0
   */
  readonly isToolError = true as const
  /**
   * @since 0.1.0
   */
  override readonly name = "CustomToolError"
}

/**
 * Builds an error to throw from a custom tool or its callbacks: its message goes to the model unchanged.
 *
 * @since 0.1.0
 * @category tool errors
 */
export const toolError = (message: string): CustomToolError => new CustomToolError(message)

/**
 * True for a thrown value that carries the tool-error marker (or is the library's own `ToolError`).
 *
 * @since 0.1.0
 * @category tool errors
 */
export const isToolErrorLike = (thrown: unknown): thrown is ToolErrorLike =>
  safeInstanceOf(thrown, ToolError) || safeGet(thrown, toolErrorMarker) === true

// Any thrown value as a `ToolError`; never throws (see `messageOf`).
const asToolError = (thrown: unknown, prefix = ""): ToolError =>
  safeInstanceOf(thrown, ToolError) ?
    thrown as ToolError :
    new ToolError({ message: `${prefix}${messageOf(thrown)}` })

// -----------------------------------------------------------------------------------------------------------------
// results
// -----------------------------------------------------------------------------------------------------------------

/**
 * What a custom callback may return: a `ToolResult` or, as a shorthand, its text.
 *
 * @since 0.1.0
 * @category models
 */
export type CustomResult = ToolResult.ToolResult | string

const isToolResult = Schema.is(ToolResult.ToolResult)

// A callback's return value as a result; a value that is neither (or cannot even be read) is none.
const normalize = (value: unknown): Option.Option<ToolResult.ToolResult> =>
  typeof value === "string" ?
    Option.some(ToolResult.text(value)) :
    safely(() => isToolResult(value), false) ?
    Option.some(value as ToolResult.ToolResult) :
    Option.none()

const describeValue = (value: unknown): string =>
  value === null ?
    "null" :
    safely(() => Array.isArray(value), false) ?
    "an array" :
    typeof value === "object" ?
    "an object" :
    typeof value

// -----------------------------------------------------------------------------------------------------------------
// stage
// -----------------------------------------------------------------------------------------------------------------

/**
 * A pending action with Promise-returning callbacks.
 *
 * @since 0.1.0
 * @category models
 */
export interface CustomPendingAction {
  /** For humans, e.g. `"Deploy: api"`. */
  readonly label: string
  /** Default `"custom_tool"`. */
  readonly sourceToolName?: string
  /**
   * Commits the action. Throw an `Error` for an apply failure, or a `toolError(...)` for a message the model sees
   * as is; either way the action stays pending.
   */
  readonly apply: (
    reason: string,
    extra: Extra,
    options: { readonly signal: AbortSignal }
  ) => Promise<CustomResult> | CustomResult
  /** Drops the action; return nothing for the default `Discarded: <label>. Reason: <reason>`. */
  readonly reject?: (reason: string, extra: Extra) => Promise<CustomResult | undefined | void> | CustomResult | void
  /**
   * `false` (the default): `apply` is the commit, so an interrupted `resolve` waits for the Promise, and the action
   * counts as applied when it resolves. `true`: interruption aborts `options.signal` and leaves the action pending;
   * choose it only when aborting really stops `apply`'s side effects.
   */
  readonly abortable?: boolean
}

/**
 * The pending action is malformed (missing label, `apply` not a function, ...). Nothing was staged.
 *
 * @since 0.1.0
 * @category errors
 */
export class InvalidPendingAction
  extends Schema.TaggedError<InvalidPendingAction>("effect-resolve/InvalidPendingAction")("InvalidPendingAction", {
    field: Schema.String,
    problem: Schema.String
  })
{
  /**
   * @since 0.1.0
   */
  override get message(): string {
    return `Invalid pending action: ${this.field} ${this.problem}. Nothing was staged.`
  }
}

/**
 * The default `sourceToolName` of `stage`.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultSourceToolName = "custom_tool"

const validateAction = (action: CustomPendingAction): Option.Option<InvalidPendingAction> => {
  const bad = (field: string, problem: string) => Option.some(new InvalidPendingAction({ field, problem }))
  if (typeof action !== "object" || action === null) return bad("(root)", "must be an object")
  if (typeof action.label !== "string" || action.label.trim() === "") return bad("label", "must be a non-empty string")
  if (typeof action.apply !== "function") return bad("apply", "must be a function")
  if (action.reject !== undefined && typeof action.reject !== "function") return bad("reject", "must be a function")
  if (
    action.sourceToolName !== undefined &&
    (typeof action.sourceToolName !== "string" || action.sourceToolName.trim() === "")
  ) {
    return bad("sourceToolName", "must be a non-empty string")
  }
  return Option.none()
}

/**
 * Stages a pending action with Promise callbacks in the current session, as `stage` does for Effect callbacks
 * (reminded, forced, resolved exactly once, kept pending when apply fails), with `sourceToolName` defaulting to
 * `"custom_tool"`.
 *
 * @since 0.3.0
 * @category constructors
 */
export const stage = (
  action: CustomPendingAction
): Effect.Effect<Preview.Handle, InvalidPendingAction | PendingStoreError, PendingActions> =>
  Effect.suspend((): Effect.Effect<
    Preview.Handle,
    InvalidPendingAction | PendingStoreError,
    PendingActions
  > => {
    const invalid = safely(
      () => validateAction(action),
      Option.some(new InvalidPendingAction({ field: "(root)", problem: "could not be read (a getter threw)" }))
    )
    if (Option.isSome(invalid)) return Effect.fail(invalid.value)
    const label = action.label
    const apply = (reason: string, extra: Extra) => {
      const run = Effect.tryPromise({
        try: (signal) => Promise.resolve().then(() => action.apply(reason, extra, { signal })),
        catch: (thrown): unknown => isToolErrorLike(thrown) ? asToolError(thrown) : thrown
      }).pipe(
        Effect.flatMap((value) =>
          Option.match(normalize(value), {
            onNone: () =>
              Effect.fail(new Error(`apply returned ${describeValue(value)}, not a ToolResult or a string`)),
            onSome: Effect.succeed
          })
        )
      )
      return action.abortable === true ? run : Preview.commit(run)
    }
    const reject = action.reject === undefined ? undefined : (reason: string, extra: Extra) =>
      Effect.tryPromise({
        try: () => Promise.resolve().then(() => action.reject!(reason, extra)),
        catch: (thrown) => asToolError(thrown)
      }).pipe(
        Effect.flatMap((value) =>
          value === undefined || value === null ?
            Effect.succeed(Option.none()) :
            Option.match(normalize(value), {
              onNone: () =>
                Effect.fail(
                  new ToolError({ message: `reject returned ${describeValue(value)}, not a ToolResult or a string` })
                ),
              onSome: (result) => Effect.succeed(Option.some(result))
            })
        )
      )
    return stagePreview({
      label,
      sourceToolName: action.sourceToolName ?? defaultSourceToolName,
      apply,
      ...(reject === undefined ? {} : { reject })
    })
  })

/**
 * @deprecated Renamed `stage` in 0.3.0 (`CustomTools.stage`): one verb for staging; this alias goes in 0.4.0.
 * @since 0.1.0
 * @category constructors
 */
export const pushPendingAction = stage

// -----------------------------------------------------------------------------------------------------------------
// the custom-tool adapter
// -----------------------------------------------------------------------------------------------------------------

/**
 * What `api.stage` resolves with.
 *
 * @since 0.1.0
 * @category models
 */
export interface PendingActionInfo {
  readonly id: string
  readonly label: string
  readonly sourceToolName: string
  readonly status: () => Promise<Preview.PendingStatus>
}

/**
 * What a custom tool's `execute` receives besides its parameters, bound to the session running the tool.
 *
 * @since 0.1.0
 * @category models
 */
export interface CustomToolApi {
  /** Stages a pending action in this session. Await it before returning the preview. */
  readonly stage: (action: CustomPendingAction) => Promise<PendingActionInfo>
  /** @deprecated Renamed `stage` in 0.3.0; this alias goes in 0.4.0. */
  readonly pushPendingAction: (action: CustomPendingAction) => Promise<PendingActionInfo>
  /** Aborted when the tool call is interrupted. */
  readonly signal: AbortSignal
}

/**
 * A custom tool: a name, a description, JSON Schema parameters and a Promise-returning `execute`.
 *
 * @since 0.1.0
 * @category models
 */
export interface CustomTool<Params = any> {
  readonly name: string
  readonly label?: string
  readonly description: string
  /**
   * The parameters: a JSON Schema object (`type: "object"`), checked shallowly, with `params` typed by hand; or an
   * Effect Schema of a struct, whose JSON Schema is derived and which decodes the model's arguments, so `params` is
   * typed and checked in full (use `CustomTools.make` to have it inferred).
   */
  readonly parameters: Record<string, unknown> | Schema.Schema<Params, any>
  readonly execute: (params: Params, api: CustomToolApi) => Promise<CustomResult> | CustomResult
}

/**
 * Defines a custom tool whose parameters are an Effect Schema: `params` is inferred from it.
 *
 * @example
 * ```ts
 * import { Schema } from "effect"
 * import { CustomTools } from "effect-resolve/custom"
 *
 * const deploy = CustomTools.make({
 *   name: "deploy",
 *   description: "Deploy a service, as a preview.",
 *   parameters: Schema.Struct({ service: Schema.String, dryRun: Schema.optional(Schema.Boolean) }),
 *   execute: async ({ service, dryRun }) => `Would deploy ${service}${dryRun === true ? " (dry run)" : ""}.`
 * })
 * ```
 *
 * @since 0.2.0
 * @category constructors
 */
export const make = <Params, I>(
  tool: Omit<CustomTool<Params>, "parameters"> & { readonly parameters: Schema.Schema<Params, I> }
): CustomTool<Params> => tool

/**
 * A custom tool definition is malformed, clashes with another one, or has a parameter schema that cannot be made
 * strict. `index` is the entry's position in the list given to `registerCustomTools`; `tool` its name when it has a
 * string one, else `#<index>`.
 *
 * @since 0.1.0
 * @category errors
 */
export class InvalidCustomTool
  extends Schema.TaggedError<InvalidCustomTool>("effect-resolve/InvalidCustomTool")("InvalidCustomTool", {
    tool: Schema.String,
    index: Schema.Number,
    problem: Schema.String
  })
{
  /**
   * @since 0.1.0
   */
  override get message(): string {
    return `Invalid custom tool "${this.tool}" (entry ${this.index}): ${this.problem}.`
  }
}

/**
 * The model called a custom tool with parameters that do not match its JSON Schema (a shallow check: an object,
 * the required keys, the declared primitive types, no unknown keys when `additionalProperties` is `false`).
 *
 * @since 0.1.0
 * @category errors
 */
export class InvalidCustomToolParams extends Schema.TaggedError<InvalidCustomToolParams>(
  "effect-resolve/InvalidCustomToolParams"
)("InvalidCustomToolParams", {
  tool: Schema.String,
  field: Schema.String,
  problem: Schema.String
}) {
  /**
   * @since 0.1.0
   */
  override get message(): string {
    return `Invalid parameters for ${this.tool}: ${this.field}: ${this.problem}. Check the tool's parameter schema.`
  }
}

/**
 * The `ToolDefinition` of an adapted custom tool.
 *
 * @since 0.1.0
 * @category models
 */
export type CustomToolDefinition = ToolDefinition<ToolError | InvalidCustomToolParams, PendingActions>

const typeMatches = (type: unknown, value: unknown): boolean => {
  switch (type) {
    case "string":
      return typeof value === "string"
    case "number":
      return typeof value === "number" && Number.isFinite(value)
    case "integer":
      return Number.isInteger(value)
    case "boolean":
      return typeof value === "boolean"
    case "array":
      return Array.isArray(value)
    case "object":
      return typeof value === "object" && value !== null && !Array.isArray(value)
    case "null":
      return value === null
    default:
      return true
  }
}

const typesOf = (schema: unknown): ReadonlyArray<unknown> | undefined => {
  const type = safeGet(schema, "type")
  if (type !== undefined) return Array.isArray(type) ? type : [type]
  const anyOf = safeGet(schema, "anyOf")
  if (!Array.isArray(anyOf)) return undefined
  const branches = anyOf.map(typesOf)
  return branches.some((types) => types === undefined) ? undefined : branches.flatMap((types) => types!)
}

// The shallow check of a call's input against the schema sent to the model: an object, no unknown key when
// `additionalProperties` is false, the required keys (except `optional` ones: a formerly optional property may be
// left out instead of sent as null), the declared primitive types (through `anyOf` branches too).
const checkParams = (
  name: string,
  schema: Record<string, unknown>,
  optional: ReadonlySet<string>,
  input: unknown
): Option.Option<InvalidCustomToolParams> => {
  const bad = (field: string, problem: string) =>
    Option.some(new InvalidCustomToolParams({ tool: name, field, problem }))
  if (typeof input !== "object" || input === null || Array.isArray(input)) {
    return bad("(root)", "must be a JSON object")
  }
  const properties = (typeof schema.properties === "object" && schema.properties !== null ?
    schema.properties :
    {}) as Record<string, Record<string, unknown>>
  const record = input as Record<string, unknown>
  for (const key of Object.keys(record)) {
    if (forbiddenKeys.has(key)) return bad(key, "is not an allowed key (it could rewrite a prototype)")
    if (schema.additionalProperties === false && !Object.hasOwn(properties, key)) return bad(key, "is not a parameter")
  }
  const required = Array.isArray(schema.required) ? schema.required : []
  for (const key of required) {
    if (typeof key === "string" && !Object.hasOwn(record, key) && !optional.has(key)) return bad(key, "is required")
  }
  for (const [key, value] of Object.entries(record)) {
    const types = Object.hasOwn(properties, key) ? typesOf(properties[key]) : undefined
    if (types !== undefined && !types.some((t) => typeMatches(t, value))) {
      return bad(key, `must be of type ${types.map(String).join(" | ")}`)
    }
  }
  return Option.none()
}

const toInfo = (runtime: Runtime.Runtime<never>) => (handle: Preview.Handle): PendingActionInfo => ({
  id: handle.id,
  label: handle.label,
  sourceToolName: handle.sourceToolName,
  status: () => Runtime.runPromise(runtime)(handle.status)
})

const runPromise = <A, E, R>(runtime: Runtime.Runtime<R>, effect: Effect.Effect<A, E, R>): Promise<A> =>
  Runtime.runPromiseExit(runtime)(effect).then((exit) => {
    if (Exit.isSuccess(exit)) return exit.value
    throw Cause.squash(exit.cause)
  })

/**
 * Adapts one custom tool (without validating its definition; `registerCustomTools` does). The parameter schema is
 * converted to the strict form (`toStrict`: every object closed, every property required, an optional one nullable)
 * when it can be; otherwise it is sent as given (`registerCustomTools` refuses such a tool instead). `execute` checks
 * the model's input shallowly against the schema sent, turns the `null` of a formerly optional property back into
 * an absent one, runs the tool with `api` bound to the current session, and maps a thrown marker to its `ToolError`
 * and any other throw to `ToolError("<name> failed: <message>")`.
 *
 * @since 0.1.0
 * @category adapters
 */
export const fromCustomTool = (tool: CustomTool): CustomToolDefinition => {
  const { json, strict } = schemasOf(tool.parameters)
  return Either.match(strict, {
    onLeft: () => adapt(tool, { schema: json, optional: new Set(), decode: (input) => input }),
    onRight: (strict) => adapt(tool, strict)
  })
}

// The JSON Schema of the parameters: as given, or derived from an Effect Schema (without `$schema`, definitions
// inlined, and without value bounds strict mode refuses: the Schema enforces them when it decodes each call); and
// its strict form, or where and why it cannot have one. Throws what `JSONSchema.make` throws.
const schemasOf = (parameters: CustomTool["parameters"]): {
  readonly json: Record<string, unknown>
  readonly strict: Either.Either<StrictSchema, StrictProblem>
} => {
  if (!Schema.isSchema(parameters)) return { json: parameters, strict: toStrict(parameters) }
  const { $schema: _, ...derived } = JSONSchema.make(parameters) as unknown as Record<string, unknown>
  return Either.match(inlineDefinitions(derived), {
    onLeft: (problem) => ({ json: derived, strict: Either.left(problem) }),
    onRight: (inlined) => {
      const json = withoutValueBounds(inlined)
      return { json, strict: toStrict(json) }
    }
  })
}

// An Effect Schema's decoding of the (strict-decoded) input: the typed params, or the first problem.
const decodeWith = (tool: CustomTool, params: unknown): Either.Either<unknown, InvalidCustomToolParams> => {
  if (!Schema.isSchema(tool.parameters)) return Either.right(params)
  const decoded = Schema.decodeUnknownEither(tool.parameters as Schema.Schema<unknown, unknown>, {
    onExcessProperty: "error",
    errors: "first"
  })(params)
  if (Either.isRight(decoded)) return Either.right(decoded.right)
  const [issue] = ParseResult.ArrayFormatter.formatErrorSync(decoded.left)
  return Either.left(
    new InvalidCustomToolParams({
      tool: tool.name,
      field: issue === undefined || issue.path.length === 0 ? "(root)" : issue.path.map(String).join("."),
      problem: issue === undefined ? "could not be decoded" : issue.message
    })
  )
}

/** How deep a call's arguments may nest before they are refused without being decoded. */
const argumentsMaxDepth = 64

const adapt = (tool: CustomTool, strict: StrictSchema): CustomToolDefinition => ({
  name: tool.name,
  label: tool.label ?? tool.name,
  description: tool.description,
  parameters: strict.schema as unknown as JSONSchema.JsonSchema7Root,
  execute: (input: unknown) =>
    Effect.gen(function*() {
      const invalid = checkParams(tool.name, strict.schema, strict.optional, input)
      if (Option.isSome(invalid)) return yield* invalid.value
      // Schema's error messages print the offending value recursively: a value nested thousands of levels deep
      // would overflow the stack (a defect instead of a typed error), so it is refused first, without recursion.
      const deep = tooDeepField(input, argumentsMaxDepth)
      if (deep !== undefined) {
        return yield* new InvalidCustomToolParams({
          tool: tool.name,
          field: deep,
          problem: `is nested deeper than ${argumentsMaxDepth} levels`
        })
      }
      const params = yield* decodeWith(tool, strict.decode(input))
      const runtime = yield* Effect.runtime<PendingActions>()
      const value = yield* Effect.tryPromise({
        try: (signal) =>
          Promise.resolve().then(() => {
            const stageHere = (action: CustomPendingAction) => runPromise(runtime, stage(action)).then(toInfo(runtime))
            return tool.execute(params, { signal, stage: stageHere, pushPendingAction: stageHere })
          }),
        catch: (thrown) => isToolErrorLike(thrown) ? asToolError(thrown) : asToolError(thrown, `${tool.name} failed: `)
      })
      return yield* Option.match(normalize(value), {
        onNone: () =>
          Effect.fail(
            new ToolError({
              message: `${tool.name} failed: it returned ${describeValue(value)}, not a ToolResult or a string`
            })
          ),
        onSome: Effect.succeed
      })
    })
})

const namePattern = /^[A-Za-z0-9_-]{1,64}$/

/**
 * Validates and adapts custom tools: each entry is an object whose name is a string matching `[A-Za-z0-9_-]{1,64}`,
 * unique and not `resolve`, with a description, an `execute` function and an object JSON Schema that can be made
 * strict (see `fromCustomTool`; a free-form object, `additionalProperties` true or a schema, `$ref`, `oneOf`,
 * `minLength` and other keywords strict function calling refuses are reported with what to change). The first
 * problem fails with `InvalidCustomTool` naming the entry; nothing is registered.
 *
 * @since 0.1.0
 * @category adapters
 */
export const registerCustomTools = (
  tools: Iterable<CustomTool>
): Effect.Effect<ReadonlyArray<CustomToolDefinition>, InvalidCustomTool> =>
  Effect.suspend(() => {
    const seen = new Set<string>()
    const adapted: Array<CustomToolDefinition> = []
    let index = 0
    for (const tool of tools) {
      const checked = safely(
        () => checkDefinition(tool, index, seen),
        Either.left(new InvalidCustomTool({ tool: `#${index}`, index, problem: "cannot be read (a getter threw)" }))
      )
      if (Either.isLeft(checked)) return Effect.fail(checked.left)
      seen.add(tool.name)
      adapted.push(adapt(tool, checked.right))
      index++
    }
    return Effect.succeed(adapted)
  })

// A value's kind with an article, for registration messages: "null", "undefined", "an array", "a number", ...
const aValue = (value: unknown): string => {
  const kind = describeValue(value)
  return kind === "null" || kind === "undefined" || kind.startsWith("an ") ?
    kind :
    /^[aeiou]/.test(kind) ?
    `an ${kind}` :
    `a ${kind}`
}

const checkDefinition = (
  tool: CustomTool,
  index: number,
  seen: ReadonlySet<string>
): Either.Either<StrictSchema, InvalidCustomTool> => {
  const named = typeof tool === "object" && tool !== null && typeof tool.name === "string"
  const bad = (problem: string) =>
    Either.left(new InvalidCustomTool({ tool: named ? tool.name : `#${index}`, index, problem }))
  if (typeof tool !== "object" || tool === null || Array.isArray(tool)) {
    return bad(`the entry is ${aValue(tool)}; each entry must be a custom tool object`)
  }
  if (typeof tool.name !== "string") return bad(`the name must be a string, not ${aValue(tool.name)}`)
  if (!namePattern.test(tool.name)) return bad("the name must match [A-Za-z0-9_-]{1,64}")
  if (tool.name === "resolve") return bad("the name resolve is reserved for the resolve tool")
  if (seen.has(tool.name)) return bad("another custom tool has the same name")
  if (typeof tool.description !== "string" || tool.description.trim() === "") {
    return bad("the description must be a non-empty string")
  }
  if (typeof tool.execute !== "function") return bad("execute must be a function")
  const schemas = Either.try({ try: () => schemasOf(tool.parameters), catch: (thrown) => thrown })
  if (Either.isLeft(schemas)) {
    // What JSONSchema.make says (where, and which annotation is missing), on one line.
    const reason = messageOf(schemas.left).replace(/\s*\n\s*/g, "; ")
    return bad(
      `parameters cannot be turned into JSON Schema: ${reason}. Change that part of the Schema as this says (a ` +
        `"jsonSchema" annotation gives any schema its JSON Schema), or give parameters as a JSON Schema object`
    )
  }
  return Either.mapLeft(schemas.right.strict, ({ path, problem }) =>
    new InvalidCustomTool({
      tool: tool.name,
      index,
      problem: path === "parameters" ? `parameters ${problem}` : `${path} ${problem}`
    }))
}
