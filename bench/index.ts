/**
 * `npm run bench`: prints ONE table, at most 100 columns wide: per row a short name, the numbers and the verdict;
 * numbered notes under it give each figure in full, what its floor is, and its target. Every figure is a median over repeated runs of a program written as an app
 * would write it (one Effect program calling the public API, run with `Effect.runSync`), with two references
 * measured in the same run: the Effect floor (the same number of steps as `Effect.sync` calls over a mutable
 * array inside one `Effect.gen`) and a plain synchronous class with the same queue rules (`bench/PlainQueue.ts`).
 *
 * It measures the published build (`dist/`, which the npm script builds first), as an app installing the package
 * runs it: tsx, which runs these files, compiles TypeScript with esbuild's `keepNames`, and the `__name` call that
 * adds to every named closure took about 15% of the resolve round trip (bench profile), a cost `tsc`'s output
 * does not have.
 *
 * The edit-producer rows (`bench/edit.ts`) time previews and applies on real files in a temporary directory; their
 * floor is plain `fs` (reads, or write-to-temp-then-rename) of the same files, and their times are in ms.
 *
 * Environment: `BENCH_QUICK=1` runs a shorter version (a smoke run, not for figures: smaller sizes, the cluster's
 * failover row skipped; under 45 s on 2 cores, the build included).
 *
 * The store, history and cluster rows share one Postgres server (`bench/postgres.ts`: `EFFECT_RESOLVE_PG_URL`, else one
 * started for the run), each section in a fresh schema. As each section ends, its time goes to stderr
 * (`bench: <section> <s> s`).
 */
import * as Effect from "effect/Effect"
import { clusterFigures } from "./cluster.js"
import { editFigures } from "./edit.js"
import { eventFigures } from "./events.js"
import { bytes, median, printTable, ratio, type Row, us, wrap } from "./harness.js"
import { historyFigures } from "./history.js"
import { inboxFigures } from "./inbox.js"
import { mcpFigures } from "./mcp.js"
import { parallelFigures } from "./parallel.js"
import { startPostgres } from "./postgres.js"
import { floorProgram, queueCycle } from "./queue.js"
import { heapGrowth, resolveRoundTrip, retainedPerAction } from "./resolve.js"
import { sessionFigures } from "./session.js"
import { storeFigures } from "./store.js"

const quick = process.env.BENCH_QUICK !== undefined && process.env.BENCH_QUICK !== ""
const cycles = quick ? 2_000 : 20_000
const repeats = quick ? 3 : 15
const started = Date.now()
const rows: Array<Row> = []
const checks: Array<string> = []
// The Postgres server of the store, history and cluster sections (below); a smoke run starts it now, alongside the
// first sections.
const pgStarting = quick ? startPostgres() : undefined

// Where the run's time goes: as each section ends, its time on stderr (`bench: <section> <s> s`), apart from the table.
let sectionStart = Date.now()
const endSection = (name: string) => {
  const now = Date.now()
  process.stderr.write(`bench: ${name} ${((now - sectionStart) / 1000).toFixed(1)} s\n`)
  sectionStart = now
}

// A smoke run judges nothing: its figures, short and often on a loaded machine, mean little.
const verdict = (ok: boolean) => quick ? "not judged (smoke run)" : ok ? "ok" : "MISSED"

// Queue cycle: pushOnce → nextToolChoice → resolve, for tail and `now` pushes, at depths 1, 100, 10 000.
for (const now of [false, true]) {
  const figures = [1, 100, 10_000].map((depth) => queueCycle(depth, now, cycles, repeats))
  const base = figures[0]!
  for (const f of figures) {
    const withinFloor = f.queue <= 2 * f.floor
    const flat = f.queue <= 1.5 * base.queue
    rows.push({
      name: `queue ${now ? "now" : "tail"}, depth ${f.depth}`,
      figure: `queue cycle (pushOnce → nextToolChoice → resolve), ${now ? "now: true" : "tail"} push, depth ${f.depth}`,
      value: us(f.queue),
      floor: us(f.floor),
      plain: us(f.plain),
      vsFloor: ratio(f.queue, f.floor),
      vsPlain: ratio(f.queue, f.plain),
      target: f.depth === 1 ?
        `≤ 2× floor: ${verdict(withinFloor)}` :
        `≤ 2× floor: ${verdict(withinFloor)}; ≤ 1.5× depth 1 (${ratio(f.queue, base.queue)}): ${verdict(flat)}`
    })
    if (!withinFloor || !flat) checks.push(`queue cycle ${now ? "now" : "tail"} depth ${f.depth}`)
  }
}

endSection("queue")

// Resolve round trip through ResolveTool.execute, against the floor's 3-step cycle.
{
  const floor3 = floorProgram(cycles, 3)
  const r = resolveRoundTrip(cycles, repeats, floor3)
  const ok = r.value <= 10 * r.floor
  rows.push({
    name: "resolve round trip",
    figure: "resolve round trip (stage → serve → ResolveTool.execute → end turn)",
    value: us(r.value),
    floor: `${us(r.floor)} (3 steps)`,
    plain: us(r.plain),
    vsFloor: ratio(r.value, r.floor),
    vsPlain: ratio(r.value, r.plain),
    target: `≤ 10× floor cycle: ${verdict(ok)}`
  })
  if (!ok) checks.push("resolve round trip")
}

endSection("resolve")

// Memory.
{
  const count = quick ? 1_000 : 10_000
  const { plainSamples, samples } = retainedPerAction(count, quick ? 1 : 7)
  rows.push({
    name: "heap per pending action",
    figure: `retained heap per pending action (${count} staged)`,
    value: bytes(median(samples)),
    floor: "—",
    plain: bytes(median(plainSamples)),
    vsFloor: "—",
    vsPlain: ratio(median(samples), median(plainSamples)),
    target: "for information"
  })
  const perSegment = quick ? 5_000 : 100_000
  const heaps = heapGrowth(10, perSegment)
  const total = heaps[heaps.length - 1]! - heaps[0]!
  const deltas = heaps.slice(1).map((h, i) => h - heaps[i]!)
  const flat = total < 1024 * 1024
  rows.push({
    name: `heap growth, ${10 * perSegment >= 1e6 ? `${10 * perSegment / 1e6}M` : `${10 * perSegment / 1e3}k`} cycles`,
    figure: `heap growth over ${10 * perSegment} stage/resolve cycles (after a warm-up)`,
    value: bytes(total),
    floor: "—",
    plain: "—",
    vsFloor: "—",
    vsPlain: "—",
    target: `flat (< 1 MiB; median per ${perSegment}: ${bytes(median(deltas))}): ${verdict(flat)}`
  })
  if (!flat) checks.push("heap growth")
}

endSection("heap")

// Scripted agent sessions through the turn driver, when it is available.
rows.push(...(await sessionFigures(quick ? 20 : 1_000, quick ? 1 : repeats)))

endSection("sessions")

// Parallel tool calls: an N-file change in model requests and tool_choice changes (bench/parallel.ts).
{
  const parallel = await parallelFigures()
  rows.push(...parallel.rows)
  checks.push(...parallel.missed)
}

endSection("parallel")

// The edit producer on real files: previews and applies against plain fs reads and writes (bench/edit.ts).
{
  const edit = await editFigures({ quick, repeats })
  rows.push(...edit.rows)
  checks.push(...edit.missed)
}

endSection("edit")

// One Postgres server for the store, history and cluster sections (each works in a fresh schema): EFFECT_RESOLVE_PG_URL
// when set, else one started now (a smoke run: at its start) with Postgres's default settings (bench/postgres.ts),
// stopped after the cluster rows (and by its watchdog if this process dies first).
const pg = await (pgStarting ?? startPostgres())
endSection("postgres")

// The durable store: a round trip through a SQLite file and Postgres (when reachable), against the same row writes
// by hand, one transaction each (bench/store.ts).
{
  const store = await storeFigures({ roundTrips: quick ? 10 : 50, repeats: quick ? 3 : 5, postgres: pg.postgres })
  for (const f of store.figures) {
    const name = f.store === "sqlite" ? "SQLite file" : "Postgres"
    const short = f.store === "sqlite" ? "SQLite" : "Postgres"
    const ok = f.session <= 1.5 * f.floorTransactions
    rows.push({
      name: `durable trip, ${short}`,
      figure: `durable round trip, ${name} (stageKind → serve → ResolveTool.execute by id → applied, persisted)`,
      value: us(f.session),
      floor: `${us(f.floorTransactions)} (by hand)`,
      plain: "—",
      vsFloor: ratio(f.session, f.floorTransactions),
      vsPlain: "—",
      target: `≤ 1.5× floor: ${verdict(ok)}`
    })
    rows.push({
      name: `  store alone, ${short}`,
      figure: `of which the store alone, ${name} (insert → claim → settle)`,
      value: us(f.value),
      floor: `${us(f.floorStatements)} (its statements by hand)`,
      plain: "—",
      vsFloor: ratio(f.value, f.floorStatements),
      vsPlain: "—",
      target: "for information"
    })
    if (!ok) checks.push(`durable round trip ${f.store}`)
  }
  for (const s of store.skipped) {
    rows.push({
      name: "durable trip, Postgres",
      figure: `durable round trip, Postgres: skipped (${s.reason})`,
      value: "—",
      floor: "—",
      plain: "—",
      vsFloor: "—",
      vsPlain: "—",
      target: "—"
    })
  }
}

endSection("store")

// A long-running server: a long session's history costs its turns nothing; sessions that come and go leave no
// memory behind (bench/history.ts).
{
  const history = await historyFigures({ quick, repeats: quick ? 3 : 9, postgres: pg.postgres })
  rows.push(...history.rows)
  checks.push(...history.missed)
}

endSection("history")

// The approval inbox over HTTP on a SQLite file, against plain node:http handlers doing the same SQL
// (bench/inbox.ts).
{
  const inbox = await inboxFigures({ quick, repeats: quick ? 2 : 5 })
  rows.push(...inbox.rows)
  checks.push(...inbox.missed)
}

endSection("inbox")

// Event latency: a decision → a subscriber of the change feed, pushed (SQLite in one process; Postgres across two
// pools, LISTEN/NOTIFY), against the same path by hand (bench/events.ts).
{
  const events = await eventFigures({ quick, postgres: pg.postgres })
  rows.push(...events.rows)
  checks.push(...events.missed)
}

endSection("events")

// The MCP server: a preview + resolve round trip through the stdio server against the same calls in process
// (bench/mcp.ts).
{
  const mcp = await mcpFigures({ quick, verdict })
  rows.push(...mcp.rows)
  checks.push(...mcp.missed)
}

endSection("mcp")

// Sessions on @effect/cluster: a person's decision through two runner processes and SingleRunner against the plain
// durable session, and a runner's SIGKILL until its sessions answer again (bench/cluster.ts).
{
  const cluster = await clusterFigures(pg.postgres)
  rows.push(...cluster.rows)
  checks.push(...cluster.missed)
}

endSection("cluster")
await pg.stop()
console.log(`\neffect-resolve benchmarks (node ${process.version}, ${cycles} cycles × ${repeats} runs per figure)\n`)
printTable(rows)
console.log(
  "\n" + wrap(
    quick ?
      `BENCH_QUICK: a smoke run (short, on a loaded machine its figures mean little); targets are judged by the full ` +
      `run only. Total ${((Date.now() - started) / 1000).toFixed(0)} s.` :
      `${checks.length === 0 ? "All targets met." : `Targets missed: ${checks.join(", ")}.`} ` +
      `Total ${((Date.now() - started) / 1000).toFixed(0)} s.`,
    100
  )
)
void Effect.void
// The process would not end on its own: the cluster section (its client-only node, bench/cluster.ts `cluster`) leaves
// fibers running after its scope is closed, whose timers (0.5 to 10 s) keep firing. As the section files run alone
// do, exit (once stdout is flushed).
process.stdout.write("", () => process.exit(0))
