/**
 * Changes are pushed, not only polled (issue 28): `PendingStore.Service.changed` signals a feed write of the same
 * store (every store: the conformance suite, test/stores/conformance/inbox.ts), and on Postgres a write of any client
 * (`LISTEN`/`NOTIFY`). The inbox's feed reads on the
 * signal: with its poll set to an hour, a change still reaches a subscriber (no wall-clock bound: it arrives, or the
 * test times out).
 */
import { assert, describe, it } from "@effect/vitest"
import { Chunk, Effect, Fiber, Layer, Option, Stream } from "effect"
import { afterAll } from "vitest"
import type { PendingRecord } from "../../src/domain/PendingRecord.js"
import { Inbox } from "../../src/inbox.js"
import { PendingStore } from "../../src/index.js"
import * as PostgresStore from "../../src/stores/PostgresStore.js"
import { postgresForTests, postgresSuiteName } from "../support/pgTest.js"
import { freshSchema } from "../support/postgres.js"
import { noteRecord } from "../support/records.js"
import { subjects, tempDir } from "./subjects.js"

const pg = await postgresForTests()
const tmp = tempDir()
afterAll(() => tmp.cleanup())

const T0 = Date.now()

const record = (id: string, session = "s1"): PendingRecord => noteRecord(id, { at: T0, session })

const reviewer = { name: "ann", permission: "decide" as const, sessions: Option.none() }

/** Waits for the first signal of `changed`, subscribed before `write` runs. */
const signalledBy = <E>(changed: Stream.Stream<void, unknown>, write: Effect.Effect<void, E>) =>
  Effect.scoped(Effect.gen(function*() {
    const first = yield* Effect.fork(Stream.runHead(changed))
    yield* Effect.sleep("200 millis") // the subscription (a LISTEN on Postgres) is in place
    yield* write
    const got = yield* Fiber.join(first)
    assert.isTrue(Option.isSome(got))
  }))

for (const subject of subjects(tmp.dir, pg)) {
  if (subject.name === "postgres") continue
  describe(`PendingStore.changed: ${subject.name}`, () => {
    it.live("an inbox polling once an hour still hears of a change at once", () =>
      Effect.gen(function*() {
        const store = yield* PendingStore
        const inbox = yield* Inbox
        const events = yield* inbox.subscribe(reviewer)
        const first = yield* Effect.fork(Stream.runHead(events))
        yield* Effect.sleep("100 millis")
        yield* store.insert(record("b"))
        const got = yield* Fiber.join(first)
        assert.deepStrictEqual(
          Option.map(got, (event) => event.actions.map((item) => item.id)),
          Option.some(["b"])
        )
      }).pipe(
        Effect.scoped,
        Effect.provide(Layer.provideMerge(Inbox.layer({ pollInterval: "1 hour" }), subject.layer()) as any)
      ) as Effect.Effect<void, unknown>, 20_000)
  })
}

describe.skipIf(pg._tag !== "Available")(postgresSuiteName("PendingStore.changed: postgres", pg), () => {
  it.live("a write through another pool (another process) is signalled by NOTIFY", () =>
    Effect.gen(function*() {
      if (pg._tag !== "Available") return
      const url = yield* freshSchema(pg.url)
      const writer = yield* Layer.build(PostgresStore.layer({ url }))
      const listener = yield* Layer.build(PostgresStore.layer({ url }))
      const a = writer.unsafeMap.get(PendingStore.key) as PendingStore.Service
      const b = listener.unsafeMap.get(PendingStore.key) as PendingStore.Service
      yield* signalledBy(b.changed, a.insert(record("p1")))

      // The inbox on the listener's pool, polling once an hour, hears of the writer's change.
      const inboxContext = yield* Layer.build(
        Inbox.layer({ pollInterval: "1 hour" }).pipe(Layer.provide(Layer.succeed(PendingStore, b)))
      )
      const inbox = inboxContext.unsafeMap.get(Inbox.key) as Inbox.Service
      const events = yield* inbox.subscribe(reviewer)
      const first = yield* Effect.fork(Stream.runCollect(Stream.take(events, 1)))
      yield* Effect.sleep("200 millis")
      yield* a.insert(record("p2"))
      const got = Chunk.toReadonlyArray(yield* Fiber.join(first))
      assert.deepStrictEqual(got.flatMap((event) => event.actions.map((item) => item.id)), ["p2"])
    }).pipe(Effect.scoped) as Effect.Effect<void, unknown>, 30_000)

  it.live(
    "subscribers of one store share its LISTEN: one that leaves does not deafen the others",
    () =>
      Effect.gen(function*() {
        if (pg._tag !== "Available") return
        const url = yield* freshSchema(pg.url)
        const writer = (yield* Layer.build(PostgresStore.layer({ url }))).unsafeMap.get(
          PendingStore.key
        ) as PendingStore.Service
        const store = (yield* Layer.build(PostgresStore.layer({ url }))).unsafeMap.get(
          PendingStore.key
        ) as PendingStore.Service
        // Two sessions of one process wait for a reviewer; the first is decided and stops listening.
        const staying = yield* Effect.fork(Stream.runCollect(Stream.take(store.changed, 2)))
        yield* signalledBy(store.changed, writer.insert(record("q1")))
        yield* Effect.sleep("200 millis") // the first subscriber's scope closed: an UNLISTEN of the shared connection, before
        yield* writer.insert(record("q2"))
        // The one still listening hears both writes (a signal per commit; it waits forever if it went deaf).
        assert.strictEqual(Chunk.size(yield* Fiber.join(staying)), 2)
        // The last subscriber gone, a new one listens again.
        yield* signalledBy(store.changed, writer.insert(record("q3")))
      }).pipe(Effect.scoped) as Effect.Effect<void, unknown>,
    30_000
  )
})
