/**
 * Plan approval, the standing-handler producer. Entering plan mode installs a standing `resolve` handler (with
 * `StandingResolveHandler.install`) in the mode's own scope. `resolve apply` reads the plan file, derives a safe title
 * slug, and asks the host's approval callback (a UI, a policy, or `autoApprove`): approved closes the mode's scope,
 * which uninstalls the handler and completes `mode.left`; refused keeps the mode. A queued preview in flight always
 * takes precedence over the plan handler (SPEC §4).
 *
 * @example
 * ```ts
 * import { NodeContext } from "@effect/platform-node"
 * import { Effect, Layer } from "effect"
 * import { PlanApproval, ResolveRuntime } from "effect-resolve"
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
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as ExecutionStrategy from "effect/ExecutionStrategy"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Scope from "effect/Scope"
import { ToolError } from "../domain/Errors.js"
import type { Extra, Invoker } from "../domain/ResolveParams.js"
import * as ToolResult from "../domain/ToolResult.js"
import { StandingResolveHandler } from "../services/StandingResolveHandler.js"
import * as PendingAction from "./PendingAction.js"

// -----------------------------------------------------------------------------------------------------------------
// titles
// -----------------------------------------------------------------------------------------------------------------

/**
 * Normalizes a title candidate to a safe slug, or `none` when it is rejected: trim; reject anything containing `/`,
 * `\`, or `..`; drop a trailing `.md`; whitespace to `-`; keep only `[A-Za-z0-9_-]`; collapse runs of `-`; trim `-`
 * at both ends; reject an empty result.
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
  return normalized === "" ? Option.none() : Option.some(normalized)
}

/**
 * The first level-1 ATX heading (`# Title`) of a Markdown text, without its marker.
 *
 * @since 0.1.0
 * @category titles
 */
export const firstHeading = (markdown: string): Option.Option<string> => {
  for (const line of markdown.split("\n")) {
    const match = /^#[ \t]+(.+?)[ \t]*$/.exec(line.replace(/\r$/, ""))
    if (match !== null) return Option.some(match[1]!)
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
}

/**
 * The `sourceToolName` of plan approvals.
 *
 * @since 0.1.0
 * @category constants
 */
export const sourceToolName = "plan"

/**
 * Enters plan mode: forks a mode scope from the current `Scope`, installs the plan handler in it, and returns the
 * mode. The mode ends when the plan is approved, when `leave` is called, or when the enclosing scope closes; each
 * closes the mode scope, which uninstalls the handler (only if it is still the installed one).
 *
 * @since 0.1.0
 * @category constructors
 */
export const enter: <E, R>(
  options: PlanApprovalOptions<E, R>
) => Effect.Effect<PlanMode, never, StandingResolveHandler | FileSystem.FileSystem | Path.Path | Scope.Scope | R> =
  Effect.fn("PlanApproval.enter")(function*<E, R>(options: PlanApprovalOptions<E, R>) {
    const standing = yield* StandingResolveHandler
    const fs = yield* FileSystem.FileSystem
    const path = yield* Path.Path
    const context = yield* Effect.context<R>()
    const outer = yield* Scope.Scope
    const modeScope = yield* Scope.fork(outer, ExecutionStrategy.sequential)
    const exited = yield* Deferred.make<PlanModeExit>()
    yield* Scope.addFinalizer(modeScope, Deferred.succeed(exited, { _tag: "Left" }))

    const planFilePath = path.resolve(options.planFilePath)
    const fileName = path.basename(planFilePath)
    const end = (exit: PlanModeExit) =>
      Effect.uninterruptible(Effect.zipRight(Deferred.succeed(exited, exit), Scope.close(modeScope, Exit.void)))

    const writeFirst = (state: string) =>
      new ToolError({
        message: `No plan to approve: ${planFilePath} ${state}. Write the plan to that file first, then call ` +
          `resolve with action "apply" again. You are still in plan mode.`
      })

    const spec: PendingAction.PendingActionSpec<E | ToolError, R> = {
      label: `Plan: ${fileName}`,
      sourceToolName,
      apply: (reason, extra) =>
        Effect.gen(function*() {
          const content = yield* fs.readFileString(planFilePath).pipe(
            Effect.catchIf(
              (error) => error._tag === "SystemError" && error.reason === "NotFound",
              () => Effect.fail(writeFirst("does not exist"))
            ),
            Effect.mapError((error) =>
              error instanceof ToolError ?
                error :
                new ToolError({ message: `Cannot read the plan ${planFilePath}: ${error.message}` })
            )
          )
          if (content.trim() === "") return yield* writeFirst("is empty")
          const title = planTitle({ extra, content, fileName })
          const details: PlanDetails = { planFilePath, title, planExists: true }
          const decision = yield* options.approve({ planFilePath, title, content, reason, extra })
          if (decision._tag === "Approved") {
            yield* end({ _tag: "Approved", title, planFilePath })
            return ToolResult.text(
              `Plan approved: ${title}. Plan mode is over; implement the plan in ${planFilePath}.`,
              details
            )
          }
          const feedback = Option.match(decision.feedback, { onNone: () => "", onSome: (text) => `: ${text}` })
          return ToolResult.text(
            `Plan refinement requested${feedback}. Revise ${planFilePath} and call resolve with action "apply" ` +
              `again when it is ready. You are still in plan mode.`,
            details
          )
        })
    }

    const handler: Invoker = (invocation) =>
      PendingAction.runResolveInvocation(spec, invocation).pipe(Effect.provide(context))
    yield* Scope.extend(standing.install(handler), modeScope)

    return {
      planFilePath,
      active: Effect.map(Deferred.isDone(exited), (done) => !done),
      left: Deferred.await(exited),
      leave: end({ _tag: "Left" })
    }
  })
