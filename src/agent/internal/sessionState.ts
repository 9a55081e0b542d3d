/**
 * What a durable session saves after each turn, and how it resumes: the saved state's Schema, the save (a failure
 * is logged, never fails the run), the restore when the session's driver is built (the forcing state of the actions
 * still pending, and a reminder for each pending preview the saved conversation does not show), and the bookkeeping
 * of which previews the conversation shows. A session in memory saves nothing.
 *
 * @internal
 */
import * as Prompt from "@effect/ai/Prompt"
import * as Arr from "effect/Array"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Ref from "effect/Ref"
import * as Schema from "effect/Schema"
import { isOwnershipLost, type PendingStoreError } from "../../domain/Errors.js"
import * as ReviewerResponse from "../../domain/ReviewerResponse.js"
import { SteeringMessage } from "../../domain/SteeringMessage.js"
import { maxFilterEntries } from "../../services/internal/pendingStore.js"
import type { PendingStore } from "../../services/PendingStore.js"
import { directiveLabel } from "../../services/Preview.js"
import { pickUp } from "./decisions.js"
import { type Forcing, noForcing } from "./forcingMap.js"
import type { Session } from "./session.js"
import { steerIdOf, steerIdsIn, uniqueSteers } from "./steerIds.js"

/**
 * What a durable session stores after every turn, to continue after a restart exactly where it stopped: the
 * conversation (version 1: whole, in the state; version 2, since 0.3: its messages in the store's conversation rows,
 * written in increments, and their count here), the steering messages not yet sent, the forcing state (keyed by pending-action id, stable across a
 * restart) and the forcing the provider refused.
 */
const SessionState = Schema.Struct({
  version: Schema.Literal(1, 2),
  /** Version 1: the whole conversation. */
  history: Schema.optional(Prompt.Prompt),
  /** Version 2: how many of the stored conversation rows are the conversation. */
  messages: Schema.optional(Schema.Number),
  steering: Schema.Array(SteeringMessage),
  forceNext: Schema.Array(Schema.String),
  ignoredForced: Schema.Array(Schema.Tuple(Schema.String, Schema.Number)),
  /** Of `ignoredForced`, the turns that only repeated the reminder (absent in a state saved before 0.3). */
  ignoredReminded: Schema.optionalWith(Schema.Array(Schema.Tuple(Schema.String, Schema.Number)), {
    default: () => []
  }),
  errorStreak: Schema.Array(Schema.Tuple(Schema.String, Schema.Number)),
  refused: Schema.Struct({ named: Schema.Boolean, required: Schema.Boolean }),
  lastChoice: Schema.NullOr(Schema.String),
  turns: Schema.Number,
  /**
   * The pending actions whose preview the conversation holds (a tool result of the turn that staged them); absent
   * in a state saved before 0.3, where the history's text is searched for their ids instead.
   */
  shown: Schema.optional(Schema.Array(Schema.String))
})

const SessionStateJson = Schema.parseJson(SessionState)

/** One message of the conversation, as one row of the store (`PendingStore.saveConversation`). */
const MessageJson = Schema.parseJson(Prompt.Message)

/**
 * The text that shows the model a preview it staged before a restart when the restored conversation does not hold
 * it (the process died during the turn that staged it).
 */
export const restoredPreviewText = (info: { readonly id: string; readonly label: string; readonly preview: string }) =>
  "<system-reminder>\n" +
  `A preview staged before a restart is still pending: ${info.label} (id ${info.id}). Nothing of it is applied yet. ` +
  "Call the `resolve` tool to apply or discard it." +
  (info.preview === "" ? "" : `\nThe preview:\n${info.preview}`) +
  "\n</system-reminder>"

/**
 * A durable session continues from what its last turn saved, and shows the model any pending preview the saved
 * conversation does not hold. A saved state that does not decode is logged, and the conversation starts afresh.
 */
export const restore = (session: Session): Effect.Effect<void, PendingStoreError> =>
  Effect.gen(function*() {
    const { carry, forcing, history, id, lastChoice, pending, refused, shown, store, turnCount } = session
    if (store === undefined) return
    const actions = yield* pending.listOpen
    const saved = yield* store.loadConversation(id)
    let savedShown: ReadonlySet<string> | undefined
    if (Option.isSome(saved)) {
      const decoded = Schema.decodeUnknownEither(SessionStateJson)(saved.value.state).pipe(
        Either.flatMap((state) =>
          state.version === 1 ?
            Either.right({ state, history: state.history ?? Prompt.empty }) :
            Either.map(
              Either.all(
                saved.value.messages.slice(0, state.messages ?? 0).map((m) =>
                  Schema.decodeUnknownEither(MessageJson)(m)
                )
              ),
              (messages) => ({ state, history: Prompt.fromMessages(messages) })
            )
        )
      )
      if (decoded._tag === "Right") {
        const { history: restoredHistory, state } = decoded.right
        yield* Ref.set(history, restoredHistory)
        // A version 1 state holds no conversation rows: the first save writes every message.
        yield* Ref.set(
          session.saved,
          state.version === 1 ?
            { messages: [], state: undefined } :
            { messages: restoredHistory.content, state: saved.value.state }
        )
        yield* Ref.set(carry, state.steering)
        // Only the entries of actions still pending: a directive that is gone (an action resolved by another
        // process) would never be served, and its entry never forgotten.
        const labels = new Map(
          actions.filter((info) => info.status === "pending" || info.status === "resolving").map((info) =>
            [info.id, directiveLabel(info.sourceToolName)] as const
          )
        )
        const restored = new Map<string, Forcing>()
        const restoreEntry = (key: string, f: (entry: Forcing) => Forcing) => {
          const label = labels.get(key)
          if (label !== undefined) restored.set(key, f(restored.get(key) ?? noForcing(label)))
        }
        for (const key of state.forceNext) restoreEntry(key, (entry) => ({ ...entry, forceNext: true }))
        for (const [key, n] of state.ignoredForced) restoreEntry(key, (entry) => ({ ...entry, ignored: n }))
        for (const [key, n] of state.ignoredReminded) {
          restoreEntry(key, (entry) => ({ ...entry, reminded: Math.min(n, entry.ignored) }))
        }
        for (const [key, n] of state.errorStreak) restoreEntry(key, (entry) => ({ ...entry, errors: n }))
        yield* Ref.set(forcing, restored)
        yield* Ref.set(refused, state.refused)
        yield* Ref.set(lastChoice, Option.fromNullable(state.lastChoice))
        yield* Ref.set(turnCount, state.turns)
        if (state.shown !== undefined) savedShown = new Set(state.shown)
      } else {
        yield* Effect.logError(
          `effect-resolve: the saved state of session ${id} does not decode; the conversation starts afresh ` +
            "(its pending actions are kept)",
          decoded.left
        )
      }
    }
    // A state saved before 0.3 does not say which previews it showed: its history's text is searched for ids.
    const shownBefore = savedShown ?? ((text: string) => ({ has: (id: string) => text.includes(id) }))(
      JSON.stringify(Schema.encodeSync(Prompt.Prompt)(yield* Ref.get(history)))
    )
    const open = actions.filter((info) => info.status === "pending" && info.runnable)
    // Every preview the saved state says was shown, settled since included: the first turn tells the model of those
    // a reviewer decided meanwhile (while no process ran the session), then forgets them.
    yield* Ref.set(
      shown,
      new Set([...open.filter((info) => shownBefore.has(info.id)).map((info) => info.id), ...(savedShown ?? [])])
    )
    const unseen = open.filter((info) => !shownBefore.has(info.id))
    if (unseen.length > 0) {
      const now = yield* Clock.currentTimeMillis
      yield* Ref.update(carry, (messages) => [
        ...messages,
        ...unseen.reverse().map((info): SteeringMessage => ({
          customType: "resolve-restored",
          content: restoredPreviewText(info),
          details: { actionId: info.id },
          display: false,
          attribution: "agent",
          timestamp: now
        }))
      ])
    }
    // Steering recorded durably (a cluster's steer or decision note) that no saved turn carried: queued again, once
    // (not when the saved steering holds it already); those the saved conversation carried are reported delivered.
    const durable = session.durableSteering
    if (durable !== undefined) {
      const recorded = yield* durable.undelivered
      if (recorded.length > 0) {
        const carried = steerIdsIn((yield* Ref.get(history)).content)
        const queued = new Set((yield* Ref.get(carry)).map(steerIdOf))
        const again = recorded.filter((m) => !carried.has(steerIdOf(m)!) && !queued.has(steerIdOf(m)))
        const done = recorded.flatMap((m) => carried.has(steerIdOf(m)!) ? [steerIdOf(m)!] : [])
        if (done.length > 0) yield* reportDelivered(session, done)
        if (again.length > 0) yield* Ref.update(carry, (messages) => [...messages, ...uniqueSteers(again)])
      }
    }
  })

/** Reports steering ids a saved turn carried; a failure is logged (the saved conversation stays the truth). */
const reportDelivered = (session: Session, ids: ReadonlyArray<string>): Effect.Effect<void> =>
  session.durableSteering === undefined ? Effect.void : session.durableSteering.delivered(ids).pipe(
    Effect.catchAllCause((cause) =>
      Effect.logWarning(
        `effect-resolve: could not mark the steering of session ${session.id} delivered; it is checked against the ` +
          "saved conversation when the session opens next",
        cause
      )
    )
  )

/**
 * Marks reviewers' responses a saved turn carried delivered; a failure is logged (the next turn finds them in the
 * saved conversation and marks them then).
 */
const markResponsesDelivered = (
  session: Session,
  store: PendingStore.Service,
  ids: ReadonlyArray<string>
): Effect.Effect<void> =>
  Effect.flatMap(
    Clock.currentTimeMillis,
    (now) =>
      Effect.forEach(Arr.chunksOf(ids, maxFilterEntries), (chunk) => store.markDelivered({ ids: chunk, now }), {
        discard: true
      })
  ).pipe(
    Effect.catchAllCause((cause) =>
      Effect.logWarning(
        `effect-resolve: could not mark the reviewers' responses to session ${session.id} delivered; its next ` +
          "turn does",
        cause
      )
    )
  )

/** Saves the session for a restart (durable sessions only); a failed save is logged, never fails the run. */
export const persist = (session: Session): Effect.Effect<void> => {
  const { bus, carry, forcing, history, id, lastChoice, refused, saved, shown, store, turnCount } = session
  if (store === undefined) return Effect.void
  return Effect.gen(function*() {
    const entries = [...(yield* Ref.get(forcing))]
    // The messages written are those from the first one the store does not hold as it is (the conversation only
    // grows, so this is the turn's own; an earlier message replaced, by identity, rewrites from there).
    const messages = (yield* Ref.get(history)).content
    const before = yield* Ref.get(saved)
    let from = 0
    while (from < before.messages.length && from < messages.length && before.messages[from] === messages[from]) from++
    const state: typeof SessionState.Type = {
      version: 2,
      messages: messages.length,
      steering: [...(yield* Ref.get(carry)), ...(yield* bus.pending)],
      forceNext: entries.filter(([, entry]) => entry.forceNext).map(([key]) => key),
      ignoredForced: entries.filter(([, entry]) => entry.ignored > 0).map(([key, entry]) => [key, entry.ignored]),
      ignoredReminded: entries.filter(([, entry]) => entry.reminded > 0).map(([key, entry]) => [
        key,
        entry.reminded
      ]),
      errorStreak: entries.filter(([, entry]) => entry.errors > 0).map(([key, entry]) => [key, entry.errors]),
      refused: yield* Ref.get(refused),
      lastChoice: Option.getOrNull(yield* Ref.get(lastChoice)),
      turns: yield* Ref.get(turnCount),
      shown: [...(yield* Ref.get(shown))]
    }
    const json = yield* Schema.encode(SessionStateJson)(state)
    const encode = (start: number) =>
      Effect.forEach(messages.slice(start), (message) => Schema.encode(MessageJson)(message))
    const whole = Effect.flatMap(
      encode(0),
      (rows) => store.saveConversation(id, { state: json, from: 0, messages: rows, previous: Option.none() })
    )
    // Another process may have saved the session since (a shared session with no single owner): then the rows
    // before `from` may be its own, and the conversation is written whole (the last save wins, as a whole). Never
    // when the session was lost to a newer owner (an exclusive session): its save is refused, and so is any other.
    yield* from === 0 || before.state === undefined ? whole : Effect.flatMap(
      encode(from),
      (rows) =>
        store.saveConversation(id, { state: json, from, messages: rows, previous: Option.some(before.state!) }).pipe(
          Effect.catchAll((error) => isOwnershipLost(error) ? Effect.fail(error) : whole)
        )
    )
    yield* Ref.set(saved, { messages, state: json })
    // The steering this save holds as delivered (its messages carry their ids): reviewers' responses, marked in the
    // store; the rest (a cluster's steers and decision notes), reported to the durable steering.
    const carried = [...steerIdsIn(messages.slice(from))]
    if (carried.length > 0) {
      const responses = carried.filter(ReviewerResponse.isId)
      if (responses.length > 0) yield* markResponsesDelivered(session, store, responses)
      if (session.durableSteering !== undefined && responses.length < carried.length) {
        yield* reportDelivered(session, carried.filter((steerId) => !ReviewerResponse.isId(steerId)))
      }
    }
  }).pipe(
    Effect.catchAllCause((cause) =>
      Cause.failureOption(cause).pipe(Option.exists(isOwnershipLost)) ?
        Effect.logInfo(`effect-resolve: session ${id} was not saved: another owner has it now`) :
        Effect.logError(`effect-resolve: could not save session ${id}; a restart resumes from an earlier turn`, cause)
    )
  )
}

/**
 * Before each turn, a durable session runs what a reviewer decided that only it can run, and tells the model of the
 * previews it was shown that a reviewer settled (`pickUp`), reading its actions again as it does (one round trip, not
 * two: read here only when `pickUp` did not get that far): another process (an approval inbox, a second worker) may
 * have resolved one, and the queue must not force resolve for it.
 */
export const refresh = (session: Session): Effect.Effect<void> =>
  session.pending.durable ?
    Effect.matchCauseEffect(
      Effect.flatMap(pickUp(session), Option.match({ onNone: () => session.pending.listOpen, onSome: Effect.succeed })),
      {
        onFailure: (cause) => Effect.logWarning("effect-resolve: could not read the pending set again", cause),
        // The previews shown that are no longer pending are forgotten: `shown` stays as small as the set.
        onSuccess: (open) => {
          const pendingIds = new Set(open.filter((i) => i.status === "pending").map((i) => i.id))
          return Ref.update(session.shown, (ids) => new Set([...ids].filter((id) => pendingIds.has(id))))
        }
      }
    ) :
    Effect.void

/** Their tool results now show these previews (`staged`): a resumed session does not show them again. */
export const markShown = (session: Session, staged: ReadonlyArray<string>): Effect.Effect<void> =>
  session.pending.durable && staged.length > 0 ?
    Ref.update(session.shown, (ids) => new Set([...ids, ...staged])) :
    Effect.void
