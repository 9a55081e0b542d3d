/**
 * The typed errors of effect-resolve. Each is a `Schema.TaggedError` whose `message` tells the caller (often a
 * model) what went wrong and what to do next.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import { PendingStatus } from "./PendingRecord.js"

/**
 * The general tool-facing error: a tool (or a preview producer's `apply`) fails with it to send `message` to the
 * model unchanged. `resolve` passes it through without wrapping it in `ApplyFailed`.
 *
 * @since 0.1.0
 * @category errors
 */
export class ToolError extends Schema.TaggedError<ToolError>("effect-resolve/ToolError")("ToolError", {
  message: Schema.String
}) {}

/**
 * `apply` of a pending action failed with something other than a `ToolError`, or died. The action stays pending,
 * so the model can retry or discard it.
 *
 * @since 0.1.0
 * @category errors
 */
export class ApplyFailed extends Schema.TaggedError<ApplyFailed>("effect-resolve/ApplyFailed")("ApplyFailed", {
  /** The label of the pending action that failed. */
  label: Schema.String,
  /** The tool that staged the action. */
  sourceToolName: Schema.String,
  /** What the failure said, without the `Apply failed: ` prefix. */
  detail: Schema.String,
  /** The original failure or defect. */
  cause: Schema.Defect
}) {
  /**
   * @since 0.1.0
   */
  override get message(): string {
    return `Apply failed: ${this.detail}`
  }
}

/**
 * `resolve` was called but nothing is pending: no staged preview is in flight and no standing handler is installed,
 * or the in-flight preview was already resolved by another call.
 *
 * @since 0.1.0
 * @category errors
 */
export class NoPendingAction extends Schema.TaggedError<NoPendingAction>("effect-resolve/NoPendingAction")(
  "NoPendingAction",
  {
    message: Schema.optionalWith(Schema.String, {
      default: () => "No pending action to resolve. Nothing to apply or discard."
    })
  }
) {}

/**
 * The model called `resolve` with parameters that do not decode. `field` is the path of the first bad field
 * (`"action"`, `"extra.__proto__"`, or `"(root)"`); nothing was changed. The message shows the call as the
 * model-facing schema (`ResolveTool.parameters`) asks for it: every parameter given, `extra` a JSON object as text or
 * `null`, `id` a pending action's id or `null`.
 *
 * @since 0.1.0
 * @category errors
 */
export class InvalidResolveParams
  extends Schema.TaggedError<InvalidResolveParams>("effect-resolve/InvalidResolveParams")("InvalidResolveParams", {
    field: Schema.String,
    problem: Schema.String
  })
{
  /**
   * @since 0.1.0
   */
  override get message(): string {
    return `Invalid resolve parameters: ${this.field}: ${this.problem}. ` +
      `Call resolve with { "action": "apply" | "discard", "reason": "<one sentence>", ` +
      `"extra": null | "<a JSON object as text>", "id": null | "<a pending action's id>" }.`
  }
}

/**
 * A directive was pushed with no tool choices; nothing was queued.
 *
 * @since 0.1.0
 * @category errors
 */
export class EmptyDirective extends Schema.TaggedError<EmptyDirective>("effect-resolve/EmptyDirective")(
  "EmptyDirective",
  { label: Schema.String }
) {
  /**
   * @since 0.1.0
   */
  override get message(): string {
    return `Directive "${this.label}" has no tool choices; push at least one choice.`
  }
}

/**
 * A tool list was requested with a name no registered tool has.
 *
 * @since 0.1.0
 * @category errors
 */
export class UnknownTool extends Schema.TaggedError<UnknownTool>("effect-resolve/UnknownTool")("UnknownTool", {
  name: Schema.String,
  available: Schema.Array(Schema.String)
}) {
  /**
   * @since 0.1.0
   */
  override get message(): string {
    return `Unknown tool "${this.name}". Available tools: ${this.available.join(", ") || "(none)"}.`
  }
}

/**
 * A store operation failed. `operation` is the `PendingStore` method, `detail` what went wrong and what it means
 * for the store (bad input and a duplicate id change nothing; a database failure says how to find out what
 * happened).
 *
 * @since 0.2.0
 * @category errors
 */
export class PendingStoreError
  extends Schema.TaggedError<PendingStoreError>("effect-resolve/PendingStoreError")("PendingStoreError", {
    operation: Schema.String,
    detail: Schema.String,
    cause: Schema.optional(Schema.Defect),
    /**
     * Why a write of an exclusive session was refused, when that is the reason (0.4): `"fenced"`, another runtime
     * instance owns the session now (a newer owner epoch); `"leaseLapsed"`, this instance's lease passed before it
     * was renewed, and it is never taken again. Either way this instance must stop writing for the session.
     */
    reason: Schema.optional(Schema.Literal("fenced", "leaseLapsed"))
  })
{
  /**
   * @since 0.2.0
   */
  override get message(): string {
    return `PendingStore.${this.operation} failed: ${this.detail}`
  }
}

/**
 * Whether a store error says that this runtime instance lost its session (fenced by a newer owner, or its lease
 * lapsed): it must stop writing for the session, and reopen it to continue.
 *
 * @since 0.4.0
 * @category refinements
 */
export const isOwnershipLost = (error: unknown): error is PendingStoreError =>
  error instanceof PendingStoreError && error.reason !== undefined

/**
 * One pending action as an error lists it: its id and label.
 *
 * @since 0.2.0
 * @category models
 */
export const PendingSummary = Schema.Struct({ id: Schema.String, label: Schema.String })

/**
 * @since 0.2.0
 * @category models
 */
export type PendingSummary = typeof PendingSummary.Type

// At most this many pending actions are named in a message (the rest are counted).
const listedMax = 10

const listPending = (pending: ReadonlyArray<PendingSummary>): string => {
  if (pending.length === 0) return "Nothing is pending."
  const named = pending.slice(0, listedMax).map((p) => `${p.id} ("${p.label}")`).join(", ")
  const more = pending.length > listedMax ? ` and ${pending.length - listedMax} more` : ""
  return `Pending now, most recent first: ${named}${more}. Call resolve with one of these ids, or without an id ` +
    `for the most recent.`
}

/**
 * `resolve` named an id no action of this session has. `pending` lists what is pending, most recent first.
 *
 * @since 0.2.0
 * @category errors
 */
export class UnknownPendingAction
  extends Schema.TaggedError<UnknownPendingAction>("effect-resolve/UnknownPendingAction")("UnknownPendingAction", {
    id: Schema.String,
    pending: Schema.Array(PendingSummary)
  })
{
  /**
   * @since 0.2.0
   */
  override get message(): string {
    return `No pending action has the id ${JSON.stringify(this.id)}. ${listPending(this.pending)}`
  }
}

/**
 * `resolve` named an action that is not pending: being resolved by another call, already applied or discarded,
 * cleared by the app, expired, orphaned (its stager is gone with its callbacks: it can only be discarded), in
 * conflict after a crash, or unreadable (its stored row cannot be read: it can only be discarded). Nothing was run. `pending` lists what is pending, most recent first.
 *
 * @since 0.2.0
 * @category errors
 */
export class PendingActionNotPending extends Schema.TaggedError<PendingActionNotPending>(
  "effect-resolve/PendingActionNotPending"
)("PendingActionNotPending", {
  id: Schema.String,
  label: Schema.String,
  status: PendingStatus,
  pending: Schema.Array(PendingSummary)
}) {
  /**
   * @since 0.2.0
   */
  override get message(): string {
    const what = `The pending action ${this.id} ("${this.label}")`
    const state = this.status === "resolving" ?
      "is being resolved by another call; wait for its result" :
      this.status === "expired" ?
      "expired; stage it again if it is still wanted" :
      this.status === "cleared" ?
      "was cleared by the app" :
      this.status === "orphaned" ?
      "was staged before a restart by a tool whose callbacks are gone; it can only be discarded " +
      "(resolve with action \"discard\"), then staged again" :
      this.status === "conflict" ?
      "could not be confirmed after a crash; a person must check it before anything else is done" :
      this.status === "unreadable" ?
      "could not be read from the store (list shows why), so it is never applied; discard it (resolve with " +
      "action \"discard\") and stage it again" :
      `was already ${this.status}`
    return `${what} ${state}. ${listPending(this.pending)}`
  }
}

/**
 * `resolve` named an action that another live process staged and that this process cannot run (a closure, or a
 * kind this process does not register): its callbacks live in that process, so it resolves it. Nothing was run and
 * nothing changed. When that process is gone (it exited, or its lease ended without renewal), the action is
 * `orphaned`, or runnable here if this process registers its kind.
 *
 * @since 0.3.0
 * @category errors
 */
export class PendingActionElsewhere extends Schema.TaggedError<PendingActionElsewhere>(
  "effect-resolve/PendingActionElsewhere"
)("PendingActionElsewhere", {
  id: Schema.String,
  label: Schema.String,
  /** The runtime instance that staged it: `<host>:<pid>:<thread>:<random>`. */
  stager: Schema.String,
  pending: Schema.Array(PendingSummary)
}) {
  /**
   * @since 0.3.0
   */
  override get message(): string {
    return `The pending action ${this.id} ("${this.label}") was staged by another process that is still running ` +
      `(${this.stager}); only that process can run it, so resolve it there. ${listPending(this.pending)}`
  }
}

/**
 * A `resolve` call named an action that an earlier `resolve` call of the same model response already resolved (or
 * tried to): each id is served once per response, in the order the calls were sent. Nothing was run. `status` is the
 * action's status after that earlier call: read its result first; if the action is still `pending` (its apply
 * failed), resolve it again in the next response.
 *
 * @since 0.3.0
 * @category errors
 */
export class ResolvedInThisResponse extends Schema.TaggedError<ResolvedInThisResponse>(
  "effect-resolve/ResolvedInThisResponse"
)("ResolvedInThisResponse", {
  id: Schema.String,
  label: Schema.String,
  status: PendingStatus
}) {
  /**
   * @since 0.3.0
   */
  override get message(): string {
    const still = this.status === "pending" ?
      " It is still pending: read that call's result, then resolve it again in your next response." :
      " Read that call's result; do not resolve it again."
    return `The pending action ${this.id} ("${this.label}") was already resolved by an earlier resolve call of ` +
      `this response (its status is now ${this.status}). Each id is resolved once per response.${still}`
  }
}
