/**
 * Terminal rendering of `resolve` calls: one inline block merging the call and its result, with the status
 * (`Accept`, `Discard` or `Failed`), the label split into a summary and a `[source]` badge, the reason, and the
 * result's first line or the error. Failures keep the label and the reason. Lines never exceed `width` terminal
 * columns (measured with `string-width`, so wide CJK and emoji characters count as 2): the header is shortened with
 * `…`, the reason and the detail are wrapped over several lines (`wrap-ansi`). Model-provided text is stripped of
 * control characters, so a reason cannot inject terminal escapes. Colours come from Node's `util.styleText` and are
 * off when `NO_COLOR` is set (unless `color: true` is passed). `intent` is the one-line status-bar form.
 *
 * @example
 * ```ts
 * import { Exit } from "effect"
 * import { ToolResult } from "effect-resolve"
 * import { Renderer } from "effect-resolve/render"
 *
 * const lines = Renderer.renderResolve(
 *   { action: "apply", reason: "The diff matches the request." },
 *   Exit.succeed(ToolResult.text("Applied.", { action: "apply", reason: "...", label: "Edit: 1 replacement in 1 file" })),
 *   { width: 80, color: false }
 * )
 * // ["Accept 1 replacement in 1 file [Edit]", "  The diff matches the request.", "  Applied."]
 * Renderer.intent({ action: "discard", reason: "Too broad." }) // "discarding: Too broad."
 * ```
 *
 * @since 0.1.0
 */
import * as Cause from "effect/Cause"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import { styleText } from "node:util"
import measure from "string-width"
import wrapAnsi from "wrap-ansi"
import type { ToolResult } from "../domain/ToolResult.js"
import { messageOf, safely, stringProperty } from "../internal/render.js"

// -----------------------------------------------------------------------------------------------------------------
// width
// -----------------------------------------------------------------------------------------------------------------

/**
 * The number of terminal columns `text` takes (`string-width`): wide CJK and emoji graphemes count 2, combining marks
 * and zero-width characters 0, ANSI escapes 0.
 *
 * @since 0.1.0
 * @category width
 */
export const stringWidth = (text: string): number => measure(text)

/**
 * Shortens `text` to at most `width` columns, ending with `…` when something was cut. A wide character that would
 * cross the limit is dropped whole; ANSI styles are closed (the cut is `wrap-ansi`'s first line).
 *
 * @since 0.1.0
 * @category width
 */
export const truncate = (text: string, width: number): string => {
  const columns = Math.max(1, Math.floor(width))
  if (measure(text) <= columns) return text
  const kept = wrapAnsi(text, Math.max(1, columns - 1), { hard: true, wordWrap: false, trim: false }).split("\n")[0]!
  // At one column, or when the first character alone is wider than the room left, only the ellipsis fits.
  return columns === 1 || measure(kept) > columns - 1 ? "…" : `${kept}…`
}

// Word wrap; a line that still does not fit (one wide character in a column) is shortened.
const wrap = (text: string, width: number): Array<string> =>
  text === "" ?
    [""] :
    wrapAnsi(text, Math.max(1, Math.floor(width)), { hard: true, trim: true }).split("\n").map((line) =>
      truncate(line, width)
    )

// -----------------------------------------------------------------------------------------------------------------
// styles
// -----------------------------------------------------------------------------------------------------------------

type Format = Parameters<typeof styleText>[0]

const styles = {
  accept: ["bold", "green"],
  discard: ["bold", "yellow"],
  failed: ["bold", "red"],
  badge: "cyan",
  dim: "dim",
  error: "red"
} as const satisfies Record<string, Format>

// `validateStream: false`: whether to colour is this module's decision (the `color` option, `NO_COLOR`), not a guess
// from `process.stdout` (which Node versions make differently, and which may not be where the lines go).
const paint = (text: string, format: Format | undefined, color: boolean): string =>
  color && format !== undefined && text !== "" ? styleText(format, text, { validateStream: false }) : text

/** Colours are on unless `NO_COLOR` is set to a non-empty value (https://no-color.org). */
const colorByDefault = (): boolean => {
  const noColor = globalThis.process?.env?.NO_COLOR
  return noColor === undefined || noColor === ""
}

// Control characters (C0, DEL, C1) would move the cursor or start escape sequences: tabs become a space, the rest
// are dropped.

const controls = /[\u0000-\u0008\u000B-\u001F\u007F-\u009F]/g

const clean = (text: string): string => text.replace(/\t/g, " ").replace(/\r\n?/g, "\n").replace(controls, "")

const oneLine = (text: string): string => clean(text).replace(/\s+/g, " ").trim()

// -----------------------------------------------------------------------------------------------------------------
// render
// -----------------------------------------------------------------------------------------------------------------

/**
 * A `resolve` call as the model made it (possibly partial while it streams).
 *
 * @since 0.1.0
 * @category models
 */
export interface ResolveCallLike {
  readonly action?: string
  readonly reason?: string
  readonly extra?: unknown
}

/**
 * What a `resolve` call produced: its `Exit` (from `Effect.exit(ResolveTool.execute(...))`) or the `ToolResult`.
 *
 * @since 0.1.0
 * @category models
 */
export type ResolveOutcome = Exit.Exit<ToolResult, unknown> | ToolResult

/**
 * @since 0.1.0
 * @category models
 */
export interface RenderOptions {
  /** Terminal columns; no line is longer. */
  readonly width: number
  /** ANSI colours, or plain text. Default: colours unless the `NO_COLOR` environment variable is set. */
  readonly color?: boolean
  /** The label to show when neither the result nor the error carries one (a `ToolError` from `apply`). */
  readonly label?: string
}

/**
 * The three kinds of block.
 *
 * @since 0.1.0
 * @category models
 */
export type Status = "Accept" | "Discard" | "Failed"

/**
 * Splits a label at the first `": "` into the `[source]` badge (before) and the summary (after); a label without
 * `": "` is all summary.
 *
 * @since 0.1.0
 * @category render
 */
export const splitLabel = (label: string): { readonly summary: string; readonly badge: Option.Option<string> } => {
  const at = label.indexOf(": ")
  return at <= 0 ?
    { summary: label, badge: Option.none() } :
    { summary: label.slice(at + 2), badge: Option.some(label.slice(0, at)) }
}

// Guarded: `details` is whatever a tool returned (a getter may throw, a Proxy may trap).
const stringField = (value: unknown, key: string): Option.Option<string> =>
  Option.fromNullable(stringProperty(value, key))

const textOf = (result: ToolResult): string => result.content.map((block) => block.text).join("\n")

interface Classified {
  readonly status: Status
  readonly label: Option.Option<string>
  readonly source: Option.Option<string>
  readonly reason: Option.Option<string>
  readonly detail: Option.Option<string>
}

const classify = (call: ResolveCallLike, outcome: ResolveOutcome): Classified => {
  const callReason = Option.fromNullable(call.reason).pipe(Option.filter((r) => r.trim() !== ""))
  if (Exit.isExit(outcome) && Exit.isFailure(outcome)) {
    // The error may be any value (a defect, a failure of a foreign type): every read of it is guarded.
    const failure = Cause.failureOption(outcome.cause)
    const error = Option.isSome(failure) ?
      failure.value :
      Cause.isInterruptedOnly(outcome.cause) ?
      { message: "Interrupted; the pending action is unchanged." } :
      safely(() => Cause.squash(outcome.cause), undefined)
    return {
      status: "Failed",
      label: Option.fromNullable(stringProperty(error, "label")),
      source: Option.fromNullable(stringProperty(error, "sourceToolName")),
      reason: callReason,
      detail: Option.some(messageOf(error))
    }
  }
  const result = Exit.isExit(outcome) ? (outcome as Exit.Success<ToolResult, unknown>).value : outcome
  const details = result.details
  const action = call.action ?? Option.getOrUndefined(stringField(details, "action"))
  return {
    status: result.isError === true ? "Failed" : action === "discard" ? "Discard" : "Accept",
    label: stringField(details, "label"),
    source: stringField(details, "sourceToolName"),
    reason: Option.orElse(callReason, () => stringField(details, "reason")),
    detail: Option.some(textOf(result).split("\n")[0] ?? "").pipe(Option.filter((line) => line.trim() !== ""))
  }
}

/**
 * The merged call/result block of a `resolve` call, as terminal lines:
 *
 * ```text
 * Accept 2 replacements in 1 file [Edit]
 *   <reason>
 *   <first line of the result, or the error>
 * ```
 *
 * `Accept` for a successful apply, `Discard` for a discard, `Failed` for an error or an `isError` result; failures
 * keep the label (from the error, the result, or `options.label`) and the reason (from the call). No line exceeds
 * `options.width` columns.
 *
 * @since 0.1.0
 * @category render
 */
export const renderResolve = (
  call: ResolveCallLike,
  outcome: ResolveOutcome,
  options: RenderOptions
): ReadonlyArray<string> => {
  const c = classify(call, outcome)
  const label = Option.orElse(c.label, () => Option.fromNullable(options.label)).pipe(
    Option.getOrElse(() => "pending action")
  )
  const split = splitLabel(oneLine(label))
  const badge = Option.orElse(split.badge, () => Option.map(c.source, oneLine))
  const color = options.color ?? colorByDefault()
  const width = Math.max(1, Math.floor(options.width))
  const statusStyle = c.status === "Accept" ? styles.accept : c.status === "Discard" ? styles.discard : styles.failed
  const header = paint(c.status, statusStyle, color) + ` ${split.summary}` +
    Option.match(badge, { onNone: () => "", onSome: (b) => paint(` [${b}]`, styles.badge, color) })
  const lines = [truncate(header, width)]
  // Indented lines: the reason wraps in full; the detail wraps to at most `maxDetailLines` lines.
  const indent = width > 2 ? "  " : ""
  const body = width - indent.length
  const reason = Option.getOrElse(c.reason, () => "(no reason given)")
  for (const paragraph of clean(reason).split("\n")) {
    for (const line of wrap(paragraph, body)) lines.push(indent + line)
  }
  if (Option.isSome(c.detail)) {
    const style = c.status === "Failed" ? styles.error : styles.dim
    const wrapped = clean(c.detail.value).split("\n").flatMap((paragraph) => wrap(paragraph, body))
    const shown = wrapped.length <= maxDetailLines ?
      wrapped :
      [...wrapped.slice(0, maxDetailLines - 1), truncate(`${wrapped[maxDetailLines - 1]} …`, body)]
    for (const line of shown) lines.push(paint(indent + line, style, color))
  }
  return lines
}

/** The detail (a result's first line, or the error) shows at most this many wrapped lines. */
const maxDetailLines = 4

/**
 * A one-line status-bar text for a call: `accepting: <reason>` or `discarding: <reason>` (`resolving: ...` while the
 * action is unknown), shortened to `width` columns when given.
 *
 * @since 0.1.0
 * @category render
 */
export const intent = (call: ResolveCallLike, options: { readonly width?: number } = {}): string => {
  const verb = call.action === "apply" ? "accepting" : call.action === "discard" ? "discarding" : "resolving"
  const reason = oneLine(call.reason ?? "")
  const text = reason === "" ? verb : `${verb}: ${reason}`
  return options.width === undefined ? text : truncate(text, options.width)
}

// -----------------------------------------------------------------------------------------------------------------
// a turn
// -----------------------------------------------------------------------------------------------------------------

/**
 * One tool call of a model turn, as the turn driver records it (the fields of `TurnDriver`'s `ToolCallRecord` read
 * here; a record of `TurnRecord.toolCalls` is one).
 *
 * @since 0.3.0
 * @category models
 */
export interface TurnCallLike {
  readonly name: string
  readonly params: unknown
  readonly outcome: "executed" | "skipped" | "interrupted"
  readonly isFailure: boolean
  /** What the model read back: an encoded `ToolResult`, or a failure `{ error, message }`. */
  readonly result: unknown
}

const isToolResult = (value: unknown): value is ToolResult =>
  safely(() => {
    const content = (value as { readonly content?: unknown } | null)?.content
    return Array.isArray(content) &&
      content.every((block) => typeof (block as { readonly text?: unknown } | null)?.text === "string")
  }, false)

const failureText = (call: TurnCallLike): string =>
  stringProperty(call.result, "message") ??
    (call.outcome === "skipped"
      ? "Skipped."
      : call.outcome === "interrupted"
      ? "Interrupted before it ran."
      : "Failed.")

/**
 * The blocks of every `resolve` call of one turn, in the order the model sent them: a response of a parallel batch
 * resolves several previews at once, and each gets its `renderResolve` block, numbered `1/3`, `2/3`, ... when there
 * are several. Other tools' calls are left out; a call that failed, or that the driver skipped or did not run,
 * renders as `Failed` with what the model was told. No line exceeds `options.width` columns.
 *
 * @since 0.3.0
 * @category render
 */
export const renderTurn = (calls: ReadonlyArray<TurnCallLike>, options: RenderOptions): ReadonlyArray<string> => {
  const resolves = calls.filter((call) => call.name === "resolve")
  const width = Math.max(1, Math.floor(options.width))
  return resolves.flatMap((call, index) => {
    const action = stringProperty(call.params, "action")
    const reason = stringProperty(call.params, "reason")
    const params: ResolveCallLike = {
      ...(action === undefined ? {} : { action }),
      ...(reason === undefined ? {} : { reason })
    }
    const outcome: ResolveOutcome = call.outcome === "executed" && !call.isFailure && isToolResult(call.result) ?
      call.result :
      Exit.fail(new Error(failureText(call)))
    const [head = "", ...rest] = renderResolve(params, outcome, options)
    return resolves.length < 2 ? [head, ...rest] : [truncate(`${index + 1}/${resolves.length} ${head}`, width), ...rest]
  })
}
