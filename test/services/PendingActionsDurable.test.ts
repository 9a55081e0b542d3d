/**
 * A durable pending set on each store (memory shared across "restarts", a SQLite file, a Postgres schema): what a
 * session staged comes back when the session is opened again, actions of a registered kind run again, closures are
 * orphaned, and an action a dead process left `resolving` is recovered by its kind.
 */
import { assert, describe, it } from "@effect/vitest"
import { deepStrictEqual } from "@effect/vitest/utils"
import { Context, Deferred, Effect, Exit, Fiber, Layer, Option, Ref, Schema, Scope } from "effect"
import { spawnSync } from "node:child_process"
import { hostname } from "node:os"
import * as path from "node:path"
import { afterAll } from "vitest"
import {
  ActionKind,
  PendingActionNotPending,
  PendingActions,
  PendingStore,
  queueResolveHandler,
  ResolveRuntime,
  ResolveTool,
  stageKind,
  ToolChoiceQueue,
  ToolResult
} from "../../src/index.js"
import type { Retention } from "../../src/services/PendingActions.js"
import { makeMemory } from "../../src/services/PendingStore.js"
import * as PostgresStore from "../../src/stores/PostgresStore.js"
import * as SqliteStore from "../../src/stores/SqliteStore.js"
import { tempDir } from "../stores/subjects.js"
import { postgresForTests, postgresSuiteName } from "../support/pgTest.js"
import { freshSchema } from "../support/postgres.js"

/** Where the "note" kind writes: a service the kind needs, provided to the durable layer. */
class Notes extends Context.Tag("test/Notes")<Notes, Ref.Ref<ReadonlyArray<string>>>() {}

let recovery: ActionKind.Recovery = "applied"

const Note = ActionKind.make({
  name: "note",
  payload: Schema.Struct({ text: Schema.String }),
  apply: ({ text }, call) =>
    Effect.flatMap(
      Notes,
      (notes) =>
        Effect.as(
          Ref.update(notes, (all) => [...all, `${text} (${call.reason}, attempt ${call.attempt})`]),
          ToolResult.text(`noted ${text}`)
        )
    ),
  recover: () => Effect.sync(() => recovery)
})

const pg = await postgresForTests()
const { dir, cleanup } = tempDir()
afterAll(cleanup)

let files = 0

/** Stores that keep their data from one layer build to the next (a "restart"). */
const reopenable: ReadonlyArray<{
  readonly name: string
  readonly skip: string | undefined
  readonly make: () => Effect.Effect<Layer.Layer<PendingStore, unknown>>
}> = [
  {
    name: "memory",
    skip: undefined,
    make: () => Effect.sync(() => Layer.succeed(PendingStore, makeMemory()))
  },
  {
    name: "sqlite",
    skip: undefined,
    make: () =>
      Effect.sync(() => {
        const filename = path.join(dir, `durable-${++files}.db`)
        return SqliteStore.layer({ filename })
      })
  },
  {
    name: "postgres",
    skip: pg._tag === "Available" ? undefined : pg.reason,
    make: () =>
      pg._tag === "Available" ?
        Effect.map(Effect.orDie(freshSchema(pg.url)), (url) => PostgresStore.layer({ url })) :
        Effect.die("no postgres")
  }
]

/** Opens `session` on `store` in `scope` (closing the scope is the process "dying" for the next open). */
const open = (
  store: Layer.Layer<PendingStore, unknown>,
  session: string,
  notes: Ref.Ref<ReadonlyArray<string>>,
  retention?: Retention | "keep-all"
) =>
  Effect.flatMap(Scope.make(), (scope) =>
    Effect.map(
      Layer.buildWithScope(
        ResolveRuntime.durable({ session, store, kinds: [Note], ...(retention === undefined ? {} : { retention }) })
          .pipe(Layer.provide(Layer.succeed(Notes, notes))),
        scope
      ),
      (context) => ({
        run: <A, E>(effect: Effect.Effect<A, E, ResolveRuntime.Services | PendingStore | Notes>) =>
          effect.pipe(Effect.provide(context), Effect.provideService(Notes, notes)),
        close: Scope.close(scope, Exit.void)
      })
    ))

const apply = (id: string | null) => ResolveTool.execute({ action: "apply", reason: "ok", extra: null, id })

/** A pid that is certainly not running: a child that has exited. */
const deadPid = (): number => {
  const child = spawnSync(process.execPath, ["-e", ""])
  return child.pid!
}

for (const subject of reopenable) {
  describe.skipIf(subject.skip !== undefined)(
    subject.name === "postgres"
      ? postgresSuiteName("durable pending set: postgres", pg)
      : `durable pending set: ${subject.name}`,
    () => {
      it.live("a reopened session finds its kind actions pending (forced again) and its closures orphaned", () =>
        Effect.gen(function*() {
          const store = yield* subject.make()
          const notes = yield* Ref.make<ReadonlyArray<string>>([])
          const first = yield* open(store, "s1", notes)
          const note = yield* first.run(stageKind(Note, { text: "hello" }, {
            label: "Note: hello",
            sourceToolName: "note",
            preview: "would note hello"
          }))
          const closure = yield* first.run(queueResolveHandler({
            label: "Edit: a.ts",
            sourceToolName: "edit",
            apply: () => Effect.succeed(ToolResult.text("wrote a.ts"))
          }))
          yield* first.close

          const second = yield* open(store, "s1", notes)
          const listed = yield* second.run(Effect.flatMap(PendingActions, (p) => p.list))
          deepStrictEqual(listed.map((info) => [info.id, info.status, info.preview]), [
            [closure.id, "orphaned", ""],
            [note.id, "pending", "would note hello"]
          ])
          // The kind action forces resolve again; the orphan does not.
          deepStrictEqual(yield* second.run(Effect.flatMap(ToolChoiceQueue, (q) => q.inspect)), ["pending-action:note"])
          // Without an id, the most recent runnable action: the note (the orphan is not pending).
          assert.strictEqual(ToolResult.textOf(yield* second.run(apply(null))), "noted hello")
          deepStrictEqual(yield* Ref.get(notes), ["hello (ok, attempt 1)"])
          // The orphan can be discarded, never applied.
          const refused = yield* Effect.flip(second.run(apply(closure.id)))
          assert.strictEqual((refused as PendingActionNotPending).status, "orphaned")
          assert.include(refused.message, "can only be discarded")
          const discarded = yield* second.run(
            ResolveTool.execute({ action: "discard", reason: "stale", extra: null, id: closure.id })
          )
          assert.strictEqual(ToolResult.textOf(discarded), "Discarded: Edit: a.ts. Reason: stale")
          yield* second.close

          const third = yield* open(store, "s1", notes)
          deepStrictEqual(
            (yield* third.run(Effect.flatMap(PendingActions, (p) => p.list))).map((info) => info.status),
            ["discarded", "applied"]
          )
          deepStrictEqual(yield* third.run(Effect.flatMap(ToolChoiceQueue, (q) => q.inspect)), [])
          yield* third.close
        }))

      it.live("an action a dead process left resolving is recovered by its kind; a closure one is a conflict", () =>
        Effect.gen(function*() {
          const store = yield* subject.make()
          const notes = yield* Ref.make<ReadonlyArray<string>>([])
          const first = yield* open(store, "s2", notes)
          const stageNote = (text: string) =>
            first.run(stageKind(Note, { text }, { label: `Note: ${text}`, sourceToolName: "note" }))
          const applied = yield* stageNote("was applied")
          const notStarted = yield* stageNote("never started")
          const closure = yield* first.run(queueResolveHandler({
            label: "Edit: b.ts",
            sourceToolName: "edit",
            apply: () => Effect.succeed(ToolResult.text("wrote b.ts"))
          }))
          // A process that died mid-apply: its claims are still held, by an owner whose pid is gone.
          const dead = `${hostname()}:${deadPid()}:gone`
          yield* first.run(
            Effect.flatMap(
              PendingStore,
              (s) =>
                Effect.forEach(
                  [applied.id, notStarted.id, closure.id],
                  (id) => s.claim({ id, owner: dead, leaseUntil: Date.now() + 3_600_000, now: Date.now() })
                )
            )
          )
          yield* first.close

          recovery = "applied"
          const verdicts = new Map([[applied.id, "applied" as const], [notStarted.id, "pending" as const]])
          const byId = ActionKind.make({
            ...Note,
            recover: (_payload, record) => Effect.succeed(verdicts.get(record.id)!)
          })
          const scope = yield* Scope.make()
          const context = yield* Layer.buildWithScope(
            ResolveRuntime.durable({ session: "s2", store, kinds: [byId] }).pipe(
              Layer.provide(Layer.succeed(Notes, notes))
            ),
            scope
          )
          const statuses = yield* Effect.flatMap(PendingActions, (p) => p.list).pipe(Effect.provide(context))
          deepStrictEqual(
            new Map(statuses.map((info) => [info.id, info.status])),
            new Map([[closure.id, "conflict"], [notStarted.id, "pending"], [applied.id, "applied"]])
          )
          // The one that never started is pending again and applies once.
          assert.strictEqual(
            ToolResult.textOf(yield* apply(notStarted.id).pipe(Effect.provide(context))),
            "noted never started"
          )
          const conflict = yield* Effect.flip(apply(closure.id).pipe(Effect.provide(context)))
          assert.strictEqual((conflict as PendingActionNotPending).status, "conflict")
          assert.include(conflict.message, "a person must check")
          const journal = yield* Effect.flatMap(PendingStore, (s) => s.history(applied.id)).pipe(
            Effect.provide(context)
          )
          deepStrictEqual(journal.map((e) => [e.from, e.to]), [[null, "pending"], ["pending", "resolving"], [
            "resolving",
            "applied"
          ]])
          yield* Scope.close(scope, Exit.void)
        }))

      it.live("a recover that fails (it cannot tell now) leaves the action resolving; the next start decides", () =>
        Effect.gen(function*() {
          const store = yield* subject.make()
          const notes = yield* Ref.make<ReadonlyArray<string>>([])
          const first = yield* open(store, "s5", notes)
          const note = yield* first.run(
            stageKind(Note, { text: "locked" }, { label: "Note: locked", sourceToolName: "note" })
          )
          const dead = `${hostname()}:${deadPid()}:gone`
          yield* first.run(
            Effect.flatMap(
              PendingStore,
              (s) => s.claim({ id: note.id, owner: dead, leaseUntil: Date.now() + 3_600_000, now: Date.now() })
            )
          )
          yield* first.close
          const reopen = (recover: () => Effect.Effect<ActionKind.Recovery, string>) =>
            Effect.gen(function*() {
              const scope = yield* Scope.make()
              const context = yield* Layer.buildWithScope(
                ResolveRuntime.durable({ session: "s5", store, kinds: [ActionKind.make({ ...Note, recover })] }).pipe(
                  Layer.provide(Layer.succeed(Notes, notes))
                ),
                scope
              )
              const statuses = yield* Effect.flatMap(PendingActions, (p) => p.list).pipe(Effect.provide(context))
              yield* Scope.close(scope, Exit.void)
              return statuses.map((info) => info.status)
            })
          deepStrictEqual(yield* reopen(() => Effect.fail("the file is still locked")), ["resolving"])
          deepStrictEqual(yield* reopen(() => Effect.succeed("pending")), ["pending"])
        }))

      it.live("a claim held by a live process is left alone", () =>
        Effect.gen(function*() {
          const store = yield* subject.make()
          const notes = yield* Ref.make<ReadonlyArray<string>>([])
          const first = yield* open(store, "s3", notes)
          const note = yield* first.run(
            stageKind(Note, { text: "busy" }, { label: "Note: busy", sourceToolName: "note" })
          )
          const alive = `${hostname()}:${process.ppid}:elsewhere`
          yield* first.run(Effect.flatMap(PendingStore, (s) =>
            s.claim({ id: note.id, owner: alive, leaseUntil: Date.now() + 3_600_000, now: Date.now() })))
          yield* first.close
          const second = yield* open(store, "s3", notes)
          deepStrictEqual(
            (yield* second.run(Effect.flatMap(PendingActions, (p) =>
              p.list))).map((info) => info.status),
            ["resolving"]
          )
          const busy = yield* Effect.flip(second.run(apply(note.id)))
          assert.strictEqual((busy as PendingActionNotPending).status, "resolving")
          deepStrictEqual(yield* Ref.get(notes), [])
          yield* second.close
        }))

      it.live("a session that keeps one settled action in memory still lists every record, and knows old ids", () =>
        Effect.gen(function*() {
          const store = yield* subject.make()
          const notes = yield* Ref.make<ReadonlyArray<string>>([])
          const scope = yield* Scope.make()
          const context = yield* Layer.buildWithScope(
            ResolveRuntime.durable({ session: "s5", store, kinds: [Note], retainSettled: 1 }).pipe(
              Layer.provide(Layer.succeed(Notes, notes))
            ),
            scope
          )
          const run = <A, E>(effect: Effect.Effect<A, E, ResolveRuntime.Services | PendingStore | Notes>) =>
            effect.pipe(Effect.provide(context), Effect.provideService(Notes, notes))
          const ids: Array<string> = []
          for (const text of ["one", "two", "three"]) {
            const note = yield* run(stageKind(Note, { text }, { label: `Note: ${text}`, sourceToolName: "note" }))
            yield* run(apply(note.id))
            ids.push(note.id)
          }
          const pending = yield* run(PendingActions)
          deepStrictEqual((yield* pending.list).map((info) => [info.id, info.status]), [
            [ids[2]!, "applied"],
            [ids[1]!, "applied"],
            [ids[0]!, "applied"]
          ])
          deepStrictEqual(
            Option.map(yield* pending.get(ids[0]!), (info) => ({ status: info.status, outcome: info.outcome })),
            Option.some({ status: "applied" as const, outcome: Option.some("noted one") })
          )
          const again = yield* run(Effect.flip(apply(ids[0]!)))
          assert.instanceOf(again, PendingActionNotPending)
          assert.strictEqual((again as PendingActionNotPending).status, "applied")
          deepStrictEqual((yield* Ref.get(notes)).length, 3)
          yield* Scope.close(scope, Exit.void)
        }))

      it.live("what another process resolves is seen here after a refresh: resolving there, then applied", () =>
        Effect.gen(function*() {
          const store = yield* subject.make()
          const notes = yield* Ref.make<ReadonlyArray<string>>([])
          const gate = yield* Deferred.make<void>()
          const Slow = ActionKind.make({
            name: "slow",
            payload: Schema.Struct({ text: Schema.String }),
            apply: ({ text }) => Effect.as(Deferred.await(gate), ToolResult.text(`slow ${text}`))
          })
          const openWithSlow = Effect.fn(function*() {
            const scope = yield* Scope.make()
            const context = yield* Layer.buildWithScope(
              ResolveRuntime.durable({ session: "s6", store, kinds: [Note, Slow] }).pipe(
                Layer.provide(Layer.succeed(Notes, notes))
              ),
              scope
            )
            return {
              run: <A, E>(effect: Effect.Effect<A, E, ResolveRuntime.Services | PendingStore | Notes>) =>
                effect.pipe(Effect.provide(context), Effect.provideService(Notes, notes)),
              close: Scope.close(scope, Exit.void)
            }
          })
          const here = yield* openWithSlow()
          const action = yield* here.run(stageKind(Slow, { text: "x" }, { label: "Slow: x", sourceToolName: "slow" }))
          const there = yield* openWithSlow()
          const applying = yield* Effect.fork(there.run(apply(action.id)))
          const pendingHere = yield* here.run(PendingActions)
          const statusHere = Effect.map(
            Effect.zipRight(pendingHere.refresh, pendingHere.get(action.id)),
            Option.map((info) => info.status)
          )
          // Poll until the other session's claim is visible in the store.
          let seen = yield* statusHere
          for (let i = 0; i < 200 && Option.getOrNull(seen) !== "resolving"; i++) {
            yield* Effect.sleep("5 millis")
            seen = yield* statusHere
          }
          deepStrictEqual(seen, Option.some("resolving" as const))
          const refused = yield* here.run(Effect.flip(apply(action.id)))
          assert.instanceOf(refused, PendingActionNotPending)
          yield* Deferred.succeed(gate, undefined)
          deepStrictEqual(ToolResult.textOf(yield* Fiber.join(applying)), "slow x")
          deepStrictEqual(yield* statusHere, Option.some("applied" as const))
          assert.isFalse(yield* pendingHere.hasPending)
          yield* here.close
          yield* there.close
        }))

      it.live("retention: the store keeps the last keepLast settled records, pruned in the background", () =>
        Effect.gen(function*() {
          const store = yield* subject.make()
          const notes = yield* Ref.make<ReadonlyArray<string>>([])
          const session = yield* open(store, "kept", notes, { keepLast: 3 })
          const settledInStore = session.run(Effect.flatMap(
            PendingStore,
            (s) => Effect.map(s.list("kept"), (all) => all.filter((r) => r.status !== "pending").map((r) => r.id))
          ))
          const ids: Array<string> = []
          for (let i = 0; i < 12; i++) {
            const handle = yield* session.run(stageKind(Note, { text: `n${i}` }, {
              label: `Note ${i}`,
              sourceToolName: "note"
            }))
            ids.push(handle.id)
            if (i < 10) yield* session.run(apply(handle.id))
          }
          // Pruning runs in the background: wait for it (it never holds up a resolve).
          let kept: ReadonlyArray<string> = []
          for (let tries = 0; tries < 100; tries++) {
            kept = yield* settledInStore
            if (kept.length === 3) break
            yield* Effect.sleep("20 millis")
          }
          deepStrictEqual([...kept].sort(), ids.slice(7, 10).sort())
          // The two still pending are kept, and a pruned id is unknown now.
          const listed = yield* session.run(Effect.flatMap(PendingActions, (p) => p.list))
          deepStrictEqual(listed.map((info) => info.status), ["pending", "pending", "applied", "applied", "applied"])
          yield* session.close
          // "keep-all" never prunes; by default the last 10 000 are kept (nothing goes here).
          const all = yield* open(store, "kept", notes, "keep-all")
          yield* all.run(apply(ids[10]!))
          yield* all.run(apply(ids[11]!))
          yield* Effect.sleep("100 millis")
          deepStrictEqual((yield* all.run(Effect.flatMap(PendingActions, (p) => p.list))).length, 5)
          yield* all.close
        }))

      it.live("two sessions of one store racing on one action: it is applied once", () =>
        Effect.gen(function*() {
          const store = yield* subject.make()
          const notes = yield* Ref.make<ReadonlyArray<string>>([])
          const one = yield* open(store, "s4", notes)
          const note = yield* one.run(
            stageKind(Note, { text: "once" }, { label: "Note: once", sourceToolName: "note" })
          )
          const two = yield* open(store, "s4", notes)
          const results = yield* Effect.all([
            one.run(Effect.either(apply(note.id))),
            two.run(Effect.either(apply(note.id)))
          ], {
            concurrency: "unbounded"
          })
          assert.strictEqual(results.filter((r) => r._tag === "Right").length, 1)
          deepStrictEqual(yield* Ref.get(notes), ["once (ok, attempt 1)"])
          yield* one.close
          yield* two.close
        }))
    }
  )
}

describe("durable kinds", () => {
  it.effect("in memory, a kind action runs like a closure and keeps no store", () =>
    Effect.gen(function*() {
      const notes = yield* Notes
      const handle = yield* stageKind(Note, { text: "quick" }, { label: "Note: quick", sourceToolName: "note" })
      assert.isFalse(yield* Effect.map(PendingActions, (p) => p.durable))
      yield* apply(handle.id)
      deepStrictEqual(yield* Ref.get(notes), ["quick (ok, attempt 1)"])
      assert.strictEqual(yield* handle.status, "applied")
      deepStrictEqual(Option.isSome(yield* Effect.flatMap(PendingActions, (p) => p.get(handle.id))), true)
    }).pipe(
      Effect.provide(ResolveRuntime.layer),
      Effect.provideServiceEffect(Notes, Ref.make<ReadonlyArray<string>>([]))
    ))
})
