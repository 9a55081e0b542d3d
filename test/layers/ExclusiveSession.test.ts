/**
 * Exclusive durable sessions (`layerDurable({ exclusive: true })`, what every cluster runner opens): two "processes"
 * (two runtimes, each on its own client of one SQLite file) open the same session; the second acquires it under a
 * newer owner epoch. The first then writes nothing: its stage is refused, its run stops with `SessionLost` (before
 * any further model request once its lease lapsed), its save never replaces the new owner's conversation, and an
 * edit it was applying when the session moved writes no file byte (the epoch is checked under the file locks, before
 * the first rename); and an edit its previous owner wrote but could not record is recovered as applied before the
 * new owner serves anything.
 */
import { NodeContext, NodePath } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Context, Deferred, Duration, Effect, Exit, Fiber, Layer, Option, Scope } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll } from "vitest"
import { ScriptedModel, TurnDriver } from "../../src/ai.js"
import { FileEditPreview } from "../../src/edit.js"
import {
  isOwnershipLost,
  PendingActions,
  PendingStore,
  PendingStoreError,
  ResolveConfig,
  ResolveRuntime,
  ResolveTool,
  stage,
  ToolChoiceQueue,
  ToolResult
} from "../../src/index.js"
import * as SqliteStore from "../../src/stores/SqliteStore.js"
import { tempDir } from "../stores/subjects.js"
import * as FaultyFileSystem from "../support/FaultyFileSystem.js"
import { Handlers, Tools } from "../support/noteTool.js"

const { cleanup, dir } = tempDir()
afterAll(cleanup)
let files = 0
const SESSION = "exclusive-1"

/** One "process": an exclusive session of `SESSION` on the SQLite file `file` (its own client), in its own scope. */
const open = (file: string, script: ScriptedModel.Script, options: { readonly lease?: Duration.Duration } = {}) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    const layer = Layer.mergeAll(
      TurnDriver.layerOn({ system: "You take notes." }),
      Handlers,
      ScriptedModel.layer(script)
    )
      .pipe(
        Layer.provideMerge(
          ResolveRuntime.layerDurable({
            session: SESSION,
            exclusive: true,
            ...(options.lease ? { lease: options.lease } : {})
          })
        ),
        Layer.provideMerge(SqliteStore.layer({ filename: file })),
        Layer.provideMerge(ResolveConfig.layer({ maxForcedTurns: 2 }))
      )
    const context = yield* (Layer.buildWithScope(layer, scope) as Effect.Effect<
      Context.Context<Layer.Layer.Success<typeof layer>>,
      unknown
    >)
    return {
      run: <A, E>(effect: Effect.Effect<A, E, Layer.Layer.Success<typeof layer>>): Effect.Effect<A, E> =>
        Effect.provide(effect, context) as Effect.Effect<A, E>,
      close: Scope.close(scope, Exit.void)
    }
  })

const drive = (prompt: string, maxTurns = 4) =>
  Effect.flatMap(TurnDriver, (driver) => Effect.either(driver.run(prompt, { toolkit: Tools, maxTurns })))

const requestCount = Effect.map(ScriptedModel.requests, (requests) => requests.length)

describe("exclusive durable sessions", () => {
  it.live("a second owner fences the first: its stage is refused, its run stops with SessionLost, nothing changes", () =>
    Effect.gen(function*() {
      const file = path.join(dir, `fence-${++files}.db`)
      const a = yield* open(file, [ScriptedModel.toolCall("note", { text: "one" }), "Noted.", "Late answer."])
      const ownershipA = yield* a.run(Effect.map(PendingActions, (p) => Option.getOrThrow(p.ownership)))
      yield* a.run(Effect.flatMap(PendingActions, (p) =>
        p.stage({
          label: "first",
          sourceToolName: "note",
          preview: "first",
          apply: () => Effect.succeed(ToolResult.text("first"))
        })))

      const b = yield* open(file, ["B's answer."])
      const ownershipB = yield* b.run(Effect.map(PendingActions, (p) => Option.getOrThrow(p.ownership)))
      assert.isAbove(ownershipB.epoch, ownershipA.epoch)
      const storeView = yield* b.run(PendingStore)
      const before = yield* storeView.list(SESSION)
      const conversationBefore = yield* storeView.loadConversation(SESSION)

      // A's next write is refused, and A knows it lost the session.
      const refused = yield* a.run(Effect.flip(stage({
        label: "late",
        sourceToolName: "note",
        preview: "late",
        apply: () => Effect.succeed(ToolResult.text("late"))
      })))
      assert.isTrue(isOwnershipLost(refused), refused.message)
      assert.strictEqual((refused as PendingStoreError).reason, "fenced")
      const lost = yield* Effect.flip(ownershipA.lost)
      assert.strictEqual(lost.reason, "fenced")

      // Its run stops at once: SessionLost, and no model request.
      const requestsBefore = yield* a.run(requestCount)
      const run = yield* a.run(drive("Take a note"))
      assert.isTrue(run._tag === "Left" && run.left._tag === "SessionLost", JSON.stringify(run))
      assert.strictEqual(yield* a.run(requestCount), requestsBefore)

      // Nothing A did after B opened is in the store.
      assert.deepStrictEqual((yield* storeView.list(SESSION)).map((r) => r.id), before.map((r) => r.id))
      assert.deepStrictEqual(yield* storeView.loadConversation(SESSION), conversationBefore)
      // B goes on as the owner.
      const runB = yield* b.run(drive("Go on"))
      assert.strictEqual(runB._tag, "Right")
      yield* a.close
      yield* b.close
    }))

  it.live("an owner whose lease lapsed stops before its next model request, and never renews the lease", () =>
    Effect.gen(function*() {
      const file = path.join(dir, `lapse-${++files}.db`)
      const a = yield* open(file, ["First answer.", "Never sent."], { lease: Duration.millis(900) })
      assert.strictEqual((yield* a.run(drive("Hello")))._tag, "Right")
      assert.strictEqual(yield* a.run(requestCount), 1)
      const ownership = yield* a.run(Effect.map(PendingActions, (p) => Option.getOrThrow(p.ownership)))
      // As if A was paused past its lease: another process forgot its lease (a heartbeat deletes lapsed ones).
      const store = yield* a.run(PendingStore)
      yield* store.release(ownership.instance)
      // The next renewal (every 300 ms) finds the lease gone: the session is lost, the lease is not taken again.
      const lost = yield* Effect.flip(ownership.lost)
      assert.strictEqual(lost.reason, "leaseLapsed")
      assert.isFalse((yield* store.leases([ownership.instance])).has(ownership.instance))
      const run = yield* a.run(drive("Again"))
      assert.isTrue(run._tag === "Left" && run.left._tag === "SessionLost", JSON.stringify(run))
      assert.strictEqual(yield* a.run(requestCount), 1)
      yield* Effect.sleep("700 millis")
      assert.isFalse((yield* store.leases([ownership.instance])).has(ownership.instance))
      yield* a.close
    }))

  it.live(
    "an apply its previous owner wrote but could not record is recovered before the new owner serves",
    () =>
      Effect.scoped(Effect.gen(function*() {
        const root = fs.mkdtempSync(path.join(dir, "ws-"))
        const target = path.join(root, "f.txt")
        fs.writeFileSync(target, "keep\nchange me\n")
        const file = path.join(dir, `recover-${++files}.db`)
        const session = ResolveRuntime.layerDurable({
          session: SESSION,
          exclusive: true,
          kinds: [FileEditPreview.kind]
        })
          .pipe(
            Layer.provideMerge(FileEditPreview.layer({ root })),
            Layer.provideMerge(SqliteStore.layer({ filename: file })),
            Layer.provideMerge(NodeContext.layer),
            Layer.provideMerge(ResolveConfig.layer({}))
          )
        const edit = (oldText: string, newText: string) =>
          FileEditPreview.tool.execute({ files: [{ path: "f.txt", edits: [{ oldText, newText, replaceAll: null }] }] })
        // The previous owner staged the edit, claimed it, wrote the file, and was stopped before it could settle it
        // (another host's instance, its claim's lease still running: nothing here can tell it is gone).
        const scopeA = yield* Scope.make()
        const a = yield* Layer.buildWithScope(session, scopeA)
        yield* Effect.provide(edit("change me", "changed"), a)
        const store = Context.get(a, PendingStore)
        const [staged] = yield* store.listOpen(SESSION)
        const claimedAt = Date.now()
        const claimed = yield* store.claim({
          id: staged!.id,
          owner: "another-host:4242:0:paused",
          leaseUntil: claimedAt + 1_200,
          now: claimedAt
        })
        assert.isTrue(Option.isSome(claimed))
        fs.writeFileSync(target, "keep\nchanged\n")
        yield* Scope.close(scopeA, Exit.void)

        // The new owner opens: by the time it serves anything, the edit is recorded as applied (it waited out the
        // claim's lease, then looked at the file).
        const b = yield* Layer.buildWithScope(session, yield* Effect.scope)
        assert.isAtLeast(Date.now() - claimedAt, 1_200)
        const storeB = Context.get(b, PendingStore)
        assert.strictEqual(Option.getOrThrow(yield* storeB.get(staged!.id)).status, "applied")
        // Its next edit of the same file builds on it, and leaves it applied (was: left resolving, then recovered
        // after this edit as pending again, its bytes on disk).
        yield* Effect.provide(edit("changed", "changed again"), b)
        yield* Effect.provide(
          Effect.zipRight(
            Effect.flatMap(ToolChoiceQueue, (queue) => queue.nextToolChoice),
            ResolveTool.execute({ action: "apply", reason: "Fine.", extra: null, id: null })
          ),
          b
        )
        yield* Effect.sleep("300 millis")
        assert.strictEqual(fs.readFileSync(target, "utf8"), "keep\nchanged again\n")
        assert.strictEqual(Option.getOrThrow(yield* storeB.get(staged!.id)).status, "applied")
      })),
    15_000
  )

  it.live("an edit being applied when the session moves writes no file byte", () =>
    Effect.scoped(Effect.gen(function*() {
      const root = fs.mkdtempSync(path.join(dir, "ws-"))
      fs.writeFileSync(path.join(root, "f.txt"), "keep\nchange me\n")
      const file = path.join(dir, `edit-${++files}.db`)
      const plan = yield* FaultyFileSystem.makePlan
      const session = (fsLayer: Layer.Layer<any>) =>
        Layer.mergeAll(
          ResolveRuntime.layerDurable({ session: SESSION, exclusive: true, kinds: [FileEditPreview.kind] }),
          FileEditPreview.layer({ root })
        ).pipe(
          Layer.provideMerge(SqliteStore.layer({ filename: file })),
          Layer.provideMerge(Layer.mergeAll(fsLayer, NodePath.layer)),
          Layer.provideMerge(ResolveConfig.layer({}))
        )
      const scopeA = yield* Scope.make()
      const a = yield* Layer.buildWithScope(
        session(FaultyFileSystem.layer(plan).pipe(Layer.provide(NodeContext.layer))),
        scopeA
      )
      yield* Effect.provide(
        FileEditPreview.tool.execute({
          files: [{ path: "f.txt", edits: [{ oldText: "change me", newText: "changed", replaceAll: null }] }]
        }),
        a
      )
      // A resolves apply; its write stops right after the temporary file (before any rename) ...
      const reached = yield* Deferred.make<void>()
      const release = yield* Deferred.make<void>()
      yield* FaultyFileSystem.arm(plan, FaultyFileSystem.block("chmod", 1, { reached, release }))
      const applying = yield* Effect.fork(Effect.provide(
        Effect.gen(function*() {
          const queue = yield* ToolChoiceQueue
          yield* queue.nextToolChoice
          return yield* Effect.exit(
            ResolveTool.execute({ action: "apply", reason: "Looks right.", extra: null, id: null })
          )
        }),
        a
      ))
      yield* Deferred.await(reached)
      // ... and B takes the session over meanwhile.
      const scopeB = yield* Scope.make()
      yield* Layer.buildWithScope(session(NodeContext.layer), scopeB)
      yield* Deferred.succeed(release, void 0)
      const exit = yield* Fiber.join(applying)
      assert.isTrue(Exit.isFailure(exit), "the stale owner's apply must fail")
      assert.strictEqual(fs.readFileSync(path.join(root, "f.txt"), "utf8"), "keep\nchange me\n")
      assert.deepStrictEqual(fs.readdirSync(root).filter((name) => name !== "f.txt"), [])
      yield* Scope.close(scopeA, Exit.void)
      yield* Scope.close(scopeB, Exit.void)
    })))
})
