/**
 * The inbox's change feed: one reader per inbox reads the store's feed (every transition of every record, from any
 * process, and the inbox's own notes: decisions, snoozes) and publishes what changed to every subscriber, so many
 * server-sent event streams cost one query per read. While a stream listens, it reads when the store signals a
 * change (`PendingStore.Service.changed`: `LISTEN`/`NOTIFY` on Postgres, this store's own writes in one process), and
 * at least every `interval` (the sweep for what no signal reaches). While none listens, it only keeps its place, once
 * every `interval` (one query, whatever changed), and reads no record: an inbox with no page open costs its decisions
 * nothing here.
 *
 * Postgres hands out sequence numbers before a transaction commits, so a reader can see number 11 before 10 is
 * visible. A number skipped is remembered as a gap and asked for again on each tick until it shows up or
 * `gapTimeout` passes (a rolled-back transaction never fills it); what arrived after the gap is delivered at once.
 */
import * as Effect from "effect/Effect"
import * as PubSub from "effect/PubSub"
import * as Queue from "effect/Queue"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import type { ChangeFeed } from "../../services/ChangeFeed.js"
import type { InboxQueries } from "../../services/InboxQueries.js"

/** What one tick found: the changed records as listed now, and the ids no record has any more (pruned). */
export interface Batch {
  readonly listed: ReadonlyArray<InboxQueries.ListedAction>
  readonly removed: ReadonlyArray<string>
}

/** The sequence numbers of one feed source that were read, and the gaps below the highest. */
export class Tracker {
  /** The highest number seen. */
  max: number
  /** Numbers below `max` not seen yet, and when each was first missed. */
  readonly gaps = new Map<number, number>()
  constructor(start: number, private readonly maxGaps: number) {
    this.max = start
  }
  /** Whether `seq` is new (then it counts as seen); gaps it skipped over are remembered from `now`. */
  see(seq: number, now: number): boolean {
    if (seq > this.max) {
      for (let missing = Math.max(this.max + 1, seq - this.maxGaps); missing < seq; missing++) {
        if (this.gaps.size >= this.maxGaps) break
        this.gaps.set(missing, now)
      }
      this.max = seq
      return true
    }
    return this.gaps.delete(seq)
  }
  /** Forgets gaps first missed before `before`. */
  expire(before: number): void {
    for (const [seq, since] of this.gaps) if (since < before) this.gaps.delete(seq)
  }
}

/** The feed's options. */
export interface Options {
  readonly interval: number
  readonly gapTimeout: number
  readonly batch: number
}

/** A running feed. */
export interface Feed {
  /** A subscription to every batch from now on. */
  readonly subscribe: Effect.Effect<Queue.Dequeue<Batch>, never, Scope.Scope>
  /** Polls now rather than at the next tick (this process changed something), while a subscription is open. */
  readonly poke: Effect.Effect<void>
}

/** Starts the poller in the current scope. */
export const make = (
  store: ChangeFeed.Service & InboxQueries.Service,
  options: Options
): Effect.Effect<Feed, never, Scope.Scope> =>
  Effect.gen(function*() {
    const hub = yield* Effect.acquireRelease(PubSub.sliding<Batch>(256), PubSub.shutdown)
    const poked = yield* Queue.sliding<void>(1)
    const clock = yield* Effect.clock
    const start = yield* Effect.orElseSucceed(store.feedHead, () => ({ journal: 0, notes: 0 }))
    const journal = new Tracker(start.journal, 1_000)
    const notes = new Tracker(start.notes, 1_000)
    // The subscriptions open now: with none, a change signal does not make the feed read, nor does a tick list what
    // changed (no one would hear it).
    let listening = 0
    const signal = Effect.suspend(() => listening > 0 ? Queue.offer(poked, undefined) : Effect.succeed(false))

    // One read of the feed; true when a source gave a full batch (more may be waiting).
    const tick = Effect.gen(function*() {
      const changes = yield* store.feed({
        after: { journal: journal.max, notes: notes.max },
        limit: options.batch,
        missing: { journal: [...journal.gaps.keys()], notes: [...notes.gaps.keys()] }
      })
      const now = clock.unsafeCurrentTimeMillis()
      const ids = new Set<string>()
      let fromJournal = 0
      let fromNotes = 0
      for (const change of changes) {
        const tracker = change.source === "journal" ? journal : notes
        if (change.source === "journal") fromJournal++
        else fromNotes++
        if (tracker.see(change.seq, now)) ids.add(change.actionId)
      }
      journal.expire(now - options.gapTimeout)
      notes.expire(now - options.gapTimeout)
      if (ids.size > 0 && listening > 0) {
        const listed = yield* store.getActions([...ids])
        const found = new Set(listed.map((item) => item.record.id))
        yield* PubSub.publish(hub, { listed, removed: [...ids].filter((id) => !found.has(id)) })
      }
      return fromJournal >= options.batch || fromNotes >= options.batch
    })

    // Pushed: the store signals that the feed may hold something new (Postgres: from any process); the poll at
    // `interval` stays as the sweep for what no signal reaches (another process on a SQLite file, a dropped listener).
    yield* Effect.forkScoped(
      Stream.runForEach(store.changed, () => signal).pipe(
        Effect.catchAllCause((cause) =>
          Effect.logWarning(
            "effect-resolve inbox: the store's change signal stopped; the change feed is polled only",
            cause
          )
        )
      )
    )
    const wait = Effect.race(Effect.sleep(options.interval), Queue.take(poked))
    yield* Effect.forkScoped(Effect.forever(
      Effect.flatMap(
        Effect.catchAllCause(
          tick,
          (cause) => Effect.as(Effect.logWarning("effect-resolve inbox: could not read the change feed", cause), false)
        ),
        (more) => more ? Effect.yieldNow() : wait
      )
    ))

    return {
      subscribe: Effect.zipRight(
        Effect.acquireRelease(Effect.sync(() => listening++), () => Effect.sync(() => listening--)),
        // Read at once: what changed since the last tick (not listed while no one listened) reaches the new
        // subscriber without waiting for the next one.
        Effect.zipLeft(PubSub.subscribe(hub), Queue.offer(poked, undefined))
      ),
      poke: Effect.asVoid(signal)
    }
  })
