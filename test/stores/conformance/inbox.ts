/**
 * The conformance tests of the approval inbox's parts: `InboxQueries` (listing across sessions with filters and
 * cursor paging, badge counts, snoozes), `DecisionRequests` (at most one requested per action, completed once) and
 * `ChangeFeed` (the feed, and `changed`). Each test gets a fresh, empty store, through the part tags (see
 * `../conformance.ts`).
 */
import { assert, describe } from "@effect/vitest"
import { Effect, Fiber, Option, Stream } from "effect"
import { deepStrictEqual, strictEqual } from "node:assert/strict"
import type { PendingRecord, PendingStatus } from "../../../src/domain/PendingRecord.js"
import type { ActionRecords } from "../../../src/services/ActionRecords.js"
import type { DecisionRequests } from "../../../src/services/DecisionRequests.js"
import type { InboxQueries } from "../../../src/services/InboxQueries.js"
import type { PartStore, PartTest } from "../conformance.js"
import { pendingRecord, storeError } from "./fixtures.js"

const T0 = 1_700_000_000_000

const record = (id: string, overrides: Partial<PendingRecord> = {}): PendingRecord => pendingRecord(id, T0, overrides)

/** Moves a record to `to` the way a session would: claim and settle for applied/discarded, else a transition. */
const settleAs = (store: PartStore, id: string, to: PendingStatus, now = T0 + 1) =>
  to === "applied" || to === "discarded" ?
    Effect.zipRight(
      store.claim({ id, owner: "o", leaseUntil: now + 1_000, now }),
      store.settle({ id, owner: "o", to, outcome: Option.some(`${to} ${id}`), now })
    ) :
    to === "resolving" ?
    store.claim({ id, owner: "o", leaseUntil: now + 1_000, now }) :
    store.transition({ id, from: ["pending"], to, now })

const decide = (
  store: PartStore,
  actionId: string,
  n: number,
  overrides: Partial<DecisionRequests.DecisionInput> = {}
) =>
  store.recordDecision({
    id: `dc_test_${n}`,
    actionId,
    reviewer: "ann",
    action: "apply",
    reason: "Looks right.",
    amendment: null,
    now: T0 + 5,
    ...overrides
  })

/** Every page of a query, in order, as ids. */
const allPages = (store: PartStore, query: Omit<InboxQueries.ActionQuery, "cursor">) =>
  Effect.gen(function*() {
    const seen: Array<string> = []
    let cursor: string | undefined
    for (let pages = 0; pages < 100; pages++) {
      const page: ActionRecords.Page<InboxQueries.ListedAction> = yield* store.listActions({ ...query, cursor })
      strictEqual(page.items.length <= query.limit, true)
      seen.push(...page.items.map((item) => item.record.id))
      if (Option.isNone(page.next)) return seen
      cursor = page.next.value
    }
    throw new Error("more than 100 pages")
  })

/** Waits for the first signal of `changed`, subscribed before `write` runs. */
const signalledBy = <E>(changed: Stream.Stream<void, unknown>, write: Effect.Effect<void, E>) =>
  Effect.scoped(Effect.gen(function*() {
    const first = yield* Effect.fork(Stream.runHead(changed))
    yield* Effect.sleep("200 millis") // the subscription (a LISTEN on Postgres) is in place
    yield* write
    const got = yield* Fiber.join(first)
    assert.isTrue(Option.isSome(got))
  }))

/** The tests of `InboxQueries`, `DecisionRequests` and `ChangeFeed`. */
export const inboxConformance = (test: PartTest): void => {
  const seed = (store: PartStore) =>
    Effect.gen(function*() {
      const plan: Array<[string, string, string, PendingStatus]> = []
      const statuses: ReadonlyArray<PendingStatus> = [
        "pending",
        "applied",
        "pending",
        "discarded",
        "resolving",
        "orphaned",
        "conflict",
        "cleared",
        "pending",
        "expired"
      ]
      for (let i = 0; i < 30; i++) {
        plan.push([`r${String(i).padStart(2, "0")}`, `s${i % 3}`, i % 4 === 0 ? "plan" : "edit", statuses[i % 10]!])
      }
      for (const [id, session, kind, status] of plan) {
        yield* store.insert(record(id, { session, kind, createdAt: T0 + Math.floor(Number(id.slice(1)) / 2) }))
        if (status !== "pending") yield* settleAs(store, id, status)
      }
      return plan
    })

  /** The ids `plan` holds that match, most recent first (createdAt descending, then insertion descending). */
  const expected = (
    plan: ReadonlyArray<[string, string, string, PendingStatus]>,
    keep: (session: string, kind: string, status: PendingStatus) => boolean
  ) => plan.filter(([, session, kind, status]) => keep(session, kind, status)).map(([id]) => id).reverse()

  const open = new Set<PendingStatus>(["pending", "resolving", "orphaned", "conflict"])

  describe("InboxQueries", () => {
    test("listActions: by default the open records of every session, most recent first; pages cover it exactly", (store) =>
      Effect.gen(function*() {
        const plan = yield* seed(store)
        const want = expected(plan, (_, __, status) => open.has(status))
        for (const limit of [1, 4, 7, 1000]) deepStrictEqual(yield* allPages(store, { now: T0, limit }), want)
        const first = yield* store.listActions({ now: T0, limit: 3 })
        deepStrictEqual(first.items.map((item) => [item.record.id, item.record.status]), [
          ["r28", "pending"],
          ["r26", "conflict"],
          ["r25", "orphaned"]
        ])
        // The record comes back whole, as `get` reads it.
        deepStrictEqual(first.items[0]!.record, Option.getOrThrow(yield* store.get("r28")))
      }))

    test("listActions filters by sessions, statuses and kinds, alone or together", (store) =>
      Effect.gen(function*() {
        const plan = yield* seed(store)
        const cases: Array<
          [Omit<InboxQueries.ActionQuery, "now" | "limit">, (s: string, k: string, st: PendingStatus) => boolean]
        > = [
          [{ sessions: ["s1"] }, (s, _, st) => s === "s1" && open.has(st)],
          [{ sessions: ["s2", "s0", "s2"] }, (s, _, st) => s !== "s1" && open.has(st)],
          [{ statuses: ["applied"] }, (_, __, st) => st === "applied"],
          [{ statuses: ["pending", "discarded", "cleared"] }, (_, __, st) =>
            ["pending", "discarded", "cleared"].includes(st)],
          [{ kinds: ["plan"] }, (_, k, st) =>
            k === "plan" && open.has(st)],
          [
            { sessions: ["s0", "s1"], statuses: ["pending", "applied"], kinds: ["edit"] },
            (s, k, st) => s !== "s2" && k === "edit" && (st === "pending" || st === "applied")
          ],
          [{ sessions: ["nobody"] }, () => false],
          [{ kinds: ["nothing"] }, () => false]
        ]
        for (const [filter, keep] of cases) {
          for (const limit of [2, 1000]) {
            deepStrictEqual(
              yield* allPages(store, { ...filter, now: T0, limit }),
              expected(plan, keep),
              JSON.stringify(filter)
            )
          }
        }
      }))

    test("a cursor survives records added, settled and pruned after it was taken", (store) =>
      Effect.gen(function*() {
        const plan = yield* seed(store)
        const first = yield* store.listActions({ now: T0, limit: 4, statuses: ["pending", "applied"] })
        const want = expected(plan, (_, __, st) => st === "pending" || st === "applied")
        deepStrictEqual(first.items.map((item) => item.record.id), want.slice(0, 4))
        yield* store.insert(record("newer", { createdAt: T0 + 100 }))
        yield* store.prune({ session: "s1", keepLast: Option.some(0), settledBefore: Option.none(), batch: 100 })
        const gone = new Set(plan.filter(([, s, , st]) => s === "s1" && st === "applied").map(([id]) => id))
        const rest = yield* allPages(store, {
          now: T0,
          limit: 3,
          statuses: ["pending", "applied"]
        }).pipe(Effect.map((ids) => ids.slice(ids.indexOf(want[4]!))))
        const restFromCursor: Array<string> = []
        let cursor = Option.getOrUndefined(first.next)
        while (cursor !== undefined) {
          const page: ActionRecords.Page<InboxQueries.ListedAction> = yield* store.listActions({
            now: T0,
            limit: 3,
            statuses: ["pending", "applied"],
            cursor
          })
          restFromCursor.push(...page.items.map((item) => item.record.id))
          cursor = Option.getOrUndefined(page.next)
        }
        deepStrictEqual(restFromCursor, want.slice(4).filter((id) => !gone.has(id)))
        deepStrictEqual(restFromCursor, rest)
      }))

    test("snooze hides a record from the default list until its time; it stays pending for its session", (store) =>
      Effect.gen(function*() {
        yield* store.insert(record("a"))
        yield* store.insert(record("b", { createdAt: T0 + 1 }))
        strictEqual(yield* store.snooze({ id: "a", until: Option.some(T0 + 60_000), now: T0 }), true)
        const ids = (snoozed: InboxQueries.ActionQuery["snoozed"], now: number) =>
          Effect.map(
            store.listActions({ now, limit: 10, snoozed }),
            (page) => page.items.map((item) => [item.record.id, Option.getOrNull(item.snoozedUntil)])
          )
        deepStrictEqual(yield* ids(undefined, T0), [["b", null]])
        deepStrictEqual(yield* ids("hide", T0 + 59_999), [["b", null]])
        deepStrictEqual(yield* ids("only", T0), [["a", T0 + 60_000]])
        deepStrictEqual(yield* ids("include", T0), [["b", null], ["a", T0 + 60_000]])
        // From its time on, it is back in the default list (its snooze time still shows).
        deepStrictEqual(yield* ids("hide", T0 + 60_000), [["b", null], ["a", T0 + 60_000]])
        // For its session nothing changed: still pending, listed open, claimable.
        deepStrictEqual(Option.getOrThrow(yield* store.get("a")), record("a"))
        deepStrictEqual((yield* store.listOpen("s1")).map((r) => r.id), ["b", "a"])
        // Ending the snooze; a settled or unknown record cannot be snoozed.
        strictEqual(yield* store.snooze({ id: "a", until: Option.none(), now: T0 }), true)
        deepStrictEqual(yield* ids("hide", T0), [["b", null], ["a", null]])
        yield* settleAs(store, "b", "applied")
        strictEqual(yield* store.snooze({ id: "b", until: Option.some(T0 + 1), now: T0 }), false)
        strictEqual(yield* store.snooze({ id: "zz", until: Option.some(T0 + 1), now: T0 }), false)
        strictEqual((yield* storeError(store.snooze({ id: "a", until: Option.some(-1), now: T0 }))).operation, "snooze")
      }))

    test("countActions: the badge's counts over the open records, by session and kind", (store) =>
      Effect.gen(function*() {
        yield* seed(store)
        // Open: pending r00 r02 r08 r10 r12 r18 r20 r22 r28; resolving r04 r14 r24; orphaned r05 r15 r25;
        // conflict r06 r16 r26. Snoozed: r00 (pending), r05 (orphaned); decided: r02 (pending), r15 (orphaned).
        yield* store.snooze({ id: "r00", until: Option.some(T0 + 10), now: T0 })
        yield* store.snooze({ id: "r05", until: Option.some(T0 + 10), now: T0 })
        yield* decide(store, "r02", 1)
        yield* decide(store, "r15", 2, { action: "discard" })
        deepStrictEqual(yield* store.countActions({ now: T0 }), {
          pending: 7,
          requested: 2,
          snoozed: 2,
          resolving: 3,
          orphaned: 3,
          conflict: 3
        })
        // Past the snoozes they count as pending (r00) and orphaned only (r05).
        deepStrictEqual(yield* store.countActions({ now: T0 + 10 }), {
          pending: 8,
          requested: 2,
          snoozed: 0,
          resolving: 3,
          orphaned: 3,
          conflict: 3
        })
        // s0, open: r00 (snoozed), r06, r12, r15 (orphaned, decided), r18, r24.
        deepStrictEqual(yield* store.countActions({ now: T0, sessions: ["s0"] }), {
          pending: 2,
          requested: 1,
          snoozed: 1,
          resolving: 1,
          orphaned: 1,
          conflict: 1
        })
        // plan kind: r00 r04 r08 r12 r16 r20 r24 r28.
        deepStrictEqual(yield* store.countActions({ now: T0, kinds: ["plan"], sessions: ["s0", "s1", "s2"] }), {
          pending: 4,
          requested: 0,
          snoozed: 1,
          resolving: 2,
          orphaned: 0,
          conflict: 1
        })
        // Decided and snoozed (r02, r15): counted as requested only, never as snoozed or pending too.
        yield* store.snooze({ id: "r02", until: Option.some(T0 + 10), now: T0 })
        yield* store.snooze({ id: "r15", until: Option.some(T0 + 10), now: T0 })
        deepStrictEqual(yield* store.countActions({ now: T0 }), {
          pending: 7,
          requested: 2,
          snoozed: 2,
          resolving: 3,
          orphaned: 3,
          conflict: 3
        })
      }))

    test("bad input to the inbox's methods fails typed and changes nothing", (store) =>
      Effect.gen(function*() {
        yield* store.insert(record("a"))
        const errors = [
          yield* storeError(store.listActions({ now: T0, limit: 0 })),
          yield* storeError(store.listActions({ now: T0, limit: 10, cursor: "nope" })),
          yield* storeError(store.listActions({ now: T0, limit: 10, sessions: [] })),
          yield* storeError(store.listActions({ now: T0, limit: 10, statuses: ["unreadable"] })),
          yield* storeError(store.listActions({ now: T0, limit: 10, statuses: ["nonsense" as PendingStatus] })),
          yield* storeError(store.listActions({ now: T0, limit: 10, kinds: Array.from({ length: 101 }, String) })),
          yield* storeError(store.listActions({ now: T0, limit: 10, snoozed: "maybe" as "hide" })),
          yield* storeError(store.countActions({ now: -1 })),
          yield* storeError(store.getActions(Array.from({ length: 1001 }, String))),
          yield* storeError(decide(store, "a", 1, { reason: "  " })),
          yield* storeError(decide(store, "a", 1, { reviewer: "" })),
          yield* storeError(decide(store, "a", 1, { action: "maybe" as "apply" })),
          yield* storeError(decide(store, "a", 1, { amendment: undefined })),
          yield* storeError(decide(store, "a", 1, { amendment: { n: 1n } })),
          yield* storeError(decide(store, "a", 1, { id: "not-a-decision-id" })),
          yield* storeError(
            store.completeDecision({ id: "x", state: "requested" as "done", outcome: "", by: "i", now: T0 })
          ),
          yield* storeError(store.requestedDecisions({ limit: 0 })),
          yield* storeError(store.feed({ after: { journal: -1, notes: 0 }, limit: 10 })),
          yield* storeError(
            store.feed({ after: { journal: 0, notes: 0 }, limit: 10, missing: { journal: [1.5], notes: [] } })
          ),
          yield* storeError(store.pruneNotes(-1))
        ]
        strictEqual(errors.every((e) => e.message.endsWith("nothing was changed.")), true)
        deepStrictEqual(yield* store.decisions("a"), [])
        deepStrictEqual(Option.getOrThrow(yield* store.get("a")), record("a"))
      }))
  })

  describe("DecisionRequests", () => {
    test("recordDecision: requested once per action; unknown, settled, expired and waiting ones are said why", (store) =>
      Effect.gen(function*() {
        yield* store.insert(record("a"))
        yield* store.insert(record("late", { expiresAt: T0 + 5 }))
        yield* store.insert(record("done"))
        yield* settleAs(store, "done", "applied")
        yield* store.insert(record("lost", { session: "s2" }))
        yield* settleAs(store, "lost", "orphaned")
        const first = yield* decide(store, "a", 1, { amendment: { files: [{ path: "a.ts", text: "x\ny" }] } })
        strictEqual(first._tag, "Recorded")
        if (first._tag !== "Recorded") return
        deepStrictEqual(first.decision, {
          id: "dc_test_1",
          actionId: "a",
          session: "s1",
          reviewer: "ann",
          action: "apply",
          reason: "Looks right.",
          amendment: { files: [{ path: "a.ts", text: "x\ny" }] },
          state: "requested",
          outcome: null,
          requestedAt: T0 + 5,
          settledAt: null,
          settledBy: null
        })
        deepStrictEqual(Option.getOrThrow(yield* store.getDecision("dc_test_1")), first.decision)
        deepStrictEqual(yield* decide(store, "a", 2, { action: "discard" }), {
          _tag: "AlreadyRequested",
          decision: first.decision
        })
        deepStrictEqual(yield* decide(store, "zz", 3), { _tag: "UnknownAction" })
        const settled = yield* decide(store, "done", 4)
        strictEqual(settled._tag === "NotDecidable" && settled.record.status === "applied", true)
        strictEqual((yield* decide(store, "late", 5))._tag, "NotDecidable")
        strictEqual((yield* decide(store, "late", 6, { now: T0 + 4 }))._tag, "Recorded")
        // An orphaned record can be decided (it can be discarded, or run where its kind is registered).
        strictEqual((yield* decide(store, "lost", 7, { action: "discard" }))._tag, "Recorded")
        // The listing shows the requested decision.
        const listed = yield* store.getActions(["a", "done"])
        deepStrictEqual(
          listed.map((item) => [item.record.id, Option.map(item.requested, (d) => d.id)]).sort(),
          [["a", Option.some("dc_test_1")], ["done", Option.none()]]
        )
        // A decision id already taken is refused and changes nothing.
        yield* store.insert(record("b"))
        strictEqual((yield* storeError(decide(store, "b", 1))).operation, "recordDecision")
        strictEqual(Option.isNone((yield* store.getActions(["b"]))[0]!.requested), true)
      }))

    test("of 20 fibers deciding one action at once, exactly one records its decision", (store) =>
      Effect.gen(function*() {
        yield* store.insert(record("a"))
        const results = yield* Effect.forEach(
          Array.from({ length: 20 }, (_, i) => i),
          (i) => decide(store, "a", 100 + i, { action: i % 2 === 0 ? "apply" : "discard" }),
          { concurrency: "unbounded" }
        )
        strictEqual(results.filter((r) => r._tag === "Recorded").length, 1)
        strictEqual(results.filter((r) => r._tag === "AlreadyRequested").length, 19)
        strictEqual((yield* store.decisions("a")).length, 1)
      }))

    test("completeDecision ends a requested decision once; then the action can be decided again", (store) =>
      Effect.gen(function*() {
        yield* store.insert(record("a"))
        yield* decide(store, "a", 1)
        const complete = (state: "done" | "failed", outcome: string) =>
          store.completeDecision({ id: "dc_test_1", state, outcome, by: "inbox-1", now: T0 + 9 })
        strictEqual(yield* complete("failed", "Apply failed: the file changed."), true)
        strictEqual(yield* complete("done", "Applied."), false)
        strictEqual(
          yield* store.completeDecision({ id: "dc_nope", state: "done", outcome: "x", by: "i", now: T0 }),
          false
        )
        const [failed] = yield* store.decisions("a")
        deepStrictEqual([failed!.state, failed!.outcome, failed!.settledAt, failed!.settledBy], [
          "failed",
          "Apply failed: the file changed.",
          T0 + 9,
          "inbox-1"
        ])
        strictEqual(
          (yield* decide(store, "a", 2, { action: "discard", reason: "Not now after all." }))._tag,
          "Recorded"
        )
        deepStrictEqual((yield* store.decisions("a")).map((d) => [d.id, d.state, d.action]), [
          ["dc_test_1", "failed", "apply"],
          ["dc_test_2", "requested", "discard"]
        ])
        deepStrictEqual(yield* store.decisions("unknown"), [])
      }))

    test("requestedDecisions: what waits, with the record as it is now, by session and kind, oldest first", (store) =>
      Effect.gen(function*() {
        yield* store.insert(record("a"))
        yield* store.insert(record("b", { session: "s2", kind: "plan" }))
        yield* store.insert(record("c", { session: "s2" }))
        yield* decide(store, "c", 1, { now: T0 + 1 })
        yield* decide(store, "a", 2, { now: T0 + 2 })
        yield* decide(store, "b", 3, { now: T0 + 3, action: "discard" })
        const ids = (query: DecisionRequests.RequestedQuery) =>
          Effect.map(store.requestedDecisions(query), (found) => found.map((r) => [r.decision.id, r.record.id]))
        deepStrictEqual(yield* ids({ limit: 10 }), [["dc_test_1", "c"], ["dc_test_2", "a"], ["dc_test_3", "b"]])
        deepStrictEqual(yield* ids({ limit: 2 }), [["dc_test_1", "c"], ["dc_test_2", "a"]])
        deepStrictEqual(yield* ids({ limit: 10, sessions: ["s2"] }), [["dc_test_1", "c"], ["dc_test_3", "b"]])
        deepStrictEqual(yield* ids({ limit: 10, kinds: ["edit"] }), [["dc_test_1", "c"], ["dc_test_2", "a"]])
        // The model resolved `a` itself meanwhile: the decision still waits, and its record shows why it cannot run.
        yield* settleAs(store, "a", "applied")
        const [waiting] = yield* store.requestedDecisions({ limit: 10, sessions: ["s1"] })
        deepStrictEqual([waiting!.decision.id, waiting!.record.status], ["dc_test_2", "applied"])
        yield* store.completeDecision({
          id: "dc_test_2",
          state: "failed",
          outcome: "Already applied.",
          by: "x",
          now: T0
        })
        deepStrictEqual(yield* ids({ limit: 10, sessions: ["s1"] }), [])
      }))

    test("settleDeciding: the settle and the decision's completion together, the completion only after a settle", (store) =>
      Effect.gen(function*() {
        yield* store.insert(record("a"))
        yield* store.insert(record("b"))
        yield* decide(store, "a", 1)
        yield* decide(store, "b", 2)
        for (const id of ["a", "b"]) yield* store.claim({ id, owner: "o", leaseUntil: T0 + 1_000, now: T0 + 1 })
        const settle = (id: string, owner = "o") => ({
          id,
          owner,
          to: "applied" as const,
          outcome: Option.some(`Applied ${id}.`),
          now: T0 + 7
        })
        // Another owner's settle changes nothing: neither settled nor completed.
        deepStrictEqual(
          yield* store.settleDeciding(settle("a", "x"), { id: "dc_test_1", outcome: "x", by: "w" }),
          { settled: false, completed: false }
        )
        strictEqual((yield* store.decisions("a"))[0]!.state, "requested")
        deepStrictEqual(
          yield* store.settleDeciding(settle("a"), { id: "dc_test_1", outcome: "Applied a.", by: "w" }),
          { settled: true, completed: true }
        )
        const [done] = yield* store.decisions("a")
        deepStrictEqual([done!.state, done!.outcome, done!.settledAt, done!.settledBy], [
          "done",
          "Applied a.",
          T0 + 7,
          "w"
        ])
        strictEqual(Option.getOrThrow(yield* store.get("a")).status, "applied")
        // A decision completed already: the settle still takes effect.
        yield* store.completeDecision({ id: "dc_test_2", state: "failed", outcome: "gone", by: "x", now: T0 + 2 })
        deepStrictEqual(
          yield* store.settleDeciding(settle("b"), { id: "dc_test_2", outcome: "Applied b.", by: "w" }),
          { settled: true, completed: false }
        )
        deepStrictEqual((yield* store.decisions("b")).map((d) => [d.state, d.outcome]), [["failed", "gone"]])
        strictEqual(Option.getOrThrow(yield* store.get("b")).status, "applied")
        // Bad input changes nothing.
        strictEqual(
          (yield* storeError(store.settleDeciding({ ...settle("a"), now: -1 }, { id: "x", outcome: "", by: "w" })))
            .operation,
          "settleDeciding"
        )
      }))

    test("recordDone: a decision made and run at once, recorded with the settle (only after a settle) or alone", (store) =>
      Effect.gen(function*() {
        yield* store.insert(record("a", { session: "s7" }))
        yield* store.insert(record("b"))
        yield* store.claim({ id: "a", owner: "o", leaseUntil: T0 + 1_000, now: T0 + 1 })
        const done = (id: string, actionId: string, outcome = `Applied ${actionId}.`) => ({
          id,
          actionId,
          reviewer: "ann",
          action: "apply" as const,
          reason: "Fine.",
          amendment: { text: "as amended\u0000" },
          requestedAt: T0 + 2,
          outcome,
          by: "w",
          now: T0 + 7
        })
        const settle = (owner: string) => ({
          id: "a",
          owner,
          to: "applied" as const,
          outcome: Option.some("Applied a."),
          now: T0 + 7
        })
        // Another owner's settle changes nothing: neither settled nor recorded.
        deepStrictEqual(yield* store.recordDone(done("dc_done_1", "a"), settle("x")), {
          settled: false,
          recorded: false
        })
        deepStrictEqual(yield* store.decisions("a"), [])
        strictEqual(Option.getOrThrow(yield* store.get("a")).status, "resolving")
        deepStrictEqual(yield* store.recordDone(done("dc_done_1", "a"), settle("o")), { settled: true, recorded: true })
        strictEqual(Option.getOrThrow(yield* store.get("a")).status, "applied")
        deepStrictEqual(yield* store.decisions("a"), [{
          id: "dc_done_1",
          actionId: "a",
          session: "s7",
          reviewer: "ann",
          action: "apply",
          reason: "Fine.",
          amendment: { text: "as amended\u0000" },
          state: "done",
          outcome: "Applied a.",
          requestedAt: T0 + 2,
          settledAt: T0 + 7,
          settledBy: "w"
        }])
        deepStrictEqual(yield* store.requestedDecisions({ limit: 10 }), [], "recorded done, never requested")
        // Alone (after a settle written apart): once per id, and only for a known action.
        deepStrictEqual(yield* store.recordDone(done("dc_done_2", "b")), { settled: true, recorded: true })
        deepStrictEqual(yield* store.recordDone(done("dc_done_2", "b", "again")), { settled: true, recorded: false })
        deepStrictEqual((yield* store.decisions("b")).map((d) => d.outcome), ["Applied b."])
        deepStrictEqual(yield* store.recordDone(done("dc_done_3", "nobody")), { settled: true, recorded: false })
        // Bad input changes nothing.
        strictEqual(
          (yield* storeError(store.recordDone({ ...done("dc_done_4", "b"), reason: " " }))).operation,
          "recordDone"
        )
        strictEqual((yield* storeError(store.recordDone({ ...done("bad id", "b") }))).operation, "recordDone")
        deepStrictEqual((yield* store.decisions("b")).length, 1)
      }))

    test("pruning a settled record removes its decisions too", (store) =>
      Effect.gen(function*() {
        yield* store.insert(record("a"))
        yield* decide(store, "a", 1)
        yield* store.completeDecision({ id: "dc_test_1", state: "done", outcome: "Applied.", by: "x", now: T0 + 6 })
        yield* settleAs(store, "a", "applied", T0 + 6)
        strictEqual((yield* store.decisions("a")).length, 1)
        yield* store.prune({ session: "s1", keepLast: Option.some(0), settledBefore: Option.none(), batch: 10 })
        deepStrictEqual(yield* store.decisions("a"), [])
        strictEqual(Option.isNone(yield* store.getDecision("dc_test_1")), true)
      }))
  })

  describe("DecisionRequests: responses", () => {
    const respond = (
      store: PartStore,
      actionId: string,
      n: number,
      overrides: Partial<DecisionRequests.ResponseInput> = {}
    ) =>
      store.recordResponse({
        id: `rs_test_${n}`,
        actionId,
        reviewer: "ann",
        message: "Use a smaller change.",
        now: T0 + 5,
        ...overrides
      })

    test("recordResponse: any number per open action, beside a requested decision; never on a settled one", (store) =>
      Effect.gen(function*() {
        yield* store.insert(record("a"))
        yield* store.insert(record("late", { expiresAt: T0 + 5 }))
        yield* store.insert(record("done"))
        yield* settleAs(store, "done", "applied")
        const head = yield* store.feedHead
        const first = yield* respond(store, "a", 1, { message: "Rename it.\u0000 Keep the rest." })
        strictEqual(first._tag, "Recorded")
        if (first._tag !== "Recorded") return
        deepStrictEqual(first.response, {
          id: "rs_test_1",
          actionId: "a",
          session: "s1",
          reviewer: "ann",
          message: "Rename it.\u0000 Keep the rest.",
          respondedAt: T0 + 5,
          deliveredAt: null
        })
        // A requested decision does not stand in the way of a response, nor a response in the way of another.
        strictEqual((yield* decide(store, "a", 1))._tag, "Recorded")
        strictEqual((yield* respond(store, "a", 2, { now: T0 + 6 }))._tag, "Recorded")
        deepStrictEqual((yield* store.responses("a")).map((r) => [r.id, r.message]), [
          ["rs_test_1", "Rename it.\u0000 Keep the rest."],
          ["rs_test_2", "Use a smaller change."]
        ])
        deepStrictEqual(yield* respond(store, "zz", 3), { _tag: "UnknownAction" })
        const settled = yield* respond(store, "done", 4)
        strictEqual(settled._tag === "NotDecidable" && settled.record.status === "applied", true)
        strictEqual((yield* respond(store, "late", 5))._tag, "NotDecidable")
        deepStrictEqual(yield* store.responses("done"), [])
        deepStrictEqual(yield* store.responses("unknown"), [])
        // Each recorded response is a change in the inbox's feed.
        const changes = yield* store.feed({ after: head, limit: 100 })
        deepStrictEqual(changes.filter((c) => c.source === "notes").map((c) => c.actionId), ["a", "a", "a"])
        // An id already taken is refused and changes nothing.
        strictEqual((yield* storeError(respond(store, "a", 1))).operation, "recordResponse")
        strictEqual((yield* store.responses("a")).length, 2)
      }))

    test("undeliveredResponses and markDelivered: what waits per session, oldest first, marked once", (store) =>
      Effect.gen(function*() {
        yield* store.insert(record("a"))
        yield* store.insert(record("b", { session: "s2" }))
        yield* respond(store, "a", 1, { now: T0 + 1 })
        yield* respond(store, "b", 2, { now: T0 + 2 })
        yield* respond(store, "a", 3, { now: T0 + 3 })
        const waiting = (session: string, limit = 10) =>
          Effect.map(store.undeliveredResponses({ session, limit }), (found) => found.map((r) => r.id))
        deepStrictEqual(yield* waiting("s1"), ["rs_test_1", "rs_test_3"])
        deepStrictEqual(yield* waiting("s1", 1), ["rs_test_1"])
        deepStrictEqual(yield* waiting("s2"), ["rs_test_2"])
        deepStrictEqual(yield* waiting("s3"), [])
        strictEqual(yield* store.markDelivered({ ids: ["rs_test_1", "rs_nope"], now: T0 + 9 }), 1)
        strictEqual(yield* store.markDelivered({ ids: ["rs_test_1"], now: T0 + 10 }), 0)
        deepStrictEqual(yield* waiting("s1"), ["rs_test_3"])
        deepStrictEqual((yield* store.responses("a")).map((r) => [r.id, r.deliveredAt]), [
          ["rs_test_1", T0 + 9],
          ["rs_test_3", null]
        ])
        // A response outlives the settle of its action (the page shows it), and goes when the record is pruned.
        yield* settleAs(store, "a", "discarded", T0 + 11)
        strictEqual((yield* store.responses("a")).length, 2)
        yield* store.prune({ session: "s1", keepLast: Option.some(0), settledBefore: Option.none(), batch: 10 })
        deepStrictEqual(yield* store.responses("a"), [])
        deepStrictEqual(yield* waiting("s1"), [])
        deepStrictEqual(yield* waiting("s2"), ["rs_test_2"])
      }))

    test("bad input to the responses' methods fails typed and changes nothing", (store) =>
      Effect.gen(function*() {
        yield* store.insert(record("a"))
        const errors = [
          yield* storeError(respond(store, "a", 1, { id: "dc_wrong" })),
          yield* storeError(respond(store, "a", 1, { message: "  " })),
          yield* storeError(respond(store, "a", 1, { message: "x".repeat(4_001) })),
          yield* storeError(respond(store, "a", 1, { reviewer: "" })),
          yield* storeError(respond(store, "a", 1, { now: -1 })),
          yield* storeError(store.undeliveredResponses({ session: "s1", limit: 0 })),
          yield* storeError(store.markDelivered({ ids: [], now: T0 })),
          yield* storeError(store.markDelivered({ ids: ["rs_x"], now: Number.NaN }))
        ]
        strictEqual(errors.every((e) => e.message.endsWith("nothing was changed.")), true)
        strictEqual(errors[6]!.message.includes("ids must list 1 to 100 response ids"), true, errors[6]!.message)
        deepStrictEqual(yield* store.responses("a"), [])
      }))
  })

  describe("ChangeFeed", () => {
    test("the feed: every transition and every decision or snooze, after a position, in order", (store) =>
      Effect.gen(function*() {
        yield* store.insert(record("old"))
        const start = yield* store.feedHead
        yield* store.insert(record("a"))
        yield* settleAs(store, "a", "applied")
        yield* store.insert(record("b"))
        yield* store.snooze({ id: "b", until: Option.some(T0 + 100), now: T0 })
        yield* decide(store, "b", 1)
        yield* store.completeDecision({ id: "dc_test_1", state: "failed", outcome: "x", by: "i", now: T0 })
        const changes = yield* store.feed({ after: start, limit: 100 })
        const of = (source: "journal" | "notes") =>
          changes.filter((c) => c.source === source).map((c) => [c.seq - start[source], c.actionId])
        // insert a, claim a, settle a, insert b.
        deepStrictEqual(of("journal"), [[1, "a"], [2, "a"], [3, "a"], [4, "b"]])
        // the snooze, the decision, its completion.
        deepStrictEqual(of("notes"), [[1, "b"], [2, "b"], [3, "b"]])
        const head = yield* store.feedHead
        deepStrictEqual(head, { journal: start.journal + 4, notes: start.notes + 3 })
        deepStrictEqual(yield* store.feed({ after: head, limit: 100 }), [])
        // `limit` bounds each source; `missing` reads given numbers again.
        const limited = yield* store.feed({ after: start, limit: 2 })
        deepStrictEqual(limited.map((c) => [c.source, c.seq - start[c.source]]), [
          ["journal", 1],
          ["journal", 2],
          ["notes", 1],
          ["notes", 2]
        ])
        const again = yield* store.feed({
          after: head,
          limit: 10,
          missing: { journal: [start.journal + 2], notes: [start.notes + 1, 999_999] }
        })
        deepStrictEqual(again.map((c) => [c.source, c.seq - start[c.source], c.actionId]).sort(), [
          ["journal", 2, "a"],
          ["notes", 1, "b"]
        ])
        // Pruning notes keeps the last ones; the journal is untouched.
        strictEqual(yield* store.pruneNotes(1), 2)
        strictEqual(yield* store.pruneNotes(1), 0)
        deepStrictEqual(
          (yield* store.feed({ after: start, limit: 100 })).filter((c) => c.source === "notes").map((c) =>
            c.seq - start.notes
          ),
          [3]
        )
      }))

    test("a feed write of the store signals changed", (store) =>
      Effect.gen(function*() {
        yield* signalledBy(store.changed, store.insert(record("a")))
        yield* signalledBy(
          store.changed,
          Effect.asVoid(store.snooze({ id: "a", until: Option.some(T0 + 60_000), now: T0 }))
        )
      }))
  })
}
