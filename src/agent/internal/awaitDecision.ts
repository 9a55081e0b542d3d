/**
 * Waiting for a reviewer (0.4): what an idle session's owner blocks on between its runs, until a reviewer decides
 * one of the previews still waiting; then its next run tells the model (and runs the decision, if the session is
 * the one to run it). Pushed, not polled: a durable session is woken by its store's change signal
 * (`ChangeFeed.changed`: `LISTEN`/`NOTIFY` on Postgres, from any process; the store layer's own writes on SQLite and
 * in memory), with a sweep every `sweepInterval` for what no signal reaches (another process on a SQLite file, a
 * dropped connection); a session in memory by its pending set's changes.
 *
 * @internal
 */
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import * as Stream from "effect/Stream"
import type { PendingStoreError } from "../../domain/Errors.js"
import { openStatuses } from "../../domain/PendingRecord.js"
import { closureKind } from "../../services/ActionKind.js"
import type { PendingStore } from "../../services/PendingStore.js"
import type { Session } from "./session.js"

/** How often a durable session looks again without a signal. */
export const sweepInterval = Duration.seconds(1)

/** The changes read per feed request while catching up. */
const feedBatch = 1_000

/** Whether a pending action's status means a decision was made (it is no longer waiting, nor being run). */
const decidedStatus = (status: string): boolean => status !== "pending" && status !== "resolving"

/**
 * How long a requested decision of a durable kind is left to an approval inbox (which runs a kind it registers at
 * once) before the session takes it as its own to run.
 */
export const inboxGrace = Duration.seconds(2)

/**
 * The ids of the session's actions a reviewer decided: every one of `watched` that is no longer open (settled by
 * whoever ran it), every one with a requested decision that is the session's to run: a closure (only its stager
 * can run it), or a decision nobody ran within `inboxGrace` (no inbox registers its kind); else every one with a
 * reviewer's response its model has not read. A requested
 * decision of a durable kind is not taken at once: the inbox that recorded it is running it, and the session would
 * only race it.
 */
const decidedNow = (store: PendingStore.Service, session: string, watched: ReadonlySet<string>, now: number) =>
  Effect.gen(function*() {
    // One read: the watched records as they are now, each with its requested decision (at most 1 000 at once).
    const ids = [...watched].slice(0, 1_000)
    const listed = yield* store.getActions(ids)
    const found = new Map(listed.map((item) => [item.record.id, item] as const))
    // The settled ones first (an inbox ran the decision; a record pruned meanwhile is settled too).
    const settled = ids.filter((id) => {
      const item = found.get(id)
      return item === undefined || !openStatuses.includes(item.record.status)
    })
    if (settled.length > 0) return settled
    const decided: Array<string> = []
    for (const { record, requested } of listed) {
      if (
        Option.isSome(requested) && record.status === "pending" &&
        (record.kind === closureKind || requested.value.requestedAt <= now - Duration.toMillis(inboxGrace))
      ) decided.push(record.id)
    }
    if (decided.length > 0) return decided
    // A reviewer's response: the action stays pending, and the model is to read it.
    const responded = (yield* store.undeliveredResponses({ session, limit: 100 })).map((response) => response.actionId)
    return [...new Set(responded.filter((id) => watched.has(id)))]
  })

/** A durable session: its store's signal, the feed read after it, and the sweep. */
const awaitDurable = (
  session: Session,
  store: PendingStore.Service,
  watched: ReadonlySet<string>
): Effect.Effect<ReadonlyArray<string>, PendingStoreError> =>
  Effect.scoped(Effect.gen(function*() {
    // Listening, then looking: a decision made before the listener is in place is found by the first look, or by
    // the feed read after the next signal or sweep (the position is taken before that look).
    const wake = yield* Queue.sliding<void>(1)
    yield* Effect.forkScoped(
      Stream.runForEach(store.changed, () => Queue.offer(wake, undefined)).pipe(
        Effect.catchAllCause((cause) =>
          Effect.logWarning("effect-resolve: the store's change signal ended; waiting for a reviewer by sweeps", cause)
        )
      )
    )
    let position = yield* store.feedHead
    const first = yield* decidedNow(store, session.id, watched, yield* Clock.currentTimeMillis)
    if (first.length > 0) return first
    for (;;) {
      const signalled = yield* Effect.race(
        Effect.as(Queue.take(wake), true),
        Effect.as(Effect.sleep(sweepInterval), false)
      )
      // After a signal, only a change of a watched action (a decision recorded or completed, a transition) is worth
      // the two reads; a sweep always makes them (a change no signal reached, a sequence number seen late).
      let relevant = !signalled
      for (;;) {
        const changes = yield* store.feed({ after: position, limit: feedBatch })
        let { journal, notes } = position
        for (const change of changes) {
          if (change.source === "journal") journal = Math.max(journal, change.seq)
          else notes = Math.max(notes, change.seq)
          if (watched.has(change.actionId)) relevant = true
        }
        position = { journal, notes }
        if (changes.length < feedBatch) break
      }
      if (!relevant) continue
      const decided = yield* decidedNow(store, session.id, watched, yield* Clock.currentTimeMillis)
      if (decided.length > 0) return decided
    }
  }))

/** A session in memory: its pending set's changes (a reviewer there acts in this process). */
const awaitInMemory = (
  session: Session,
  watched: ReadonlySet<string>
): Effect.Effect<ReadonlyArray<string>, PendingStoreError> =>
  Effect.scoped(Effect.gen(function*() {
    const changes = yield* session.pending.subscribe
    const undecided = new Set(
      (yield* session.pending.listOpen).filter((info) => !decidedStatus(info.status)).map((info) => info.id)
    )
    const settled = [...watched].filter((id) => !undecided.has(id))
    if (settled.length > 0) return settled
    const next = yield* Stream.runHead(
      Stream.filter(changes, (info) => watched.has(info.id) && decidedStatus(info.status))
    )
    return next._tag === "Some" ? [next.value.id] : []
  }))

/**
 * Waits until a reviewer decides one of the session's previews that wait now (`pending`), or responds about one;
 * the ids decided or responded to (a requested decision of the session's actions counts, whoever will run it), at
 * once when there are some already, `[]` when nothing waits. Reads only; interruptible.
 */
export const awaitDecision = (session: Session): Effect.Effect<ReadonlyArray<string>, PendingStoreError> =>
  Effect.gen(function*() {
    const waiting = (yield* session.pending.listOpen).filter((info) => info.status === "pending")
    if (waiting.length === 0) return []
    const watched = new Set(waiting.map((info) => info.id))
    return yield* (session.store === undefined ?
      awaitInMemory(session, watched) :
      awaitDurable(session, session.store, watched))
  }).pipe(Effect.withSpan("TurnDriver.awaitDecision", { attributes: { session: session.id } }))
