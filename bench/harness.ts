/**
 * Timing, memory and table helpers of the benchmarks. Every figure is a median over repeated runs; subjects and
 * their references are measured interleaved in the same process so that machine noise hits them alike.
 */
import { performance } from "node:perf_hooks"
import * as v8 from "node:v8"
import * as vm from "node:vm"

/** The median of `samples` (the mean of the two middle values for an even count). */
export const median = (samples: ReadonlyArray<number>): number => {
  const sorted = [...samples].sort((a, b) => a - b)
  const mid = sorted.length >> 1
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2
}

/** A measured subject: `prepare` builds fresh state (untimed), `run` does `ops` operations on it (timed). */
export interface Subject {
  readonly prepare?: () => void
  readonly run: () => void
}

/**
 * Runs each subject `repeats` times, interleaved (subject 1, 2, 3, 1, 2, 3, ...) after one warm-up run each, and
 * returns the median time per operation of each, in microseconds.
 */
export const compareMedians = (
  subjects: ReadonlyArray<Subject>,
  ops: number,
  repeats: number
): Array<number> => {
  const samples = subjects.map(() => [] as Array<number>)
  for (const s of subjects) {
    s.prepare?.()
    s.run()
  }
  for (let r = 0; r < repeats; r++) {
    subjects.forEach((s, i) => {
      s.prepare?.()
      const t0 = performance.now()
      s.run()
      samples[i]!.push(((performance.now() - t0) * 1000) / ops)
    })
  }
  return samples.map(median)
}

/** Async version of `compareMedians`, for programs run with `Effect.runPromise`. */
export const compareMediansAsync = async (
  subjects: ReadonlyArray<{ readonly prepare?: () => void; readonly run: () => Promise<unknown> | unknown }>,
  ops: number,
  repeats: number
): Promise<Array<number>> => {
  const samples = subjects.map(() => [] as Array<number>)
  for (const s of subjects) {
    s.prepare?.()
    await s.run()
  }
  for (let r = 0; r < repeats; r++) {
    for (let i = 0; i < subjects.length; i++) {
      const s = subjects[i]!
      s.prepare?.()
      const t0 = performance.now()
      await s.run()
      samples[i]!.push(((performance.now() - t0) * 1000) / ops)
    }
  }
  return samples.map(median)
}

let gcFn: (() => void) | undefined

/** A full garbage collection: `global.gc` under `--expose-gc`, else enabled at run time through V8 flags. */
export const gc = (): void => {
  if (gcFn === undefined) {
    const exposed = (globalThis as { gc?: () => void }).gc
    if (exposed !== undefined) gcFn = exposed
    else {
      v8.setFlagsFromString("--expose-gc")
      gcFn = vm.runInNewContext("gc") as () => void
    }
  }
  gcFn()
  gcFn()
}

/** Heap in use after a full collection, in bytes. */
export const settledHeap = (): number => {
  gc()
  return process.memoryUsage().heapUsed
}

/** One row of the result table. */
export interface Row {
  /** A short name for the table (about 24 characters at most); the row's note gives `figure` in full. */
  readonly name: string
  /** The figure in full: what is measured, and how. */
  readonly figure: string
  readonly value: string
  /** The floor's value, then what the floor is in parentheses (`0.64 ms (fs read)`), or `—`. */
  readonly floor: string
  readonly plain: string
  readonly vsFloor: string
  readonly vsPlain: string
  /** The target with its verdict (`≤ 2× floor: ok`), or `for information`, or `—`. */
  readonly target: string
}

/** The verdict of a target, for the table's last column. */
const verdictOf = (target: string): string =>
  target.includes("MISSED") ?
    "MISSED" :
    target.includes("not judged") || target.includes("smoke run") ?
    "smoke" :
    target.startsWith("for information") ?
    "info" :
    /: ok\b/.test(target) ?
    "ok" :
    "—"

/** `text` wrapped at spaces into lines of at most `width` columns, the lines after the first indented by `indent`. */
export const wrap = (text: string, width: number, indent = ""): string => {
  const lines: Array<string> = []
  let line = ""
  for (const word of text.split(" ")) {
    const prefix = lines.length === 0 ? "" : indent
    if (line !== "" && prefix.length + line.length + 1 + word.length > width) {
      lines.push(prefix + line)
      line = word
    } else {
      line = line === "" ? word : `${line} ${word}`
    }
  }
  lines.push((lines.length === 0 ? "" : indent) + line)
  return lines.join("\n")
}

/**
 * Prints the rows as ONE markdown table of at most `width` columns (short names, the numbers and the verdict), then
 * a numbered note per row: the figure in full, what its floor is, and its target with the verdict.
 */
export const printTable = (rows: ReadonlyArray<Row>, width = 100): string => {
  const floorOf = (floor: string) => {
    const m = /^(.*?) \((.*)\)$/.exec(floor)
    return m === null ? { value: floor, what: undefined } : { value: m[1]!, what: m[2]! }
  }
  const header = ["#", "figure", "measured", "floor", "plain", "× floor", "× plain", "target"]
  const right = [true, false, true, true, true, true, true, false]
  const cells = rows.map((r, i) => [
    String(i + 1),
    r.name,
    r.value,
    floorOf(r.floor).value,
    r.plain,
    r.vsFloor,
    r.vsPlain,
    verdictOf(r.target)
  ])
  const widths = header.map((h, c) => Math.max(h.length, ...cells.map((row) => row[c]!.length)))
  // The name column gets what the others leave (each column costs its width and 3 columns of "| ").
  const others = widths.reduce((n, w, c) => c === 1 ? n : n + w + 3, 0) + 4
  widths[1] = Math.max(header[1]!.length, Math.min(widths[1]!, width - others))
  const fit = (text: string, w: number) => text.length <= w ? text : `${text.slice(0, w - 1)}…`
  const line = (row: ReadonlyArray<string>) =>
    `| ${
      row.map((cell, c) =>
        right[c] ? fit(cell, widths[c]!).padStart(widths[c]!) : fit(cell, widths[c]!).padEnd(widths[c]!)
      )
        .join(" | ")
    } |`
  const rule = `|${widths.map((w, c) => right[c] ? `${"-".repeat(w + 1)}:` : "-".repeat(w + 2)).join("|")}|`
  const notes = rows.map((r, i) => {
    const floor = floorOf(r.floor).what
    const target = r.target === "—"
      ? ""
      : r.target.startsWith("for information")
      ? `; ${r.target}`
      : `. Target ${r.target}`
    const number = `${i + 1}.`.padEnd(String(rows.length).length + 2)
    return wrap(
      `${number}${r.figure}${floor === undefined ? "" : `; floor: ${floor}`}${target}`,
      width,
      " ".repeat(number.length)
    )
  })
  const legend = wrap(
    "floor: the Effect floor, or the one the row's note names; plain: the plain class (bench/PlainQueue.ts). " +
      "The notes give each figure in full, its floor and its target:",
    width
  )
  const out = [line(header), rule, ...cells.map(line), "", legend, ...notes].join("\n")
  console.log(out)
  return out
}

export const us = (value: number): string => `${value < 10 ? value.toFixed(3) : value.toFixed(1)} µs`
export const ratio = (value: number, reference: number): string => `${(value / reference).toFixed(2)}×`
export const bytes = (value: number): string =>
  Math.abs(value) >= 1024 * 1024 ? `${(value / 1024 / 1024).toFixed(2)} MiB` : `${Math.round(value)} B`
