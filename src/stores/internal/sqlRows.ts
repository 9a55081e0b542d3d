/**
 * Reading the SQL store's rows: the record columns, each row decoded on its own (a row that cannot be read
 * becomes an `unreadable` record), the store's error mapping, and pages.
 *
 * @internal
 */
import type { SqlError } from "@effect/sql/SqlError"
import * as Option from "effect/Option"
import type { PendingEvent, PendingRecord, PendingStatus } from "../../domain/PendingRecord.js"
import { isTerminal, storedStatuses } from "../../domain/PendingRecord.js"
import { capText, innerMessageOf, messageOf } from "../../internal/render.js"
import { PendingStore, PendingStoreError } from "../../services/PendingStore.js"
import { readText } from "./sqlText.js"

export const recordColumns =
  "id, session, kind, label, source_tool_name, stager, preview, payload, status, attempts, " +
  "owner, lease_until, created_at, updated_at, expires_at, outcome"

/** A row as the driver gives it: its values are whatever the table holds, so nothing is trusted. */
export interface RecordRow {
  readonly id: unknown
  readonly session: unknown
  readonly kind: unknown
  readonly label: unknown
  readonly source_tool_name: unknown
  readonly stager: unknown
  readonly preview: unknown
  readonly payload: unknown
  readonly status: unknown
  readonly attempts: unknown
  readonly owner: unknown
  readonly lease_until: unknown
  readonly created_at: unknown
  readonly updated_at: unknown
  readonly expires_at: unknown
  readonly outcome: unknown
}

/** A row of the owner log. */
export interface LogRow {
  readonly session: unknown
  readonly owner: unknown
  readonly event: unknown
  readonly at: unknown
}

export interface EventRow {
  readonly seq: unknown
  readonly action_id: unknown
  readonly at: unknown
  readonly from_status: unknown
  readonly to_status: unknown
  readonly owner: unknown
  readonly attempt: unknown
}

export const quoted = (u: unknown): string => {
  try {
    return capText(typeof u === "string" ? JSON.stringify(u) : String(u), 80)
  } catch {
    return "a value that cannot be shown"
  }
}

/**
 * Reads the columns of one row, collecting what cannot be read instead of throwing: each reader returns a usable
 * value (a fallback when the column is bad) and notes the problem.
 */
export const rowReader = () => {
  const problems: Array<string> = []
  const note = <A>(problem: string, fallback: A): A => {
    problems.push(problem)
    return fallback
  }
  // Text columns are stored escaped (see `sqlText`): read back exactly as written.
  const text = (name: string, u: unknown): string => {
    const value = readText(u)
    return typeof value === "string" ? value : note(`${name} is not text`, String(u))
  }
  const nullableText = (name: string, u: unknown): string | null => u === null ? null : text(name, u)
  const millis = (name: string, u: unknown): number => {
    const n = typeof u === "number" || typeof u === "bigint" ?
      Number(u) :
      typeof u === "string" && /^\d{1,16}$/.test(u) ?
      Number(u) :
      Number.NaN
    return Number.isSafeInteger(n) && n >= 0 ? n : note(`${name} ${quoted(u)} is not epoch milliseconds`, 0)
  }
  const nullableMillis = (name: string, u: unknown): number | null => u === null ? null : millis(name, u)
  const status = (name: string, u: unknown): PendingStatus | undefined =>
    storedStatuses.includes(u as PendingStatus) ?
      u as PendingStatus :
      note(`${name} ${quoted(u)} is not a status`, undefined)
  const json = (name: string, u: unknown): unknown => {
    if (typeof u !== "string") return note(`${name} is not JSON text`, null)
    try {
      return JSON.parse(u)
    } catch (error) {
      return note(`${name} is not JSON (${messageOf(error)})`, null)
    }
  }
  return { problems, text, nullableText, millis, nullableMillis, status, json }
}

/**
 * One row as a record. A row that cannot be wholly read is an `unreadable` record that says why, unless its status
 * says it is settled (nothing more happens to it, so it keeps that status).
 */
export const toRecord = (row: RecordRow): PendingRecord => {
  const read = rowReader()
  const record = {
    id: read.text("id", row.id),
    session: read.text("session", row.session),
    kind: read.text("kind", row.kind),
    label: read.text("label", row.label),
    sourceToolName: read.text("source_tool_name", row.source_tool_name),
    stager: read.nullableText("stager", row.stager),
    preview: read.text("preview", row.preview),
    payload: read.json("payload", row.payload),
    attempts: read.millis("attempts", row.attempts),
    owner: read.nullableText("owner", row.owner),
    leaseUntil: read.nullableMillis("lease_until", row.lease_until),
    createdAt: read.millis("created_at", row.created_at),
    updatedAt: read.millis("updated_at", row.updated_at),
    expiresAt: read.nullableMillis("expires_at", row.expires_at),
    outcome: read.nullableText("outcome", row.outcome)
  }
  const status = read.status("status", row.status)
  if (read.problems.length === 0 && status !== undefined) return { ...record, status }
  if (status !== undefined && isTerminal(status)) return { ...record, status }
  return {
    ...record,
    status: "unreadable",
    owner: null,
    leaseUntil: null,
    outcome: capText(
      `The stored row cannot be read: ${read.problems.join("; ")}. It was changed outside the store; it is never ` +
        "applied, and can be discarded.",
      2_000
    )
  }
}

/** One journal row as an event; a row that cannot be read is an event to `unreadable`. */
export const toEvent = (row: EventRow): PendingEvent => {
  const read = rowReader()
  const to = read.status("to_status", row.to_status)
  const from = row.from_status === null ? null : read.status("from_status", row.from_status)
  const event = {
    actionId: read.text("action_id", row.action_id),
    at: read.millis("at", row.at),
    owner: read.nullableText("owner", row.owner),
    attempt: read.millis("attempt", row.attempt)
  }
  return read.problems.length === 0 ?
    { ...event, from: from ?? null, to: to! } :
    { ...event, from: from ?? null, to: "unreadable" }
}

export const readFailed = (operation: string) => (cause: SqlError) =>
  new PendingStoreError({
    operation,
    detail: `the database failed (${
      innerMessageOf(cause)
    }); nothing was changed. Retry, or check the store's database.`,
    cause
  })

export const writeFailed = (operation: string) => (cause: SqlError) =>
  new PendingStoreError({
    operation,
    detail: `the database failed (${innerMessageOf(cause)}). The change is one statement, so it happened wholly or ` +
      "not at all: read the record with get before retrying.",
    cause
  })

/** SQLite reports a locked database as SQLITE_BUSY (after its busy timeout); the statement did not run. */
export const isBusy = (error: SqlError) => {
  const code = (error.cause as { code?: unknown } | null | undefined)?.code
  return typeof code === "string" && code.startsWith("SQLITE_BUSY")
}

/** Postgres returns `bigint` columns as text: a sequence number as a number. */
export const seqOf = (u: unknown): number => typeof u === "number" ? u : Number(u)

/** A raw `created_at` for a cursor: a number when it is one, else the text a corrupted SQLite row holds. */
export const rawMillis = (u: unknown): number | string =>
  typeof u === "number" || typeof u === "bigint" ?
    Number(u) :
    typeof u === "string" && /^\d{1,16}$/.test(u) ?
    Number(u) :
    String(u)

/**
 * A page from the rows of a query that asked for one more than `limit`: the first `limit` as items, and when the
 * extra row came back, the cursor after the last item.
 */
export const pageOf = <Row, A>(
  rows: ReadonlyArray<Row>,
  limit: number,
  item: (row: Row) => A,
  cursorAfter: (last: Row) => string
): PendingStore.Page<A> => {
  const page = rows.slice(0, limit)
  const last = page[page.length - 1]
  return {
    items: page.map(item),
    next: rows.length > limit && last !== undefined ? Option.some(cursorAfter(last)) : Option.none()
  }
}
