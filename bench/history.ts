/**
 * Long-running server figures (the published build, `dist/`):
 *
 * - A durable session's history must not cost its turns anything: one session holding 100 000 settled records (1 000
 *   in a smoke run) against one holding 100, in the same database, each with one pending action. Timed: the first
 *   page of `PendingActions.listPage` (50 actions), `PendingActions.listOpen` (what the turn driver reads before
 *   every turn) and one durable round trip (`stageKind` → serve → `ResolveTool.execute` by id → end the turn).
 *   Target: the long session within 1.2× of the short one, on a SQLite file and on Postgres (when reachable). The
 *   records are written by SQL in bulk (the store's own tables and triggers, so each has its journal), and the
 *   sessions keep everything (`retention: "keep-all"`), so nothing is pruned while they are timed.
 * - Memory stays flat when sessions come and go: 100 000 sessions (50 in a smoke run) opened and closed in one
 *   process, each a durable session (its own in-memory store) whose turn driver runs one scripted turn that stages a
 *   preview, and a second that applies it. The heap after a full collection is read at 10 points after a warm-up.
 *
 * Returns the rows; prints nothing.
 */
import { Tool, Toolkit } from "@effect/ai"
import * as LibsqlClient from "@effect/sql-libsql/LibsqlClient"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as Schema from "effect/Schema"
import * as Scope from "effect/Scope"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { ScriptedModel, TurnDriver } from "../dist/ai.js"
import {
  ActionKind,
  PendingActions,
  PendingStore,
  PendingStoreError,
  ResolveRuntime,
  ResolveTool,
  stageKind,
  SteeringBus,
  ToolChoiceQueue,
  ToolResult
} from "../dist/index.js"
import { StandingResolveHandler } from "../dist/services/StandingResolveHandler.js"
import * as PostgresStore from "../dist/stores/PostgresStore.js"
import * as SqlPendingStore from "../dist/stores/SqlPendingStore.js"
import { type Availability, freshSchema } from "../test/support/postgres.js"
import { bytes, compareMediansAsync, median, ratio, type Row, settledHeap, us } from "./harness.js"
import { withPostgres } from "./postgres.js"

const Note = ActionKind.make({
  name: "note",
  payload: Schema.Struct({ text: Schema.String }),
  apply: () => Effect.succeed(ToolResult.text("Noted."))
})

const sessionLayer = (session: string) =>
  PendingActions.layerDurable({ session, kinds: [Note], retention: "keep-all" }).pipe(
    Layer.provideMerge(Layer.mergeAll(ToolChoiceQueue.layer, SteeringBus.layer, StandingResolveHandler.layer))
  )

/** Writes `count` settled records (and their journals, by the store's triggers) into `session`, in bulk. */
const fill = (session: string, count: number) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) => {
    const batch = 500
    const now = Date.now() - 86_400_000
    return Effect.forEach(Array.from({ length: Math.ceil(count / batch) }, (_, b) => b), (b) =>
      sql.withTransaction(
        Effect.forEach(Array.from({ length: Math.min(batch, count - b * batch) }, (_, i) => b * batch + i), (i) =>
          sql`INSERT INTO effect_resolve_pending (id, session, kind, label, source_tool_name, stager, preview,
            payload, status, attempts, owner, lease_until, created_at, updated_at, expires_at, outcome)
            VALUES (${`${session}-${i}`}, ${session}, 'note', ${`Note ${i}`}, 'note', NULL, ${`+ note ${i}`},
              ${JSON.stringify({ text: `note ${i}` })}, 'applied', 1, NULL, NULL, ${now + i}, ${now + i}, NULL,
              'Noted.')`.raw, { discard: true })
      ), { discard: true })
  })

interface Figure {
  readonly page: number
  readonly open: number
  readonly trip: number
}

const measureStore = async (
  layer: Layer.Layer<PendingStore | SqlClient.SqlClient, unknown>,
  long: number,
  repeats: number
): Promise<{ readonly short: Figure; readonly long: Figure }> => {
  const base = ManagedRuntime.make(layer)
  try {
    await base.runPromise(Effect.zipRight(fill("short", 100), fill("long", long)))
    // The planner's statistics, as autovacuum (Postgres) or an app's periodic ANALYZE would leave them.
    await base.runPromise(Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe("ANALYZE").raw))
    // Both sessions on the store already open (one client, as an app shares it).
    const store = Layer.succeed(PendingStore, await base.runPromise(PendingStore))
    const scopes: Array<Scope.CloseableScope> = []
    const sessions: Array<<A, E>(effect: Effect.Effect<A, E, any>) => Promise<A>> = []
    for (const session of ["short", "long"]) {
      const scope = await base.runPromise(Scope.make())
      scopes.push(scope)
      const context = await base.runPromise(Layer.buildWithScope(Layer.provide(sessionLayer(session), store), scope))
      const run = <A, E>(effect: Effect.Effect<A, E, any>) => base.runPromise(Effect.provide(effect, context))
      // One action stays pending for listOpen to find.
      await run(stageKind(Note, { text: "open" }, { label: "Note: open", sourceToolName: "note" }))
      sessions.push(run)
    }
    try {
      const ops = 10
      const page = Effect.flatMap(PendingActions, (p) => p.listPage({ limit: 50 }))
      const open = Effect.flatMap(PendingActions, (p) => p.listOpen)
      const trip = Effect.gen(function*() {
        const queue = yield* ToolChoiceQueue
        const handle = yield* stageKind(Note, { text: "trip" }, { label: "Note: trip", sourceToolName: "note" })
        yield* queue.nextToolChoice
        yield* ResolveTool.execute({ action: "apply", reason: "ok", extra: null, id: handle.id })
        yield* queue.resolve
      })
      // Per program, the short session's median and the long one's, interleaved.
      const time = (program: Effect.Effect<unknown, unknown, any>) =>
        compareMediansAsync(
          sessions.map((run) => ({
            run: () => run(Effect.forEach(Array.from({ length: ops }), () => program, { discard: true }))
          })),
          ops,
          repeats
        )
      const [pages, opens, trips] = [await time(page), await time(open), await time(trip)]
      return {
        short: { page: pages[0]!, open: opens[0]!, trip: trips[0]! },
        long: { page: pages[1]!, open: opens[1]!, trip: trips[1]! }
      }
    } finally {
      for (const scope of scopes) await base.runPromise(Scope.close(scope, Exit.void))
    }
  } finally {
    await base.dispose()
  }
}

const Stage = Tool.make("stage", {
  parameters: { text: Schema.String },
  success: Schema.String,
  failure: PendingStoreError,
  dependencies: [PendingActions]
})
const Tools = Toolkit.make(Stage)
const toolLayer = Tools.toLayer({
  stage: ({ text }) =>
    Effect.as(stageKind(Note, { text }, { label: `Note: ${text}`, sourceToolName: "stage" }), "Preview staged.")
})

/** One session, opened and closed: a durable runtime on its own store, a driver, two scripted turns and an answer. */
const oneSession = (i: number) =>
  Effect.scoped(Effect.gen(function*() {
    const layer = Layer.mergeAll(TurnDriver.layerOn(), toolLayer).pipe(
      Layer.provideMerge(ResolveRuntime.durable({ session: `s${i}`, store: PendingStore.layerMemory, kinds: [Note] })),
      Layer.provideMerge(ScriptedModel.layer([
        ScriptedModel.toolCall("stage", { text: `n${i}` }),
        ScriptedModel.toolCall("resolve", { action: "apply", reason: "ok", extra: null, id: null }),
        "Done."
      ]))
    )
    const context = yield* Layer.build(layer)
    yield* Effect.provide(Effect.flatMap(TurnDriver, (driver) => driver.run("Note it.", { toolkit: Tools })), context)
  }))

const sessionHeap = async (sessions: number) => {
  const segments = 10
  const per = Math.max(1, Math.floor(sessions / segments))
  const segment = async (from: number) => {
    for (let i = from; i < from + per; i++) await Effect.runPromise(oneSession(i))
  }
  await segment(-per)
  const heaps = [settledHeap()]
  for (let s = 0; s < segments; s++) {
    await segment(s * per)
    heaps.push(settledHeap())
  }
  return heaps
}

/** `100_000` as `100k`, `50` as itself (a row's short name). */
const thousands = (n: number) => n >= 1000 ? `${n / 1000}k` : String(n)

/** The rows of this file; `missed` names the targets missed. */
export const historyFigures = async (
  options: {
    readonly quick: boolean
    readonly repeats: number
    /** The Postgres server (default: `EFFECT_RESOLVE_PG_URL`, else one started for these figures). */
    readonly postgres?: Availability
  }
): Promise<{ readonly rows: ReadonlyArray<Row>; readonly missed: ReadonlyArray<string> }> => {
  const long = options.quick ? 1_000 : 100_000
  const rows: Array<Row> = []
  const missed: Array<string> = []
  const verdict = (ok: boolean) => options.quick ? "not judged (smoke run)" : ok ? "ok" : "MISSED"

  const report = (store: string, result: { readonly short: Figure; readonly long: Figure }) => {
    for (
      const [key, name, figure] of [
        ["page", "page", "PendingActions.listPage, the first 50"],
        ["open", "listOpen", "PendingActions.listOpen (before every turn)"],
        ["trip", "resolve", "one durable round trip (stageKind → serve → resolve by id → end turn)"]
      ] as const
    ) {
      const ok = result.long[key] <= 1.2 * result.short[key]
      rows.push({
        name: `${thousands(long)} settled: ${name}, ${store}`,
        figure: `${figure}, ${store}: a session holding ${long} settled records, against one holding 100`,
        value: us(result.long[key]),
        floor: `${us(result.short[key])} (100 records)`,
        plain: "—",
        vsFloor: ratio(result.long[key], result.short[key]),
        vsPlain: "—",
        target: `≤ 1.2× the short session: ${verdict(ok)}`
      })
      if (!ok && !options.quick) missed.push(`${long} settled records, ${name}, ${store}`)
    }
  }

  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "effect-resolve-bench-history-"))
  try {
    const client = LibsqlClient.layer({ url: `file:${path.join(dir, "history.db")}` })
    const wal = Layer.effectDiscard(
      Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe("PRAGMA journal_mode = WAL").raw)
    )
    report(
      "SQLite",
      await measureStore(
        Layer.provideMerge(SqlPendingStore.layer, Layer.provideMerge(wal, client)),
        long,
        options.repeats
      )
    )
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }

  await withPostgres(options.postgres, async (postgres) => {
    if (postgres._tag === "Unavailable") return
    const schemaUrl = await Effect.runPromise(freshSchema(postgres.url))
    report("Postgres", await measureStore(PostgresStore.layerClient({ url: schemaUrl }), long, options.repeats))
  })

  const sessions = options.quick ? 50 : 100_000
  const heaps = await sessionHeap(sessions)
  const total = heaps[heaps.length - 1]! - heaps[0]!
  const flat = total < 1024 * 1024
  rows.push({
    name: `heap, ${thousands(sessions)} sessions`,
    figure: `heap growth over ${sessions} durable agent sessions opened, run (a preview staged and applied) and ` +
      "closed in one process (after a warm-up)",
    value: bytes(total),
    floor: "—",
    plain: "—",
    vsFloor: "—",
    vsPlain: "—",
    target: `flat (< 1 MiB; median per ${sessions / 10}: ${
      bytes(median(heaps.slice(1).map((h, i) => h - heaps[i]!)))
    }): ${verdict(flat)}`
  })
  if (!flat && !options.quick) missed.push(`heap over ${sessions} sessions`)
  return { rows, missed }
}
