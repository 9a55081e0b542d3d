/**
 * The SQL store's methods for reviewers' responses (migration `8_responses`): a message to the agent about one of
 * its pending actions, recorded while the action can be decided and marked delivered once the session's saved
 * conversation holds it.
 *
 * @internal
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import type { ReviewerResponse } from "../../domain/ReviewerResponse.js"
import type { DecisionRequests } from "../../services/DecisionRequests.js"
import { checkDelivered, checkResponse, checkUndelivered } from "../../services/internal/pendingStore.js"
import { duplicateResponse, invalidInput, isDecidable, type PendingStoreError } from "../../services/PendingStore.js"
import type { SqlStore } from "./sqlContext.js"
import { recordColumns, type RecordRow, rowReader, toRecord } from "./sqlRows.js"

const responseColumns = "id, action_id, session, reviewer, message, responded_at, delivered_at"

interface ResponseRow {
  readonly id: unknown
  readonly action_id: unknown
  readonly session: unknown
  readonly reviewer: unknown
  readonly message: unknown
  readonly responded_at: unknown
  readonly delivered_at: unknown
}

const toResponse = (row: ResponseRow): ReviewerResponse => {
  const read = rowReader()
  return {
    id: read.text("id", row.id),
    actionId: read.text("action_id", row.action_id),
    session: read.text("session", row.session),
    reviewer: read.text("reviewer", row.reviewer),
    message: read.text("message", row.message),
    respondedAt: read.millis("responded_at", row.responded_at),
    deliveredAt: read.nullableMillis("delivered_at", row.delivered_at)
  }
}

/** The responses' methods of the SQL store (a fenced store's `markDelivered` holds only for the latest owner). */
export const makeResponses = (
  sql: SqlClient.SqlClient,
  { owns, read, run, unlessFenced, write }: Pick<SqlStore, "run" | "read" | "write" | "owns" | "unlessFenced">
): Pick<
  DecisionRequests.Service,
  "recordResponse" | "responses" | "undeliveredResponses" | "markDelivered"
> => {
  const columns = sql.literal(responseColumns)

  // Why nothing was recorded: the record as it is, read after the insert found nothing to do.
  const whyNot = (input: DecisionRequests.ResponseInput) =>
    Effect.flatMap(
      run(
        "recordResponse",
        sql<RecordRow>`SELECT ${sql.literal(recordColumns)} FROM effect_resolve_pending
          WHERE id = ${input.actionId}`.withoutTransform
      ),
      ([row]): Effect.Effect<DecisionRequests.RecordResponseResult, PendingStoreError> => {
        if (row === undefined) return Effect.succeed({ _tag: "UnknownAction" })
        const record = toRecord(row)
        if (!isDecidable(record, input.now)) return Effect.succeed({ _tag: "NotDecidable", record })
        // Decidable: the insert met a response with the same id.
        return Effect.fail(duplicateResponse(input.id))
      }
    )

  return {
    recordResponse: (input) =>
      Effect.suspend(() => {
        const problem = checkResponse(input)
        if (problem !== undefined) return Effect.fail(invalidInput("recordResponse", problem))
        const statement = sql<ResponseRow>`INSERT INTO effect_resolve_responses
            (id, action_id, session, reviewer, message, responded_at)
          SELECT ${input.id}, id, session, ${input.reviewer}, ${input.message}, ${input.now}
          FROM effect_resolve_pending
          WHERE id = ${input.actionId} AND status IN ('pending', 'orphaned')
            AND (expires_at IS NULL OR expires_at > ${input.now})
          ON CONFLICT DO NOTHING
          RETURNING ${columns}`
        return Effect.flatMap(
          write("recordResponse", statement.withoutTransform),
          ([row]): Effect.Effect<DecisionRequests.RecordResponseResult, PendingStoreError> =>
            row === undefined ? whyNot(input) : Effect.succeed({ _tag: "Recorded", response: toResponse(row) })
        )
      }),
    responses: (actionId) =>
      read(
        "responses",
        sql<ResponseRow>`SELECT ${columns} FROM effect_resolve_responses
          WHERE action_id = ${actionId} ORDER BY seq`.withoutTransform,
        toResponse
      ),
    undeliveredResponses: (query) =>
      Effect.suspend(() => {
        const problem = checkUndelivered(query)
        if (problem !== undefined) return Effect.fail(invalidInput("undeliveredResponses", problem))
        return read(
          "undeliveredResponses",
          sql<ResponseRow>`SELECT ${columns} FROM effect_resolve_responses
            WHERE session = ${query.session} AND delivered_at IS NULL ORDER BY seq LIMIT ${query.limit}`
            .withoutTransform,
          toResponse
        )
      }),
    markDelivered: (input) =>
      Effect.suspend(() => {
        const problem = checkDelivered(input)
        if (problem !== undefined) return Effect.fail(invalidInput("markDelivered", problem))
        const statement = sql<{ readonly id: string }>`UPDATE effect_resolve_responses SET delivered_at = ${input.now}
          WHERE id IN ${sql.in([...new Set(input.ids)])} AND delivered_at IS NULL ${owns} RETURNING id`
        return Effect.flatMap(
          write("markDelivered", statement.withoutTransform),
          (rows) => rows.length > 0 ? Effect.succeed(rows.length) : unlessFenced("markDelivered", 0)
        )
      })
  }
}
