/**
 * Reads the unified diffs in a preview (what the edit producer shows the model) as structured data for the page:
 * per file, its hunks and their lines. Linear in the preview's size, bounded by `maxLines`; text outside a diff
 * (the producer's prose) is skipped. A model wrote the preview: nothing here interprets it beyond the diff markers.
 * File names C-quoted in the headers (as git and the edit producer write a name holding a quote, a control or
 * bidirectional character: `--- "a/q\"uote.txt"`) are read back as the names themselves.
 */
import { unquoteFileName } from "../../producers/EditDiff.js"

/** One line of a hunk. */
export interface Line {
  readonly op: "context" | "add" | "remove" | "note"
  readonly text: string
}

/** A parsed diff. */
export interface Parsed {
  readonly files: ReadonlyArray<{
    readonly oldPath: string
    readonly newPath: string
    readonly hunks: ReadonlyArray<{ readonly header: string; readonly lines: ReadonlyArray<Line> }>
  }>
  readonly truncated: boolean
}

/** The most diff lines parsed (the preview itself is shown whole). */
export const maxLines = 20_000

const hunkHeader = /^@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@/

/** The name of a `--- ` / `+++ ` header: unquoted when quoted (a quoted name holds no raw tab), without `a/` / `b/`. */
const pathOf = (line: string, prefix: string): string => {
  const header = line.slice(4)
  const quoted = header.startsWith("\"") ? /^"(?:[^"\\]|\\.)*"/.exec(header) : null
  const rest = quoted !== null ? unquoteFileName(quoted[0]) : header.split("\t")[0]!
  return rest.startsWith(prefix) ? rest.slice(2) : rest
}

/** The diffs of a preview, or `undefined` when it holds none. */
export const parse = (preview: string): Parsed | undefined => {
  const lines = preview.split("\n")
  type File = { oldPath: string; newPath: string; hunks: Array<{ header: string; lines: Array<Line> }> }
  const files: Array<File> = []
  let file: File | undefined
  let hunk: { header: string; lines: Array<Line> } | undefined
  let oldLeft = 0
  let newLeft = 0
  let count = 0
  let truncated = false
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!
    if (hunk !== undefined && (oldLeft > 0 || newLeft > 0)) {
      const mark = line[0]
      if (mark === "\\") {
        hunk.lines.push({ op: "note", text: line })
        continue
      }
      if (mark === " " || mark === "-" || mark === "+" || (line === "" && i < lines.length - 1)) {
        if (++count > maxLines) {
          truncated = true
          break
        }
        const op = mark === "-" ? "remove" : mark === "+" ? "add" : "context"
        if (op !== "add") oldLeft--
        if (op !== "remove") newLeft--
        hunk.lines.push({ op, text: line.slice(1) })
        continue
      }
      // A hunk shorter than its header said: what follows is read afresh.
      hunk = undefined
    }
    if (line.startsWith("\\") && hunk !== undefined) {
      hunk.lines.push({ op: "note", text: line })
      continue
    }
    if (line.startsWith("--- ") && lines[i + 1]?.startsWith("+++ ")) {
      file = { oldPath: pathOf(line, "a/"), newPath: pathOf(lines[i + 1]!, "b/"), hunks: [] }
      files.push(file)
      hunk = undefined
      i++
      continue
    }
    const header = file === undefined ? null : hunkHeader.exec(line)
    if (header !== null && file !== undefined) {
      hunk = { header: line, lines: [] }
      file.hunks.push(hunk)
      oldLeft = header[1] === undefined ? 1 : Number(header[1])
      newLeft = header[2] === undefined ? 1 : Number(header[2])
      continue
    }
    // After a hunk ends, a "\ No newline" note may still follow; anything else is prose.
    if (hunk !== undefined && !line.startsWith("\\")) hunk = undefined
  }
  const withHunks = files.filter((f) => f.hunks.length > 0)
  return withHunks.length === 0 ? undefined : { files: withHunks, truncated }
}

/** One file of a diff at a glance: its name (the new one; the old one for a deletion) and its line counts. */
export interface FileStat {
  readonly path: string
  readonly added: number
  readonly removed: number
}

/** A preview's diff at a glance, for the list: the first `maxStatFiles` files, and the totals over all of them. */
export interface Stats {
  readonly files: ReadonlyArray<FileStat>
  readonly fileCount: number
  readonly added: number
  readonly removed: number
}

/** The most files a list row names (the totals count every file). */
export const maxStatFiles = 20

/** A preview without a diff: no files. */
export const noStats: Stats = { files: [], fileCount: 0, added: 0, removed: 0 }

/** The at-a-glance counts of a parsed diff (the same lines the detail pane shows). */
export const statsOf = (parsed: Parsed | undefined): Stats => {
  if (parsed === undefined) return noStats
  const files: Array<FileStat> = []
  let added = 0
  let removed = 0
  for (const file of parsed.files) {
    let a = 0
    let r = 0
    for (const hunk of file.hunks) {
      for (const line of hunk.lines) {
        if (line.op === "add") a++
        else if (line.op === "remove") r++
      }
    }
    added += a
    removed += r
    if (files.length < maxStatFiles) {
      files.push({ path: file.newPath === "/dev/null" ? file.oldPath : file.newPath, added: a, removed: r })
    }
  }
  return { files, fileCount: parsed.files.length, added, removed }
}

/**
 * The stats of each action's preview, computed once per action: a list answer (and every refresh of it) reads the
 * cache instead of parsing each preview again. Bounded: the `capacity` most recently used actions are kept, each as
 * its counts only (never the preview). A preview is fixed when it is staged (no store writes it again); as a guard,
 * an entry is used only while the preview has the length it was computed from.
 */
export const statsCache = (capacity = 2_000): (id: string, preview: string) => Stats => {
  const entries = new Map<string, { readonly length: number; readonly stats: Stats }>()
  return (id, preview) => {
    const cached = entries.get(id)
    entries.delete(id)
    if (cached !== undefined && cached.length === preview.length) {
      // Most recently used last: a Map keeps insertion order.
      entries.set(id, cached)
      return cached.stats
    }
    const stats = statsOf(parse(preview))
    entries.set(id, { length: preview.length, stats })
    if (entries.size > capacity) entries.delete(entries.keys().next().value!)
    return stats
  }
}
