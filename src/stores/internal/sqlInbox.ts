/**
 * The SQL store's methods for the approval inbox: listing across sessions, counts, snoozes, durable decisions and
 * the change feed.
 *
 * @internal
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { SqlError } from "@effect/sql/SqlError"
import type * as Statement from "@effect/sql/Statement"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { Decision } from "../../domain/Decision.js"
import type { PendingStatus } from "../../domain/PendingRecord.js"
import { openStatuses } from "../../domain/PendingRecord.js"
import type { ActionRecords } from "../../services/ActionRecords.js"
import type { DecisionRequests } from "../../services/DecisionRequests.js"
import { badCursor, type InboxMethods, recordCursor, settleThenComplete } from "../../services/internal/pendingStore.js"
import {
  amendmentJson,
  checkActionQuery,
  checkComplete,
  checkCountQuery,
  checkDecision,
  checkDone,
  checkFeed,
  checkIds,
  checkRequested,
  checkSettle,
  checkSnooze,
  maxNotesPrune
} from "../../services/internal/pendingStore.js"
import {
  duplicateDecision,
  invalidInput,
  isDecidable,
  PendingStore,
  PendingStoreError,
  tally
} from "../../services/PendingStore.js"
import type { SqlStore } from "./sqlContext.js"
import { settleUpdate } from "./sqlRecords.js"
import { makeResponses } from "./sqlResponses.js"
import { rawMillis, recordColumns, type RecordRow, rowReader, seqOf, toRecord } from "./sqlRows.js"
import { writeFailed } from "./sqlRows.js"
import { openCondition, snoozedCondition } from "./sqlSchema.js"
import { readText } from "./sqlText.js"

// ---- the approval inbox (0.3) ----------------------------------------------------------------------------------

export const decisionColumns =
  "id, action_id, session, reviewer, action, reason, amendment, state, outcome, requested_at, " +
  "settled_at, settled_by"

/** The decision columns of `d`, as `d_<column>`, for a join. */
export const joinedDecisionColumns = decisionColumns.split(", ").map((column) => `d.${column} AS d_${column}`).join(
  ", "
)

/** The record columns of `p`, for a join. */
export const joinedRecordColumns = recordColumns.split(", ").map((column) => `p.${column}`).join(", ")

/** The join of a record's requested decision (at most one: a unique partial index). */
export const requestedJoin = "LEFT JOIN effect_resolve_decisions d ON d.action_id = p.id AND d.state = 'requested'"

export interface DecisionRow {
  readonly id: unknown
  readonly action_id: unknown
  readonly session: unknown
  readonly reviewer: unknown
  readonly action: unknown
  readonly reason: unknown
  readonly amendment: unknown
  readonly state: unknown
  readonly outcome: unknown
  readonly requested_at: unknown
  readonly settled_at: unknown
  readonly settled_by: unknown
}

export type Prefixed<Row, P extends string> = { readonly [K in keyof Row & string as `${P}${K}`]: Row[K] }

export type ListedRow = RecordRow & Prefixed<DecisionRow, "d_"> & {
  readonly seq: unknown
  readonly snoozed_until: unknown
}

/** A decision row; a column a decision cannot hold is read as best it can be (the row was changed outside the store). */
export const toDecision = (row: DecisionRow): Decision => {
  const read = rowReader()
  const action = row.action === "discard" ? "discard" : "apply"
  const state = row.state === "done" || row.state === "failed" ? row.state : "requested"
  let amendment: unknown = null
  try {
    amendment = typeof row.amendment === "string" ? JSON.parse(row.amendment) : null
  } catch {
    amendment = row.amendment
  }
  return {
    id: read.text("id", row.id),
    actionId: read.text("action_id", row.action_id),
    session: read.text("session", row.session),
    reviewer: read.text("reviewer", row.reviewer),
    action,
    reason: read.text("reason", row.reason),
    amendment,
    state,
    outcome: read.nullableText("outcome", row.outcome),
    requestedAt: read.millis("requested_at", row.requested_at),
    settledAt: read.nullableMillis("settled_at", row.settled_at),
    settledBy: read.nullableText("settled_by", row.settled_by)
  }
}

export const joinedDecision = (row: Prefixed<DecisionRow, "d_">): Option.Option<Decision> =>
  row.d_id === null || row.d_id === undefined ? Option.none() : Option.some(toDecision({
    id: row.d_id,
    action_id: row.d_action_id,
    session: row.d_session,
    reviewer: row.d_reviewer,
    action: row.d_action,
    reason: row.d_reason,
    amendment: row.d_amendment,
    state: row.d_state,
    outcome: row.d_outcome,
    requested_at: row.d_requested_at,
    settled_at: row.d_settled_at,
    settled_by: row.d_settled_by
  }))

export const toListed = (row: ListedRow): PendingStore.ListedAction => {
  const snoozed = seqOf(row.snoozed_until)
  return {
    record: toRecord(row),
    snoozedUntil: row.snoozed_until === null || !Number.isSafeInteger(snoozed) ? Option.none() : Option.some(snoozed),
    requested: joinedDecision(row)
  }
}

/** The SQL store's statement helpers the inbox's methods use. */
export type Helpers = Pick<SqlStore, "run" | "read" | "write" | "owns" | "unlessFenced">

export const openSet: ReadonlySet<PendingStatus> = new Set(openStatuses)

/**
 * The inbox's methods of the SQL store. A listing is a union of index ranges, each read in order and cut at the
 * page's size: the open records ever snoozed for `snoozed: "only"`, else one per session asked for (the session's
 * open index when only open statuses are asked for), else one per status asked for, else the open records of every
 * session; so its cost follows the page, not the table.
 */
export const makeInbox = (sql: SqlClient.SqlClient, helpers: Helpers): InboxMethods => {
  // A fenced store's condition (`AND EXISTS ...`), for the inbox writes a session makes: `completeDecision` and
  // `markDelivered`.
  const { owns, read, run, write } = helpers
  const recordCols = sql.literal(recordColumns)
  const joinedCols = sql.literal(`p.seq, ${joinedRecordColumns}, p.snoozed_until, ${joinedDecisionColumns}`)
  const open = sql.literal(openCondition)
  const join = sql.literal(requestedJoin)
  const newestFirst = sql.literal("ORDER BY created_at DESC, seq DESC")
  // SQLite has no statistics unless ANALYZE ran: it would sort every open record for a page, and read every open row
  // to count the snoozed ones. These name the partial indexes made for them (Postgres's planner has statistics).
  const onSqlite = (text: string) => sql.literal(sql.onDialectOrElse({ sqlite: () => text, orElse: () => "" }))
  const openIndex = onSqlite("INDEXED BY effect_resolve_pending_open_all")
  const snoozedIndex = onSqlite("INDEXED BY effect_resolve_pending_snoozed")
  // SQLite's CROSS JOIN keeps the decisions as the outer loop: the few requested ones, each finding its record.
  const decisionsFirst = sql.literal(sql.onDialectOrElse({ sqlite: () => "CROSS JOIN", orElse: () => "JOIN" }))

  const listActions = (query: PendingStore.ActionQuery) =>
    Effect.suspend(() => {
      const problem = checkActionQuery(query)
      if (problem !== undefined) return Effect.fail(invalidInput("listActions", problem))
      const after = query.cursor === undefined ? undefined : recordCursor.decode(query.cursor)
      if (query.cursor !== undefined && after === undefined) return Effect.fail(invalidInput("listActions", badCursor))
      const statuses = [...new Set(query.statuses ?? openStatuses)]
      const openOnly = statuses.every((status) => openSet.has(status))
      const snoozed = query.snoozed ?? "hide"
      const residual = [
        ...(openOnly ? [open] : []),
        ...(query.kinds === undefined ? [] : [sql`kind IN ${sql.in([...new Set(query.kinds)])}`]),
        ...(snoozed === "hide" ?
          [sql`(snoozed_until IS NULL OR snoozed_until <= ${query.now})`] :
          snoozed === "only" ?
          [sql`snoozed_until > ${query.now}`] :
          []),
        ...(after === undefined ? [] : [sql`(created_at, seq) < (${after.createdAt}, ${after.seq})`])
      ]
      const byStatus = query.statuses === undefined ? [] : [sql`status IN ${sql.in(statuses)}`]
      const bySession = query.sessions === undefined ? [] : [sql`session IN ${sql.in([...new Set(query.sessions)])}`]
      const branches = snoozed === "only" && openOnly ?
        [[sql.literal(snoozedCondition), ...byStatus, ...bySession]] :
        query.sessions !== undefined ?
        [...new Set(query.sessions)].map((session) => [sql`session = ${session}`, ...byStatus]) :
        query.statuses !== undefined ?
        statuses.map((status) => [sql`status = ${status}`]) :
        [[]]
      const limit = query.limit + 1
      // The default listing (every open record of every session) reads the open records' index in order.
      const selects = branches.map((key) =>
        sql`SELECT seq, ${recordCols}, snoozed_until FROM effect_resolve_pending ${
          key.length === 0 && openOnly ? openIndex : sql.literal("")
        }
          WHERE ${sql.and([...key, ...residual])} ${newestFirst} LIMIT ${limit}`
      )
      const page = selects.length === 1 ?
        selects[0]! :
        sql`${
          sql.join(" UNION ALL ", false)(
            selects.map((select, i) => sql`SELECT * FROM (${select}) ${sql.literal(`b${i}`)}`)
          )
        } ${newestFirst} LIMIT ${limit}`
      const statement = sql<ListedRow>`SELECT ${joinedCols} FROM (${page}) p ${join}
        ORDER BY p.created_at DESC, p.seq DESC`
      return Effect.map(run("listActions", statement.withoutTransform), (rows) => {
        const items = rows.slice(0, query.limit)
        const last = items[items.length - 1]
        return {
          items: items.map(toListed),
          next: rows.length > query.limit && last !== undefined ?
            Option.some(recordCursor.encode(rawMillis(last.created_at), seqOf(last.seq))) :
            Option.none()
        }
      })
    })

  const countActions = (query: PendingStore.CountQuery) =>
    Effect.suspend(() => {
      const problem = checkCountQuery(query)
      if (problem !== undefined) return Effect.fail(invalidInput("countActions", problem))
      const conditions = [
        open,
        ...(query.sessions === undefined ? [] : [sql`p.session IN ${sql.in([...new Set(query.sessions)])}`]),
        ...(query.kinds === undefined ? [] : [sql`p.kind IN ${sql.in([...new Set(query.kinds)])}`])
      ]
      // Three small counts instead of one pass over every open record with its snooze and decision: all open
      // records by status (an index-only count), the snoozed ones (their partial index: few), and those with a
      // requested decision (from the decisions' partial index: few). SQLite is told which index and which join order
      // to use; without statistics it would read every open row for the last two.
      const where = sql.and(conditions)
      const statement = sql<
        { readonly part: unknown; readonly status: unknown; readonly snoozed: unknown; readonly n: unknown }
      >`SELECT 'all' AS part, p.status AS status, 0 AS snoozed, count(*) AS n
          FROM effect_resolve_pending p WHERE ${where} GROUP BY p.status
        UNION ALL
        SELECT 'snoozed', p.status, 1, count(*) FROM effect_resolve_pending p ${snoozedIndex}
          WHERE ${sql.literal(snoozedCondition)} AND ${where} AND p.snoozed_until > ${query.now} GROUP BY p.status
        UNION ALL
        SELECT 'requested', p.status, CASE WHEN p.snoozed_until > ${query.now} THEN 1 ELSE 0 END, count(*)
          FROM effect_resolve_decisions d ${decisionsFirst} effect_resolve_pending p ON p.id = d.action_id
          WHERE d.state = 'requested' AND ${where} GROUP BY 2, 3`
      return Effect.map(run("countActions", statement.withoutTransform), (rows) => {
        const parts = new Map<PendingStatus, { all: number; snoozed: number; requested: [number, number] }>()
        for (const row of rows) {
          const status = row.status as PendingStatus
          let part = parts.get(status)
          if (part === undefined) parts.set(status, part = { all: 0, snoozed: 0, requested: [0, 0] })
          const n = seqOf(row.n)
          if (row.part === "all") part.all += n
          else if (row.part === "snoozed") part.snoozed += n
          else part.requested[seqOf(row.snoozed) === 1 ? 1 : 0] += n
        }
        const counts = { pending: 0, requested: 0, snoozed: 0, resolving: 0, orphaned: 0, conflict: 0 }
        for (const [status, { all, requested, snoozed }] of parts) {
          tally(counts, status, true, true, requested[1])
          tally(counts, status, false, true, requested[0])
          tally(counts, status, true, false, snoozed - requested[1])
          tally(counts, status, false, false, all - snoozed - requested[0])
        }
        return counts
      })
    })

  const decisionCols = sql.literal(decisionColumns)

  const readDecision = (id: string) =>
    Effect.map(
      read(
        "getDecision",
        sql<DecisionRow>`SELECT ${decisionCols} FROM effect_resolve_decisions WHERE id = ${id}`.withoutTransform,
        toDecision
      ),
      (found) => Option.fromNullable(found[0])
    )

  // Why nothing was recorded: the record and its requested decision, read after the insert found nothing to do.
  const whyNot = (input: PendingStore.DecisionInput) =>
    Effect.flatMap(
      run(
        "recordDecision",
        sql<ListedRow>`SELECT ${joinedCols} FROM effect_resolve_pending p ${join}
          WHERE p.id = ${input.actionId}`.withoutTransform
      ),
      ([row]): Effect.Effect<PendingStore.RecordDecisionResult, PendingStoreError> => {
        if (row === undefined) return Effect.succeed({ _tag: "UnknownAction" })
        const listed = toListed(row)
        if (Option.isSome(listed.requested)) {
          return Effect.succeed({ _tag: "AlreadyRequested", decision: listed.requested.value })
        }
        if (!isDecidable(listed.record, input.now)) {
          return Effect.succeed({ _tag: "NotDecidable", record: listed.record })
        }
        // Decidable, and no decision waits: the insert met a decision with the same id.
        return Effect.fail(duplicateDecision(input.id))
      }
    )

  const recordDecision = (input: PendingStore.DecisionInput) =>
    Effect.suspend(() => {
      const problem = checkDecision(input)
      if (problem !== undefined) return Effect.fail(invalidInput("recordDecision", problem))
      const amendment = amendmentJson(input.amendment)
      if ("problem" in amendment) return Effect.fail(invalidInput("recordDecision", amendment.problem))
      const statement = sql<DecisionRow>`INSERT INTO effect_resolve_decisions
          (id, action_id, session, reviewer, action, reason, amendment, state, requested_at)
        SELECT ${input.id}, id, session, ${input.reviewer}, ${input.action}, ${input.reason}, ${amendment.json},
          'requested', ${input.now}
        FROM effect_resolve_pending
        WHERE id = ${input.actionId} AND status IN ('pending', 'orphaned')
          AND (expires_at IS NULL OR expires_at > ${input.now})
        ON CONFLICT DO NOTHING
        RETURNING ${decisionCols}`
      return Effect.flatMap(
        write("recordDecision", statement.withoutTransform),
        ([row]): Effect.Effect<PendingStore.RecordDecisionResult, PendingStoreError> =>
          row === undefined ? whyNot(input) : Effect.succeed({ _tag: "Recorded", decision: toDecision(row) })
      )
    })

  const feedRow = sql.literal("seq, action_id")
  const feed = (input: PendingStore.FeedInput) =>
    Effect.suspend(() => {
      const problem = checkFeed(input)
      if (problem !== undefined) return Effect.fail(invalidInput("feed", problem))
      const parts = [
        sql`SELECT * FROM (SELECT 'journal' AS source, ${feedRow} FROM effect_resolve_events
          WHERE seq > ${input.after.journal} ORDER BY seq LIMIT ${input.limit}) j`,
        sql`SELECT * FROM (SELECT 'notes' AS source, ${feedRow} FROM effect_resolve_notes
          WHERE seq > ${input.after.notes} ORDER BY seq LIMIT ${input.limit}) n`,
        ...(input.missing === undefined || input.missing.journal.length === 0 ? [] : [
          sql`SELECT 'journal' AS source, ${feedRow} FROM effect_resolve_events
            WHERE seq IN ${sql.in([...input.missing.journal])}`
        ]),
        ...(input.missing === undefined || input.missing.notes.length === 0 ? [] : [
          sql`SELECT 'notes' AS source, ${feedRow} FROM effect_resolve_notes
            WHERE seq IN ${sql.in([...input.missing.notes])}`
        ])
      ]
      const statement = sql<{ readonly source: unknown; readonly seq: unknown; readonly action_id: unknown }>`${
        sql.join(" UNION ALL ", false)(parts)
      }`
      return Effect.map(run("feed", statement.withoutTransform), (rows) =>
        rows.flatMap((row): ReadonlyArray<PendingStore.FeedChange> => {
          const seq = seqOf(row.seq)
          const actionId = readText(row.action_id)
          return typeof actionId === "string" && Number.isSafeInteger(seq) ?
            [{ source: row.source === "notes" ? "notes" : "journal", seq, actionId }] :
            []
        }))
    })

  return {
    listActions,
    getActions: (ids) =>
      Effect.suspend(() => {
        const problem = checkIds(ids)
        if (problem !== undefined) return Effect.fail(invalidInput("getActions", problem))
        if (ids.length === 0) return Effect.succeed([])
        const statement = sql<ListedRow>`SELECT ${joinedCols} FROM effect_resolve_pending p ${join}
          WHERE p.id IN ${sql.in([...new Set(ids)])}`
        return read("getActions", statement.withoutTransform, toListed)
      }),
    countActions,
    snooze: (input) =>
      Effect.suspend(() => {
        const problem = checkSnooze(input)
        if (problem !== undefined) return Effect.fail(invalidInput("snooze", problem))
        const statement = sql<{ readonly id: string }>`UPDATE effect_resolve_pending
          SET snoozed_until = ${Option.getOrNull(input.until)}
          WHERE id = ${input.id} AND ${open} RETURNING id`
        return Effect.map(write("snooze", statement.withoutTransform), (rows) => rows.length > 0)
      }),
    recordDecision,
    getDecision: readDecision,
    decisions: (actionId) =>
      read(
        "decisions",
        sql<DecisionRow>`SELECT ${decisionCols} FROM effect_resolve_decisions
          WHERE action_id = ${actionId} ORDER BY seq`.withoutTransform,
        toDecision
      ),
    requestedDecisions: (query) =>
      Effect.suspend(() => {
        const problem = checkRequested(query)
        if (problem !== undefined) return Effect.fail(invalidInput("requestedDecisions", problem))
        const conditions = [
          sql.literal("d.state = 'requested'"),
          ...(query.sessions === undefined ? [] : [sql`d.session IN ${sql.in([...new Set(query.sessions)])}`]),
          ...(query.kinds === undefined ? [] : [sql`p.kind IN ${sql.in([...new Set(query.kinds)])}`])
        ]
        const statement = sql<ListedRow>`SELECT ${joinedCols} FROM effect_resolve_decisions d
          JOIN effect_resolve_pending p ON p.id = d.action_id
          WHERE ${sql.and(conditions)} ORDER BY d.requested_at, d.seq LIMIT ${query.limit}`
        return Effect.map(
          run("requestedDecisions", statement.withoutTransform),
          (rows) =>
            rows.flatMap((row) => {
              const listed = toListed(row)
              return Option.isSome(listed.requested)
                ? [{ decision: listed.requested.value, record: listed.record }]
                : []
            })
        )
      }),
    ...makeResponses(sql, helpers),
    completeDecision: (input) =>
      Effect.suspend(() => {
        const problem = checkComplete(input)
        if (problem !== undefined) return Effect.fail(invalidInput("completeDecision", problem))
        return Effect.map(
          write("completeDecision", completeUpdate(sql, input, owns).withoutTransform),
          (rows) => rows.length > 0
        )
      }),
    feedHead: Effect.map(
      run(
        "feedHead",
        sql<{ readonly journal: unknown; readonly notes: unknown }>`SELECT
          (SELECT COALESCE(max(seq), 0) FROM effect_resolve_events) AS journal,
          (SELECT COALESCE(max(seq), 0) FROM effect_resolve_notes) AS notes`.withoutTransform
      ),
      ([row]) => ({ journal: seqOf(row?.journal ?? 0), notes: seqOf(row?.notes ?? 0) })
    ),
    feed,
    pruneNotes: (keepLast) =>
      Effect.suspend(() => {
        if (!(Number.isSafeInteger(keepLast) && keepLast >= 0)) {
          return Effect.fail(invalidInput("pruneNotes", "keepLast must be a whole number, 0 or more"))
        }
        const statement = sql<{ readonly seq: unknown }>`DELETE FROM effect_resolve_notes WHERE seq IN (
            SELECT seq FROM effect_resolve_notes
            WHERE seq <= (SELECT COALESCE(max(seq), 0) FROM effect_resolve_notes) - ${keepLast}
            ORDER BY seq LIMIT ${maxNotesPrune}
          ) RETURNING seq`
        return Effect.map(write("pruneNotes", statement.withoutTransform), (rows) => rows.length)
      })
  }
}

/**
 * The statement that completes a requested decision (`completeDecision`), `UPDATE ... RETURNING id`; `condition`
 * narrows it (a fenced store's, or `settleDeciding`'s "only after the settle").
 */
const completeUpdate = (
  sql: SqlClient.SqlClient,
  input: DecisionRequests.CompleteDecisionInput,
  condition: Statement.Fragment
) =>
  sql<{ readonly id: string }>`UPDATE effect_resolve_decisions
    SET state = ${input.state}, outcome = ${input.outcome}, settled_at = ${input.now}, settled_by = ${input.by}
    WHERE id = ${input.id} AND state = 'requested' ${condition} RETURNING id`

/**
 * A settle and a second write made only when the settle took effect: on Postgres one statement (two data-modifying
 * `WITH` parts, `second` given the condition that ties it to the settle); on SQLite, whose `WITH` holds only a
 * `SELECT`, `alongside` after the settle, in one transaction. `done`: whether the second write changed a row.
 */
const settleAnd = (
  store: Pick<SqlStore, "sql" | "owns" | "unlessFenced" | "write">,
  records: Pick<ActionRecords.Service, "settle">,
  operation: string,
  settle: ActionRecords.SettleInput,
  second: (afterSettle: Statement.Fragment) => Statement.Statement<{ readonly id: string }>,
  alongside: Effect.Effect<boolean, PendingStoreError>
): Effect.Effect<{ readonly settled: boolean; readonly done: boolean }, PendingStoreError> => {
  const { sql, unlessFenced, write } = store
  return sql.onDialectOrElse({
    pg: () => {
      const statement = sql<{ readonly settled: unknown; readonly done: unknown }>`WITH
        s AS (${settleUpdate(store, settle)}),
        d AS (${second(sql.literal("AND EXISTS (SELECT 1 FROM s)"))})
        SELECT (SELECT count(*) FROM s) AS settled, (SELECT count(*) FROM d) AS done`
      return Effect.flatMap(write(operation, statement.withoutTransform), ([row]) => {
        const result = { settled: seqOf(row?.settled ?? 0) > 0, done: seqOf(row?.done ?? 0) > 0 }
        return result.settled ? Effect.succeed(result) : unlessFenced(operation, result)
      })
    },
    orElse: () =>
      Effect.catchIf(
        Effect.map(
          sql.withTransaction(settleThenComplete(records.settle(settle), alongside)),
          ({ completed, settled }) => ({ settled, done: completed })
        ),
        (error): error is SqlError => error instanceof SqlError,
        (error) => Effect.fail(writeFailed(operation)(error))
      )
  })
}

/** `settleDeciding`: the settle and the decision's completion (`settleAnd`). */
export const settleDeciding = (
  store: Pick<SqlStore, "sql" | "owns" | "unlessFenced" | "write">,
  records: Pick<ActionRecords.Service, "settle">,
  inbox: Pick<InboxMethods, "completeDecision">
) =>
(
  settle: ActionRecords.SettleInput,
  decision: { readonly id: string; readonly outcome: string; readonly by: string }
): Effect.Effect<{ readonly settled: boolean; readonly completed: boolean }, PendingStoreError> =>
  Effect.suspend(() => {
    const completion = { ...decision, state: "done" as const, now: settle.now }
    const problem = checkSettle(settle) ?? checkComplete(completion)
    if (problem !== undefined) return Effect.fail(invalidInput("settleDeciding", problem))
    return Effect.map(
      settleAnd(
        store,
        records,
        "settleDeciding",
        settle,
        (afterSettle) => completeUpdate(store.sql, completion, afterSettle),
        inbox.completeDecision(completion)
      ),
      ({ done, settled }) => ({ settled, completed: done })
    )
  })

/** The statement that records a decision `done` (`recordDone`), `INSERT ... SELECT ... RETURNING id`. */
const doneInsert = (
  sql: SqlClient.SqlClient,
  input: DecisionRequests.DoneInput,
  json: string,
  condition: Statement.Fragment
) =>
  sql<{ readonly id: string }>`INSERT INTO effect_resolve_decisions
      (id, action_id, session, reviewer, action, reason, amendment, state, outcome, requested_at, settled_at,
        settled_by)
    SELECT ${input.id}, id, session, ${input.reviewer}, ${input.action}, ${input.reason}, ${json}, 'done',
      ${input.outcome}, ${input.requestedAt}, ${input.now}, ${input.by}
    FROM effect_resolve_pending WHERE id = ${input.actionId} ${condition}
    ON CONFLICT DO NOTHING
    RETURNING id`

/**
 * `recordDone`: the decision alone (fenced: only while the store's owner epoch is the latest), or with a settle
 * (`settleAnd`).
 */
export const recordDone = (
  store: Pick<SqlStore, "sql" | "owns" | "unlessFenced" | "write">,
  records: Pick<ActionRecords.Service, "settle">
) =>
(
  input: DecisionRequests.DoneInput,
  settle?: ActionRecords.SettleInput
): Effect.Effect<DecisionRequests.Done, PendingStoreError> =>
  Effect.suspend(() => {
    const problem = checkDone(input) ?? (settle === undefined ? undefined : checkSettle(settle))
    if (problem !== undefined) return Effect.fail(invalidInput("recordDone", problem))
    const amendment = amendmentJson(input.amendment)
    if ("problem" in amendment) return Effect.fail(invalidInput("recordDone", amendment.problem))
    const { owns, sql, unlessFenced, write } = store
    const insert = (condition: Statement.Fragment) => doneInsert(sql, input, amendment.json, condition)
    const alone = (condition: Statement.Fragment) =>
      Effect.map(write("recordDone", insert(condition).withoutTransform), (rows) => rows.length > 0)
    if (settle === undefined) {
      return Effect.flatMap(alone(owns), (recorded): Effect.Effect<DecisionRequests.Done, PendingStoreError> =>
        recorded ?
          Effect.succeed({ settled: true, recorded }) :
          unlessFenced("recordDone", { settled: true, recorded }))
    }
    return Effect.map(
      settleAnd(store, records, "recordDone", settle, insert, alone(sql.literal(""))),
      ({ done, settled }) => ({ settled, recorded: done })
    )
  })
