/**
 * What a durable session makes of the records it finds open when it opens (src/services/internal/reconcile.ts), on
 * each store: its kind actions come back pending and forcing, its closures orphaned, a claim a dead process left
 * `resolving` is settled by its kind's `recover` (a closure one is a conflict), and a claim a live process holds is
 * left alone.
 */
import { assert, it } from "@effect/vitest"
import { deepStrictEqual } from "@effect/vitest/utils"
import { Effect, Exit, Layer, Ref, Scope } from "effect"
import { hostname } from "node:os"
import { afterAll } from "vitest"
import {
  ActionKind,
  PendingActionNotPending,
  PendingActions,
  PendingStore,
  ResolveRuntime,
  ResolveTool,
  stage,
  stageKind,
  ToolChoiceQueue,
  ToolResult
} from "../../../src/index.js"
import { tempDir } from "../../stores/subjects.js"
import { postgresForTests } from "../../support/pgTest.js"
import { apply, deadPid, describeEachStore, Note, Notes, open } from "./durableSessions.js"

const pg = await postgresForTests()
const { dir, cleanup } = tempDir()
afterAll(cleanup)

describeEachStore("a durable session reopened", pg, dir, (subject) => {
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
      const closure = yield* first.run(stage({
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
      const closure = yield* first.run(stage({
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

  it.live("a claim whose lease had not passed when the session opened is recovered once it passes, no new start", () =>
    Effect.gen(function*() {
      // A previous owner paused past its instance lease, whose claim's lease runs a little longer: the session opens
      // before the claim may be taken for abandoned. Before 0.4 the action stayed resolving until the next start.
      const store = yield* subject.make()
      const notes = yield* Ref.make<ReadonlyArray<string>>([])
      const first = yield* open(store, "s6", notes)
      const note = yield* first.run(
        stageKind(Note, { text: "paused" }, { label: "Note: paused", sourceToolName: "note" })
      )
      // A live process of this host (not this one): only its lease can tell whether it still runs the claim.
      const elsewhere = `${hostname()}:${process.ppid}:elsewhere`
      yield* first.run(
        Effect.flatMap(
          PendingStore,
          (s) => s.claim({ id: note.id, owner: elsewhere, leaseUntil: Date.now() + 600, now: Date.now() })
        )
      )
      yield* first.close
      const recovered = yield* Ref.make(0)
      const scope = yield* Scope.make()
      const context = yield* Layer.buildWithScope(
        ResolveRuntime.durable({
          session: "s6",
          store,
          kinds: [
            ActionKind.make({ ...Note, recover: () => Effect.as(Ref.update(recovered, (n) => n + 1), "pending") })
          ]
        }).pipe(Layer.provide(Layer.succeed(Notes, notes))),
        scope
      )
      const list = Effect.flatMap(PendingActions, (p) => p.list).pipe(Effect.provide(context))
      deepStrictEqual((yield* list).map((info) => info.status), ["resolving"])
      assert.strictEqual(yield* Ref.get(recovered), 0)
      let statuses: ReadonlyArray<string> = []
      for (let i = 0; i < 60 && statuses[0] !== "pending"; i++) {
        yield* Effect.sleep("50 millis")
        statuses = (yield* list).map((info) => info.status)
      }
      deepStrictEqual(statuses, ["pending"])
      assert.strictEqual(yield* Ref.get(recovered), 1)
      assert.strictEqual(ToolResult.textOf(yield* apply(note.id).pipe(Effect.provide(context))), "noted paused")
      deepStrictEqual(yield* Ref.get(notes), ["paused (ok, attempt 2)"])
      yield* Scope.close(scope, Exit.void)
    }))

  it.live("a recover that cannot tell yet is asked again while the session stays open", () =>
    Effect.gen(function*() {
      const store = yield* subject.make()
      const notes = yield* Ref.make<ReadonlyArray<string>>([])
      const first = yield* open(store, "s7", notes)
      const note = yield* first.run(
        stageKind(Note, { text: "locked" }, { label: "Note: locked", sourceToolName: "note" })
      )
      const dead = `${hostname()}:${deadPid()}:gone`
      yield* first.run(Effect.flatMap(PendingStore, (s) =>
        s.claim({ id: note.id, owner: dead, leaseUntil: Date.now() + 3_600_000, now: Date.now() })))
      yield* first.close
      // The file lock is held the first time (the paused owner still has it), free the second.
      const asked = yield* Ref.make(0)
      const recover = () =>
        Effect.flatMap(
          Ref.updateAndGet(asked, (n) =>
            n + 1),
          (n): Effect.Effect<ActionKind.Recovery, string> =>
            n === 1 ? Effect.fail("the file is still locked") : Effect.succeed("applied")
        )
      const scope = yield* Scope.make()
      const context = yield* Layer.buildWithScope(
        ResolveRuntime.durable({ session: "s7", store, kinds: [ActionKind.make({ ...Note, recover })] }).pipe(
          Layer.provide(Layer.succeed(Notes, notes))
        ),
        scope
      )
      const list = Effect.flatMap(PendingActions, (p) => p.list).pipe(Effect.provide(context))
      deepStrictEqual((yield* list).map((info) => info.status), ["resolving"])
      let statuses: ReadonlyArray<string> = []
      for (let i = 0; i < 80 && statuses[0] !== "applied"; i++) {
        yield* Effect.sleep("50 millis")
        statuses = (yield* list).map((info) => info.status)
      }
      deepStrictEqual(statuses, ["applied"])
      assert.strictEqual(yield* Ref.get(asked), 2)
      yield* Scope.close(scope, Exit.void)
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
})
