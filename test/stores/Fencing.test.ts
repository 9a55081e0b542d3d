/**
 * Fencing, on every store (memory, SQLite, Postgres): `acquire` hands each new owner of a session a larger epoch, and
 * a store fenced with an older epoch refuses every write for the session with `reason: "fenced"`, changing nothing.
 * Each test tries a stale owner's write after a newer owner acquired. (`acquire` and `owner` themselves, and lease
 * renewals, are in the conformance suite: test/stores/conformance/records.ts.)
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import { afterAll } from "vitest"
import { isOwnershipLost, PendingStoreError } from "../../src/domain/Errors.js"
import type { PendingRecord } from "../../src/domain/PendingRecord.js"
import { PendingStore } from "../../src/services/PendingStore.js"
import { postgresForTests, postgresSuiteName } from "../support/pgTest.js"
import { subjects, tempDir } from "./subjects.js"

const pg = await postgresForTests()
const tmp = tempDir()
afterAll(() => tmp.cleanup())

const T0 = 1_700_000_000_000

const record = (id: string, overrides: Partial<PendingRecord> = {}): PendingRecord => ({
  id,
  session: "s1",
  kind: "edit",
  label: `Edit ${id}`,
  sourceToolName: "edit",
  stager: "old",
  preview: "--- a/x\n+++ b/x",
  payload: { n: 1 },
  status: "pending",
  attempts: 0,
  owner: null,
  leaseUntil: null,
  createdAt: T0,
  updatedAt: T0,
  expiresAt: null,
  outcome: null,
  ...overrides
})

/** The error of `effect`, which must be a fencing refusal of `reason`. */
const refused = <A>(effect: Effect.Effect<A, PendingStoreError>, reason: "fenced" | "leaseLapsed" = "fenced") =>
  Effect.map(Effect.flip(effect), (error) => {
    assert.instanceOf(error, PendingStoreError)
    assert.strictEqual(error.reason, reason, error.message)
    assert.isTrue(isOwnershipLost(error))
    return error
  })

for (const subject of subjects(tmp.dir, pg)) {
  const name = subject.name === "postgres" ? postgresSuiteName("postgres", pg) : subject.name
  describe.skipIf(subject.skipReason !== undefined)(`PendingStore fencing: ${name}`, () => {
    const test = (title: string, body: (store: PendingStore.Service) => Effect.Effect<void, unknown>) =>
      it.live(title, () => Effect.flatMap(PendingStore, body).pipe(Effect.provide(subject.layer())))

    test("the current owner writes; a stale owner's every write is refused and changes nothing", (store) =>
      Effect.gen(function*() {
        const e1 = yield* store.acquire({ session: "s1", owner: "old", now: T0 })
        const old = store.fenced({ session: "s1", epoch: e1 })
        yield* old.heartbeat({ instance: "old", leaseUntil: T0 + 60_000, now: T0 })
        yield* old.insert(record("a"))
        yield* old.insert(record("b"))
        assert.isTrue(Option.isSome(yield* old.claim({ id: "b", owner: "old", leaseUntil: T0 + 60_000, now: T0 })))
        yield* old.saveConversation("s1", { state: "v1", from: 0, messages: ["m1"], previous: Option.none() })
        yield* old.logSession({ session: "s1", owner: "old", event: "open", at: T0 })

        const e2 = yield* store.acquire({ session: "s1", owner: "new", now: T0 + 1 })
        assert.isAbove(e2, e1)
        const now = T0 + 2
        yield* refused(old.insert(record("c")))
        yield* refused(old.claim({ id: "a", owner: "old", leaseUntil: now + 60_000, now }))
        yield* refused(old.settle({ id: "b", owner: "old", to: "applied", outcome: Option.some("x"), now }))
        yield* refused(old.transition({ id: "a", from: ["pending"], to: "discarded", now }))
        yield* refused(old.saveSession("s1", "stale"))
        yield* refused(
          old.saveConversation("s1", { state: "stale", from: 0, messages: [], previous: Option.none() })
        )
        yield* refused(old.logSession({ session: "s1", owner: "old", event: "save", at: now }))
        yield* refused(old.heartbeat({ instance: "old", leaseUntil: now + 60_000, now, renew: true }))
        yield* refused(old.heartbeat({ instance: "old2", leaseUntil: now + 60_000, now }))

        // Nothing changed.
        assert.isTrue(Option.isNone(yield* store.get("c")))
        assert.strictEqual((yield* store.get("a")).pipe(Option.getOrThrow).status, "pending")
        const b = (yield* store.get("b")).pipe(Option.getOrThrow)
        assert.strictEqual(b.status, "resolving")
        assert.strictEqual(b.owner, "old")
        assert.deepStrictEqual(yield* store.loadConversation("s1"), Option.some({ state: "v1", messages: ["m1"] }))
        assert.deepStrictEqual((yield* store.sessionLog("s1")).map((e) => e.event), ["open"])
        assert.isFalse((yield* store.leases(["old2"])).has("old2"))

        // The new owner writes as usual, through its own fence, and recovers the old claim.
        const current = store.fenced({ session: "s1", epoch: e2 })
        yield* current.insert(record("c", { stager: "new" }))
        assert.isTrue(yield* current.transition({ id: "b", from: ["resolving"], to: "pending", now }))
        yield* current.saveConversation("s1", { state: "v2", from: 1, messages: ["m2"], previous: Option.none() })
        assert.deepStrictEqual(
          yield* store.loadConversation("s1"),
          Option.some({ state: "v2", messages: ["m1", "m2"] })
        )
        // A lost race is still a lost race, not a refusal.
        assert.isTrue(Option.isNone(yield* current.claim({ id: "zzz", owner: "new", leaseUntil: now + 1, now })))
        assert.isFalse(yield* current.settle({ id: "a", owner: "new", to: "applied", outcome: Option.none(), now }))
      }))

    test("a stale owner's settleDeciding is refused: the action stays claimed, the decision requested", (store) =>
      Effect.gen(function*() {
        const e1 = yield* store.acquire({ session: "s1", owner: "old", now: T0 })
        const old = store.fenced({ session: "s1", epoch: e1 })
        yield* old.insert(record("a"))
        yield* store.recordDecision({
          id: "dc_fence_1",
          actionId: "a",
          reviewer: "ann",
          action: "apply",
          reason: "Go.",
          amendment: null,
          now: T0
        })
        assert.isTrue(Option.isSome(yield* old.claim({ id: "a", owner: "old", leaseUntil: T0 + 60_000, now: T0 })))
        yield* store.acquire({ session: "s1", owner: "new", now: T0 + 1 })
        yield* refused(
          old.settleDeciding(
            { id: "a", owner: "old", to: "applied", outcome: Option.some("x"), now: T0 + 2 },
            { id: "dc_fence_1", outcome: "x", by: "old" }
          )
        )
        assert.strictEqual(Option.getOrThrow(yield* store.get("a")).status, "resolving")
        assert.strictEqual(Option.getOrThrow(yield* store.getDecision("dc_fence_1")).state, "requested")
      }))

    test("a stale owner's recordDone is refused, with a settle or alone: the action stays claimed, nothing recorded", (store) =>
      Effect.gen(function*() {
        const e1 = yield* store.acquire({ session: "s1", owner: "old", now: T0 })
        const old = store.fenced({ session: "s1", epoch: e1 })
        yield* old.insert(record("a"))
        assert.isTrue(Option.isSome(yield* old.claim({ id: "a", owner: "old", leaseUntil: T0 + 60_000, now: T0 })))
        yield* store.acquire({ session: "s1", owner: "new", now: T0 + 1 })
        const done = {
          id: "dc_fence_2",
          actionId: "a",
          reviewer: "ann",
          action: "apply" as const,
          reason: "Go.",
          amendment: null,
          requestedAt: T0,
          outcome: "x",
          by: "old",
          now: T0 + 2
        }
        yield* refused(
          old.recordDone(done, { id: "a", owner: "old", to: "applied", outcome: Option.some("x"), now: T0 + 2 })
        )
        yield* refused(old.recordDone(done))
        assert.strictEqual(Option.getOrThrow(yield* store.get("a")).status, "resolving")
        assert.deepStrictEqual(yield* store.decisions("a"), [])
      }))

    test("a stale owner cannot mark a reviewer's response delivered; the latest owner can, once", (store) =>
      Effect.gen(function*() {
        yield* store.insert(record("a"))
        const recorded = yield* store.recordResponse({
          id: "rs_fence_1",
          actionId: "a",
          reviewer: "ann",
          message: "Smaller, please.",
          now: T0
        })
        assert.strictEqual(recorded._tag, "Recorded")
        const e1 = yield* store.acquire({ session: "s1", owner: "old", now: T0 })
        const e2 = yield* store.acquire({ session: "s1", owner: "new", now: T0 + 1 })
        yield* refused(store.fenced({ session: "s1", epoch: e1 }).markDelivered({ ids: ["rs_fence_1"], now: T0 + 2 }))
        assert.strictEqual((yield* store.undeliveredResponses({ session: "s1", limit: 10 })).length, 1)
        const current = store.fenced({ session: "s1", epoch: e2 })
        assert.strictEqual(yield* current.markDelivered({ ids: ["rs_fence_1"], now: T0 + 3 }), 1)
        assert.strictEqual(yield* current.markDelivered({ ids: ["rs_fence_1"], now: T0 + 4 }), 0)
        assert.strictEqual((yield* store.undeliveredResponses({ session: "s1", limit: 10 })).length, 0)
      }))

    test("a fence on a session nobody acquired refuses; other sessions' writes are not fenced", (store) =>
      Effect.gen(function*() {
        yield* refused(store.fenced({ session: "nobody", epoch: 1 }).insert(record("x", { session: "nobody" })))
        yield* store.acquire({ session: "s1", owner: "a", now: T0 })
        yield* store.insert(record("free", { session: "s2" }))
        assert.isTrue(Option.isSome(yield* store.get("free")))
      }))

    test("a stale owner racing a new owner: every write lands before the acquire or is refused", (store) =>
      Effect.gen(function*() {
        const e1 = yield* store.acquire({ session: "s1", owner: "old", now: T0 })
        const old = store.fenced({ session: "s1", epoch: e1 })
        const results = yield* Effect.all(
          [
            ...Array.from({ length: 20 }, (_, i) => Effect.either(Effect.map(old.insert(record(`r${i}`)), () => i))),
            Effect.flatMap(
              Effect.sleep("2 millis"),
              () => Effect.either(Effect.map(store.acquire({ session: "s1", owner: "new", now: T0 + 1 }), () => -1))
            )
          ],
          { concurrency: "unbounded" }
        )
        // After the acquire, nothing more lands: every later write is refused.
        yield* refused(old.insert(record("late")))
        for (const [i, result] of results.entries()) {
          if (i === 20) continue
          const stored = Option.isSome(yield* store.get(`r${i}`))
          assert.strictEqual(stored, result._tag === "Right", `r${i}`)
          if (result._tag === "Left") assert.strictEqual((result.left as PendingStoreError).reason, "fenced")
        }
      }))
  })
}
