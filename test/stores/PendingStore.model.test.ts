/**
 * Model-based test of every PendingStore: random command sequences (insert, claim, settle, transition, stale,
 * list) run against a fresh store and against the state machine written out below as a plain model; every result
 * must agree after every command, and at the end every record and every journal must be equal.
 *
 * Budgets: memory 200 sequences, SQLite 60, Postgres 40 (each SQL sequence builds a fresh database); `LONG=1`
 * multiplies them by 10.
 */
// node's strict deepStrictEqual: chai's treats Option.none() as equal to Option.some(x).
import { describe, it } from "@effect/vitest"
import { Effect, Either, FastCheck as fc, Option } from "effect"
import { deepStrictEqual } from "node:assert/strict"
import { afterAll } from "vitest"
import type { PendingEvent, PendingRecord, PendingStatus } from "../../src/domain/PendingRecord.js"
import { PendingStore } from "../../src/services/PendingStore.js"
import { postgresForTests, postgresSuiteName } from "../support/pgTest.js"
import { subjects, tempDir } from "./subjects.js"

const pg = await postgresForTests()
const tmp = tempDir()
afterAll(() => tmp.cleanup())

const LONG = process.env.LONG !== undefined && process.env.LONG !== "" && process.env.LONG !== "0"
const budget = { memory: 200, sqlite: 60, postgres: 40 } as const

const T0 = 1_700_000_000_000
const ids = ["a", "b", "c"] as const
const owners = ["o1", "o2"] as const
const allStatuses: ReadonlyArray<PendingStatus> = [
  "pending",
  "resolving",
  "applied",
  "discarded",
  "cleared",
  "expired",
  "orphaned",
  "conflict"
]
const terminal: ReadonlyArray<PendingStatus> = ["applied", "discarded", "cleared", "expired"]

type Command =
  | { readonly _tag: "insert"; readonly id: string; readonly session: string; readonly expiresIn: number | null }
  | { readonly _tag: "claim"; readonly id: string; readonly owner: string; readonly lease: number }
  | {
    readonly _tag: "settle"
    readonly id: string
    readonly owner: string
    readonly to: PendingStore.SettleStatus
    readonly outcome: string | null
  }
  | {
    readonly _tag: "transition"
    readonly id: string
    readonly from: ReadonlyArray<PendingStatus>
    readonly to: PendingStatus
    /** undefined: no guard; null: `Option.none()`; a string: `Option.some(owner)`. */
    readonly guard: string | null | undefined
  }
  | { readonly _tag: "stale" }
  | { readonly _tag: "list"; readonly session: string }

/** A command and how far the clock moves before it. */
interface Step {
  readonly dt: number
  readonly command: Command
}

const id = fc.constantFrom(...ids)
const owner = fc.constantFrom(...owners)
const live: ReadonlyArray<PendingStatus> = ["pending", "resolving", "orphaned", "conflict"]
const command: fc.Arbitrary<Command> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.record({
      _tag: fc.constant("insert" as const),
      id,
      session: fc.constantFrom("s1", "s2"),
      expiresIn: fc.option(fc.integer({ min: 0, max: 6 }), { nil: null })
    })
  },
  {
    weight: 3,
    arbitrary: fc.record({ _tag: fc.constant("claim" as const), id, owner, lease: fc.integer({ min: 1, max: 5 }) })
  },
  {
    weight: 2,
    arbitrary: fc.record({
      _tag: fc.constant("settle" as const),
      id,
      owner,
      to: fc.constantFrom<PendingStore.SettleStatus>("applied", "discarded", "pending", "conflict"),
      outcome: fc.option(fc.constantFrom("ok", "Apply failed: x"), { nil: null })
    })
  },
  {
    weight: 3,
    arbitrary: fc.record({
      _tag: fc.constant("transition" as const),
      id,
      // Mostly transitions the store accepts; now and then any statuses (refused ones included).
      from: fc.oneof(
        { weight: 4, arbitrary: fc.uniqueArray(fc.constantFrom(...live), { minLength: 1, maxLength: 2 }) },
        { weight: 1, arbitrary: fc.uniqueArray(fc.constantFrom(...allStatuses), { minLength: 0, maxLength: 3 }) }
      ),
      to: fc.oneof(
        { weight: 4, arbitrary: fc.constantFrom(...allStatuses.filter((s) => s !== "resolving")) },
        { weight: 1, arbitrary: fc.constantFrom(...allStatuses) }
      ),
      guard: fc.oneof(fc.constant(undefined), fc.constant(null), owner)
    })
  },
  { weight: 1, arbitrary: fc.constant({ _tag: "stale" as const }) },
  { weight: 1, arbitrary: fc.record({ _tag: fc.constant("list" as const), session: fc.constantFrom("s1", "s2") }) }
)
const steps = fc.array(fc.record({ dt: fc.integer({ min: 0, max: 3 }), command }), { minLength: 1, maxLength: 30 })

/** The state machine, as plainly as it can be written. */
class Model {
  readonly records = new Map<string, PendingRecord>()
  readonly order: Array<string> = []
  readonly events = new Map<string, Array<PendingEvent>>()

  private log(record: PendingRecord, from: PendingStatus | null, owner: string | null) {
    const list = this.events.get(record.id) ?? []
    list.push({ actionId: record.id, at: record.updatedAt, from, to: record.status, owner, attempt: record.attempts })
    this.events.set(record.id, list)
  }

  private put(before: PendingRecord, after: PendingRecord, owner: string | null) {
    this.records.set(after.id, after)
    this.log(after, before.status, owner)
  }

  insert(record: PendingRecord): "ok" | "duplicate" {
    if (this.records.has(record.id)) return "duplicate"
    this.records.set(record.id, record)
    this.order.push(record.id)
    this.log(record, null, null)
    return "ok"
  }

  claim(id: string, owner: string, leaseUntil: number, now: number): PendingRecord | null {
    const r = this.records.get(id)
    if (r === undefined || r.status !== "pending") return null
    if (r.expiresAt !== null && r.expiresAt <= now) return null
    const after = { ...r, status: "resolving" as const, attempts: r.attempts + 1, owner, leaseUntil, updatedAt: now }
    this.put(r, after, owner)
    return after
  }

  settle(id: string, owner: string, to: PendingStatus, outcome: string | null, now: number): boolean {
    const r = this.records.get(id)
    if (r === undefined || r.status !== "resolving" || r.owner !== owner) return false
    this.put(r, { ...r, status: to, owner: null, leaseUntil: null, updatedAt: now, outcome }, owner)
    return true
  }

  transition(
    id: string,
    from: ReadonlyArray<PendingStatus>,
    to: PendingStatus,
    guard: string | null | undefined,
    now: number
  ): boolean | "refused" {
    if (to === "resolving" || from.length === 0 || from.some((s) => terminal.includes(s) || s === to)) {
      return "refused"
    }
    const r = this.records.get(id)
    if (r === undefined || !from.includes(r.status)) return false
    if (guard !== undefined && r.owner !== guard) return false
    this.put(r, { ...r, status: to, owner: null, leaseUntil: null, updatedAt: now }, r.owner)
    return true
  }

  stale(now: number): Array<string> {
    return this.order
      .map((id) => this.records.get(id)!)
      .filter((r) => r.status === "resolving" && r.leaseUntil! <= now)
      .sort((a, b) => a.leaseUntil! - b.leaseUntil! || this.order.indexOf(a.id) - this.order.indexOf(b.id))
      .map((r) => r.id)
  }

  list(session: string, open = false): Array<string> {
    const settled = ["applied", "discarded", "cleared", "expired"]
    return this.order
      .map((id) => this.records.get(id)!)
      .filter((r) => r.session === session && !(open && settled.includes(r.status)))
      .reverse()
      .sort((a, b) => b.createdAt - a.createdAt)
      .map((r) => r.id)
  }
}

/** Runs the steps against `store` and the model, comparing after every step and at the end. */
const check = (store: PendingStore.Service, run: ReadonlyArray<Step>) =>
  Effect.gen(function*() {
    const model = new Model()
    let now = T0
    for (const [i, { command: c, dt }] of run.entries()) {
      now += dt
      const where = `step ${i}: ${JSON.stringify(c)}`
      switch (c._tag) {
        case "insert": {
          // createdAt steps back now and then, so that list's order is not just the insertion order.
          const createdAt = now - (i % 3)
          const record: PendingRecord = {
            id: c.id,
            session: c.session,
            kind: "edit",
            label: `Edit ${c.id}`,
            sourceToolName: "edit",
            stager: null,
            preview: `preview ${i}`,
            payload: { step: i },
            status: "pending",
            attempts: 0,
            owner: null,
            leaseUntil: null,
            createdAt,
            updatedAt: createdAt,
            expiresAt: c.expiresIn === null ? null : now + c.expiresIn,
            outcome: null
          }
          const result = yield* Effect.either(store.insert(record))
          deepStrictEqual(Either.isRight(result) ? "ok" : "duplicate", model.insert(record), where)
          break
        }
        case "claim": {
          const result = yield* store.claim({ id: c.id, owner: c.owner, leaseUntil: now + c.lease, now })
          deepStrictEqual(Option.getOrNull(result), model.claim(c.id, c.owner, now + c.lease, now), where)
          break
        }
        case "settle": {
          const result = yield* store.settle({
            id: c.id,
            owner: c.owner,
            to: c.to,
            outcome: Option.fromNullable(c.outcome),
            now
          })
          deepStrictEqual(result, model.settle(c.id, c.owner, c.to, c.outcome, now), where)
          break
        }
        case "transition": {
          const result = yield* Effect.either(store.transition({
            id: c.id,
            from: c.from,
            to: c.to,
            ...(c.guard === undefined ? {} : { owner: Option.fromNullable(c.guard) }),
            now
          }))
          deepStrictEqual(
            Either.isRight(result) ? result.right : "refused",
            model.transition(c.id, c.from, c.to, c.guard, now),
            where
          )
          break
        }
        case "stale": {
          deepStrictEqual((yield* store.stale(now)).map((r) => r.id), model.stale(now), where)
          break
        }
        case "list": {
          deepStrictEqual((yield* store.list(c.session)).map((r) => r.id), model.list(c.session), where)
          deepStrictEqual((yield* store.listOpen(c.session)).map((r) => r.id), model.list(c.session, true), where)
          break
        }
      }
    }
    for (const id of ids) {
      deepStrictEqual(Option.getOrNull(yield* store.get(id)), model.records.get(id) ?? null, `record ${id}`)
      deepStrictEqual(yield* store.history(id), model.events.get(id) ?? [], `history of ${id}`)
    }
  })

for (const subject of subjects(tmp.dir, pg)) {
  const name = subject.name === "postgres" ? postgresSuiteName("postgres", pg) : subject.name
  describe.skipIf(subject.skipReason !== undefined)(`PendingStore model: ${name}`, () => {
    it.live("agrees with the state machine on random command sequences", () =>
      Effect.promise(() =>
        fc.assert(
          fc.asyncProperty(steps, (run) =>
            Effect.runPromise(
              Effect.flatMap(PendingStore, (store) => check(store, run)).pipe(Effect.provide(subject.layer()))
            )),
          { numRuns: budget[subject.name] * (LONG ? 10 : 1) }
        )
      ), { timeout: LONG ? 1_800_000 : 120_000 })
  })
}
