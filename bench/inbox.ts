/**
 * The approval inbox's rows of `npm run bench`, on a SQLite file, each against a floor in the same run: a plain
 * `node:http` handler doing the same SQL on the same file through the same client (no HttpApi, no auth, no Schema,
 * no session), so that a ratio is what the inbox's own machinery costs (issue 28 §2: ≤ 2×).
 *
 * - decision latency: POST a decision (the inbox registers the kind and applies it) → the response → the agent's
 *   session reads the action applied; the floor: a POST whose handler sends the statements the inbox sends (the
 *   action with its requested decision; the decision recorded; the record read and claimed; the settle and the
 *   decision's completion in one transaction; the action read again), then the same read. Until 2026-12-07 the
 *   floor was one conditional UPDATE (about 1.3 ms): it measured the durable decision's five statements and two
 *   commits more, not the inbox.
 * - the first page of a 10 000-action list (GET /api/actions: 50 summaries and the badge's counts); the floor: a
 *   handler running the inbox's page SELECT (with the requested decisions joined) and its count query, at once, as
 *   JSON (until 2026-12-07: a simpler SELECT and one COUNT).
 * - SSE fan-out: 100 subscribers of /api/events; from a record staged to the last subscriber hearing of it; the
 *   floor: a handler that polls the journal's head at the same interval and writes one line to 100 responses.
 */
import * as Reactivity from "@effect/experimental/Reactivity"
import * as LibsqlClient from "@effect/sql-libsql/LibsqlClient"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as Schema from "effect/Schema"
import * as fs from "node:fs"
import * as http from "node:http"
import * as os from "node:os"
import * as path from "node:path"
import { Inbox, InboxServer } from "../dist/inbox.js"
import { ActionKind, PendingActions, ResolveRuntime, stageKind, ToolResult } from "../dist/index.js"
import { joinedDecisionColumns, joinedRecordColumns } from "../dist/stores/internal/sqlInbox.js"
import { recordColumns } from "../dist/stores/internal/sqlRows.js"
import { openCondition, snoozedCondition } from "../dist/stores/internal/sqlSchema.js"
import * as SqliteStore from "../dist/stores/SqliteStore.js"
import { median, type Row } from "./harness.js"

const secret = "bench-secret-0123456789abcdef"
const Note = ActionKind.make({
  name: "note",
  payload: Schema.Struct({ text: Schema.String }),
  apply: ({ text }) => Effect.succeed(ToolResult.text(`Noted ${text}`))
})

const ms = (value: number) => `${value < 10 ? value.toFixed(2) : value.toFixed(1)} ms`

/** One request; resolves with the status and body. */
const call = (port: number, method: string, url: string, body?: string) =>
  new Promise<{ status: number; text: string }>((resolve, reject) => {
    const req = http.request({
      host: "127.0.0.1",
      port,
      method,
      path: url,
      headers: {
        authorization: `Bearer ${secret}`,
        origin: `http://127.0.0.1:${port}`,
        ...(body === undefined ? {} : { "content-type": "application/json", "content-length": Buffer.byteLength(body) })
      },
      agent: keepAlive
    }, (res) => {
      let text = ""
      res.on("data", (chunk) => (text += chunk))
      res.on("end", () => resolve({ status: res.statusCode ?? 0, text }))
    })
    req.on("error", reject)
    req.end(body)
  })
const keepAlive = new http.Agent({ keepAlive: true, maxSockets: 200 })

/** Opens `count` event streams; `heard(marker)` resolves when every one has received a chunk containing it. */
const subscribe = async (port: number, url: string, count: number) => {
  const buffers: Array<string> = Array.from({ length: count }, () => "")
  const responses: Array<http.IncomingMessage> = []
  const requests: Array<http.ClientRequest> = []
  let waiter: ((first: number) => void) | undefined
  let marker = ""
  let first: number | undefined
  const check = () => {
    if (waiter === undefined) return
    if (first === undefined && buffers.some((b) => b.includes(marker))) first = performance.now()
    if (buffers.every((b) => b.includes(marker))) {
      const done = waiter
      waiter = undefined
      done(first!)
    }
  }
  await Promise.all(buffers.map((_, i) =>
    new Promise<void>((resolve, reject) => {
      const req = http.get({
        host: "127.0.0.1",
        port,
        path: url,
        headers: { authorization: `Bearer ${secret}`, accept: "text/event-stream" },
        agent: false
      }, (res) => {
        responses.push(res)
        res.setEncoding("utf8")
        res.on("data", (chunk: string) => {
          buffers[i] += chunk
          if (buffers[i]!.length > 100_000) buffers[i] = buffers[i]!.slice(-50_000)
          check()
        })
        resolve()
      })
      req.on("error", reject)
      requests.push(req)
    })
  ))
  return {
    /** When the first subscriber heard `wanted`; resolves when the last has. */
    heard: (wanted: string) =>
      new Promise<number>((resolve) => {
        marker = wanted
        first = undefined
        waiter = resolve
        check()
      }),
    close: () => requests.forEach((r) => r.destroy())
  }
}

/** Inserts `count` pending records directly (what 10 000 staged actions leave in the table). */
const fill = (file: string, count: number) =>
  Effect.runPromise(
    Effect.flatMap(LibsqlClient.LibsqlClient, (sql) =>
      sql.unsafe(`WITH RECURSIVE g(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM g WHERE i < ${count - 1})
        INSERT INTO effect_resolve_pending (id, session, kind, label, source_tool_name, stager, preview, payload,
          status, attempts, created_at, updated_at)
        SELECT 'bulk-' || i, 'bulk-' || (i % 7), 'note', 'Bulk note ' || i, 'note', NULL, 'preview ' || i,
          '{"text":"bulk"}', 'pending', 0, 1700000000000 + i, 1700000000000 + i FROM g`).raw).pipe(
        Effect.scoped,
        Effect.provide(LibsqlClient.layer({ url: `file:${file}` }).pipe(Layer.provide(Reactivity.layer)))
      )
  )

/** The floor's decisions, numbered. */
let floorDecisions = 0

/** The floor's server: plain handlers over one libsql client on the same file. */
const floorServer = async (file: string) => {
  const runtime = ManagedRuntime.make(LibsqlClient.layer({ url: `file:${file}` }).pipe(Layer.provide(Reactivity.layer)))
  const sql = await runtime.runPromise(LibsqlClient.LibsqlClient)
  const run = <A>(effect: Effect.Effect<A, unknown>) => runtime.runPromise(effect)
  const streams = new Set<http.ServerResponse>()
  let head = -1
  const poll = setInterval(async () => {
    const [row] = await run(
      sql.unsafe<{ seq: number }>("SELECT coalesce(max(seq), 0) AS seq FROM effect_resolve_events")
    )
    const seq = Number(row?.seq ?? 0)
    if (head >= 0 && seq !== head) {
      const [last] = await run(
        sql.unsafe<{ action_id: string }>("SELECT action_id FROM effect_resolve_events WHERE seq = ?", [seq])
      )
      for (const res of streams) res.write(`data: ${JSON.stringify({ id: last?.action_id })}\n\n`)
    }
    head = seq
  }, 50)
  const server = http.createServer(async (req, res) => {
    const url = new URL(req.url ?? "/", "http://x")
    if (url.pathname === "/events") {
      res.writeHead(200, { "content-type": "text/event-stream" })
      res.write(": ok\n\n")
      streams.add(res)
      req.on("close", () => streams.delete(res))
      return
    }
    if (url.pathname === "/list") {
      // The first page, the same SQL the inbox sends, by hand: the open records not snoozed, newest first, with
      // their requested decision; and the badge's counts (all open by status, the snoozed, the requested), at once.
      const now = Date.now()
      const [rows, counts] = await Promise.all([
        run(sql.unsafe(
          `SELECT p.seq, ${joinedRecordColumns}, p.snoozed_until, ${joinedDecisionColumns} FROM (SELECT seq, ` +
            `${recordColumns}, snoozed_until FROM effect_resolve_pending INDEXED BY effect_resolve_pending_open_all ` +
            `WHERE ${openCondition} AND (snoozed_until IS NULL OR snoozed_until <= ?) ` +
            "ORDER BY created_at DESC, seq DESC LIMIT 51) p " +
            "LEFT JOIN effect_resolve_decisions d ON d.action_id = p.id AND d.state = 'requested' " +
            "ORDER BY p.created_at DESC, p.seq DESC",
          [now]
        )),
        run(sql.unsafe(
          `SELECT 'all' AS part, p.status AS status, 0 AS snoozed, count(*) AS n FROM effect_resolve_pending p ` +
            `WHERE ${openCondition} GROUP BY p.status UNION ALL ` +
            "SELECT 'snoozed', p.status, 1, count(*) FROM effect_resolve_pending p INDEXED BY " +
            `effect_resolve_pending_snoozed WHERE ${snoozedCondition} AND ${openCondition} AND p.snoozed_until > ? ` +
            "GROUP BY p.status UNION ALL " +
            "SELECT 'requested', p.status, CASE WHEN p.snoozed_until > ? THEN 1 ELSE 0 END, count(*) " +
            "FROM effect_resolve_decisions d CROSS JOIN effect_resolve_pending p ON p.id = d.action_id " +
            `WHERE d.state = 'requested' AND ${openCondition} GROUP BY 2, 3`,
          [now, now]
        ))
      ])
      res.end(JSON.stringify({ items: rows.slice(0, 50), counts }))
      return
    }
    // A decision, the same SQL the inbox sends, by hand: the action and its requested decision; the decision
    // recorded; the record read and claimed; settled and the decision completed in one transaction; the action
    // read again for the answer.
    const id = url.pathname.slice("/decide/".length)
    let body = ""
    for await (const chunk of req) body += chunk
    const { reason } = JSON.parse(body) as { readonly reason: string }
    const now = Date.now()
    const decisionId = `dc_floor_${++floorDecisions}`
    const owner = "floor"
    const listed = () =>
      run(sql.unsafe(
        "SELECT p.*, d.id AS d_id, d.state AS d_state FROM effect_resolve_pending p LEFT JOIN effect_resolve_decisions " +
          "d ON d.action_id = p.id AND d.state = 'requested' WHERE p.id IN (?)",
        [id]
      ))
    await listed()
    await run(sql.unsafe(
      "INSERT INTO effect_resolve_decisions (id, action_id, session, reviewer, action, reason, amendment, state, " +
        "requested_at) SELECT ?, id, session, 'bench', 'apply', ?, 'null', 'requested', ? FROM effect_resolve_pending " +
        "WHERE id = ? AND status IN ('pending', 'orphaned') ON CONFLICT DO NOTHING RETURNING id",
      [decisionId, reason, now, id]
    ))
    await run(sql.unsafe("SELECT * FROM effect_resolve_pending WHERE id = ?", [id]))
    await run(sql.unsafe(
      "UPDATE effect_resolve_pending SET status = 'resolving', attempts = attempts + 1, owner = ?, lease_until = ?, " +
        "updated_at = ? WHERE id = ? AND status = 'pending' RETURNING *",
      [owner, now + 60_000, now, id]
    ))
    const settled = await run(sql.withTransaction(Effect.zipLeft(
      sql.unsafe(
        "UPDATE effect_resolve_pending SET status = 'applied', owner = NULL, lease_until = NULL, updated_at = ?, " +
          "outcome = 'Noted x' WHERE id = ? AND status = 'resolving' AND owner = ? RETURNING id",
        [now, id, owner]
      ),
      sql.unsafe(
        "UPDATE effect_resolve_decisions SET state = 'done', outcome = 'Noted x', settled_at = ?, settled_by = ? " +
          "WHERE id = ? AND state = 'requested' RETURNING id",
        [now, owner, decisionId]
      )
    )))
    await listed()
    res.end(JSON.stringify({ applied: settled.length === 1 }))
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const port = (server.address() as { port: number }).port
  return {
    port,
    close: async () => {
      clearInterval(poll)
      for (const res of streams) res.destroy()
      await new Promise((resolve) => server.close(resolve))
      await runtime.dispose()
    }
  }
}

/** The inbox's rows (at most 100 columns each in the table); `missed` names the targets missed. */
export const inboxFigures = async (options: { readonly quick: boolean; readonly repeats: number }) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "effect-resolve-bench-inbox-"))
  const file = path.join(dir, "pending.db")
  const store = SqliteStore.layer({ filename: file })
  const inboxRuntime = ManagedRuntime.make(
    InboxServer.layer({ auth: { tokens: [{ name: "bench", secret, permission: "decide" }] } }).pipe(
      Layer.provideMerge(Inbox.layer({ kinds: [Note], pollInterval: "50 millis" })),
      Layer.provideMerge(store)
    )
  )
  const sessionRuntime = ManagedRuntime.make(
    ResolveRuntime.layerDurable({ session: "agent", kinds: [Note] }).pipe(Layer.provideMerge(store))
  )
  const rows: Array<Row> = []
  const missed: Array<string> = []
  const verdict = (ok: boolean) => options.quick ? "not judged (smoke run)" : ok ? "ok" : "MISSED"
  try {
    const { port } = await inboxRuntime.runPromise(InboxServer)
    const stage = () =>
      sessionRuntime.runPromise(
        Effect.map(stageKind(Note, { text: "x" }, { label: "Note", sourceToolName: "note" }), (h) => h.id)
      )
    const applied = (id: string) =>
      sessionRuntime.runPromise(
        Effect.flatMap(
          PendingActions,
          (p) => Effect.map(p.get(id), (info) => info._tag === "Some" && info.value.status)
        )
      )
    const floor = await floorServer(file)
    try {
      // Decision latency.
      const n = options.quick ? 5 : 50
      const inboxTimes: Array<number> = []
      const floorTimes: Array<number> = []
      for (let r = 0; r < options.repeats; r++) {
        for (
          const [times, decide] of [
            [
              inboxTimes,
              (id: string) =>
                call(port, "POST", `/api/actions/${id}/decision`, JSON.stringify({ action: "apply", reason: "ok" }))
            ],
            [floorTimes, (id: string) => call(floor.port, "POST", `/decide/${id}`, JSON.stringify({ reason: "ok" }))]
          ] as const
        ) {
          const ids: Array<string> = []
          for (let i = 0; i < n; i++) ids.push(await stage())
          const started = performance.now()
          for (const id of ids) {
            const answer = await decide(id)
            if (answer.status !== 200) throw new Error(`decision: ${answer.status} ${answer.text}`)
            if ((await applied(id)) !== "applied") throw new Error(`decision: ${id} not applied`)
          }
          times.push((performance.now() - started) / n)
        }
      }
      const decision = median(inboxTimes)
      const decisionFloor = median(floorTimes)
      const decisionOk = decision <= 2 * decisionFloor
      rows.push({
        name: "inbox decision",
        figure: "inbox decision latency, SQLite (POST apply → the inbox applies → the session reads it applied)",
        value: ms(decision),
        floor: `${ms(decisionFloor)} (node:http, the same SQL)`,
        plain: "—",
        vsFloor: `${(decision / decisionFloor).toFixed(2)}×`,
        vsPlain: "—",
        target: `≤ 2× floor: ${verdict(decisionOk)}`
      })
      if (!decisionOk) missed.push("inbox decision latency")

      // First page of 10 000.
      await fill(file, 10_000)
      const pageTimes: Array<number> = []
      const pageFloor: Array<number> = []
      for (let r = 0; r < options.repeats * 4; r++) {
        for (const [times, url, p] of [[pageTimes, "/api/actions", port], [pageFloor, "/list", floor.port]] as const) {
          const started = performance.now()
          const answer = await call(p, "GET", url)
          if (answer.status !== 200) throw new Error(`list: ${answer.status} ${answer.text.slice(0, 200)}`)
          times.push(performance.now() - started)
        }
      }
      const page = median(pageTimes)
      const pageOk = page <= 2 * median(pageFloor)
      rows.push({
        name: "inbox page, 10 000",
        figure: "inbox: the first page of a 10 000-action list with its counts (GET /api/actions), SQLite",
        value: ms(page),
        floor: `${ms(median(pageFloor))} (node:http, the same SQL)`,
        plain: "—",
        vsFloor: `${(page / median(pageFloor)).toFixed(2)}×`,
        vsPlain: "—",
        target: `≤ 2× floor: ${verdict(pageOk)}`
      })
      if (!pageOk) missed.push("inbox first page")

      // SSE fan-out to 100 subscribers.
      const subscribers = 100
      const inboxStreams = await subscribe(port, "/api/events", subscribers)
      const floorStreams = await subscribe(floor.port, "/events", subscribers)
      const fanTimes: Array<number> = []
      const fanFloor: Array<number> = []
      const spread: Array<number> = []
      const spreadFloor: Array<number> = []
      try {
        await new Promise((resolve) => setTimeout(resolve, 300))
        for (let r = 0; r < options.repeats; r++) {
          for (
            const [times, spreads, streams] of [
              [fanTimes, spread, inboxStreams],
              [fanFloor, spreadFloor, floorStreams]
            ] as const
          ) {
            const started = performance.now()
            const id = await stage()
            const first = await streams.heard(id)
            const last = performance.now()
            times.push(last - started)
            spreads.push(last - first)
          }
        }
      } finally {
        inboxStreams.close()
        floorStreams.close()
      }
      // The end-to-end time is mostly where the change falls in the 50 ms poll (both sides poll): the row judges the
      // fan-out itself, from the first subscriber hearing of it to the last.
      const fan = median(spread)
      const fanFloorValue = Math.max(median(spreadFloor), 0.01)
      const fanOk = fan <= Math.max(10 * fanFloorValue, 5)
      rows.push({
        name: "inbox SSE, 100 subs",
        figure: `inbox: a staged action reaches 100 event-stream subscribers, from the first hearing of it to the ` +
          `last (end to end, with a 50 ms poll: ${ms(median(fanTimes))}; floor ${ms(median(fanFloor))}), SQLite`,
        value: ms(fan),
        floor: `${ms(median(spreadFloor))} (poll + write)`,
        plain: "—",
        vsFloor: `${(fan / fanFloorValue).toFixed(2)}×`,
        vsPlain: "—",
        target: `≤ 10× floor or 5 ms: ${verdict(fanOk)}`
      })
      if (!fanOk) missed.push("inbox SSE fan-out")
    } finally {
      await floor.close()
    }
  } finally {
    await sessionRuntime.dispose()
    await inboxRuntime.dispose()
    fs.rmSync(dir, { recursive: true, force: true })
  }
  return { rows, missed }
}

// `tsx bench/inbox.ts`: these rows alone.
if (process.argv[1] !== undefined && path.resolve(process.argv[1]) === path.resolve(import.meta.filename)) {
  const { printTable } = await import("./harness.js")
  const result = await inboxFigures({ quick: process.env.BENCH_QUICK !== undefined, repeats: 5 })
  printTable(result.rows)
  if (result.missed.length > 0) console.log(`missed: ${result.missed.join(", ")}`)
  process.exit(0)
}
