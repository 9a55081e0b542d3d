/**
 * The inbox's listing stays O(page) on a store of 100 000 records (98 % settled, 100 sessions, 3 kinds), on SQLite
 * and Postgres, for each query shape the inbox sends (the default listing of open records, by status, by session,
 * by kind, a page deep in the listing). Timings on a shared machine are too noisy to prove it, so the test reads the
 * database's own account of each statement the store sent (captured with `Statement.withTransformer`):
 * - Postgres, `EXPLAIN (ANALYZE)`: the rows the scans of the records table returned or filtered out, at most 4 per
 *   row of the page (a full scan would read 100 000);
 * - SQLite, `EXPLAIN QUERY PLAN`: the records table is only read through an index whose order is the listing's
 *   (no table scan, no sort of what was read), so reading stops at the page's end.
 */
import * as Reactivity from "@effect/experimental/Reactivity"
import * as LibsqlClient from "@effect/sql-libsql/LibsqlClient"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Statement from "@effect/sql/Statement"
import { describe, it } from "@effect/vitest"
import { Context, Effect, Layer, Option } from "effect"
import { deepStrictEqual, strictEqual } from "node:assert/strict"
import * as path from "node:path"
import { afterAll } from "vitest"
import { PendingStore } from "../../src/services/PendingStore.js"
import * as PostgresStore from "../../src/stores/PostgresStore.js"
import * as SqlPendingStore from "../../src/stores/SqlPendingStore.js"
import { postgresForTests, postgresSuiteName } from "../support/pgTest.js"
import { freshSchema } from "../support/postgres.js"
import { tempDir } from "./subjects.js"

const pg = await postgresForTests()
const tmp = tempDir()
afterAll(() => tmp.cleanup())

const T0 = 1_700_000_000_000

/**
 * Inserts `n` records in one statement: `s<i % 100>`, kinds edit/plan/note in turn, in each session one in 50 pending (the first 100 of every 5 000), the others
 * applied; created one millisecond apart.
 */
const bulk = (n: number) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) => {
    const select = (i: string) =>
      `SELECT 'r' || ${i}, 's' || (${i} % 100),
        CASE ${i} % 3 WHEN 0 THEN 'edit' WHEN 1 THEN 'plan' ELSE 'note' END, 'Label', 'edit', NULL, 'preview', '{}',
        CASE WHEN (${i} / 100) % 50 = 0 THEN 'pending' ELSE 'applied' END, 0, ${T0} + ${i}, ${T0} + ${i}`
    const columns = "id, session, kind, label, source_tool_name, stager, preview, payload, status, attempts, " +
      "created_at, updated_at"
    const statement = sql.onDialectOrElse({
      pg: () =>
        `INSERT INTO effect_resolve_pending (${columns}) ${select("i")} FROM generate_series(0, ${n - 1}) AS g(i)`,
      orElse: () =>
        `WITH RECURSIVE g(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM g WHERE i < ${n - 1})
        INSERT INTO effect_resolve_pending (${columns}) ${select("i")} FROM g`
    })
    return Effect.zipRight(sql.unsafe(statement).raw, sql.unsafe("ANALYZE").raw)
  })

/** Runs `effect`, returning the statements it sent (SQL text and parameters). */
const captured = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.suspend(() => {
    const statements: Array<readonly [string, ReadonlyArray<unknown>]> = []
    return Effect.as(
      Statement.withTransformer(effect, (statement) =>
        Effect.sync(() => {
          statements.push(statement.compile())
          return statement
        })),
      statements
    )
  })

interface PgPlanNode {
  readonly "Node Type": string
  readonly "Relation Name"?: string
  readonly "Actual Rows"?: number
  readonly "Actual Loops"?: number
  readonly "Rows Removed by Filter"?: number
  readonly "Rows Removed by Index Recheck"?: number
  readonly Plans?: ReadonlyArray<PgPlanNode>
}

/** The rows the scans of the records table returned or filtered out, by Postgres's own count. */
const pgRowsRead = (node: PgPlanNode): number =>
  (node["Relation Name"] === "effect_resolve_pending" ?
    ((node["Actual Rows"] ?? 0) + (node["Rows Removed by Filter"] ?? 0) +
      (node["Rows Removed by Index Recheck"] ?? 0)) *
    (node["Actual Loops"] ?? 1) :
    0) + (node.Plans ?? []).reduce((sum, child) => sum + pgRowsRead(child), 0)

/**
 * What is wrong with a SQLite plan for an O(page) listing, if anything: a read of the records table that is not
 * through an index, or a sort of what such a read returned (its select sorts with a temp b-tree).
 */
const sqlitePlanProblem = (
  rows: ReadonlyArray<{ readonly id: number; readonly parent: number; readonly detail: string }>
): string | undefined => {
  for (const row of rows) {
    if (!/^(SCAN|SEARCH) effect_resolve_pending\b/.test(row.detail)) continue
    if (!/USING (COVERING )?INDEX/.test(row.detail)) return `a table scan: ${row.detail}`
    const sorted = rows.some((other) => other.parent === row.parent && other.detail.startsWith("USE TEMP B-TREE"))
    if (sorted) return `what ${row.detail} reads is sorted afterwards`
  }
  return undefined
}

type Store = Layer.Layer<PendingStore | SqlClient.SqlClient, unknown>

const targets: ReadonlyArray<{ readonly name: string; readonly skip: string | undefined; readonly make: () => Store }> =
  [
    {
      name: "sqlite",
      skip: undefined,
      make: (() => {
        let files = 0
        return () =>
          Layer.provideMerge(
            SqlPendingStore.layer,
            LibsqlClient.layer({ url: `file:${path.join(tmp.dir, `scale-${++files}.db`)}` }).pipe(
              Layer.provide(Reactivity.layer)
            )
          )
      })()
    },
    {
      name: postgresSuiteName("postgres", pg),
      skip: pg._tag === "Available" ? undefined : pg.reason,
      make: () =>
        Layer.unwrapEffect(
          Effect.map(freshSchema(pg._tag === "Available" ? pg.url : ""), (url) => PostgresStore.layerClient({ url }))
        )
    }
  ]

for (const target of targets) {
  describe.skipIf(target.skip !== undefined)(`the inbox's listing on 100 000 records: ${target.name}`, () => {
    it.live(
      "each query shape reads about a page of records, not the table; the pages are right",
      () =>
        Effect.gen(function*() {
          const large = yield* Layer.build(target.make())
          yield* Effect.provide(bulk(100_000), large)
          const sql = Context.get(large, SqlClient.SqlClient)
          const isPg = sql.onDialectOrElse({ pg: () => true, orElse: () => false })
          const largeStore = Context.get(large, PendingStore)
          const now = T0 + 200_000
          const shapes: ReadonlyArray<[string, number, PendingStore.ActionQuery]> = [
            ["default (open, every session)", 1, { now, limit: 50 }],
            ["status applied", 1, { now, limit: 50, statuses: ["applied"] }],
            ["statuses pending + applied", 2, { now, limit: 50, statuses: ["pending", "applied"] }],
            ["one session, open", 1, { now, limit: 50, sessions: ["s0"] }],
            ["two sessions, applied", 2, { now, limit: 50, sessions: ["s1", "s2"], statuses: ["applied"] }],
            ["kind note, open", 1, { now, limit: 50, kinds: ["note"] }],
            ["kind note, applied", 1, { now, limit: 50, kinds: ["note"], statuses: ["applied"] }],
            ["snoozed only", 1, { now, limit: 50, snoozed: "only", statuses: ["pending"] }]
          ]
          // A page deep in the listing: its cursor is in the middle of the table.
          const middle = yield* largeStore.listActions({ now, limit: 1, statuses: ["applied"], sessions: ["s3"] })
          const deep: Array<[string, number, PendingStore.ActionQuery]> = [[
            "a page deep in the listing",
            1,
            { now, limit: 50, statuses: ["applied"], cursor: Option.getOrThrow(middle.next) }
          ]]
          for (const [name, branches, query] of [...shapes, ...deep]) {
            const statements = yield* captured(largeStore.listActions(query))
            strictEqual(statements.length, 1, name)
            const [text, params] = statements[0]!
            if (isPg) {
              const [row] = yield* sql.unsafe<{ readonly "QUERY PLAN": ReadonlyArray<{ readonly Plan: PgPlanNode }> }>(
                `EXPLAIN (ANALYZE, FORMAT JSON) ${text}`,
                params
              ).withoutTransform
              const read = pgRowsRead(row!["QUERY PLAN"][0]!.Plan)
              strictEqual(read <= 4 * branches * (query.limit + 1), true, `${name}: ${read} rows read`)
            } else {
              const plan = yield* sql.unsafe<{ readonly id: number; readonly parent: number; readonly detail: string }>(
                `EXPLAIN QUERY PLAN ${text}`,
                params
              ).withoutTransform
              strictEqual(sqlitePlanProblem(plan), undefined, `${name}: ${plan.map((r) => r.detail).join(" / ")}`)
            }
          }
          // The pages are right: session s7's 1 000 records (20 pending, 980 applied), newest first, 10 pages.
          const seen: Array<string> = []
          let cursor: string | undefined
          do {
            const page: PendingStore.Page<PendingStore.ListedAction> = yield* largeStore.listActions({
              now,
              limit: 100,
              sessions: ["s7"],
              statuses: ["pending", "applied"],
              cursor
            })
            seen.push(...page.items.map((item) => item.record.id))
            cursor = Option.getOrUndefined(page.next)
          } while (cursor !== undefined)
          deepStrictEqual(seen, Array.from({ length: 1_000 }, (_, k) => `r${99_907 - 100 * k}`))
          deepStrictEqual(yield* largeStore.countActions({ now }), {
            pending: 2_000,
            requested: 0,
            snoozed: 0,
            resolving: 0,
            orphaned: 0,
            conflict: 0
          })
        }).pipe(Effect.scoped),
      { timeout: 180_000 }
    )
  })
}
