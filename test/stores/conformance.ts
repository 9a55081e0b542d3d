/**
 * The store conformance suite: `conformance(subject)` runs the same behavioural tests of every part of the
 * `PendingStore` (`ActionRecords`, `InstanceLeases`, `Conversations`, `SessionOwners`, `InboxQueries`,
 * `DecisionRequests`, `ChangeFeed`) against a store layer: memory, SQLite (a temp file) and Postgres (the test run's
 * server), from test/stores/PendingStore.test.ts. Each test gets a fresh, empty store and reads it through the part
 * tags the layer provides, never through `PendingStore`: a layer that left a part out, or gave a part another store,
 * fails them. The first group checks the parts themselves: each holds exactly its methods, and all are views on one
 * store.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Option } from "effect"
import type { PendingRecord } from "../../src/domain/PendingRecord.js"
import { ActionRecords } from "../../src/services/ActionRecords.js"
import { ChangeFeed } from "../../src/services/ChangeFeed.js"
import { Conversations } from "../../src/services/Conversations.js"
import { DecisionRequests } from "../../src/services/DecisionRequests.js"
import { InboxQueries } from "../../src/services/InboxQueries.js"
import { InstanceLeases } from "../../src/services/InstanceLeases.js"
import { PendingStore } from "../../src/services/PendingStore.js"
import { SessionOwners } from "../../src/services/SessionOwners.js"
import { inboxConformance } from "./conformance/inbox.js"
import { recordsConformance } from "./conformance/records.js"

/** Every part's methods in one object: what a test body uses (each method taken from its own part's tag). */
export type PartStore =
  & ActionRecords.Service
  & InstanceLeases.Service
  & Conversations.Service
  & SessionOwners.Service
  & InboxQueries.Service
  & DecisionRequests.Service
  & ChangeFeed.Service

/** Defines one test on a fresh store, its body given the parts. */
export type PartTest = (title: string, body: (store: PartStore) => Effect.Effect<void, unknown>) => void

/** A store layer to hold to the suite: a fresh, empty store per build. */
export interface ConformanceSubject {
  /** The suite's name, e.g. `sqlite`. */
  readonly name: string
  readonly layer: () => Layer.Layer<PendingStore | PendingStore.Parts, unknown>
  /** Why the suite is skipped, if it is (Postgres without a server). */
  readonly skipReason?: string | undefined
}

/** The methods each part must hold, written out here rather than read from the sources. */
const expectedMethods = {
  ActionRecords: [
    "claim",
    "get",
    "history",
    "historyPage",
    "insert",
    "list",
    "listOpen",
    "listPage",
    "prune",
    "settle",
    "stale",
    "transition"
  ],
  InstanceLeases: ["heartbeat", "leases", "release"],
  Conversations: ["loadConversation", "loadSession", "saveConversation", "saveSession"],
  SessionOwners: ["acquire", "logSession", "owner", "sessionLog"],
  InboxQueries: ["countActions", "getActions", "listActions", "snooze"],
  DecisionRequests: [
    "completeDecision",
    "decisions",
    "getDecision",
    "markDelivered",
    "recordDecision",
    "recordDone",
    "recordResponse",
    "requestedDecisions",
    "responses",
    "settleDeciding",
    "undeliveredResponses"
  ],
  ChangeFeed: ["changed", "feed", "feedHead", "pruneNotes"]
} as const

const parts = Effect.all({
  ActionRecords,
  InstanceLeases,
  Conversations,
  SessionOwners,
  InboxQueries,
  DecisionRequests,
  ChangeFeed
})

/** The parts in context, as one object (a method missing from its part is missing here). */
const fromParts = Effect.map(parts, (p): PartStore => ({
  ...p.ActionRecords,
  ...p.InstanceLeases,
  ...p.Conversations,
  ...p.SessionOwners,
  ...p.InboxQueries,
  ...p.DecisionRequests,
  ...p.ChangeFeed
}))

const T0 = 1_700_000_000_000

const record = (id: string, session = "s1"): PendingRecord => ({
  id,
  session,
  kind: "edit",
  label: `Edit ${id}`,
  sourceToolName: "edit",
  stager: null,
  preview: "--- a/x\n+++ b/x",
  payload: { n: 1 },
  status: "pending",
  attempts: 0,
  owner: null,
  leaseUntil: null,
  createdAt: T0,
  updatedAt: T0,
  expiresAt: null,
  outcome: null
})

/** Runs the suite against `subject`: one `describe` per part, and one for the parts together. */
export const conformance = (subject: ConformanceSubject): void => {
  describe.skipIf(subject.skipReason !== undefined)(`PendingStore conformance: ${subject.name}`, () => {
    const test: PartTest = (title, body) =>
      it.live(title, () => Effect.flatMap(fromParts, body).pipe(Effect.provide(subject.layer())))

    describe("the parts", () => {
      it.live("each part holds exactly its methods; together they are the whole store but fenced and transaction", () =>
        Effect.gen(function*() {
          const all = yield* parts
          const store = yield* PendingStore
          const held: Array<string> = []
          for (const [name, methods] of Object.entries(expectedMethods)) {
            const part = all[name as keyof typeof all] as object
            assert.deepStrictEqual(Object.keys(part).sort(), [...methods], name)
            for (const method of methods) assert.isDefined((part as Record<string, unknown>)[method], name)
            held.push(...methods)
          }
          assert.deepStrictEqual(
            held.sort(),
            Object.keys(store).filter((key) => key !== "fenced" && key !== "transaction").sort()
          )
          assert.strictEqual(new Set(held).size, held.length, "no method is in two parts")
        }).pipe(Effect.provide(subject.layer())))

      it.live("transaction: its writes are committed together; on SQL, a failure rolls them all back", () =>
        Effect.gen(function*() {
          const store = yield* PendingStore
          const both = Effect.zipRight(store.insert(record("t1")), store.insert(record("t2")))
          assert.strictEqual(yield* store.transaction(Effect.as(both, 7)), 7)
          assert.deepStrictEqual((yield* store.getActions(["t1", "t2"])).map((item) => item.record.id).sort(), [
            "t1",
            "t2"
          ])
          const failed = yield* Effect.flip(
            store.transaction(Effect.zipRight(store.insert(record("t3")), Effect.fail("refused" as const)))
          )
          assert.strictEqual(failed, "refused")
          // The memory store has no rollback: each of its writes is atomic on its own.
          assert.strictEqual(Option.isSome(yield* store.get("t3")), subject.name === "memory")
        }).pipe(Effect.provide(subject.layer())))

      it.live("the parts are views on one store: what one writes, the others and PendingStore read", () =>
        Effect.gen(function*() {
          const p = yield* parts
          const store = yield* PendingStore
          const head = yield* p.ChangeFeed.feedHead
          yield* p.ActionRecords.insert(record("a"))
          assert.isTrue(Option.isSome(yield* store.get("a")))
          assert.deepStrictEqual((yield* p.InboxQueries.getActions(["a"])).map((item) => item.record.id), ["a"])
          const decided = yield* p.DecisionRequests.recordDecision({
            id: "dc_parts_1",
            actionId: "a",
            reviewer: "ann",
            action: "apply",
            reason: "Fine.",
            amendment: null,
            now: T0 + 1
          })
          assert.strictEqual(decided._tag, "Recorded")
          assert.strictEqual((yield* store.decisions("a")).length, 1)
          const changes = yield* p.ChangeFeed.feed({ after: head, limit: 100 })
          assert.deepStrictEqual(changes.map((change) => [change.source, change.actionId]), [
            ["journal", "a"],
            ["notes", "a"]
          ])
          yield* p.Conversations.saveConversation("s1", {
            state: "{}",
            from: 0,
            messages: ["m"],
            previous: Option.none()
          })
          assert.deepStrictEqual(yield* store.loadConversation("s1"), Option.some({ state: "{}", messages: ["m"] }))
          yield* p.InstanceLeases.heartbeat({ instance: "i", leaseUntil: T0 + 100, now: T0 })
          assert.strictEqual((yield* store.leases(["i"])).get("i"), T0 + 100)
          // The owner epoch a part hands out fences the whole store.
          const epoch = yield* p.SessionOwners.acquire({ session: "s1", owner: "i", now: T0 })
          yield* p.SessionOwners.acquire({ session: "s1", owner: "j", now: T0 + 1 })
          const refused = yield* Effect.flip(store.fenced({ session: "s1", epoch }).insert(record("b")))
          assert.strictEqual(refused.reason, "fenced")
          assert.isTrue(Option.isNone(yield* p.ActionRecords.get("b")))
        }).pipe(Effect.provide(subject.layer())))

      it.live("PendingStore.layerParts gives the parts of a PendingStore provided alone", () =>
        Effect.gen(function*() {
          const store = yield* PendingStore
          yield* store.insert(record("a"))
          const parted = yield* Effect.provide(
            Effect.flatMap(ActionRecords, (records) => records.get("a")),
            Layer.provide(PendingStore.layerParts, Layer.succeed(PendingStore, store))
          )
          assert.isTrue(Option.isSome(parted))
        }).pipe(Effect.provide(subject.layer())))
    })

    recordsConformance(test)
    inboxConformance(test)
  })
}
