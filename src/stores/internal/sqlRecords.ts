/**
 * The SQL store's records and claims (`ActionRecords`): every transition is one statement, a conditional
 * `UPDATE ... WHERE status = ... RETURNING`, whose journal event a trigger on the record table writes in the same
 * statement.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { PendingRecord } from "../../domain/PendingRecord.js"
import type { ActionRecords } from "../../services/ActionRecords.js"
import {
  badCursor,
  checkClaim,
  checkPage,
  checkPrune,
  checkRecord,
  checkSettle,
  checkTransition,
  eventCursor,
  payloadJson,
  recordCursor
} from "../../services/internal/pendingStore.js"
import { duplicateId, invalidInput } from "../../services/PendingStore.js"
import type { SqlStore } from "./sqlContext.js"
import { type EventRow, pageOf, rawMillis, type RecordRow, seqOf, toEvent, toRecord } from "./sqlRows.js"
import { openCondition } from "./sqlSchema.js"
import { readText, Verbatim } from "./sqlText.js"

/**
 * The statement that ends a claim (`settle`), `UPDATE ... RETURNING id`: also a part of `settleDeciding`'s statement
 * on Postgres.
 */
export const settleUpdate = (
  { owns, sql }: Pick<SqlStore, "sql" | "owns">,
  input: ActionRecords.SettleInput
) =>
  sql<{ readonly id: string }>`UPDATE effect_resolve_pending
    SET status = ${input.to}, owner = NULL, lease_until = NULL, updated_at = ${input.now},
      outcome = ${Option.getOrNull(input.outcome)}
    WHERE id = ${input.id} AND status = 'resolving' AND owner = ${input.owner} ${owns}
    RETURNING id`

/** The records and claims of the store `store` holds. */
export const makeRecords = (store: SqlStore): ActionRecords.Service => {
  const { sql, fence, columns, settled, owns, whereOwns, unlessFenced, run, read, write } = store
  const insert = (record: PendingRecord) =>
    Effect.suspend(() => {
      const problem = checkRecord(record)
      if (problem !== undefined) return Effect.fail(invalidInput("insert", problem))
      const payload = payloadJson(record.payload)
      if (payload === undefined) {
        return Effect.fail(invalidInput("insert", "payload must be a JSON value (null for closures)"))
      }
      const values = sql`${record.id}, ${record.session}, ${record.kind}, ${record.label},
            ${record.sourceToolName}, ${record.stager}, ${record.preview}, ${payload}, ${record.status},
            ${record.attempts}, NULL, NULL, ${record.createdAt}, ${record.updatedAt}, ${record.expiresAt},
            ${record.outcome}`
      const statement = fence === undefined ?
        sql<{ readonly id: string }>`INSERT INTO effect_resolve_pending (${columns}) VALUES (${values})
            ON CONFLICT (id) DO NOTHING RETURNING id` :
        sql<{ readonly id: string }>`INSERT INTO effect_resolve_pending (${columns}) SELECT ${values} ${whereOwns}
            ON CONFLICT (id) DO NOTHING RETURNING id`
      return Effect.flatMap(
        write("insert", statement.withoutTransform),
        (rows) =>
          rows.length === 1 ?
            Effect.void :
            Effect.zipRight(unlessFenced("insert", undefined), Effect.fail(duplicateId(record.id)))
      )
    })

  const claim = (input: ActionRecords.ClaimInput) =>
    Effect.suspend(() => {
      const problem = checkClaim(input)
      if (problem !== undefined) return Effect.fail(invalidInput("claim", problem))
      const statement = sql<RecordRow>`UPDATE effect_resolve_pending
          SET status = 'resolving', attempts = attempts + 1, owner = ${input.owner},
            lease_until = ${input.leaseUntil}, updated_at = ${input.now}
          WHERE id = ${input.id} AND status = 'pending' AND (expires_at IS NULL OR expires_at > ${input.now}) ${owns}
          RETURNING ${columns}`
      return Effect.flatMap(
        write("claim", statement.withoutTransform),
        (rows) =>
          rows.length === 0 ?
            unlessFenced("claim", Option.none<PendingRecord>()) :
            Effect.succeed(Option.some(toRecord(rows[0]!)))
      )
    })

  const settle = (input: ActionRecords.SettleInput) =>
    Effect.suspend(() => {
      const problem = checkSettle(input)
      if (problem !== undefined) return Effect.fail(invalidInput("settle", problem))
      return Effect.flatMap(
        write("settle", settleUpdate(store, input).withoutTransform),
        (rows) => rows.length > 0 ? Effect.succeed(true) : unlessFenced("settle", false)
      )
    })

  const transition = (input: ActionRecords.TransitionInput) =>
    Effect.suspend(() => {
      const problem = checkTransition(input)
      if (problem !== undefined) return Effect.fail(invalidInput("transition", problem))
      const guard = input.owner === undefined ?
        sql.literal("") :
        Option.isSome(input.owner) ?
        sql`AND owner = ${input.owner.value}` :
        sql.literal("AND owner IS NULL")
      const stager = input.stager === undefined ? sql.literal("") : sql`, stager = ${input.stager}`
      const set = sql`SET status = ${input.to}, owner = NULL, lease_until = NULL, updated_at = ${input.now}${stager}`
      const from = input.from.filter((status) => status !== "unreadable")
      const usual = from.length === 0 ? Effect.succeed(false) : Effect.map(
        write(
          "transition",
          sql<{ readonly id: string }>`UPDATE effect_resolve_pending ${set}
              WHERE id = ${input.id} AND status IN ${sql.in(from)} ${guard} ${owns}
              RETURNING id`.withoutTransform
        ),
        (rows) => rows.length > 0
      )
      const refusedIfFenced = (done: boolean) => done ? Effect.succeed(true) : unlessFenced("transition", false)
      if (from.length === input.from.length) return Effect.flatMap(usual, refusedIfFenced)
      // From `unreadable`: the row is read first, and changed only if it is still the very row read as such (its
      // stored status and payload unchanged), and not claimed under a lease that still holds.
      const unreadable = Effect.flatMap(
        run(
          "transition",
          sql<RecordRow>`SELECT ${columns} FROM effect_resolve_pending
            WHERE id = ${input.id}`.withoutTransform
        ),
        ([row]) => {
          if (row === undefined || toRecord(row).status !== "unreadable") return Effect.succeed(false)
          if (input.owner !== undefined && readText(row.owner) !== Option.getOrNull(input.owner)) {
            return Effect.succeed(false)
          }
          return Effect.map(
            write(
              "transition",
              sql<{ readonly id: string }>`UPDATE effect_resolve_pending ${set}
                  WHERE id = ${input.id} AND status = ${new Verbatim(row.status)}
                    AND payload = ${new Verbatim(row.payload)}
                    AND (status <> 'resolving' OR lease_until <= ${input.now}) ${owns}
                  RETURNING id`.withoutTransform
            ),
            (rows) => rows.length > 0
          )
        }
      )
      return Effect.flatMap(
        Effect.flatMap(usual, (done) => done ? Effect.succeed(true) : unreadable),
        refusedIfFenced
      )
    })

  const listPage = (session: string, options: ActionRecords.PageOptions) =>
    Effect.suspend(() => {
      const problem = checkPage(options)
      if (problem !== undefined) return Effect.fail(invalidInput("listPage", problem))
      const after = options.cursor === undefined ? undefined : recordCursor.decode(options.cursor)
      if (options.cursor !== undefined && after === undefined) {
        return Effect.fail(invalidInput("listPage", badCursor))
      }
      const from = after === undefined ?
        sql.literal("") :
        sql`AND (created_at < ${after.createdAt} OR (created_at = ${after.createdAt} AND seq < ${after.seq}))`
      const statement = sql<RecordRow & { readonly seq: unknown }>`SELECT seq, ${columns}
          FROM effect_resolve_pending WHERE session = ${session} ${from}
          ORDER BY created_at DESC, seq DESC LIMIT ${options.limit + 1}`
      return Effect.map(
        run("listPage", statement.withoutTransform),
        (rows) =>
          pageOf(rows, options.limit, toRecord, (last) =>
            recordCursor.encode(rawMillis(last.created_at), seqOf(last.seq)))
      )
    })

  const historyPage = (id: string, options: ActionRecords.PageOptions) =>
    Effect.suspend(() => {
      const problem = checkPage(options)
      if (problem !== undefined) return Effect.fail(invalidInput("historyPage", problem))
      const after = options.cursor === undefined ? 0 : eventCursor.decode(options.cursor)
      if (after === undefined) return Effect.fail(invalidInput("historyPage", badCursor))
      const statement = sql<EventRow>`SELECT seq, action_id, at, from_status, to_status, owner, attempt
          FROM effect_resolve_events WHERE action_id = ${id} AND seq > ${after} ORDER BY seq
          LIMIT ${options.limit + 1}`
      return Effect.map(
        run("historyPage", statement.withoutTransform),
        (rows) => pageOf(rows, options.limit, toEvent, (last) => eventCursor.encode(seqOf(last.seq)))
      )
    })

  const prune = (input: ActionRecords.PruneInput) =>
    Effect.suspend(() => {
      const problem = checkPrune(input)
      if (problem !== undefined) return Effect.fail(invalidInput("prune", problem))
      // The newest settled record past `keepLast`: it and every record settled before it go.
      const boundary = Option.match(input.keepLast, {
        onNone: () => Effect.succeed(Option.none<{ readonly updated_at: unknown; readonly seq: unknown }>()),
        onSome: (keep) =>
          Effect.map(
            run(
              "prune",
              sql<{ readonly updated_at: unknown; readonly seq: unknown }>`SELECT updated_at, seq
                  FROM effect_resolve_pending WHERE session = ${input.session} AND ${settled}
                  ORDER BY updated_at DESC, seq DESC LIMIT 1 OFFSET ${keep}`.withoutTransform
            ),
            (rows) => Option.fromNullable(rows[0])
          )
      })
      return Effect.flatMap(boundary, (past) => {
        const conditions = [
          ...Option.toArray(Option.map(past, (b) =>
            sql`(updated_at < ${b.updated_at as number} OR
                (updated_at = ${b.updated_at as number} AND seq <= ${b.seq as number}))`)),
          ...Option.toArray(Option.map(input.settledBefore, (before) => sql`updated_at < ${before}`))
        ]
        if (conditions.length === 0) return Effect.succeed(0)
        const statement = sql<{ readonly id: string }>`DELETE FROM effect_resolve_pending WHERE id IN (
            SELECT id FROM effect_resolve_pending
            WHERE session = ${input.session} AND ${settled} AND (${sql.or(conditions)})
            ORDER BY updated_at, seq LIMIT ${input.batch}
          ) ${owns} RETURNING id`
        return Effect.map(write("prune", statement.withoutTransform), (rows) => rows.length)
      })
    })
  return {
    insert,
    get: (id) => {
      const statement = sql<RecordRow>`SELECT ${columns} FROM effect_resolve_pending WHERE id = ${id}`
      return Effect.map(
        read("get", statement.withoutTransform, toRecord),
        (records) => Option.fromNullable(records[0])
      )
    },
    list: (session) => {
      const statement = sql<RecordRow>`SELECT ${columns} FROM effect_resolve_pending
          WHERE session = ${session} ORDER BY created_at DESC, seq DESC`
      return read("list", statement.withoutTransform, toRecord)
    },
    listPage,
    listOpen: (session) => {
      const statement = sql<RecordRow>`SELECT ${columns} FROM effect_resolve_pending
          WHERE session = ${session} AND ${sql.literal(openCondition)} ORDER BY created_at DESC, seq DESC`
      return read("listOpen", statement.withoutTransform, toRecord)
    },
    claim,
    settle,
    transition,
    stale: (now) => {
      const statement = sql<RecordRow>`SELECT ${columns} FROM effect_resolve_pending
          WHERE status = 'resolving' AND lease_until <= ${now} ORDER BY lease_until, seq`
      return read("stale", statement.withoutTransform, toRecord)
    },
    history: (id) => {
      const statement = sql<EventRow>`SELECT seq, action_id, at, from_status, to_status, owner, attempt
          FROM effect_resolve_events WHERE action_id = ${id} ORDER BY seq`
      return read("history", statement.withoutTransform, toEvent)
    },
    historyPage,
    prune
  }
}
