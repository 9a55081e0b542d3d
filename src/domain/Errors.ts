/**
 * The typed errors of effect-resolve. Each is a `Schema.TaggedError` whose `message` tells the caller (often a
 * model) what went wrong and what to do next.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"

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
 * (`"action"`, `"extra.__proto__"`, or `"(root)"`); nothing was changed.
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
      `Call resolve with { "action": "apply" | "discard", "reason": "<one sentence>", "extra"?: { ... } }.`
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
