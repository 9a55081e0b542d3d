/**
 * The SQL store's parts about sessions and runtime instances: instance leases (`InstanceLeases`), a session's state
 * and conversation (`Conversations`), its owner epochs and owner log (`SessionOwners`).
 *
 * @internal
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { Conversations } from "../../services/Conversations.js"
import type { InstanceLeases } from "../../services/InstanceLeases.js"
import { checkHeartbeat, checkSession } from "../../services/internal/pendingStore.js"
import {
  checkAcquire,
  checkConversationSave,
  checkPrevious,
  checkSessionLogEntry,
  fencedOut,
  invalidInput,
  leaseLapsed
} from "../../services/PendingStore.js"
import type { SessionOwners } from "../../services/SessionOwners.js"
import { affected, type SqlStore } from "./sqlContext.js"
import { type LogRow, seqOf, writeFailed } from "./sqlRows.js"
import { readText } from "./sqlText.js"

/** The leases of runtime instances. */
export const makeLeases = (store: SqlStore): InstanceLeases.Service => {
  const { sql, owns, whereOwns, unlessFenced, run, write } = store
  const heartbeat = (input: InstanceLeases.HeartbeatInput) =>
    Effect.suspend(() => {
      const problem = checkHeartbeat(input)
      if (problem !== undefined) return Effect.fail(invalidInput("heartbeat", problem))
      // A renewal extends only a lease that still holds: one that lapsed is never taken again by its instance.
      const own = input.renew === true ?
        Effect.flatMap(
          write(
            "heartbeat",
            sql<{ readonly id: string }>`UPDATE effect_resolve_instances SET lease_until = ${input.leaseUntil}
                WHERE id = ${input.instance} AND lease_until > ${input.now} ${owns} RETURNING id`.withoutTransform
          ),
          (rows) =>
            rows.length > 0 ?
              Effect.void :
              Effect.zipRight(unlessFenced("heartbeat", undefined), Effect.fail(leaseLapsed(input.instance)))
        ) :
        Effect.flatMap(
          write(
            "heartbeat",
            sql<{ readonly id: string }>`INSERT INTO effect_resolve_instances (id, lease_until)
                SELECT ${input.instance}, ${input.leaseUntil} ${whereOwns}
                ON CONFLICT (id) DO UPDATE SET lease_until = excluded.lease_until RETURNING id`.withoutTransform
          ),
          (rows) => rows.length > 0 ? Effect.void : unlessFenced("heartbeat", undefined)
        )
      return Effect.all([
        own,
        write(
          "heartbeat",
          sql`DELETE FROM effect_resolve_instances WHERE lease_until <= ${input.now}`.withoutTransform
        ),
        write(
          "heartbeat",
          sql`UPDATE effect_resolve_pending SET lease_until = ${input.leaseUntil}
              WHERE status = 'resolving' AND owner = ${input.instance} ${owns}`.withoutTransform
        )
      ], { discard: true })
    })
  return {
    heartbeat,
    release: (instance) =>
      Effect.asVoid(
        write("release", sql`DELETE FROM effect_resolve_instances WHERE id = ${instance} ${owns}`.withoutTransform)
      ),
    leases: (instances) =>
      instances.length === 0 ?
        Effect.succeed(new Map<string, number>()) :
        Effect.map(
          run(
            "leases",
            sql<{ readonly id: unknown; readonly lease_until: unknown }>`SELECT id, lease_until
                FROM effect_resolve_instances WHERE id IN ${sql.in(instances)}`.withoutTransform
          ),
          (rows) => {
            const found = new Map<string, number>()
            for (const row of rows) {
              const until = seqOf(row.lease_until)
              const id = readText(row.id)
              if (typeof id === "string" && Number.isSafeInteger(until)) found.set(id, until)
            }
            return found
          }
        )
  }
}

/** A session's state and conversation. */
export const makeConversations = (store: SqlStore): Conversations.Service => {
  const { sql, fence, retryBusy, forShare, whereOwns, unlessFenced, read, write } = store
  const saveSession = (session: string, state: string) =>
    Effect.suspend(() => {
      const problem = checkSession(session, state)
      if (problem !== undefined) return Effect.fail(invalidInput("saveSession", problem))
      return Effect.flatMap(Clock.currentTimeMillis, (now) => {
        const statement = sql<{ readonly session: string }>`INSERT INTO effect_resolve_sessions
            (session, state, updated_at) SELECT ${session}, ${state}, ${now} ${whereOwns}
            ON CONFLICT (session) DO UPDATE SET state = excluded.state, updated_at = excluded.updated_at
            RETURNING session`
        return Effect.flatMap(
          write("saveSession", statement.withoutTransform),
          (rows) => rows.length > 0 ? Effect.void : unlessFenced("saveSession", undefined)
        )
      })
    })

  /** The problem a fenced `saveConversation` reports from inside its transaction (rolled back). */
  const fenced = "fenced"
  const saveConversation = (session: string, save: Conversations.ConversationSave) =>
    Effect.suspend(() => {
      const problem = checkSession(session, save.state) ?? checkConversationSave(save, Number.MAX_SAFE_INTEGER)
      if (problem !== undefined) return Effect.fail(invalidInput("saveConversation", problem))
      return Effect.flatMap(Clock.currentTimeMillis, (now) => {
        // One transaction: the messages from `from` on, then the state that counts them.
        const transaction = sql.withTransaction(Effect.gen(function*() {
          const counted = yield* sql<{ readonly n: unknown; readonly owns: unknown }>`SELECT
              (SELECT count(*) FROM effect_resolve_conversation WHERE session = ${session}) AS n,
              ${
            fence === undefined ? sql.literal("1") : sql`CASE WHEN EXISTS (SELECT 1 FROM effect_resolve_owners
                WHERE session = ${fence.session} AND epoch = ${fence.epoch}${forShare}) THEN 1 ELSE 0 END`
          } AS owns`
            .withoutTransform
          if (seqOf(counted[0]?.owns) !== 1) return Option.some(fenced)
          const stored = seqOf(counted[0]?.n)
          if (save.from > stored) return Option.some(checkConversationSave(save, stored) ?? "from is past the end")
          if (Option.isSome(save.previous)) {
            const current = yield* sql<{ readonly state: string }>`SELECT state FROM effect_resolve_sessions
                WHERE session = ${session}`.withoutTransform
            const problem = checkPrevious(save, current[0]?.state)
            if (problem !== undefined) return Option.some(problem)
          }
          yield* sql`DELETE FROM effect_resolve_conversation
              WHERE session = ${session} AND seq >= ${save.from}`.withoutTransform
          if (save.messages.length > 0) {
            yield* sql`INSERT INTO effect_resolve_conversation ${
              sql.insert(save.messages.map((message, i) => ({ session, seq: save.from + i, message })))
            }`.withoutTransform
          }
          yield* sql`INSERT INTO effect_resolve_sessions (session, state, updated_at)
              VALUES (${session}, ${save.state}, ${now})
              ON CONFLICT (session) DO UPDATE SET state = excluded.state, updated_at = excluded.updated_at`
            .withoutTransform
          return Option.none<string>()
        }))
        return Effect.flatMap(
          Effect.uninterruptible(Effect.mapError(retryBusy(transaction), writeFailed("saveConversation"))),
          Option.match({
            onNone: () => Effect.void,
            onSome: (problem) =>
              Effect.fail(
                problem === fenced && fence !== undefined ?
                  fencedOut("saveConversation", fence) :
                  invalidInput("saveConversation", problem)
              )
          })
        )
      })
    })

  const loadConversation = (session: string) =>
    Effect.gen(function*() {
      const states = yield* read(
        "loadConversation",
        sql<{ readonly state: string }>`SELECT state FROM effect_resolve_sessions
            WHERE session = ${session}`.withoutTransform,
        (row) => readText(row.state) as string
      )
      const state = states[0]
      if (state === undefined) return Option.none<Conversations.Conversation>()
      const messages = yield* read(
        "loadConversation",
        sql<{ readonly message: string }>`SELECT message FROM effect_resolve_conversation
            WHERE session = ${session} ORDER BY seq`.withoutTransform,
        (row) => readText(row.message) as string
      )
      return Option.some({ state, messages })
    })

  return {
    saveSession,
    loadSession: (session) => {
      const statement = sql<{ readonly state: string }>`SELECT state FROM effect_resolve_sessions
          WHERE session = ${session}`
      return Effect.map(
        read("loadSession", statement.withoutTransform, (row) => readText(row.state) as string),
        (states) => Option.fromNullable(states[0])
      )
    },
    saveConversation,
    loadConversation
  }
}

/** A session's owner epochs and owner log. */
export const makeOwners = (store: SqlStore): SessionOwners.Service => {
  const { sql, fence, retryBusy, whereOwns, unlessFenced, run, write } = store
  return {
    acquire: (input) =>
      Effect.suspend(() => {
        const problem = checkAcquire(input)
        if (problem !== undefined) return Effect.fail(invalidInput("acquire", problem))
        const statement = sql<
          { readonly epoch: unknown }
        >`INSERT INTO effect_resolve_owners (session, epoch, owner, at)
            VALUES (${input.session}, 1, ${input.owner}, ${input.now})
            ON CONFLICT (session) DO UPDATE SET epoch = effect_resolve_owners.epoch + 1, owner = excluded.owner,
              at = excluded.at
            RETURNING epoch`
        return Effect.map(write("acquire", statement.withoutTransform), (rows) => seqOf(rows[0]?.epoch))
      }),
    owner: (session) =>
      Effect.map(
        run(
          "owner",
          sql<{ readonly epoch: unknown; readonly owner: unknown; readonly at: unknown }>`SELECT epoch, owner, at
              FROM effect_resolve_owners WHERE session = ${session}`.withoutTransform
        ),
        (rows) =>
          Option.map(Option.fromNullable(rows[0]), (row) => ({
            epoch: seqOf(row.epoch),
            owner: String(row.owner),
            at: seqOf(row.at)
          }))
      ),
    // 0.3: the owner log of a session (cluster runners).
    logSession: (entry) =>
      Effect.suspend(() => {
        const problem = checkSessionLogEntry(entry)
        if (problem !== undefined) return Effect.fail(invalidInput("logSession", problem))
        const statement = fence === undefined ?
          sql`INSERT INTO effect_resolve_session_log (session, owner, event, at)
              VALUES (${entry.session}, ${entry.owner}, ${entry.event}, ${entry.at})` :
          sql`INSERT INTO effect_resolve_session_log (session, owner, event, at)
              SELECT ${entry.session}, ${entry.owner}, ${entry.event}, ${entry.at} ${whereOwns}`
        return Effect.flatMap(
          Effect.uninterruptible(Effect.mapError(retryBusy(statement.raw), writeFailed("logSession"))),
          (result) => fence === undefined || affected(result) > 0 ? Effect.void : unlessFenced("logSession", undefined)
        )
      }),
    sessionLog: (session, options) => {
      const last = options?.last
      if (last !== undefined && !(Number.isSafeInteger(last) && last >= 1)) {
        return Effect.fail(invalidInput("sessionLog", "last must be a whole number, 1 or more"))
      }
      // The last entries: read newest first through the index, then put back in order.
      const statement = last === undefined ?
        sql<LogRow>`SELECT session, owner, event, at FROM effect_resolve_session_log
            WHERE session = ${session} ORDER BY seq` :
        sql<LogRow>`SELECT session, owner, event, at FROM effect_resolve_session_log
            WHERE session = ${session} ORDER BY seq DESC LIMIT ${last}`
      return Effect.map(
        run("sessionLog", statement.withoutTransform),
        (rows) => {
          const entries = rows.map((row): SessionOwners.SessionLogEntry => ({
            session: String(readText(row.session)),
            owner: String(readText(row.owner)),
            event: readText(row.event) as SessionOwners.SessionLogEntry["event"],
            at: seqOf(row.at)
          }))
          return last === undefined ? entries : entries.reverse()
        }
      )
    }
  }
}
