/**
 * The `edit` tool's text engine (issue 10 §3, §4): replacements that track their positions, and the unified diff
 * built from them in linear time.
 * - On ordinary edits (distinct lines; LF or CRLF; with or without a BOM and a final line break) the diff is exactly
 *   the `diff` library's `createTwoFilesPatch` (context 3, file headers only), which the tool used before.
 * - On arbitrary small texts (few distinct characters, so many equal lines and ambiguous alignments) the diff is a
 *   valid patch: the `diff` library applies it to the old text and gets the new one.
 * - Replacements compose like `String.prototype.replaceAll` applied in order.
 */
import { describe, it } from "@effect/vitest"
import { createTwoFilesPatch, FILE_HEADERS_ONLY } from "diff"
import { applyPatch } from "diff"
import { FastCheck as fc } from "effect"
import { deepStrictEqual, strictEqual } from "node:assert/strict"
import * as EditDiff from "../../src/producers/EditDiff.js"

const LONG = process.env.LONG !== undefined && process.env.LONG !== "" && process.env.LONG !== "0"
const numRuns = LONG ? 20_000 : 1_500

/**
 * The patch with every `<U+XXXX>` read back as its character: what the diff shows in place of a character a screen
 * does not show (the texts here never hold `<U+` themselves).
 */
const unshown = (patch: string) =>
  patch.replace(/<U\+([0-9A-F]{4})>/g, (_, hex: string) => String.fromCharCode(Number.parseInt(hex, 16)))

/** Characters a screen does not show as themselves: none may be left in a patch (a CR ending a line is a line end). */
const invisible = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F\u202A-\u202E\u2066-\u2069]|\r(?!\n)/

const libraryDiff = (oldText: string, newText: string) =>
  createTwoFilesPatch("a/f.txt", "b/f.txt", oldText, newText, undefined, undefined, {
    context: 3,
    headerOptions: FILE_HEADERS_ONLY
  }).slice(0, -1) // the library ends with a line break; the preview does not

/** Applies `edits` as the tool promises: in order, each `replaceAll` (or the single occurrence) literally. */
const reference = (text: string, edits: ReadonlyArray<EditDiff.TextEdit>) =>
  edits.reduce((current, edit) => current.split(edit.oldText).join(edit.newText), text)

interface Case {
  readonly text: string
  readonly edits: ReadonlyArray<EditDiff.TextEdit>
}

/** Edits picked from the text as it is after the previous ones: a substring at a position, and a replacement. */
const editsOn = (text: string, picks: ReadonlyArray<readonly [number, number, string]>): Case => {
  const edits: Array<EditDiff.TextEdit> = []
  let current = text
  for (const [at, length, newText] of picks) {
    if (current.length === 0) break
    const from = at % current.length
    const oldText = current.slice(from, from + 1 + (length % Math.min(12, current.length - from)))
    edits.push({ oldText, newText, replaceAll: true })
    current = reference(current, [{ oldText, newText }])
  }
  return { text, edits }
}

const picks = (replacement: fc.Arbitrary<string>) =>
  fc.array(fc.tuple(fc.nat(), fc.nat(), replacement), { minLength: 1, maxLength: 3 })

/** Ordinary files: distinct lines, one line ending style, an optional BOM and final line break. */
const ordinary: fc.Arbitrary<Case> = fc.tuple(
  fc.integer({ min: 1, max: 40 }),
  fc.constantFrom("\n", "\r\n"),
  fc.boolean(),
  fc.boolean(),
  picks(fc.array(fc.constantFrom("X", "Y ", "\n", "Z"), { maxLength: 8 }).map((parts) => parts.join("")))
).map(([count, eol, bom, finalBreak, chosen]) => {
  const text = (bom ? "\uFEFF" : "") + Array.from({ length: count }, (_, i) => `line ${i}`).join(eol) +
    (finalBreak ? eol : "")
  return editsOn(text, chosen)
})

// With characters a screen does not show (NUL, ESC, a bidirectional override, a C1 control): the patch shows them as
// <U+XXXX>, and read back it still turns the old text into the new one.
const small = fc.array(fc.constantFrom("a", "b", "c", "\n", "\r\n", "\r", "\u0000", "\u001b", "\u202E", "\u0085"), {
  minLength: 1,
  maxLength: 40
}).map((
  parts
) => parts.join(""))

/** Arbitrary small texts: many equal lines, lone CRs, no final line break, everything replaced. */
const arbitrary: fc.Arbitrary<Case> = fc.tuple(small, picks(small.map((s) => s.slice(0, 10))))
  .map(([text, chosen]) => editsOn(text, chosen))

/**
 * Whether the lines the two texts share appear once in each and in the same order: then there is one longest
 * common subsequence, and any correct diff algorithm finds the same one. (Edits that turn "line 12" into a second
 * "line 1" make several equally long alignments, between which the library and the tool may choose differently.)
 */
const uniqueAlignment = (oldText: string, newText: string): boolean => {
  const lines = (text: string) => text.split("\n")
  const counts = (list: ReadonlyArray<string>) => {
    const map = new Map<string, number>()
    for (const line of list) map.set(line, (map.get(line) ?? 0) + 1)
    return map
  }
  const before = lines(oldText)
  const after = lines(newText)
  const inOld = counts(before)
  const inNew = counts(after)
  const shared = (line: string) => inOld.has(line) && inNew.has(line)
  if ([...inOld.keys()].some((line) => shared(line) && (inOld.get(line)! > 1 || inNew.get(line)! > 1))) return false
  const order = (list: ReadonlyArray<string>) => list.filter(shared).join("\u0000")
  return order(before) === order(after)
}

const run = ({ edits, text }: Case) => {
  const outcome = EditDiff.replaceTracked(text, Buffer.byteLength(text), edits, Number.MAX_SAFE_INTEGER)
  if (outcome._tag !== "Replaced") throw new Error(`unexpected ${outcome._tag}`)
  return outcome
}

describe("EditDiff", () => {
  it("replacements compose like replaceAll applied in order, and count every occurrence", () => {
    fc.assert(
      fc.property(fc.oneof(ordinary, arbitrary), ({ edits, text }) => {
        const outcome = run({ edits, text })
        strictEqual(outcome.text, reference(text, edits))
        strictEqual(outcome.bytes, Buffer.byteLength(outcome.text))
        let current = text
        let count = 0
        for (const edit of edits) {
          count += current.split(edit.oldText).length - 1
          current = reference(current, [edit])
        }
        strictEqual(outcome.replacements, count)
      }),
      { numRuns }
    )
  })

  it("on ordinary edits, the diff is exactly the diff library's", () => {
    fc.assert(
      fc.property(ordinary, (c) => {
        const outcome = run(c)
        fc.pre(uniqueAlignment(c.text, outcome.text))
        const { patch } = EditDiff.unifiedDiff("a/f.txt", "b/f.txt", c.text, outcome)
        strictEqual(unshown(patch), libraryDiff(c.text, outcome.text), JSON.stringify(c))
        strictEqual(invisible.test(`${patch}\n`), false, JSON.stringify({ ...c, patch }))
      }),
      { numRuns }
    )
  })

  it("on arbitrary small texts, the diff is a patch that turns the old text into the new one", () => {
    fc.assert(
      fc.property(arbitrary, (c) => {
        const outcome = run(c)
        const patch = EditDiff.unifiedDiff("a/f.txt", "b/f.txt", c.text, outcome).patch
        strictEqual(applyPatch(c.text, `${unshown(patch)}\n`), outcome.text, JSON.stringify({ ...c, patch }))
        strictEqual(invisible.test(`${patch}\n`), false, JSON.stringify({ ...c, patch }))
      }),
      { numRuns }
    )
  })

  it("a replacement touching every line of a large file gives one valid diff (every line removed, then added)", () => {
    const text = Array.from({ length: 3_000 }, (_, i) => `  const value${i} = compute(${i})\n`).join("")
    const outcome = run({ text, edits: [{ oldText: "const", newText: "let", replaceAll: true }] })
    const { patch } = EditDiff.unifiedDiff("a/f.txt", "b/f.txt", text, outcome)
    strictEqual(applyPatch(text, `${patch}\n`), outcome.text)
    strictEqual(patch.split("\n")[2], "@@ -1,3000 +1,3000 @@")
    strictEqual(outcome.replacements, 3_000)
  })

  it("reports each edit that fails: not found, ambiguous, or too large (before building the text)", () => {
    deepStrictEqual(EditDiff.replaceTracked("a b a", 5, [{ oldText: "c", newText: "" }], 100), {
      _tag: "NotFound",
      editIndex: 0
    })
    deepStrictEqual(
      EditDiff.replaceTracked("a b a", 5, [{ oldText: "b", newText: "B" }, { oldText: "a", newText: "" }], 100),
      { _tag: "Ambiguous", editIndex: 1, occurrences: 2 }
    )
    deepStrictEqual(
      EditDiff.replaceTracked("a b a", 5, [{ oldText: "a", newText: "é".repeat(10), replaceAll: true }], 40),
      { _tag: "TooLarge", editIndex: 0, bytes: 5 + 2 * (20 - 1) }
    )
  })

  it("file names: non-ASCII as text; control characters, quotes, backslashes and bidi controls escaped", () => {
    strictEqual(EditDiff.quoteFileName("a/données/résumé.txt"), "a/données/résumé.txt")
    strictEqual(EditDiff.quoteFileName("a/日本語.ts"), "a/日本語.ts")
    strictEqual(EditDiff.quoteFileName("a/evil\n+++ b/x"), "\"a/evil\\n+++ b/x\"")
    strictEqual(EditDiff.quoteFileName("a/q\"b\\c\td"), "\"a/q\\\"b\\\\c\\td\"")
    strictEqual(EditDiff.quoteFileName("a/x\u202Etxt.js"), "\"a/x\\342\\200\\256txt.js\"")
  })

  it("unquoteFileName reads back every name quoteFileName writes, and leaves what is not a quoted name as it is", () => {
    const names = fc.array(
      fc.oneof(
        fc.constantFrom(
          "\"",
          "\\",
          "\t",
          "\n",
          "\r",
          "\u0000",
          "\u0007",
          "\u007f",
          "\u0085",
          "\u202E",
          "\u2066",
          "é",
          "日"
        ),
        fc.constantFrom("\u{1F600}", "a", "/", " ", "\\101", "\\n")
      ),
      { maxLength: 12 }
    ).map((parts) => `a/${parts.join("")}`)
    fc.assert(
      fc.property(names, (name) => {
        strictEqual(EditDiff.unquoteFileName(EditDiff.quoteFileName(name)), name)
      }),
      { numRuns }
    )
    strictEqual(EditDiff.unquoteFileName("\"a/quote\\\"name.txt\""), "a/quote\"name.txt")
    strictEqual(EditDiff.unquoteFileName("\"a/x\\342\\200\\256txt.js\""), "a/x\u202Etxt.js")
    for (const raw of ["a/plain", "\"a/open", "\"a/bad\\q\"", "\"a/in\"side\"", "\"a/end\\\""]) {
      strictEqual(EditDiff.unquoteFileName(raw), raw)
    }
  })

  it("shows every control, bidirectional and lone carriage-return character as <U+XXXX>, and lists its lines", () => {
    const text = "header\u0000\u0001\nkeep\nchange me\n"
    const outcome = run({ text, edits: [{ oldText: "change me", newText: "changed\u202E\r!" }] })
    const diff = EditDiff.unifiedDiff("a/f", "b/f", text, outcome)
    strictEqual(
      diff.patch,
      "--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n header<U+0000><U+0001>\n keep\n-change me\n+changed<U+202E><U+000D>!"
    )
    deepStrictEqual(diff.controlLines, [
      { line: 1, side: "new", controls: ["U+0000", "U+0001"] },
      { line: 3, side: "new", controls: ["U+202E", "U+000D"] }
    ])
    // A CRLF file's line ends stay as they are; unless a changed line's ending changes: then it must not look the same.
    const crlf = "one\r\ntwo\r\n"
    const edited = run({ text: crlf, edits: [{ oldText: "two", newText: "2" }] })
    deepStrictEqual(EditDiff.unifiedDiff("a/f", "b/f", crlf, edited).controlLines, [])
    const toLf = run({ text: crlf, edits: [{ oldText: "two\r\n", newText: "two\n" }] })
    const endings = EditDiff.unifiedDiff("a/f", "b/f", crlf, toLf)
    strictEqual(endings.patch, "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n one\r\n-two<U+000D>\n+two")
    deepStrictEqual(endings.controlLines, [{ line: 2, side: "old", controls: ["U+000D"] }])
  })

  it("flags the added lines that hold bidirectional controls, with their new line numbers", () => {
    const text = "one\ntwo\nthree\n"
    const outcome = run({
      text,
      edits: [{ oldText: "two", newText: "t\u202Ewo\nok\nx\u2066y\u2069" }]
    })
    const diff = EditDiff.unifiedDiff("a/f", "b/f", text, outcome)
    deepStrictEqual(diff.bidiLines, [
      { line: 2, controls: ["U+202E"] },
      { line: 4, controls: ["U+2066", "U+2069"] }
    ])
    deepStrictEqual(EditDiff.unifiedDiff("a/f", "b/f", text, { regions: [], regionText: () => "" }).bidiLines, [])
  })
})
