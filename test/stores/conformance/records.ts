/**
 * The conformance tests of the parts about records and sessions: `ActionRecords` (records, claims, the journal,
 * pruning), `InstanceLeases`, `Conversations` (a session's state and messages) and `SessionOwners` (owner epochs and
 * the owner log). Each test gets a fresh, empty store, through the part tags (see `../conformance.ts`).
 */
import { assert, describe } from "@effect/vitest"
import { Effect, Option } from "effect"
import { deepStrictEqual, strictEqual } from "node:assert/strict"
import { isOwnershipLost } from "../../../src/domain/Errors.js"
import type { PendingEvent, PendingRecord } from "../../../src/domain/PendingRecord.js"
import type { ActionRecords } from "../../../src/services/ActionRecords.js"
import { PendingStoreError } from "../../../src/services/PendingStore.js"
import type { SessionOwners } from "../../../src/services/SessionOwners.js"
import type { PartTest } from "../conformance.js"
import { pendingRecord, storeError } from "./fixtures.js"

const T0 = 1_700_000_000_123

const record = (id: string, overrides: Partial<PendingRecord> = {}): PendingRecord =>
  pendingRecord(id, T0, {
    label: `Edit: 1 replacement in ${id}`,
    preview: `--- a/${id}\n+++ b/${id}\n-old ✓\n+new “quoted” 'single'`,
    payload: { paths: [`${id}.ts`], before: "e3b0c442", writes: [{ path: "x", text: "a\nb" }], n: 1.5, ok: null },
    ...overrides
  })

const some = <A>(option: Option.Option<A>): A => {
  if (Option.isNone(option)) throw new Error("expected Some, got None")
  return option.value
}

/** The error of `effect`, which must be a refusal of `reason` (a lapsed lease). */
const refused = <A>(effect: Effect.Effect<A, PendingStoreError>, reason: "fenced" | "leaseLapsed") =>
  Effect.map(Effect.flip(effect), (error) => {
    assert.instanceOf(error, PendingStoreError)
    assert.strictEqual(error.reason, reason, error.message)
    assert.isTrue(isOwnershipLost(error))
    return error
  })

/** The tests of `ActionRecords`, `InstanceLeases`, `Conversations` and `SessionOwners`. */
export const recordsConformance = (test: PartTest): void => {
  describe("ActionRecords", () => {
    test("insert then get returns the record exactly; an unknown id is none", (store) =>
      Effect.gen(function*() {
        const r = record("a", { expiresAt: Number.MAX_SAFE_INTEGER, outcome: "earlier" })
        yield* store.insert(r)
        deepStrictEqual(some(yield* store.get("a")), r)
        strictEqual(Option.isNone(yield* store.get("b")), true)
        const closure = record("c", { kind: "closure", payload: null, createdAt: 0, updatedAt: 0 })
        yield* store.insert(closure)
        deepStrictEqual(some(yield* store.get("c")), closure)
      }))

    test("a payload comes back as its JSON: undefined fields dropped, dates as strings", (store) =>
      Effect.gen(function*() {
        const at = new Date(T0)
        yield* store.insert(record("a", { payload: { at, gone: undefined, list: [1, undefined] } }))
        deepStrictEqual(some(yield* store.get("a")).payload, { at: at.toISOString(), list: [1, null] })
      }))

    test("the store keeps its own copy: changing the inserted payload or a read record changes nothing", (store) =>
      Effect.gen(function*() {
        const payload = { paths: ["a.ts"], nested: { n: 1 } }
        yield* store.insert(record("a", { payload }))
        payload.paths.push("b.ts")
        payload.nested.n = 2
        const read = some(yield* store.get("a"))
        deepStrictEqual(read.payload, { paths: ["a.ts"], nested: { n: 1 } })
        const mutable = read as unknown as { label: string; payload: { nested: { n: number } } }
        try {
          mutable.label = "changed"
          mutable.payload.nested.n = 3
        } catch {
          // Frozen (the memory store): the write is refused.
        }
        deepStrictEqual(some(yield* store.get("a")), record("a", { payload: { paths: ["a.ts"], nested: { n: 1 } } }))
      }))

    test("list: one session's records, most recent first, equal times in reverse insertion order", (store) =>
      Effect.gen(function*() {
        yield* store.insert(record("old", { createdAt: T0 - 10 }))
        yield* store.insert(record("x1"))
        yield* store.insert(record("other", { session: "s2", createdAt: T0 + 50 }))
        yield* store.insert(record("x2"))
        yield* store.insert(record("new", { createdAt: T0 + 10 }))
        yield* store.insert(record("x3"))
        const claimed = yield* store.claim({ id: "x2", owner: "o", leaseUntil: T0 + 100, now: T0 + 1 })
        strictEqual(Option.isSome(claimed), true)
        deepStrictEqual((yield* store.list("s1")).map((r) => r.id), ["new", "x3", "x2", "x1", "old"])
        deepStrictEqual((yield* store.list("s2")).map((r) => r.id), ["other"])
        deepStrictEqual(yield* store.list("nobody"), [])
      }))

    test("listOpen: the records not yet settled, in list's order", (store) =>
      Effect.gen(function*() {
        for (const id of ["a", "b", "c", "d", "e", "f"]) yield* store.insert(record(id))
        yield* store.insert(record("other", { session: "s2" }))
        yield* store.claim({ id: "b", owner: "o", leaseUntil: T0 + 100, now: T0 + 1 })
        yield* store.claim({ id: "c", owner: "o", leaseUntil: T0 + 100, now: T0 + 1 })
        yield* store.settle({ id: "c", owner: "o", to: "applied", outcome: Option.none(), now: T0 + 2 })
        yield* store.transition({ id: "d", from: ["pending"], to: "orphaned", now: T0 + 2 })
        yield* store.transition({ id: "e", from: ["pending"], to: "cleared", now: T0 + 2 })
        yield* store.transition({ id: "f", from: ["pending"], to: "expired", now: T0 + 2 })
        deepStrictEqual((yield* store.listOpen("s1")).map((r) => [r.id, r.status]), [
          ["d", "orphaned"],
          ["b", "resolving"],
          ["a", "pending"]
        ])
        deepStrictEqual((yield* store.listOpen("s2")).map((r) => r.id), ["other"])
        deepStrictEqual(yield* store.listOpen("nobody"), [])
      }))

    test("claim: pending → resolving with attempts + 1, owner and lease; a second claim gets none", (store) =>
      Effect.gen(function*() {
        yield* store.insert(record("a"))
        const claimed = some(yield* store.claim({ id: "a", owner: "host:1:x", leaseUntil: T0 + 30_000, now: T0 + 5 }))
        deepStrictEqual(claimed, {
          ...record("a"),
          status: "resolving",
          attempts: 1,
          owner: "host:1:x",
          leaseUntil: T0 + 30_000,
          updatedAt: T0 + 5
        })
        deepStrictEqual(some(yield* store.get("a")), claimed)
        strictEqual(
          Option.isNone(yield* store.claim({ id: "a", owner: "other", leaseUntil: T0 + 9, now: T0 + 6 })),
          true
        )
        strictEqual(
          Option.isNone(yield* store.claim({ id: "zz", owner: "other", leaseUntil: T0 + 9, now: T0 + 6 })),
          true
        )
        deepStrictEqual(some(yield* store.get("a")), claimed)
      }))

    test("claim is exactly-once: 40 fibers claim one id at once, exactly one wins", (store) =>
      Effect.gen(function*() {
        yield* store.insert(record("a"))
        const results = yield* Effect.forEach(
          Array.from({ length: 40 }, (_, i) => `owner-${i}`),
          (owner) => store.claim({ id: "a", owner, leaseUntil: T0 + 1000, now: T0 + 1 }),
          { concurrency: "unbounded" }
        )
        const winners = results.filter(Option.isSome).map((o) => o.value.owner)
        strictEqual(winners.length, 1)
        const stored = some(yield* store.get("a"))
        strictEqual(stored.owner, winners[0])
        strictEqual(stored.attempts, 1)
        strictEqual((yield* store.history("a")).length, 2)
      }))

    test("claims of many ids by many fibers: each id is won exactly once", (store) =>
      Effect.gen(function*() {
        const ids = Array.from({ length: 15 }, (_, i) => `id-${i}`)
        yield* Effect.forEach(ids, (id) => store.insert(record(id)), { discard: true })
        const attempts = ids.flatMap((id) => [0, 1, 2, 3].map((k) => ({ id, owner: `o${k}` })))
        const results = yield* Effect.forEach(
          attempts,
          ({ id, owner }) => store.claim({ id, owner, leaseUntil: T0 + 1000, now: T0 + 1 }),
          { concurrency: 12 }
        )
        const won = results.filter(Option.isSome).map((o) => o.value.id).sort()
        deepStrictEqual(won, [...ids].sort())
      }))

    test("expiry blocks a claim from expiresAt on; before it the claim succeeds", (store) =>
      Effect.gen(function*() {
        yield* store.insert(record("a", { expiresAt: T0 + 100 }))
        yield* store.insert(record("b", { expiresAt: T0 + 100 }))
        strictEqual(
          Option.isNone(yield* store.claim({ id: "a", owner: "o", leaseUntil: T0 + 500, now: T0 + 100 })),
          true
        )
        deepStrictEqual(some(yield* store.get("a")), record("a", { expiresAt: T0 + 100 }))
        strictEqual(
          Option.isSome(yield* store.claim({ id: "b", owner: "o", leaseUntil: T0 + 500, now: T0 + 99 })),
          true
        )
        strictEqual(yield* store.transition({ id: "a", from: ["pending"], to: "expired", now: T0 + 101 }), true)
        strictEqual(some(yield* store.get("a")).status, "expired")
      }))

    test("settle: only the owner, only while resolving; clears owner and lease, sets the outcome", (store) =>
      Effect.gen(function*() {
        yield* store.insert(record("a"))
        strictEqual(
          yield* store.settle({ id: "a", owner: "o", to: "applied", outcome: Option.none(), now: T0 + 1 }),
          false
        )
        yield* store.claim({ id: "a", owner: "o", leaseUntil: T0 + 50, now: T0 + 2 })
        const claimed = some(yield* store.get("a"))
        strictEqual(
          yield* store.settle({ id: "a", owner: "intruder", to: "applied", outcome: Option.none(), now: T0 + 3 }),
          false
        )
        deepStrictEqual(some(yield* store.get("a")), claimed)
        // The owner may settle after its lease passed, as long as nobody recovered the record.
        strictEqual(
          yield* store.settle({
            id: "a",
            owner: "o",
            to: "applied",
            outcome: Option.some("Applied 1 edit."),
            now: T0 + 90
          }),
          true
        )
        deepStrictEqual(some(yield* store.get("a")), {
          ...claimed,
          status: "applied",
          owner: null,
          leaseUntil: null,
          updatedAt: T0 + 90,
          outcome: "Applied 1 edit."
        })
        strictEqual(
          yield* store.settle({ id: "a", owner: "o", to: "discarded", outcome: Option.none(), now: T0 + 91 }),
          false
        )
      }))

    test("settle back to pending: the record can be claimed again, attempts counts both claims", (store) =>
      Effect.gen(function*() {
        yield* store.insert(record("a", { outcome: "x" }))
        yield* store.claim({ id: "a", owner: "o1", leaseUntil: T0 + 50, now: T0 + 1 })
        strictEqual(
          yield* store.settle({
            id: "a",
            owner: "o1",
            to: "pending",
            outcome: Option.some("Apply failed: disk full"),
            now: T0 + 2
          }),
          true
        )
        const again = some(yield* store.claim({ id: "a", owner: "o2", leaseUntil: T0 + 60, now: T0 + 3 }))
        strictEqual(again.attempts, 2)
        strictEqual(again.outcome, "Apply failed: disk full")
        strictEqual(
          yield* store.settle({ id: "a", owner: "o2", to: "conflict", outcome: Option.none(), now: T0 + 4 }),
          true
        )
        deepStrictEqual(some(yield* store.get("a")).outcome, null)
      }))

    test("transition: only from the given statuses, and with an owner guard only while that owner holds it", (store) =>
      Effect.gen(function*() {
        yield* store.insert(record("a"))
        strictEqual(yield* store.transition({ id: "a", from: ["orphaned"], to: "cleared", now: T0 + 1 }), false)
        strictEqual(yield* store.transition({ id: "zz", from: ["pending"], to: "cleared", now: T0 + 1 }), false)
        yield* store.claim({ id: "a", owner: "dead", leaseUntil: T0 + 10, now: T0 + 1 })
        const claimed = some(yield* store.get("a"))
        strictEqual(
          yield* store.transition({
            id: "a",
            from: ["resolving"],
            to: "pending",
            owner: Option.some("x"),
            now: T0 + 20
          }),
          false
        )
        strictEqual(
          yield* store.transition({ id: "a", from: ["resolving"], to: "pending", owner: Option.none(), now: T0 + 20 }),
          false
        )
        deepStrictEqual(some(yield* store.get("a")), claimed)
        strictEqual(
          yield* store.transition({
            id: "a",
            from: ["pending", "resolving"],
            to: "conflict",
            owner: Option.some("dead"),
            now: T0 + 21
          }),
          true
        )
        deepStrictEqual(some(yield* store.get("a")), {
          ...claimed,
          status: "conflict",
          owner: null,
          leaseUntil: null,
          updatedAt: T0 + 21
        })
        strictEqual(
          yield* store.transition({ id: "a", from: ["conflict"], to: "discarded", owner: Option.none(), now: T0 + 22 }),
          true
        )
        strictEqual(some(yield* store.get("a")).status, "discarded")
      }))

    test("bad transitions are refused with a typed error and change nothing", (store) =>
      Effect.gen(function*() {
        yield* store.insert(record("a"))
        const before = some(yield* store.get("a"))
        const errors = [
          yield* storeError(store.transition({ id: "a", from: ["pending"], to: "resolving", now: T0 + 1 })),
          yield* storeError(store.transition({ id: "a", from: ["applied"], to: "pending", now: T0 + 1 })),
          yield* storeError(store.transition({ id: "a", from: [], to: "cleared", now: T0 + 1 })),
          yield* storeError(store.transition({ id: "a", from: ["pending"], to: "pending", now: T0 + 1 })),
          yield* storeError(
            store.settle({ id: "a", owner: "o", to: "expired" as "applied", outcome: Option.none(), now: T0 })
          ),
          yield* storeError(store.claim({ id: "a", owner: "o", leaseUntil: T0, now: T0 })),
          yield* storeError(store.claim({ id: "a", owner: "", leaseUntil: T0 + 5, now: T0 })),
          yield* storeError(store.claim({ id: "a", owner: "o", leaseUntil: T0 + 5.5, now: T0 }))
        ]
        deepStrictEqual(errors.map((e) => e.operation), [
          "transition",
          "transition",
          "transition",
          "transition",
          "settle",
          "claim",
          "claim",
          "claim"
        ])
        strictEqual(errors[0]!.message.includes("call claim instead"), true)
        strictEqual(errors.every((e) => e.message.endsWith("nothing was changed.")), true)
        deepStrictEqual(some(yield* store.get("a")), before)
        strictEqual((yield* store.history("a")).length, 1)
      }))

    test("stale: resolving records whose lease passed (leaseUntil <= now), every session, oldest lease first", (store) =>
      Effect.gen(function*() {
        yield* store.insert(record("a"))
        yield* store.insert(record("b", { session: "s2" }))
        yield* store.insert(record("c"))
        yield* store.insert(record("d"))
        yield* store.claim({ id: "a", owner: "o", leaseUntil: T0 + 200, now: T0 })
        yield* store.claim({ id: "b", owner: "o", leaseUntil: T0 + 100, now: T0 })
        yield* store.claim({ id: "c", owner: "o", leaseUntil: T0 + 300, now: T0 })
        yield* store.claim({ id: "d", owner: "o", leaseUntil: T0 + 50, now: T0 })
        yield* store.settle({ id: "d", owner: "o", to: "applied", outcome: Option.none(), now: T0 + 1 })
        deepStrictEqual((yield* store.stale(T0 + 99)).map((r) => r.id), [])
        deepStrictEqual((yield* store.stale(T0 + 100)).map((r) => r.id), ["b"])
        const stale = yield* store.stale(T0 + 250)
        deepStrictEqual(stale.map((r) => r.id), ["b", "a"])
        deepStrictEqual(stale[1], some(yield* store.get("a")))
      }))

    test("history: one event per transition, oldest first, with who held the claim", (store) =>
      Effect.gen(function*() {
        yield* store.insert(record("a"))
        yield* store.claim({ id: "a", owner: "o1", leaseUntil: T0 + 10, now: T0 + 1 })
        yield* store.settle({ id: "a", owner: "o1", to: "pending", outcome: Option.none(), now: T0 + 2 })
        yield* store.claim({ id: "a", owner: "o2", leaseUntil: T0 + 10, now: T0 + 3 })
        yield* store.transition({ id: "a", from: ["resolving"], to: "conflict", now: T0 + 4 })
        yield* store.transition({ id: "a", from: ["conflict"], to: "discarded", now: T0 + 5 })
        strictEqual(yield* store.transition({ id: "a", from: ["pending"], to: "cleared", now: T0 + 6 }), false)
        const events: ReadonlyArray<PendingEvent> = [
          { actionId: "a", at: T0, from: null, to: "pending", owner: null, attempt: 0 },
          { actionId: "a", at: T0 + 1, from: "pending", to: "resolving", owner: "o1", attempt: 1 },
          { actionId: "a", at: T0 + 2, from: "resolving", to: "pending", owner: "o1", attempt: 1 },
          { actionId: "a", at: T0 + 3, from: "pending", to: "resolving", owner: "o2", attempt: 2 },
          { actionId: "a", at: T0 + 4, from: "resolving", to: "conflict", owner: "o2", attempt: 2 },
          { actionId: "a", at: T0 + 5, from: "conflict", to: "discarded", owner: null, attempt: 2 }
        ]
        deepStrictEqual(yield* store.history("a"), events)
        deepStrictEqual(yield* store.history("unknown"), [])
      }))

    test("a duplicate insert fails typed and changes nothing", (store) =>
      Effect.gen(function*() {
        yield* store.insert(record("a"))
        const error = yield* storeError(store.insert(record("a", { label: "other", createdAt: T0 + 5 })))
        strictEqual(error.operation, "insert")
        strictEqual(error.message.includes(`"a" already exists`), true)
        deepStrictEqual(some(yield* store.get("a")), record("a"))
        strictEqual((yield* store.history("a")).length, 1)
        deepStrictEqual((yield* store.list("s1")).map((r) => r.id), ["a"])
      }))

    test("the stager round-trips, and a transition with a stager makes it the record's", (store) =>
      Effect.gen(function*() {
        yield* store.insert(record("a", { stager: "box:12:0:abc" }))
        strictEqual(some(yield* store.get("a")).stager, "box:12:0:abc")
        yield* store.transition({ id: "a", from: ["pending"], to: "orphaned", now: T0 + 1 })
        strictEqual(some(yield* store.get("a")).stager, "box:12:0:abc")
        strictEqual(
          yield* store.transition({ id: "a", from: ["orphaned"], to: "pending", stager: "box:13:0:def", now: T0 + 2 }),
          true
        )
        deepStrictEqual(
          [some(yield* store.get("a")).status, some(yield* store.get("a")).stager],
          ["pending", "box:13:0:def"]
        )
        strictEqual(
          (yield* storeError(store.transition({ id: "a", from: ["pending"], to: "unreadable", now: T0 + 3 })))
            .message.includes("never written"),
          true
        )
        strictEqual((yield* storeError(store.insert(record("b", { stager: "" })))).operation, "insert")
      }))

    test("listPage: pages cover list exactly, in its order; a cursor survives inserts and pruning", (store) =>
      Effect.gen(function*() {
        // 23 records, some with equal times, in two sessions.
        for (let i = 0; i < 23; i++) {
          yield* store.insert(record(`r${i}`, { createdAt: T0 + Math.floor(i / 3), updatedAt: T0 + i }))
        }
        yield* store.insert(record("other", { session: "s2" }))
        const all = (yield* store.list("s1")).map((r) => r.id)
        for (const limit of [1, 4, 5, 23, 1000]) {
          const seen: Array<string> = []
          let cursor: string | undefined
          for (let pages = 0; pages < 30; pages++) {
            const page: ActionRecords.Page<PendingRecord> = yield* store.listPage("s1", { limit, cursor })
            strictEqual(page.items.length <= limit, true)
            seen.push(...page.items.map((r) => r.id))
            if (Option.isNone(page.next)) break
            cursor = page.next.value
          }
          deepStrictEqual(seen, all)
        }
        // A cursor taken before newer records arrive and older settled ones are pruned still continues.
        const first = yield* store.listPage("s1", { limit: 10 })
        yield* store.insert(record("newer", { createdAt: T0 + 100 }))
        yield* store.claim({ id: "r0", owner: "o", leaseUntil: T0 + 50, now: T0 + 30 })
        yield* store.settle({ id: "r0", owner: "o", to: "applied", outcome: Option.none(), now: T0 + 31 })
        strictEqual(
          yield* store.prune({ session: "s1", keepLast: Option.some(0), settledBefore: Option.none(), batch: 10 }),
          1
        )
        const rest = yield* store.listPage("s1", { limit: 1000, cursor: Option.getOrThrow(first.next) })
        deepStrictEqual(rest.items.map((r) => r.id), all.slice(10).filter((id) => id !== "r0"))
        strictEqual(Option.isNone(rest.next), true)
        deepStrictEqual(yield* store.listPage("nobody", { limit: 5 }), { items: [], next: Option.none() })
      }))

    test("listPage and historyPage refuse a bad limit or cursor with a typed error", (store) =>
      Effect.gen(function*() {
        yield* store.insert(record("a"))
        const errors = [
          yield* storeError(store.listPage("s1", { limit: 0 })),
          yield* storeError(store.listPage("s1", { limit: 1001 })),
          yield* storeError(store.listPage("s1", { limit: 2.5 })),
          yield* storeError(store.listPage("s1", { limit: 5, cursor: "not a cursor" })),
          yield* storeError(store.listPage("s1", { limit: 5, cursor: "WzEsMl0x" })),
          yield* storeError(store.historyPage("a", { limit: 5, cursor: "r1.2" })),
          yield* storeError(store.historyPage("a", { limit: -1 }))
        ]
        strictEqual(errors.every((e) => e.message.endsWith("nothing was changed.")), true)
        strictEqual(errors[3]!.message.includes("start again without a cursor"), true)
      }))

    test("historyPage: pages cover history exactly, oldest first", (store) =>
      Effect.gen(function*() {
        yield* store.insert(record("a"))
        for (let i = 0; i < 6; i++) {
          yield* store.claim({ id: "a", owner: "o", leaseUntil: T0 + 100 + i, now: T0 + 2 * i + 1 })
          yield* store.settle({ id: "a", owner: "o", to: "pending", outcome: Option.none(), now: T0 + 2 * i + 2 })
        }
        const all = yield* store.history("a")
        strictEqual(all.length, 13)
        for (const limit of [1, 3, 13, 50]) {
          const seen: Array<PendingEvent> = []
          let cursor: string | undefined
          for (let pages = 0; pages < 20; pages++) {
            const page: ActionRecords.Page<PendingEvent> = yield* store.historyPage("a", { limit, cursor })
            seen.push(...page.items)
            if (Option.isNone(page.next)) break
            cursor = page.next.value
          }
          deepStrictEqual(seen, all)
        }
        deepStrictEqual(yield* store.historyPage("unknown", { limit: 3 }), { items: [], next: Option.none() })
      }))

    test("prune: settled records beyond keepLast or settled before a time go, oldest first, journals too", (store) =>
      Effect.gen(function*() {
        // s1: 6 settled (settling at T0+10..T0+15), 1 pending, 1 resolving, 1 orphaned, 1 conflict; s2: 1 settled.
        const ends = ["applied", "discarded", "applied", "discarded", "applied", "applied"] as const
        for (let i = 0; i < 6; i++) {
          yield* store.insert(record(`d${i}`))
          yield* store.claim({ id: `d${i}`, owner: "o", leaseUntil: T0 + 100, now: T0 + 1 })
          yield* store.settle({ id: `d${i}`, owner: "o", to: ends[i]!, outcome: Option.none(), now: T0 + 10 + i })
        }
        yield* store.insert(record("p"))
        yield* store.insert(record("r"))
        yield* store.claim({ id: "r", owner: "o", leaseUntil: T0 + 100, now: T0 + 1 })
        yield* store.insert(record("o"))
        yield* store.transition({ id: "o", from: ["pending"], to: "orphaned", now: T0 + 1 })
        yield* store.insert(record("c"))
        yield* store.transition({ id: "c", from: ["pending"], to: "conflict", now: T0 + 1 })
        yield* store.insert(record("x", { session: "s2" }))
        yield* store.transition({ id: "x", from: ["pending"], to: "cleared", now: T0 + 1 })
        const ids = Effect.map(store.list("s1"), (all) => all.map((r) => r.id).sort())
        const open = ["c", "o", "p", "r"]

        strictEqual(
          yield* store.prune({ session: "s1", keepLast: Option.none(), settledBefore: Option.none(), batch: 5 }),
          0
        )
        // Keep the 4 most recently settled: d0 and d1 go, in a batch of 1 each.
        strictEqual(
          yield* store.prune({ session: "s1", keepLast: Option.some(4), settledBefore: Option.none(), batch: 1 }),
          1
        )
        deepStrictEqual(yield* ids, [...open, "d1", "d2", "d3", "d4", "d5"].sort())
        strictEqual(
          yield* store.prune({ session: "s1", keepLast: Option.some(4), settledBefore: Option.none(), batch: 9 }),
          1
        )
        strictEqual(
          yield* store.prune({ session: "s1", keepLast: Option.some(4), settledBefore: Option.none(), batch: 9 }),
          0
        )
        deepStrictEqual(yield* store.history("d0"), [])
        deepStrictEqual(yield* store.history("d1"), [])
        strictEqual((yield* store.history("d2")).length, 3)
        // Settled before T0 + 14: d2, d3 go (d4 settled at T0 + 14 stays).
        strictEqual(
          yield* store.prune({
            session: "s1",
            keepLast: Option.some(100),
            settledBefore: Option.some(T0 + 14),
            batch: 9
          }),
          2
        )
        deepStrictEqual(yield* ids, [...open, "d4", "d5"].sort())
        // keepLast 0 removes every settled record, never an open one, never another session's.
        strictEqual(
          yield* store.prune({ session: "s1", keepLast: Option.some(0), settledBefore: Option.none(), batch: 9 }),
          2
        )
        deepStrictEqual(yield* ids, open)
        strictEqual((yield* store.list("s2")).length, 1)
        strictEqual(Option.isNone(yield* store.get("d5")), true)
        const bad = yield* storeError(
          store.prune({ session: "s1", keepLast: Option.some(-1), settledBefore: Option.none(), batch: 9 })
        )
        strictEqual(bad.operation, "prune")
        strictEqual(
          (yield* storeError(
            store.prune({ session: "s1", keepLast: Option.none(), settledBefore: Option.none(), batch: 0 })
          )).operation,
          "prune"
        )
      }))

    test("an invalid record is refused with a typed error and nothing is stored", (store) =>
      Effect.gen(function*() {
        const bad: ReadonlyArray<PendingRecord> = [
          record("a", { status: "resolving" }),
          record("a", { owner: "o" }),
          record("a", { createdAt: 1.5 }),
          record("a", { expiresAt: -1 }),
          record("a", { payload: undefined }),
          record("a", { payload: { n: BigInt(1) } }),
          record("", {})
        ]
        for (const r of bad) {
          const error = yield* storeError(store.insert(r))
          strictEqual(error.operation, "insert")
          strictEqual(error.message.endsWith("nothing was changed."), true)
        }
        strictEqual(Option.isNone(yield* store.get("a")), true)
        deepStrictEqual(yield* store.list("s1"), [])
        deepStrictEqual(yield* store.history("a"), [])
      }))
  })

  describe("InstanceLeases", () => {
    test("heartbeat records an instance's lease and renews its claims; leases, expiry and release", (store) =>
      Effect.gen(function*() {
        yield* store.insert(record("a"))
        yield* store.insert(record("b"))
        yield* store.insert(record("c"))
        yield* store.claim({ id: "a", owner: "i1", leaseUntil: T0 + 10, now: T0 })
        yield* store.claim({ id: "b", owner: "i2", leaseUntil: T0 + 10, now: T0 })
        const journal = (yield* store.history("a")).length
        yield* store.heartbeat({ instance: "i1", leaseUntil: T0 + 1_000, now: T0 + 5 })
        yield* store.heartbeat({ instance: "i2", leaseUntil: T0 + 20, now: T0 + 5 })
        deepStrictEqual(yield* store.leases(["i1", "i2", "i3"]), new Map([["i1", T0 + 1_000], ["i2", T0 + 20]]))
        // Only i1's claim is renewed; the pending record and the journal are untouched.
        strictEqual(some(yield* store.get("a")).leaseUntil, T0 + 1_000)
        strictEqual(some(yield* store.get("b")).leaseUntil, T0 + 20)
        strictEqual(some(yield* store.get("c")).leaseUntil, null)
        strictEqual((yield* store.history("a")).length, journal)
        deepStrictEqual((yield* store.stale(T0 + 500)).map((r) => r.id), ["b"])
        // A later heartbeat forgets instances whose lease passed.
        yield* store.heartbeat({ instance: "i1", leaseUntil: T0 + 2_000, now: T0 + 30 })
        deepStrictEqual(yield* store.leases(["i1", "i2"]), new Map([["i1", T0 + 2_000]]))
        yield* store.release("i1")
        deepStrictEqual(yield* store.leases(["i1", "i2"]), new Map())
        deepStrictEqual(yield* store.leases([]), new Map())
        strictEqual(
          (yield* storeError(store.heartbeat({ instance: "i1", leaseUntil: T0, now: T0 }))).operation,
          "heartbeat"
        )
      }))

    test("a renewal never takes a lapsed lease again; a first heartbeat registers", (store) =>
      Effect.gen(function*() {
        yield* store.heartbeat({ instance: "i", leaseUntil: T0 + 100, now: T0 })
        yield* store.heartbeat({ instance: "i", leaseUntil: T0 + 200, now: T0 + 50, renew: true })
        assert.strictEqual((yield* store.leases(["i"])).get("i"), T0 + 200)
        // Paused past its lease: another instance's heartbeat forgets it, and its renewal is refused.
        yield* store.heartbeat({ instance: "j", leaseUntil: T0 + 1_000, now: T0 + 300 })
        const error = yield* refused(
          store.heartbeat({ instance: "i", leaseUntil: T0 + 900, now: T0 + 400, renew: true }),
          "leaseLapsed"
        )
        assert.include(error.message, "lapsed")
        assert.isFalse((yield* store.leases(["i"])).has("i"))
        // Even when nobody forgot it yet: a renewal at or past the lease's end is refused.
        yield* store.heartbeat({ instance: "k", leaseUntil: T0 + 500, now: T0 + 400 })
        yield* refused(
          store.heartbeat({ instance: "k", leaseUntil: T0 + 900, now: T0 + 500, renew: true }),
          "leaseLapsed"
        )
      }))
  })

  describe("Conversations", () => {
    test("sessions: none until saved, then the last write wins, per session", (store) =>
      Effect.gen(function*() {
        strictEqual(Option.isNone(yield* store.loadSession("s1")), true)
        yield* store.saveSession("s1", `{"turn":1}`)
        yield* store.saveSession("s2", "other")
        yield* store.saveSession("s1", `{"turn":2,"text":"ünïcode ✓"}`)
        deepStrictEqual(yield* store.loadSession("s1"), Option.some(`{"turn":2,"text":"ünïcode ✓"}`))
        deepStrictEqual(yield* store.loadSession("s2"), Option.some("other"))
      }))

    test("a conversation saved in increments: each save writes from `from`, in one piece with its state", (store) =>
      Effect.gen(function*() {
        const none = Option.none<string>()
        strictEqual(Option.isNone(yield* store.loadConversation("s1")), true)
        yield* store.saveConversation("s1", { state: "t1", from: 0, messages: ["a", "b"], previous: none })
        yield* store.saveConversation("s1", { state: "t2", from: 2, messages: ["c", "d"], previous: Option.some("t1") })
        yield* store.saveConversation("s2", { state: "x", from: 0, messages: ["z"], previous: none })
        deepStrictEqual(
          yield* store.loadConversation("s1"),
          Option.some({ state: "t2", messages: ["a", "b", "c", "d"] })
        )
        // From an earlier message on: what follows is replaced, what precedes kept.
        yield* store.saveConversation("s1", { state: "t3", from: 1, messages: ["B"], previous: none })
        deepStrictEqual(yield* store.loadConversation("s1"), Option.some({ state: "t3", messages: ["a", "B"] }))
        // Past the messages stored, or after another writer's save: refused, nothing written.
        const past = yield* storeError(
          store.saveConversation("s1", { state: "t4", from: 3, messages: ["x"], previous: none })
        )
        strictEqual(past.operation, "saveConversation")
        strictEqual(past.message.includes("past the 2 messages stored"), true)
        const moved = yield* storeError(
          store.saveConversation("s1", { state: "t4", from: 2, messages: ["x"], previous: Option.some("t2") })
        )
        strictEqual(moved.message.includes("another process saved the session since"), true)
        deepStrictEqual(yield* store.loadConversation("s1"), Option.some({ state: "t3", messages: ["a", "B"] }))
        deepStrictEqual(yield* store.loadConversation("s2"), Option.some({ state: "x", messages: ["z"] }))
        // A state saved whole (before 0.3) loads with no messages.
        yield* store.saveSession("s3", "old")
        deepStrictEqual(yield* store.loadConversation("s3"), Option.some({ state: "old", messages: [] }))
      }))
  })

  describe("SessionOwners", () => {
    test("acquire hands out growing epochs per session; owner tells the latest", (store) =>
      Effect.gen(function*() {
        assert.isTrue(Option.isNone(yield* store.owner("s1")))
        assert.strictEqual(yield* store.acquire({ session: "s1", owner: "a", now: T0 }), 1)
        assert.strictEqual(yield* store.acquire({ session: "s1", owner: "b", now: T0 + 1 }), 2)
        assert.strictEqual(yield* store.acquire({ session: "s2", owner: "c", now: T0 + 2 }), 1)
        assert.deepStrictEqual(yield* store.owner("s1"), Option.some({ epoch: 2, owner: "b", at: T0 + 1 }))
        const bad = yield* Effect.flip(store.acquire({ session: "s1", owner: "", now: T0 }))
        assert.include(bad.message, "owner must be a non-empty string")
        assert.strictEqual((yield* store.owner("s1")).pipe(Option.map((o) => o.epoch), Option.getOrThrow), 2)
      }))

    test("logSession appends to a session's owner log, read back in order; bad entries are refused", (store) =>
      Effect.gen(function*() {
        deepStrictEqual(yield* store.sessionLog("s1"), [])
        const entries: ReadonlyArray<SessionOwners.SessionLogEntry> = [
          { session: "s1", owner: "host:1:0:a", event: "open", at: T0 },
          { session: "s2", owner: "host:2:0:b", event: "open", at: T0 + 1 },
          { session: "s1", owner: "host:1:0:a", event: "save", at: T0 + 2 },
          { session: "s1", owner: "host:1:0:a", event: "save", at: T0 + 2 },
          { session: "s1", owner: "host:1:0:a", event: "close", at: Number.MAX_SAFE_INTEGER }
        ]
        for (const entry of entries) yield* store.logSession(entry)
        deepStrictEqual(yield* store.sessionLog("s1"), entries.filter((e) => e.session === "s1"))
        deepStrictEqual(yield* store.sessionLog("s2"), [entries[1]])
        deepStrictEqual(yield* store.sessionLog("s1", { last: 2 }), [entries[3], entries[4]])
        deepStrictEqual(yield* store.sessionLog("s1", { last: 10 }), entries.filter((e) => e.session === "s1"))
        strictEqual((yield* storeError(store.sessionLog("s1", { last: 0 }))).operation, "sessionLog")
        const bad: ReadonlyArray<SessionOwners.SessionLogEntry> = [
          { session: "s1", owner: "", event: "open", at: T0 },
          { session: "s1", owner: "o", event: "opened" as "open", at: T0 },
          { session: "s1", owner: "o", event: "save", at: 1.5 },
          { session: "s1", owner: "o", event: "save", at: -1 }
        ]
        for (const entry of bad) {
          const error = yield* storeError(store.logSession(entry))
          strictEqual(error.operation, "logSession")
          strictEqual(error.message.endsWith("nothing was changed."), true)
        }
        strictEqual((yield* store.sessionLog("s1")).length, 4)
      }))
  })
}
