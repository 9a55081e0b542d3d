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
  readonly figure: string
  readonly value: string
  readonly floor: string
  readonly plain: string
  readonly vsFloor: string
  readonly vsPlain: string
  readonly target: string
}

/** Prints the rows as one markdown table. */
export const printTable = (rows: ReadonlyArray<Row>): string => {
  const header: Row = {
    figure: "Figure",
    value: "effect-resolve",
    floor: "Effect floor",
    plain: "plain class",
    vsFloor: "× floor",
    vsPlain: "× plain",
    target: "target"
  }
  const keys = Object.keys(header) as Array<keyof Row>
  const widths = keys.map((k) => Math.max(...[header, ...rows].map((r) => r[k].length)))
  const line = (r: Row) => `| ${keys.map((k, i) => r[k].padEnd(widths[i]!)).join(" | ")} |`
  const out = [line(header), `|${widths.map((w) => "-".repeat(w + 2)).join("|")}|`, ...rows.map(line)].join("\n")
  console.log(out)
  return out
}

export const us = (value: number): string => `${value < 10 ? value.toFixed(3) : value.toFixed(1)} µs`
export const ratio = (value: number, reference: number): string => `${(value / reference).toFixed(2)}×`
export const bytes = (value: number): string =>
  Math.abs(value) >= 1024 * 1024 ? `${(value / 1024 / 1024).toFixed(2)} MiB` : `${Math.round(value)} B`
