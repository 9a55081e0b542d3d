/**
 * The text engine of the `edit` tool: exact-text replacements that remember where they changed the text, and a
 * unified diff built from those places, in time linear in the file's size and the number of replacements.
 *
 * A general diff (the `diff` library's Myers algorithm) costs O(N·D) on a file of N lines with D changed lines: an
 * edit touching every line of an 8 000-line file took seconds, synchronously. We already know where every
 * replacement is, so the changed blocks come from the replacement positions; each block is then trimmed of its
 * unchanged first and last lines and handed to the `diff` library bounded by `maxEditLength`, which makes a
 * readable diff of an ordinary edit (an unchanged line inside a replaced block shows as context) and gives up
 * quickly on a large one, which then shows as all its old lines removed and all its new lines added. The output is
 * the `diff` library's unified format, with 3 lines of context, line endings and "\ No newline at end of file" as
 * it writes them.
 *
 * @since 0.2.0
 */
import { diffArrays } from "diff"
import { invisibleIn, showInvisible } from "../internal/visibleText.js"

// -----------------------------------------------------------------------------------------------------------------
// replacements that track their positions
// -----------------------------------------------------------------------------------------------------------------

/**
 * One replacement, as the `edit` tool takes it.
 *
 * @since 0.2.0
 * @category models
 */
export interface TextEdit {
  readonly oldText: string
  readonly newText: string
  readonly replaceAll?: boolean | undefined
}

/**
 * What `replaceTracked` gives: the new text, its UTF-8 size, the number of replacements and the changed regions,
 * four numbers each (`newStart, newEnd, oldStart, oldEnd`, UTF-16 offsets, in order). Outside the regions the new
 * text equals the old one; a region may also cover unchanged text on the lines it touches. The new text is built by
 * concatenation and is only flattened when read as a whole: `regionText` gives a region's new text from the old
 * text (one edit) or from the new one (several).
 *
 * @since 0.2.0
 * @category models
 */
export type ReplaceOutcome =
  | {
    readonly _tag: "Replaced"
    readonly text: string
    readonly bytes: number
    readonly replacements: number
    readonly regions: ReadonlyArray<number>
    /** The new text of region `index` (the one at `regions[4 * index]`), without reading the whole new text. */
    readonly regionText: (index: number) => string
  }
  | { readonly _tag: "NotFound"; readonly editIndex: number }
  | { readonly _tag: "Ambiguous"; readonly editIndex: number; readonly occurrences: number }
  /** The text would grow past `maxBytes` (UTF-8) with `edits[editIndex]`. */
  | { readonly _tag: "TooLarge"; readonly editIndex: number; readonly bytes: number }

const utf8Length = (text: string): number => Buffer.byteLength(text, "utf8")

/**
 * Applies `edits` in order, each to the result of the previous one: an edit's `oldText` must occur once, or at least
 * once with `replaceAll`. `bytes` is the UTF-8 size of `text`; an edit that would make the text larger than
 * `maxBytes` stops before building it. Cost: one scan of the current text per edit, plus the replacements.
 *
 * @since 0.2.0
 * @category combinators
 */
export const replaceTracked = (
  text: string,
  bytes: number,
  edits: ReadonlyArray<TextEdit>,
  maxBytes: number
): ReplaceOutcome => {
  let current = text
  let size = bytes
  let regions: Array<number> = []
  let replacements = 0
  for (let editIndex = 0; editIndex < edits.length; editIndex++) {
    const { newText, oldText, replaceAll } = edits[editIndex]!
    const length = oldText.length
    const positions: Array<number> = []
    let count = 0
    for (let at = current.indexOf(oldText); at !== -1; at = current.indexOf(oldText, at + length)) {
      count++
      if (replaceAll === true || count === 1) positions.push(at)
    }
    if (count === 0) return { _tag: "NotFound", editIndex }
    if (count > 1 && replaceAll !== true) return { _tag: "Ambiguous", editIndex, occurrences: count }
    const grown = size + count * (utf8Length(newText) - utf8Length(oldText))
    if (grown > maxBytes) return { _tag: "TooLarge", editIndex, bytes: grown }
    regions = compose(regions, current, positions, length, newText.length)
    current = count === 1 ?
      current.slice(0, positions[0]!) + newText + current.slice(positions[0]! + length) :
      // `$` patterns escaped: the replacement is inserted literally.
      current.replaceAll(oldText, newText.replaceAll("$", "$$$$"))
    size = grown
    replacements += count
  }
  const final = regions
  const single = edits.length === 1 ? edits[0]! : undefined
  const regionText = single === undefined ?
    (index: number) => current.slice(final[4 * index]!, final[4 * index + 1]!) :
    // One edit: a region is whole occurrences and the text between them, on the old text.
    (index: number) =>
      text.slice(final[4 * index + 2]!, final[4 * index + 3]!).split(single.oldText).join(single.newText)
  return { _tag: "Replaced", text: current, bytes: size, replacements, regions, regionText }
}

/**
 * Composes the regions of the text so far (current coordinates) with one edit's occurrences (`length` characters
 * each, replaced by `replacement` characters), into regions of the edited text. Overlapping or touching intervals
 * merge, and so do two whose gap holds no line break (they are on one line, which the diff shows whole anyway):
 * there are never more regions than lines. One pass over both lists; each gap is scanned for a line break once.
 */
const compose = (
  regions: ReadonlyArray<number>,
  current: string,
  positions: ReadonlyArray<number>,
  length: number,
  replacement: number
): Array<number> => {
  const out: Array<number> = []
  const shift = replacement - length
  let i = 0
  let j = 0
  /** Sum of (current length − original length) over the regions taken so far. */
  let delta = 0
  /** Occurrences in the clusters already closed. */
  let occurrencesBefore = 0
  let open = false
  let start = 0
  let end = 0
  let deltaBefore = 0
  let occurrencesIn = 0
  /** The first line break at or after some position ≤ `end` (cached: `end` only grows). */
  let nextBreak = -1
  const close = () => {
    out.push(
      start + occurrencesBefore * shift,
      end + (occurrencesBefore + occurrencesIn) * shift,
      start - deltaBefore,
      end - delta
    )
    occurrencesBefore += occurrencesIn
  }
  while (i < regions.length || j < positions.length) {
    const takeRegion = j >= positions.length || (i < regions.length && regions[i]! <= positions[j]!)
    const from = takeRegion ? regions[i]! : positions[j]!
    const to = takeRegion ? regions[i + 1]! : positions[j]! + length
    if (open && from > end) {
      if (nextBreak < end) {
        nextBreak = current.indexOf("\n", end)
        if (nextBreak === -1) nextBreak = Number.MAX_SAFE_INTEGER
      }
      if (nextBreak < from) {
        close()
        open = false
      }
    }
    if (open) {
      if (to > end) end = to
    } else {
      open = true
      start = from
      end = to
      deltaBefore = delta
      occurrencesIn = 0
    }
    if (takeRegion) {
      delta += (regions[i + 1]! - regions[i]!) - (regions[i + 3]! - regions[i + 2]!)
      i += 4
    } else {
      occurrencesIn++
      j++
    }
  }
  if (open) close()
  return out
}

// -----------------------------------------------------------------------------------------------------------------
// unified diff from the regions
// -----------------------------------------------------------------------------------------------------------------

/**
 * The most edits (lines removed plus lines added) the `diff` library may look for inside one changed block before
 * the block is shown as all removed, then all added. Its cost is O(block lines × this bound) at most.
 *
 * @since 0.2.0
 * @category constants
 */
export const maxBlockEditLength = 200

/**
 * An added line holding Unicode bidirectional controls: its new-file line number (1-based) and the controls
 * (`U+202E`, ...).
 *
 * @since 0.2.0
 * @category models
 */
export interface BidiLine {
  readonly line: number
  readonly controls: ReadonlyArray<string>
}

/**
 * A line of a diff that holds characters a screen does not show as themselves (control characters, a lone carriage
 * return, bidirectional controls, line separators: see `showInvisible`), which the patch shows as `<U+XXXX>`: its
 * line number (1-based) in the new file (`side: "new"`, for added and context lines) or in the old one (`"old"`, for
 * removed lines), and those characters' code points (`U+0000`, ...), each once.
 *
 * @since 0.4.0
 * @category models
 */
export interface ControlLine {
  readonly line: number
  readonly side: "old" | "new"
  readonly controls: ReadonlyArray<string>
}

/**
 * A unified diff, the added lines that hold a Unicode bidirectional control character, and every shown line that
 * holds an invisible character (`controlLines`, in the order of the diff).
 *
 * @since 0.2.0
 * @category models
 */
export interface UnifiedDiff {
  readonly patch: string
  readonly bidiLines: ReadonlyArray<BidiLine>
  /** @since 0.4.0 */
  readonly controlLines: ReadonlyArray<ControlLine>
}

/**
 * The Unicode bidirectional embedding, override and isolate controls (U+202A–U+202E, U+2066–U+2069): they can
 * make text display in an order other than the one it is stored in.
 *
 * @since 0.2.0
 * @category constants
 */
export const bidiControl = /[\u202A-\u202E\u2066-\u2069]/

const bidiControlGlobal = /[\u202A-\u202E\u2066-\u2069]/g

/**
 * The code points (`U+202E`, ...) of the bidirectional controls in `text`, each once, in order of appearance.
 *
 * @since 0.2.0
 * @category utils
 */
export const bidiControlsIn = (text: string): ReadonlyArray<string> => [
  ...new Set(
    Array.from(text.matchAll(bidiControlGlobal), (m) => `U+${m[0].charCodeAt(0).toString(16).toUpperCase()}`)
  )
]

const needsQuoting = /[\u0000-\u001f\u007f-\u009f"\\\u061c\u200e\u200f\u2028\u2029\u202A-\u202E\u2066-\u2069]/

const escapes: Record<string, string> = {
  "\u0007": "\\a",
  "\b": "\\b",
  "\t": "\\t",
  "\n": "\\n",
  "\u000b": "\\v",
  "\f": "\\f",
  "\r": "\\r",
  "\"": "\\\"",
  "\\": "\\\\"
}

/**
 * A file name as a diff header shows it: as is, or, when it holds a control character (C0, DEL, C1), a quote, a
 * backslash, a bidirectional control or mark, or a line or paragraph separator, C-quoted like git does, with those
 * characters escaped (octal UTF-8 bytes for the ones without a short escape). Other non-ASCII characters stay text
 * (git's `core.quotePath=false`). `unquoteFileName` reads it back.
 *
 * @since 0.2.0
 * @category utils
 */
export const quoteFileName = (name: string): string => {
  if (!needsQuoting.test(name)) return name
  let out = "\""
  for (const char of name) {
    if (!needsQuoting.test(char)) out += char
    else {
      out += escapes[char] ??
        Array.from(new TextEncoder().encode(char), (b) => `\\${b.toString(8).padStart(3, "0")}`).join("")
    }
  }
  return `${out}"`
}

const unescapes: Record<string, number> = { a: 7, b: 8, t: 9, n: 10, v: 11, f: 12, r: 13, "\"": 34, "\\": 92 }

/**
 * The name a diff header shows (`a/src/x.ts`, or C-quoted as git and `quoteFileName` write it:
 * `"a/q\"uote\342\200\256.txt"`), as the name itself. A header that is not a well-formed quoted name is returned
 * as it is; octal escapes are UTF-8 bytes (an invalid sequence reads as U+FFFD).
 *
 * @since 0.4.0
 * @category utils
 */
export const unquoteFileName = (header: string): string => {
  if (header.length < 2 || !header.startsWith("\"") || !header.endsWith("\"")) return header
  const bytes: Array<number> = []
  const encoder = new TextEncoder()
  const body = header.slice(1, -1)
  for (let i = 0; i < body.length; i++) {
    const char = body[i]!
    if (char === "\"") return header
    if (char !== "\\") {
      const code = body.codePointAt(i)!
      const whole = String.fromCodePoint(code)
      bytes.push(...encoder.encode(whole))
      i += whole.length - 1
      continue
    }
    const next = body[i + 1]
    if (next === undefined) return header
    const octal = /^[0-3][0-7]{2}/.exec(body.slice(i + 1, i + 4))
    if (octal !== null) {
      bytes.push(Number.parseInt(octal[0], 8))
      i += 3
    } else if (unescapes[next] !== undefined) {
      bytes.push(unescapes[next])
      i += 1
    } else {
      return header
    }
  }
  return new TextDecoder().decode(new Uint8Array(bytes))
}

/** A run of unchanged lines: a range of the old text at line boundaries, or lines found inside a block. */
interface Equal {
  readonly _tag: "Equal"
  readonly count: number
  readonly from: number
  readonly to: number
  readonly lines: ReadonlyArray<string> | undefined
}

interface Changed {
  readonly _tag: "Removed" | "Added"
  readonly lines: ReadonlyArray<string>
}

type Item = Equal | Changed

/** The lines (each with its line break, the last one possibly without) of `text` between `from` and `to`. */
const splitLines = (text: string, from: number, to: number): Array<string> => {
  const lines: Array<string> = []
  let at = from
  while (at < to) {
    const nl = text.indexOf("\n", at)
    const end = nl === -1 || nl >= to ? to : nl + 1
    lines.push(text.slice(at, end))
    at = end
  }
  return lines
}

/**
 * How many lines `text` has between `from` and `to` (a line boundary, or the end of the text), counting no further
 * than `max`.
 */
const countLines = (text: string, from: number, to: number, max = Number.MAX_SAFE_INTEGER): number => {
  let count = 0
  let at = from
  while (at < to && count < max) {
    const nl = text.indexOf("\n", at)
    count++
    at = nl === -1 || nl >= to ? to : nl + 1
  }
  return count
}

/** The first `n` lines of an equal run. */
const headOf = (text: string, run: Equal, n: number): ReadonlyArray<string> => {
  if (run.lines !== undefined) return run.lines.slice(0, n)
  const lines: Array<string> = []
  let at = run.from
  while (at < run.to && lines.length < n) {
    const nl = text.indexOf("\n", at)
    const end = nl === -1 || nl >= run.to ? run.to : nl + 1
    lines.push(text.slice(at, end))
    at = end
  }
  return lines
}

/** The last `n` lines of an equal run. */
const tailOf = (text: string, run: Equal, n: number): ReadonlyArray<string> => {
  if (run.lines !== undefined) return n === 0 ? [] : run.lines.slice(-n)
  const lines: Array<string> = []
  let end = run.to
  while (end > run.from && lines.length < n) {
    // The line ending at `end` starts after the line break before its own last character (if in the run).
    const previous = end - 2 < run.from ? -1 : text.lastIndexOf("\n", end - 2)
    const begin = previous < run.from ? run.from : previous + 1
    lines.push(text.slice(begin, end))
    end = begin
  }
  return lines.reverse()
}

/** The regions of a diff, and the new text of each (see `ReplaceOutcome`). */
interface Edited {
  readonly regions: ReadonlyArray<number>
  readonly regionText: (index: number) => string
}

/**
 * Changed blocks at line boundaries, four numbers each: oldFrom, oldTo, and the first and last region they hold.
 * The new side of a block is its old text with those regions replaced.
 */
const blocksOf = (oldText: string, { regionText, regions }: Edited): Array<number> => {
  const blocks: Array<number> = []
  /** The last character of the new text up to the end of region `r`. */
  const newCharBefore = (r: number) => {
    const replaced = regionText(r)
    const oldStart = regions[4 * r + 2]!
    return replaced.length > 0 ?
      replaced.charCodeAt(replaced.length - 1) :
      oldStart === 0 ?
      -1 :
      oldText.charCodeAt(oldStart - 1)
  }
  let r = 0
  const count = regions.length / 4
  while (r < count) {
    const first = r
    const oldStart = regions[4 * r + 2]!
    // The unchanged start of the first line is the same on both sides.
    const oldFrom = oldStart === 0 ? 0 : oldText.lastIndexOf("\n", oldStart - 1) + 1
    let oldTo: number
    for (;;) {
      const oldEnd = regions[4 * r + 3]!
      const newLast = newCharBefore(r)
      const atBoundary = oldEnd === oldText.length ||
        ((oldEnd === 0 || oldText.charCodeAt(oldEnd - 1) === 10) && (newLast === -1 || newLast === 10))
      if (atBoundary) {
        oldTo = oldEnd
      } else {
        // The unchanged rest of the last line is the same on both sides too.
        const nl = oldText.indexOf("\n", oldEnd)
        oldTo = nl === -1 ? oldText.length : nl + 1
      }
      // A region on a line of this block, or on the line right after it, joins it.
      const next = regions[4 * (r + 1) + 2]
      if (next !== undefined && (next <= oldTo || oldText.lastIndexOf("\n", next - 1) + 1 <= oldTo)) {
        r++
        continue
      }
      break
    }
    blocks.push(oldFrom, oldTo, first, r)
    r++
  }
  return blocks
}

/** The items of the whole file: unchanged runs and each block's removed and added lines, in order. */
const itemsOf = (oldText: string, edited: Edited, context: number): Array<Item> => {
  const items: Array<Item> = []
  const pushEqual = (from: number, to: number, count: number) => {
    if (count === 0) return
    const last = items[items.length - 1]
    if (last !== undefined && last._tag === "Equal" && last.lines === undefined && last.to === from) {
      items[items.length - 1] = { _tag: "Equal", count: last.count + count, from: last.from, to, lines: undefined }
    } else {
      items.push({ _tag: "Equal", count, from, to, lines: undefined })
    }
  }
  const { regionText, regions } = edited
  const blocks = blocksOf(oldText, edited)
  let at = 0
  for (let b = 0; b < blocks.length; b += 4) {
    const oldFrom = blocks[b]!
    const oldTo = blocks[b + 1]!
    pushEqual(at, oldFrom, countLines(oldText, at, oldFrom))
    let newBlock = ""
    let from = oldFrom
    for (let r = blocks[b + 2]!; r <= blocks[b + 3]!; r++) {
      newBlock += oldText.slice(from, regions[4 * r + 2]!) + regionText(r)
      from = regions[4 * r + 3]!
    }
    newBlock += oldText.slice(from, oldTo)
    const oldLines = splitLines(oldText, oldFrom, oldTo)
    const newLines = splitLines(newBlock, 0, newBlock.length)
    // Unchanged first and last lines of the block are context, not changes.
    let head = 0
    let headChars = 0
    while (head < oldLines.length && head < newLines.length && oldLines[head] === newLines[head]) {
      headChars += oldLines[head]!.length
      head++
    }
    let tail = 0
    let tailChars = 0
    while (
      tail < oldLines.length - head && tail < newLines.length - head &&
      oldLines[oldLines.length - 1 - tail] === newLines[newLines.length - 1 - tail]
    ) {
      tailChars += oldLines[oldLines.length - 1 - tail]!.length
      tail++
    }
    pushEqual(oldFrom, oldFrom + headChars, head)
    const removed = oldLines.slice(head, oldLines.length - tail)
    const added = newLines.slice(head, newLines.length - tail)
    if (removed.length === 1 && added.length === 1) {
      // The common case (one line changed): nothing for Myers to find, and calling it costs microseconds.
      items.push({ _tag: "Removed", lines: removed }, { _tag: "Added", lines: added })
    } else if (removed.length > 0 && added.length > 0) {
      const parts = diffArrays(removed, added, { maxEditLength: maxBlockEditLength })
      if (parts === undefined) {
        items.push({ _tag: "Removed", lines: removed }, { _tag: "Added", lines: added })
      } else {
        // Between two unchanged runs, every removed line first, then every added line.
        let gone: Array<string> = []
        let come: Array<string> = []
        const flush = () => {
          if (gone.length > 0) items.push({ _tag: "Removed", lines: gone })
          if (come.length > 0) items.push({ _tag: "Added", lines: come })
          gone = []
          come = []
        }
        for (const part of parts) {
          if (part.added) come = come.concat(part.value)
          else if (part.removed) gone = gone.concat(part.value)
          else {
            flush()
            items.push({ _tag: "Equal", count: part.value.length, from: 0, to: 0, lines: part.value })
          }
        }
        flush()
      }
    } else if (removed.length > 0) {
      items.push({ _tag: "Removed", lines: removed })
    } else if (added.length > 0) {
      items.push({ _tag: "Added", lines: added })
    }
    pushEqual(oldTo - tailChars, oldTo, tail)
    at = oldTo
  }
  // After the last change only the first lines of the rest are shown: their count matters only up to the point where
  // the hunk closes (more than twice the context).
  pushEqual(at, oldText.length, countLines(oldText, at, oldText.length, 2 * context + 1))
  return items
}

const noNewline = "\\ No newline at end of file"

/**
 * A unified diff of `oldText` → its edited text, from the regions (and their new texts) `replaceTracked` gave, in the
 * `diff` library's format
 * (`createTwoFilesPatch` with `FILE_HEADERS_ONLY`): `--- oldName` / `+++ newName` headers (names quoted by
 * `quoteFileName`), hunks with `context` lines of context, without the final line break. Every character a screen
 * does not show as itself (control characters but tab and line feed, a carriage return not ending a line, bidirectional
 * controls and marks, line separators) is shown as `<U+XXXX>`, and its line listed in `controlLines`, so that every
 * character an apply writes on a shown line is visible. Also the new-file line numbers of the added lines holding a
 * bidirectional control character. Linear in the size of the texts.
 *
 * @since 0.2.0
 * @category constructors
 */
export const unifiedDiff = (
  oldName: string,
  newName: string,
  oldText: string,
  edited: {
    readonly regions: ReadonlyArray<number>
    readonly regionText: (index: number) => string
  },
  context = 3
): UnifiedDiff => {
  const items = itemsOf(oldText, edited, context)
  // When the changed lines end differently (CRLF and LF), a carriage return ending one of them is shown too: a line
  // whose only change is its line ending must not look unchanged.
  let crlf = false
  let lf = false
  for (const item of items) {
    if (item._tag === "Equal") continue
    for (const line of item.lines) {
      if (line.endsWith("\r\n")) crlf = true
      else if (line.endsWith("\n")) lf = true
    }
  }
  const showLineEndCR = crlf && lf
  // Pieces of the output, each ending with a line break; a hunk's header is filled in when the hunk closes.
  const out: Array<string> = [`--- ${quoteFileName(oldName)}\n`, `+++ ${quoteFileName(newName)}\n`]
  const bidiLines: Array<BidiLine> = []
  const controlLines: Array<ControlLine> = []
  let oldLine = 1
  let newLine = 1
  /** The index of the open hunk's header in `out`, or -1. */
  let header = -1
  let oldStart = 0
  let newStart = 0
  /**
   * The lines, each shown with its invisible characters as `<U+XXXX>` (a carriage return ending a line stays, but
   * for `showLineEndCR` on a changed line), and noted in `controlLines` under its number on `side`, counted from
   * `first`.
   */
  const emit = (prefix: string, lines: ReadonlyArray<string>, side: "old" | "new", first: number) => {
    const endCR = showLineEndCR && prefix !== " "
    for (let l = 0; l < lines.length; l++) {
      const line = lines[l]!
      let controls = invisibleIn(line)
      let shown = controls.length > 0 ? showInvisible(line) : line
      if (endCR && shown.endsWith("\r\n")) {
        shown = `${shown.slice(0, -2)}<U+000D>\n`
        if (!controls.includes("U+000D")) controls = [...controls, "U+000D"]
      }
      if (controls.length > 0) controlLines.push({ line: first + l, side, controls })
      out.push(shown.endsWith("\n") ? prefix + shown : `${prefix}${shown}\n${noNewline}\n`)
    }
  }
  const closeHunk = (contextSize: number) => {
    const oldLines = oldLine - oldStart + contextSize
    const newLines = newLine - newStart + contextSize
    // Unified-format quirk: an empty range names the line before it.
    out[header] = `@@ -${oldLines === 0 ? oldStart - 1 : oldStart},${oldLines} ` +
      `+${newLines === 0 ? newStart - 1 : newStart},${newLines} @@\n`
    header = -1
  }
  for (let i = 0; i < items.length; i++) {
    const item = items[i]!
    if (item._tag !== "Equal") {
      if (header === -1) {
        const previous = items[i - 1]
        const lead = previous !== undefined && previous._tag === "Equal" ? tailOf(oldText, previous, context) : []
        header = out.length
        out.push("")
        oldStart = oldLine - lead.length
        newStart = newLine - lead.length
        emit(" ", lead, "new", newStart)
      }
      if (item._tag === "Added") {
        for (let l = 0; l < item.lines.length; l++) {
          const line = item.lines[l]!
          if (bidiControl.test(line)) bidiLines.push({ line: newLine + l, controls: bidiControlsIn(line) })
        }
        emit("+", item.lines, "new", newLine)
        newLine += item.lines.length
      } else {
        emit("-", item.lines, "old", oldLine)
        oldLine += item.lines.length
      }
    } else {
      if (header !== -1) {
        if (item.count <= 2 * context && i < items.length - 1) {
          emit(" ", headOf(oldText, item, item.count), "new", newLine)
        } else {
          const contextSize = Math.min(item.count, context)
          emit(" ", headOf(oldText, item, contextSize), "new", newLine)
          closeHunk(contextSize)
        }
      }
      oldLine += item.count
      newLine += item.count
    }
  }
  if (header !== -1) closeHunk(0)
  const patch = out.join("")
  return { patch: patch.slice(0, -1), bidiLines, controlLines }
}
