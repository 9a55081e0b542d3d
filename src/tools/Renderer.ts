/**
 * Terminal rendering of `resolve` calls (SPEC §7): one inline block merging the call and its result, with the status
 * (`Accept`, `Discard` or `Failed`), the label split into a summary and a `[source]` badge, the reason, and the
 * result's first line or the error. Failures keep the label and the reason. Lines never exceed `width` terminal
 * columns (wide CJK and emoji characters count as 2); model-provided text is stripped of control characters, so a
 * reason cannot inject terminal escapes. `intent` is the one-line status-bar form.
 *
 * @example
 * ```ts
 * import { Exit } from "effect"
 * import { Renderer, ToolResult } from "effect-resolve"
 *
 * const lines = Renderer.renderResolve(
 *   { action: "apply", reason: "The diff matches the request." },
 *   Exit.succeed(ToolResult.text("Applied.", { action: "apply", reason: "...", label: "Edit: 1 replacement(s) in 1 file(s)" })),
 *   { width: 80, color: false }
 * )
 * // ["Accept 1 replacement(s) in 1 file(s) [Edit]", "  The diff matches the request.", "  Applied."]
 * Renderer.intent({ action: "discard", reason: "Too broad." }) // "discarding: Too broad."
 * ```
 *
 * @since 0.1.0
 */
import * as Cause from "effect/Cause"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import type { ToolResult } from "../domain/ToolResult.js"
import { messageOf, safely, stringProperty } from "../internal/render.js"

// -----------------------------------------------------------------------------------------------------------------
// width
// -----------------------------------------------------------------------------------------------------------------

const segmenter = new Intl.Segmenter("en", { granularity: "grapheme" })

const wideRanges: ReadonlyArray<readonly [number, number]> = [
  [0x1100, 0x115F],
  [0x231A, 0x231B],
  [0x2329, 0x232A],
  [0x2E80, 0x303E],
  [0x3041, 0x33FF],
  [0x3400, 0x4DBF],
  [0x4E00, 0x9FFF],
  [0xA000, 0xA4CF],
  [0xA960, 0xA97F],
  [0xAC00, 0xD7A3],
  [0xF900, 0xFAFF],
  [0xFE10, 0xFE19],
  [0xFE30, 0xFE6F],
  [0xFF00, 0xFF60],
  [0xFFE0, 0xFFE6],
  [0x16FE0, 0x16FE4],
  [0x17000, 0x18AFF],
  [0x1B000, 0x1B2FF],
  [0x1F004, 0x1F004],
  [0x1F0CF, 0x1F0CF],
  [0x1F18E, 0x1F18E],
  [0x1F191, 0x1F19A],
  [0x1F200, 0x1F251],
  [0x1F300, 0x1F64F],
  [0x1F680, 0x1F6FF],
  [0x1F900, 0x1F9FF],
  [0x1FA70, 0x1FAFF],
  [0x20000, 0x2FFFD],
  [0x30000, 0x3FFFD]
]

const isWide = (codePoint: number): boolean => wideRanges.some(([lo, hi]) => codePoint >= lo && codePoint <= hi)

const zeroWidth = /^[\p{Mark}\u200B-\u200F\u2060-\u2064\uFE00-\uFE0F\u{E0100}-\u{E01EF}]$/u
const emojiPresentation = /\p{Emoji_Presentation}|\p{Extended_Pictographic}\uFE0F/u

const graphemeWidth = (grapheme: string): number => {
  const first = grapheme.codePointAt(0) ?? 0
  if (isWide(first) || emojiPresentation.test(grapheme)) return 2
  for (const char of grapheme) if (!zeroWidth.test(char)) return 1
  return 0
}

const graphemes = (text: string): Array<string> => Array.from(segmenter.segment(text), (s) => s.segment)

/**
 * The number of terminal columns `text` takes (no control characters expected): wide CJK and emoji graphemes count
 * 2, combining marks and zero-width characters 0, everything else 1.
 *
 * @since 0.1.0
 * @category width
 */
export const stringWidth = (text: string): number => graphemes(text).reduce((n, g) => n + graphemeWidth(g), 0)

/**
 * Shortens `text` to at most `width` columns, ending with `…` when something was cut. A wide character that would
 * cross the limit is dropped whole.
 *
 * @since 0.1.0
 * @category width
 */
export const truncate = (text: string, width: number): string => fitSegments([{ text, style: plain }], width, false)

// -----------------------------------------------------------------------------------------------------------------
// styles
// -----------------------------------------------------------------------------------------------------------------

interface Style {
  readonly open: string
}

const plain: Style = { open: "" }
const styles = {
  accept: { open: "\x1b[1;32m" },
  discard: { open: "\x1b[1;33m" },
  failed: { open: "\x1b[1;31m" },
  badge: { open: "\x1b[36m" },
  dim: { open: "\x1b[2m" },
  error: { open: "\x1b[31m" }
} as const satisfies Record<string, Style>

const reset = "\x1b[0m"

interface Segment {
  readonly text: string
  readonly style: Style
}

const paint = (segment: Segment, color: boolean): string =>
  color && segment.style.open !== "" && segment.text !== ""
    ? `${segment.style.open}${segment.text}${reset}`
    : segment.text

const fitSegments = (segments: ReadonlyArray<Segment>, width: number, color: boolean): string => {
  const columns = Math.max(1, Math.floor(width))
  const total = segments.reduce((n, s) => n + stringWidth(s.text), 0)
  if (total <= columns) return segments.map((s) => paint(s, color)).join("")
  const budget = columns - 1 // room for "…"
  let used = 0
  const out: Array<string> = []
  for (const segment of segments) {
    let kept = ""
    let full = true
    for (const g of graphemes(segment.text)) {
      const w = graphemeWidth(g)
      if (used + w > budget) {
        full = false
        break
      }
      used += w
      kept += g
    }
    if (!full) {
      out.push(paint({ text: `${kept}…`, style: segment.style }, color))
      return out.join("")
    }
    out.push(paint({ text: kept, style: segment.style }, color))
  }
  return out.join("")
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
  /** ANSI colours, or plain text. */
  readonly color: boolean
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

const stringField = (value: unknown, key: string): Option.Option<string> =>
  Predicate.hasProperty(value, key) && typeof value[key] === "string" && value[key] !== "" ?
    Option.some(value[key] as string) :
    Option.none()

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
 * Accept 2 replacement(s) in 1 file(s) [Edit]
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
  const statusStyle = c.status === "Accept" ? styles.accept : c.status === "Discard" ? styles.discard : styles.failed
  const header: Array<Segment> = [
    { text: c.status, style: statusStyle },
    { text: ` ${split.summary}`, style: plain },
    ...Option.match(badge, { onNone: () => [], onSome: (b) => [{ text: ` [${b}]`, style: styles.badge }] })
  ]
  const lines: Array<ReadonlyArray<Segment>> = [header]
  const reason = Option.getOrElse(c.reason, () => "(no reason given)")
  for (const line of clean(reason).split("\n")) lines.push([{ text: `  ${line}`, style: plain }])
  if (Option.isSome(c.detail)) {
    const style = c.status === "Failed" ? styles.error : styles.dim
    for (const line of clean(c.detail.value).split("\n")) lines.push([{ text: `  ${line}`, style }])
  }
  return lines.map((segments) => fitSegments(segments, options.width, options.color))
}

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
