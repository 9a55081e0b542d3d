/**
 * Edit-producer figures (issue 10 §5), on real files in a temporary directory, each against a floor measured in
 * the same run, interleaved with it:
 * - preview of a `replaceAll` touching every line of an 8 000-line (~110 KB) file, and of a 16 000-line one: the
 *   diff is built from the replacement positions, so the cost is linear (the `diff` library took seconds here);
 * - preview of one replacement in a 2 MiB and a 4 MiB file (the default `maxBytes`);
 * - an identifier rename across a real code tree (`node_modules/effect/src`, copied): preview and apply of one
 *   `replaceAll` in every file that holds the identifier, for half of those files and for all of them. The bench
 *   layer raises the limits (`maxFiles` 10 000, `maxBytes` 256 MiB, `maxEdits` 10 000; the defaults are 20 files,
 *   4 MiB and 100 edits).
 * Floors: plain `fs.promises.readFile` of the same files, one after the other (previews), and plain
 * `writeFile(temp)` + `rename` of the same new bytes, one after the other (applies).
 *
 * Run alone, these rows only: `npm run build && npx tsx bench/edit.ts` (`BENCH_QUICK=1`: a smoke run, as in
 * bench/index.ts; `BENCH_SAMPLES=1`: the samples of each preview row too).
 */
import { NodeContext } from "@effect/platform-node"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as FS from "node:fs"
import * as NFS from "node:fs/promises"
import * as OS from "node:os"
import * as NPath from "node:path"
import { performance } from "node:perf_hooks"
import { fileURLToPath, pathToFileURL } from "node:url"
import { FileEditPreview } from "../dist/edit.js"
import { ResolveRuntime, ResolveTool, ToolChoiceQueue } from "../dist/index.js"
import { median, printTable, ratio, type Row } from "./harness.js"

const ms = (value: number): string => `${value < 10 ? value.toFixed(2) : value.toFixed(1)} ms`
const kib = (bytes: number): string =>
  bytes >= 1024 * 1024 ? `${(bytes / 1024 / 1024).toFixed(1)} MiB` : `${Math.round(bytes / 1024)} KB`

const benchLimits = { maxFiles: 10_000, maxBytes: 256 * 1024 * 1024, maxEdits: 10_000 } as const

type Session = ManagedRuntime.ManagedRuntime<any, never>

const sessionFor = (root: string, limits: Partial<typeof benchLimits> = benchLimits): Session =>
  ManagedRuntime.make(
    Layer.mergeAll(ResolveRuntime.layer, NodeContext.layer, FileEditPreview.layer({ root, ...limits }))
  )

const resolveTurn = (action: "apply" | "discard") =>
  Effect.gen(function*() {
    const queue = yield* ToolChoiceQueue
    yield* queue.nextToolChoice
    const exit = yield* Effect.exit(ResolveTool.execute({ action, reason: "bench" }))
    yield* queue.resolve
    if (Exit.isFailure(exit)) throw new Error(`resolve ${action} failed: ${String(exit)}`)
  })

interface EditInput {
  readonly files: ReadonlyArray<{
    readonly path: string
    readonly edits: ReadonlyArray<{ readonly oldText: string; readonly newText: string; readonly replaceAll?: boolean }>
  }>
}

/** Times one preview in `session` (then discards it, untimed); milliseconds. */
const timePreview = async (session: Session, input: EditInput): Promise<number> => {
  const t0 = performance.now()
  await session.runPromise(FileEditPreview.tool.execute(input))
  const elapsed = performance.now() - t0
  await session.runPromise(resolveTurn("discard"))
  return elapsed
}

/** Plain reads of `paths`, one after the other; milliseconds. */
const timeReads = async (paths: ReadonlyArray<string>): Promise<number> => {
  const t0 = performance.now()
  for (const path of paths) await NFS.readFile(path)
  return performance.now() - t0
}

/** Plain write-to-temp-then-rename of `contents` over `paths`, one after the other; milliseconds. */
const timeWrites = async (paths: ReadonlyArray<string>, contents: ReadonlyArray<Uint8Array>): Promise<number> => {
  const t0 = performance.now()
  for (let i = 0; i < paths.length; i++) {
    const temp = `${paths[i]}.floor-tmp`
    await NFS.writeFile(temp, contents[i]!)
    await NFS.rename(temp, paths[i]!)
  }
  return performance.now() - t0
}

const restore = (paths: ReadonlyArray<string>, contents: ReadonlyArray<Uint8Array>) => {
  for (let i = 0; i < paths.length; i++) FS.writeFileSync(paths[i]!, contents[i]!)
}

/**
 * Warm-up rounds of each preview figure. The first previews of a call run code not yet optimised (the concurrent
 * path of a call with more than 4 files, which the one-file rows never take): in one run of the 35-file rename, its
 * first 20 previews took about twice as long as the next 40, while the reads' code is warm from the first round.
 * A smoke run (`BENCH_QUICK=1`) warms up once.
 */
const previewWarmups = () => smoke ? 1 : 10

// `BENCH_SAMPLES=1`: every preview row also prints its samples (the floor's spread shows there).
const showSamples = process.env.BENCH_SAMPLES !== undefined && process.env.BENCH_SAMPLES !== ""

/**
 * Median preview and read-floor times, interleaved, `repeats` times after `previewWarmups` rounds. The order
 * alternates from one round to the next, so that neither always runs right after the other (after its garbage, or
 * its reads of the same files).
 */
const previewFigures = async (
  root: string,
  paths: ReadonlyArray<string>,
  input: EditInput,
  repeats: number,
  limits?: Partial<typeof benchLimits>
) => {
  const session = sessionFor(root, limits)
  const previews: Array<number> = []
  const reads: Array<number> = []
  for (let w = 0; w < previewWarmups(); w++) {
    await timeReads(paths)
    await timePreview(session, input)
  }
  for (let r = 0; r < repeats; r++) {
    if (r % 2 === 0) {
      reads.push(await timeReads(paths))
      previews.push(await timePreview(session, input))
    } else {
      previews.push(await timePreview(session, input))
      reads.push(await timeReads(paths))
    }
  }
  await session.dispose()
  if (showSamples) {
    const list = (samples: ReadonlyArray<number>) => samples.map((t) => t.toFixed(1)).join(" ")
    console.log(`samples, ${paths.length} file(s), ms: reads ${list(reads)}; previews ${list(previews)}`)
  }
  return { preview: median(previews), read: median(reads) }
}

/** Median apply and write-floor times, interleaved; each apply runs on a fresh preview of the original files. */
const applyFigures = async (
  root: string,
  paths: ReadonlyArray<string>,
  originals: ReadonlyArray<Uint8Array>,
  edited: ReadonlyArray<Uint8Array>,
  input: EditInput,
  repeats: number
) => {
  const session = sessionFor(root)
  const applies: Array<number> = []
  const writes: Array<number> = []
  for (let r = -1; r < repeats; r++) {
    restore(paths, originals)
    await session.runPromise(FileEditPreview.tool.execute(input))
    const t0 = performance.now()
    await session.runPromise(resolveTurn("apply"))
    const apply = performance.now() - t0
    for (let i = 0; i < paths.length; i++) {
      if (!FS.readFileSync(paths[i]!).equals(edited[i]!)) throw new Error(`apply wrote the wrong bytes: ${paths[i]}`)
    }
    restore(paths, originals)
    const write = await timeWrites(paths, edited)
    if (r >= 0) {
      applies.push(apply)
      writes.push(write)
    }
  }
  restore(paths, originals)
  await session.dispose()
  return { apply: median(applies), write: median(writes) }
}

// A smoke run judges nothing (see bench/index.ts).
let smoke = false
const verdict = (ok: boolean) => smoke ? "not judged (smoke run)" : ok ? "ok" : "MISSED"

/** Copies every `.ts` file of `from` under `to`; returns the copies' paths relative to `to`. */
const copyTree = (from: string, to: string): Array<string> => {
  const copied: Array<string> = []
  for (const entry of FS.readdirSync(from, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile() || !entry.name.endsWith(".ts")) continue
    const source = NPath.join(entry.parentPath, entry.name)
    const relative = NPath.relative(from, source)
    FS.mkdirSync(NPath.dirname(NPath.join(to, relative)), { recursive: true })
    FS.copyFileSync(source, NPath.join(to, relative))
    copied.push(relative)
  }
  return copied.sort()
}

/**
 * The edit-producer rows of the table, and the names of the targets missed.
 */
export const editFigures = async (
  options: { readonly quick: boolean; readonly repeats: number }
): Promise<{ readonly rows: ReadonlyArray<Row>; readonly missed: ReadonlyArray<string> }> => {
  smoke = options.quick
  const repeats = Math.max(3, Math.min(options.repeats, options.quick ? 3 : 11))
  const rows: Array<Row> = []
  const missed: Array<string> = []
  const dir = FS.mkdtempSync(NPath.join(OS.tmpdir(), "effect-resolve-bench-edit-"))
  try {
    // 1. replaceAll touching every line, 8 000 and 16 000 lines (about 14 bytes per line).
    const everyLine: Array<{ lines: number; bytes: number; preview: number; read: number }> = []
    for (const lines of [8_000, 16_000]) {
      const name = `every-line-${lines}.txt`
      const text = Array.from({ length: lines }, (_, i) => `item ${i % 1000} = ${i % 7}\n`).join("")
      FS.writeFileSync(NPath.join(dir, name), text)
      const figures = await previewFigures(
        dir,
        [NPath.join(dir, name)],
        { files: [{ path: name, edits: [{ oldText: "item", newText: "entry", replaceAll: true }] }] },
        repeats
      )
      everyLine.push({ lines, bytes: Buffer.byteLength(text), ...figures })
    }
    for (const f of everyLine) {
      const base = everyLine[0]!
      const grows = (f.preview / base.preview) / (f.bytes / base.bytes)
      const fast = f.preview < 1_000
      const linear = f === base || grows <= 1.5
      rows.push({
        name: `edit preview, ${f.lines} lines`,
        figure: `edit preview, replaceAll on every line: ${f.lines} lines (${kib(f.bytes)}), ${f.lines} replacements`,
        value: ms(f.preview),
        floor: `${ms(f.read)} (fs read)`,
        plain: "—",
        vsFloor: ratio(f.preview, f.read),
        vsPlain: "—",
        target: f === base ?
          `< 1 s: ${verdict(fast)}` :
          `< 1 s: ${verdict(fast)}; linear (per byte ${grows.toFixed(2)}× the ${base.lines}-line file): ${
            verdict(linear)
          }`
      })
      if (!fast || !linear) missed.push(`edit preview every line ${f.lines}`)
    }

    // 2. One replacement in a large file: 2 MiB and 4 MiB (the default maxBytes), default limits.
    const large: Array<{ bytes: number; preview: number; read: number }> = []
    for (const size of [2 * 1024 * 1024, 4 * 1024 * 1024]) {
      const name = `large-${size}.ts`
      // Lines of one width (a generated module), one of them naming `middle`.
      const lineOf = (i: number, word: string) =>
        `export const v${String(i).padStart(7, "0")} = compute(${String(i % 97).padStart(2, "0")}, ${word})\n`
      const count = Math.floor(size / lineOf(0, "others").length)
      const middle = Math.floor(count / 2)
      const text = Array.from({ length: count }, (_, i) => lineOf(i, i === middle ? "middle" : "others")).join("")
      FS.writeFileSync(NPath.join(dir, name), text)
      const figures = await previewFigures(
        dir,
        [NPath.join(dir, name)],
        { files: [{ path: name, edits: [{ oldText: "middle", newText: "center" }] }] },
        repeats,
        {}
      )
      large.push({ bytes: Buffer.byteLength(text), ...figures })
    }
    for (const f of large) {
      const ok = f.preview <= 3 * f.read
      rows.push({
        name: `edit preview, ${kib(f.bytes)}`,
        figure: `edit preview, 1 replacement in a ${kib(f.bytes)} file (default limits)`,
        value: ms(f.preview),
        floor: `${ms(f.read)} (fs read)`,
        plain: "—",
        vsFloor: ratio(f.preview, f.read),
        vsPlain: "—",
        target: `≤ 3× floor: ${verdict(ok)}`
      })
      if (!ok) missed.push(`edit preview ${kib(f.bytes)}`)
    }

    // 3. An identifier rename across a real code tree.
    const source = NPath.join(NPath.dirname(fileURLToPath(import.meta.url)), "..", "node_modules", "effect", "src")
    const tree = NPath.join(dir, "tree")
    const all = copyTree(source, tree)
    const identifier = "pipeArguments"
    const holding = all.filter((file) => FS.readFileSync(NPath.join(tree, file), "utf8").includes(identifier))
    const sets = [holding.slice(0, Math.ceil(holding.length / 2)), holding]
    const refactor: Array<
      { files: number; bytes: number; preview: number; read: number; apply: number; write: number }
    > = []
    // A warm-up of the whole path on the full set first, so that the first set measured is not the colder one.
    {
      const paths = holding.map((file) => NPath.join(tree, file))
      const input: EditInput = {
        files: holding.map((path) => ({
          path,
          edits: [{ oldText: identifier, newText: "pipeArgumentsOf", replaceAll: true }]
        }))
      }
      await previewFigures(tree, paths, input, 2)
    }
    for (const set of sets) {
      const paths = set.map((file) => NPath.join(tree, file))
      const originals = paths.map((path) => FS.readFileSync(path))
      const edited = originals.map((bytes) =>
        Buffer.from(bytes.toString("utf8").replaceAll(identifier, "pipeArgumentsOf"), "utf8")
      )
      const input: EditInput = {
        files: set.map((path) => ({
          path,
          edits: [{ oldText: identifier, newText: "pipeArgumentsOf", replaceAll: true }]
        }))
      }
      const previewed = await previewFigures(tree, paths, input, repeats)
      const applied = await applyFigures(tree, paths, originals, edited, input, repeats)
      refactor.push({
        files: set.length,
        bytes: originals.reduce((n, b) => n + b.byteLength, 0),
        ...previewed,
        ...applied
      })
    }
    const half = refactor[0]!
    for (const f of refactor) {
      const previewOk = f.preview <= 3 * f.read
      const applyOk = f.apply <= 2 * f.write
      const previewGrowth = (f.preview / half.preview) / (f.bytes / half.bytes)
      const applyGrowth = (f.apply / half.apply) / (f.bytes / half.bytes)
      const linear = (growth: number) => f === half ? "" : `; per byte ${growth.toFixed(2)}× the half tree`
      const what = `rename ${identifier} in ${f.files} files of effect/src (${kib(f.bytes)})`
      rows.push({
        name: `edit preview, ${f.files} files`,
        figure: `edit preview, ${what}`,
        value: ms(f.preview),
        floor: `${ms(f.read)} (fs read)`,
        plain: "—",
        vsFloor: ratio(f.preview, f.read),
        vsPlain: "—",
        target: `≤ 3× floor: ${verdict(previewOk)}${linear(previewGrowth)}`
      })
      rows.push({
        name: `edit apply, ${f.files} files`,
        figure: `edit apply, ${what}`,
        value: ms(f.apply),
        floor: `${ms(f.write)} (temp + rename)`,
        plain: "—",
        vsFloor: ratio(f.apply, f.write),
        vsPlain: "—",
        target: `≤ 2× floor: ${verdict(applyOk)}${linear(applyGrowth)}`
      })
      if (!previewOk) missed.push(`edit preview refactor ${f.files} files`)
      if (!applyOk) missed.push(`edit apply refactor ${f.files} files`)
    }
  } finally {
    FS.rmSync(dir, { recursive: true, force: true })
  }
  return { rows, missed }
}

// Run alone (`npx tsx bench/edit.ts`): the edit rows only, with bench/index.ts's repeats.
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const quick = process.env.BENCH_QUICK !== undefined && process.env.BENCH_QUICK !== ""
  const started = Date.now()
  const { missed, rows } = await editFigures({ quick, repeats: quick ? 3 : 15 })
  console.log(`\neffect-resolve edit benchmarks (node ${process.version})\n`)
  printTable(rows)
  const outcome = quick ?
    "BENCH_QUICK: a smoke run; no target judged." :
    missed.length === 0 ?
    "All targets met." :
    `Targets missed: ${missed.join(", ")}.`
  console.log(`\n${outcome} Total ${((Date.now() - started) / 1000).toFixed(0)} s.`)
}
