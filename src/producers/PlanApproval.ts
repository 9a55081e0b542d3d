/**
 * Plan approval, the standing-handler producer. Entering plan mode stages a plan-approval action (the durable kind
 * `kind`, standing: it neither forces `resolve` nor gates other tools) and installs a standing `resolve` handler for
 * it (with `StandingResolveHandler.install`) in the mode's own scope. `resolve apply` reads the plan file, derives a
 * safe title slug, and asks the host's approval callback (a UI, a policy, or `autoApprove`): approved, the action is
 * applied and the mode's scope closes, which uninstalls the handler and completes `mode.left`; refused, a
 * `ToolError` carries the feedback, the action stays pending and the mode stays. A pending preview always takes
 * precedence over the plan handler.
 *
 * @example
 * ```ts
 * import { NodeContext } from "@effect/platform-node"
 * import { Effect, Layer } from "effect"
 * import { ResolveRuntime } from "effect-resolve"
 * import { PlanApproval } from "effect-resolve/plan"
 *
 * const program = Effect.scoped(Effect.gen(function*() {
 *   const mode = yield* PlanApproval.enter({ planFilePath: "/work/PLAN.md", approve: PlanApproval.autoApprove })
 *   // ... the model writes PLAN.md, then calls resolve { action: "apply", reason: "The plan is ready." } ...
 *   const exit = yield* mode.left // { _tag: "Approved", title, planFilePath } once approved
 * })).pipe(Effect.provide(Layer.mergeAll(ResolveRuntime.layer, NodeContext.layer)))
 * ```
 *
 * @since 0.1.0
 */
import * as FileSystem from "@effect/platform/FileSystem"
import * as Path from "@effect/platform/Path"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as ExecutionStrategy from "effect/ExecutionStrategy"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Scope from "effect/Scope"
import { NoPendingAction, type PendingStoreError, ToolError } from "../domain/Errors.js"
import type { Extra, Invoker } from "../domain/ResolveParams.js"
import * as ToolResult from "../domain/ToolResult.js"
import * as ActionKind from "../services/ActionKind.js"
import { PendingActions } from "../services/PendingActions.js"
import { StandingResolveHandler } from "../services/StandingResolveHandler.js"

// -----------------------------------------------------------------------------------------------------------------
// titles
// -----------------------------------------------------------------------------------------------------------------

/**
 * The longest title slug, in characters: a longer one is cut (and loses a trailing `-`).
 *
 * @since 0.1.0
 * @category titles
 */
export const maxSlugLength = 100

/**
 * Normalizes a title candidate to a safe slug, or `none` when it is rejected: trim; reject anything containing `/`,
 * `\`, or `..`; drop a trailing `.md`; whitespace to `-`; keep only `[A-Za-z0-9_-]`; collapse runs of `-`; trim `-`
 * at both ends; cut to `maxSlugLength` characters (no trailing `-` after the cut); reject an empty result. Linear in
 * the candidate's length.
 *
 * @since 0.1.0
 * @category titles
 */
export const slug = (candidate: string): Option.Option<string> => {
  const trimmed = candidate.trim()
  if (trimmed.includes("/") || trimmed.includes("\\") || trimmed.includes("..")) return Option.none()
  const normalized = (trimmed.endsWith(".md") ? trimmed.slice(0, -3) : trimmed)
    .replace(/\s/g, "-")
    .replace(/[^A-Za-z0-9_-]/g, "")
    .replace(/-{2,}/g, "-")
    .replace(/^-+|-+$/g, "")
  // Only ASCII is left, so any index is a character boundary.
  const capped = normalized.length > maxSlugLength ? normalized.slice(0, maxSlugLength).replace(/-$/, "") : normalized
  return capped === "" ? Option.none() : Option.some(capped)
}

const isBlank = (text: string, at: number): boolean => {
  const code = text.charCodeAt(at)
  return code === 0x20 || code === 0x09
}

// A line break other than LF, which the heading text may not hold.
const otherLineBreak = /[\r\u2028\u2029]/

// The text of a level-1 ATX heading on text[start, end) without its line break, or undefined: `#`, one or more
// spaces or tabs, then the text without trailing spaces and tabs (and one trailing CR). Constant work per character.
const headingOn = (text: string, start: number, end: number): string | undefined => {
  if (text.charCodeAt(start) !== 0x23 /* # */) return undefined
  let last = end > start && text.charCodeAt(end - 1) === 0x0D ? end - 1 : end
  let first = start + 1
  if (first >= last || !isBlank(text, first)) return undefined
  while (first < last && isBlank(text, first)) first++
  while (last > first && isBlank(text, last - 1)) last--
  if (first === last) return undefined
  const heading = text.slice(first, last)
  return otherLineBreak.test(heading) ? undefined : heading
}

/**
 * The first level-1 ATX heading (`# Title`) of a Markdown text, without its marker and trailing blanks; a heading
 * with no text is skipped. One pass over the text (linear in its length, whatever its lines hold).
 *
 * @since 0.1.0
 * @category titles
 */
export const firstHeading = (markdown: string): Option.Option<string> => {
  for (let start = 0; start <= markdown.length;) {
    const newline = markdown.indexOf("\n", start)
    const end = newline === -1 ? markdown.length : newline
    const heading = headingOn(markdown, start, end)
    if (heading !== undefined) return Option.some(heading)
    start = end + 1
  }
  return Option.none()
}

/**
 * The plan's title: `extra.title` (when a string), else the first `# Heading`, else the plan file's name, else
 * `plan`; each candidate goes through `slug`, and a rejected one falls through to the next.
 *
 * @since 0.1.0
 * @category titles
 */
export const planTitle = (source: {
  readonly extra: Extra
  readonly content: string
  readonly fileName: string
}): string => {
  const fromExtra = typeof source.extra.title === "string" ? slug(source.extra.title) : Option.none()
  return fromExtra.pipe(
    Option.orElse(() => Option.flatMap(firstHeading(source.content), slug)),
    Option.orElse(() => slug(source.fileName)),
    Option.getOrElse(() => "plan")
  )
}

// Strict: malformed UTF-8 is an error, not U+FFFD. A leading BOM is dropped.
const utf8 = new TextDecoder("utf-8", { fatal: true })

// -----------------------------------------------------------------------------------------------------------------
// decisions
// -----------------------------------------------------------------------------------------------------------------

/**
 * What the approval callback sees: the plan file, its derived title and content, and the model's call.
 *
 * @since 0.1.0
 * @category models
 */
export interface PlanSubmission {
  readonly planFilePath: string
  readonly title: string
  readonly content: string
  readonly reason: string
  readonly extra: Extra
}

/**
 * The approval callback's answer.
 *
 * @since 0.1.0
 * @category models
 */
export type PlanDecision =
  | { readonly _tag: "Approved" }
  | { readonly _tag: "Refused"; readonly feedback: Option.Option<string> }

/**
 * The plan is approved.
 *
 * @since 0.1.0
 * @category constructors
 */
export const approved: PlanDecision = { _tag: "Approved" }

/**
 * The plan needs refinement; `feedback` is passed to the model.
 *
 * @since 0.1.0
 * @category constructors
 */
export const refused = (feedback?: string): PlanDecision => ({
  _tag: "Refused",
  feedback: Option.fromNullable(feedback).pipe(Option.filter((text) => text.trim() !== ""))
})

/**
 * An approval callback that approves every plan.
 *
 * @since 0.1.0
 * @category constructors
 */
export const autoApprove = (_submission: PlanSubmission): Effect.Effect<PlanDecision> => Effect.succeed(approved)

/**
 * How plan mode ended: `Approved`, or `Left` (the host called `leave`, or the enclosing scope closed).
 *
 * @since 0.1.0
 * @category models
 */
export type PlanModeExit =
  | { readonly _tag: "Approved"; readonly title: string; readonly planFilePath: string }
  | { readonly _tag: "Left" }

/**
 * The details of a plan approval's result (under `sourceResultDetails`).
 *
 * @since 0.1.0
 * @category models
 */
export interface PlanDetails {
  readonly planFilePath: string
  readonly title: string
  readonly planExists: true
}

/**
 * Plan mode, while it lasts.
 *
 * @since 0.1.0
 * @category models
 */
export interface PlanMode {
  /** The plan file, resolved to an absolute path. */
  readonly planFilePath: string
  /** Whether the mode is still on (its handler installed). */
  readonly active: Effect.Effect<boolean>
  /** Waits until the mode ends and says how. */
  readonly left: Effect.Effect<PlanModeExit>
  /** Leaves the mode without approval: closes its scope. */
  readonly leave: Effect.Effect<void>
}

/**
 * How to enter plan mode.
 *
 * @since 0.1.0
 * @category models
 */
export interface PlanApprovalOptions<E, R> {
  /** Where the model writes the plan (relative paths resolve against the working directory). */
  readonly planFilePath: string
  /** Decides on a submitted plan. A failure is an apply failure: the mode stays. */
  readonly approve: (submission: PlanSubmission) => Effect.Effect<PlanDecision, E, R>
  /**
   * The largest plan file accepted, in bytes (a positive integer; default `defaultMaxPlanBytes`, 1 MiB). A larger
   * plan is refused with a `ToolError` asking the model to shorten it; the mode stays.
   */
  readonly maxPlanBytes?: number
}

/**
 * The default `maxPlanBytes`: 1 MiB.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultMaxPlanBytes = 1_048_576

/**
 * The `sourceToolName` of plan approvals.
 *
 * @since 0.1.0
 * @category constants
 */
export const sourceToolName = "plan"

/**
 * The approval callback of plan mode, as a service: `enter` provides its `approve` option as this for the plan it
 * stages; a durable session that restores a plan after a restart needs it from the layer
 * (`ResolveRuntime.layerDurable({ kinds: [PlanApproval.kind], ... })` requires it).
 *
 * @since 0.2.0
 * @category tags
 */
export class Approver extends Context.Tag("effect-resolve/PlanApproval/Approver")<
  Approver,
  (submission: PlanSubmission) => Effect.Effect<PlanDecision, unknown>
>() {}

/**
 * The payload of a plan-approval action: the plan file and the size cap.
 *
 * @since 0.2.0
 * @category schemas
 */
export const PlanPayload = Schema.Struct({ planFilePath: Schema.String, maxPlanBytes: Schema.Number })

const stillInPlanMode = `then call resolve with action "apply" again. You are still in plan mode.`

// The plan as text: a regular file (a FIFO or a device would block or never end), within the size cap (checked
// before reading, and again on what was read in case it grew), valid UTF-8 (never approved with U+FFFD).
const readPlan = (
  fs: FileSystem.FileSystem,
  planFilePath: string,
  maxPlanBytes: number
): Effect.Effect<string, ToolError> => {
  const writeFirst = (state: string) =>
    new ToolError({
      message: `No plan to approve: ${planFilePath} ${state}. Write the plan to that file first, ${stillInPlanMode}`
    })
  const tooLarge = (bytes: number | bigint) =>
    new ToolError({
      message: `The plan ${planFilePath} is ${bytes} bytes; at most ${maxPlanBytes} bytes are accepted. Shorten ` +
        `the plan (keep the steps and decisions, leave out detail that belongs in the code), ${stillInPlanMode}`
    })
  return Effect.gen(function*() {
    const info = yield* fs.stat(planFilePath)
    if (info.type !== "File") {
      return yield* new ToolError({
        message: `No plan to approve: ${planFilePath} is not a regular file (${info.type}). Write the plan to ` +
          `that file, ${stillInPlanMode}`
      })
    }
    if (info.size > BigInt(maxPlanBytes)) return yield* tooLarge(info.size)
    const bytes = yield* fs.readFile(planFilePath)
    if (bytes.length > maxPlanBytes) return yield* tooLarge(bytes.length)
    const content = yield* Effect.try({
      try: () => utf8.decode(bytes),
      catch: () =>
        new ToolError({
          message: `The plan ${planFilePath} is not valid UTF-8 text. Rewrite it as UTF-8 text, ${stillInPlanMode}`
        })
    })
    if (content.trim() === "") return yield* writeFirst("is empty")
    return content
  }).pipe(
    Effect.catchIf(
      (error) => error._tag === "SystemError" && error.reason === "NotFound",
      () => Effect.fail(writeFirst("does not exist"))
    ),
    Effect.mapError((error) =>
      error instanceof ToolError ?
        error :
        new ToolError({
          message: `Cannot read the plan ${planFilePath}: ${error.message}. Make sure the file is a readable ` +
            `text file, ${stillInPlanMode}`
        })
    )
  )
}

/**
 * The contract of the plan-approval kind: its name and payload, standing (it neither forces `resolve` nor gates
 * other tools), no amendment. No requirements: an approval inbox that only lists plan approvals takes it.
 *
 * @since 0.4.0
 * @category kinds
 */
export const contract = ActionKind.contract({ name: "plan", payload: PlanPayload, standing: true })

/**
 * The durable kind of a plan approval (`contract` with its handlers; standing: it neither forces `resolve` nor gates
 * other tools). `apply` reads
 * the plan, derives its title and asks the `Approver`: approved, the action is applied; refused, `apply` fails with
 * a `ToolError` carrying the feedback ("Plan refinement requested ..."), so the action stays pending and the mode
 * goes on. After a crash during an approval, it is pending again (`recover`): the approval is asked again.
 *
 * @since 0.2.0
 * @category kinds
 */
export const kind = ActionKind.implement(contract, {
  apply: ({ maxPlanBytes, planFilePath }, call) =>
    Effect.gen(function*() {
      const fs = yield* FileSystem.FileSystem
      const path = yield* Path.Path
      const approve = yield* Approver
      const fileName = path.basename(planFilePath)
      const content = yield* readPlan(fs, planFilePath, maxPlanBytes)
      const title = planTitle({ extra: call.extra, content, fileName })
      const details: PlanDetails = { planFilePath, title, planExists: true }
      const decision = yield* approve({ planFilePath, title, content, reason: call.reason, extra: call.extra })
      if (decision._tag === "Approved") {
        return ToolResult.text(
          `Plan approved: ${title}. Plan mode is over; implement the plan in ${planFilePath}.`,
          details
        )
      }
      // Feedback ends with its own full stop, or gets one.
      const feedback = Option.match(decision.feedback, {
        onNone: () => ".",
        onSome: (text) => `: ${text.trim()}${/[.!?]$/.test(text.trim()) ? "" : "."}`
      })
      return yield* new ToolError({
        message: `Plan refinement requested${feedback} Revise ${planFilePath} and call resolve with action ` +
          `"apply" again when it is ready. You are still in plan mode.`
      })
    }),
  recover: () => Effect.succeed("pending" as const)
})

// The preview of a plan action: also how `enter` recognises the plan of a restored session.
const planPreview = (planFilePath: string) =>
  `Plan mode: write the plan to ${planFilePath}, then call resolve with action "apply" to ask for approval.`

/**
 * Enters plan mode: stages a plan-approval action of `kind` (or, in a restored durable session, takes up the one
 * still pending for the same file), forks a mode scope from the current `Scope`, and installs the standing handler
 * that resolves that action. The mode ends when the plan is approved, when `leave` is called, or when the enclosing
 * scope closes; each closes the mode scope, which uninstalls the handler (only if it is still the installed one) and
 * clears the action unless it was approved.
 *
 * @since 0.1.0
 * @category constructors
 */
export const enter: <E, R>(
  options: PlanApprovalOptions<E, R>
) => Effect.Effect<
  PlanMode,
  PendingStoreError,
  StandingResolveHandler | PendingActions | FileSystem.FileSystem | Path.Path | Scope.Scope | R
> = Effect.fn("PlanApproval.enter")(function*<E, R>(options: PlanApprovalOptions<E, R>) {
  const standing = yield* StandingResolveHandler
  const pending = yield* PendingActions
  const path = yield* Path.Path
  const context = yield* Effect.context<R>()
  const maxPlanBytes = options.maxPlanBytes ?? defaultMaxPlanBytes
  if (!Number.isSafeInteger(maxPlanBytes) || maxPlanBytes <= 0) {
    return yield* Effect.dieMessage(
      `PlanApproval.enter: maxPlanBytes must be a positive integer, got ${maxPlanBytes}`
    )
  }
  const planFilePath = path.resolve(options.planFilePath)
  const preview = planPreview(planFilePath)
  const approve = (submission: PlanSubmission) => Effect.provide(options.approve(submission), context)
  const files = yield* Effect.context<FileSystem.FileSystem | Path.Path>()
  const restored = (yield* pending.list).find((info) =>
    info.kind === kind.name && info.status === "pending" && info.preview === preview
  )
  const stagePlan = Effect.map(
    pending.stageKind(kind, { planFilePath, maxPlanBytes }, {
      label: `Plan: ${path.basename(planFilePath)}`,
      sourceToolName,
      preview
    }).pipe(Effect.provideService(Approver, approve), Effect.provide(files)),
    (handle) => handle.id
  )
  // The plan action the mode resolves; a discarded one is replaced, so the mode (and its handler) stays.
  let id = restored !== undefined ? restored.id : yield* stagePlan

  const outer = yield* Scope.Scope
  const modeScope = yield* Scope.fork(outer, ExecutionStrategy.sequential)
  const exited = yield* Deferred.make<PlanModeExit>()
  yield* Scope.addFinalizer(
    modeScope,
    Effect.zipRight(Deferred.succeed(exited, { _tag: "Left" }), Effect.ignore(Effect.suspend(() => pending.clear(id))))
  )
  const end = (exit: PlanModeExit) =>
    Effect.uninterruptible(Effect.zipRight(Deferred.succeed(exited, exit), Scope.close(modeScope, Exit.void)))

  const handler: Invoker = (invocation) =>
    Effect.tap(
      pending.resolveOr({ ...invocation, id }, () => Effect.fail(new NoPendingAction())),
      (result) => {
        if (invocation.action === "discard") {
          return Effect.orDie(Effect.map(stagePlan, (next) => {
            id = next
          }))
        }
        const details = (result.details as { sourceResultDetails?: PlanDetails } | undefined)?.sourceResultDetails
        return end({ _tag: "Approved", title: details?.title ?? "plan", planFilePath })
      }
    )
  yield* Scope.extend(standing.install(handler), modeScope)

  return {
    planFilePath,
    active: Effect.map(Deferred.isDone(exited), (done) => !done),
    left: Deferred.await(exited),
    leave: end({ _tag: "Left" })
  }
})
