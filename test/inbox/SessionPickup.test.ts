/**
 * A reviewer's decision, on the agent session's side (`src/agent/internal/decisions.ts`, through the public
 * `TurnDriver` and a real inbox server on 127.0.0.1 over a SQLite file): the session's live owner runs a decision
 * only it can run on its next turn; whoever ran it, the model's next request says "A reviewer (ann) applied pa_…:
 * reason" with what the reviewer changed, and the forcing for that action ends.
 */
import { Tool, Toolkit } from "@effect/ai"
import { afterEach, assert, beforeEach, describe, it } from "@effect/vitest"
import { Effect, Exit, Fiber, Layer, Option, Ref, Schema, Scope } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as ScriptedModel from "../../src/agent/ScriptedModel.js"
import { TurnDriver } from "../../src/agent/TurnDriver.js"
import {
  PendingActions,
  PendingStore,
  PendingStoreError,
  Preview,
  ResolveConfig,
  ResolveRuntime,
  stage,
  stageKind,
  ToolResult
} from "../../src/index.js"
import * as SqliteStore from "../../src/stores/SqliteStore.js"
import { noteKind, post, type Running, startInbox, tokens } from "../support/inbox.js"

let dir: string
let file: string
let log: string
let running: Running

beforeEach(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "effect-resolve-pickup-"))
  file = path.join(dir, "pending.db")
  log = path.join(dir, "notes.log")
  fs.writeFileSync(log, "")
  // The inbox registers the note kind; a closure is only its stager's to run.
  running = await startInbox({ store: SqliteStore.layer({ filename: file }), kinds: [noteKind(log)] })
})
afterEach(async () => {
  await running.close()
  fs.rmSync(dir, { recursive: true, force: true })
})

const Write = Tool.make("write", {
  parameters: { file: Schema.String, text: Schema.String },
  success: Schema.String,
  failure: PendingStoreError,
  dependencies: [PendingActions]
})
const Note = Tool.make("note", {
  parameters: { text: Schema.String },
  success: Schema.String,
  failure: PendingStoreError,
  dependencies: [PendingActions]
})
const Tools = Toolkit.make(Write, Note)

/**
 * The SQLite store on the test's file, noting in `reads` each decision it hands out (as `method id`) through the
 * three reads a session has of decisions.
 */
const countingStore = (reads: Array<string>) => {
  const store = Layer.effect(
    PendingStore,
    Effect.map(PendingStore, (inner) => {
      const note = (method: string, decisions: ReadonlyArray<{ readonly actionId: string }>) =>
        Effect.sync(() => decisions.forEach((decision) => reads.push(`${method} ${decision.actionId}`)))
      return PendingStore.of({
        ...inner,
        decisions: (actionId) => Effect.tap(inner.decisions(actionId), (found) => note("decisions", found)),
        getDecision: (id) => Effect.tap(inner.getDecision(id), (found) => note("getDecision", Option.toArray(found))),
        requestedDecisions: (query) =>
          Effect.tap(
            inner.requestedDecisions(query),
            (found) => note("requestedDecisions", found.map((item) => item.decision))
          )
      })
    })
  ).pipe(Layer.provide(SqliteStore.layer({ filename: file })))
  return PendingStore.layerParts.pipe(Layer.provideMerge(store))
}

/** An agent session on the SQLite file (a session of its own runtime, as an agent process has). */
const openSession = (
  script: ScriptedModel.Script,
  written: Ref.Ref<Record<string, string>>,
  store: Layer.Layer<PendingStore | PendingStore.Parts, PendingStoreError> = SqliteStore.layer({ filename: file })
) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    const handlers = Tools.toLayer({
      write: ({ file, text }) =>
        Effect.map(
          stage({
            label: `Write ${file}`,
            sourceToolName: "write",
            apply: () =>
              Effect.as(
                Preview.commit(Ref.update(written, (all) => ({ ...all, [file]: text }))),
                ToolResult.text(`Wrote ${file}`)
              )
          }),
          (handle) => `Preview ${handle.id}: ${file} would become ${text}`
        ),
      note: ({ text }) =>
        Effect.map(
          stageKind(noteKind(log), { text }, { label: `Note: ${text}`, sourceToolName: "note", preview: `+ ${text}` }),
          (handle) => `Preview ${handle.id}: note ${text}`
        )
    })
    const layer = Layer.mergeAll(TurnDriver.layerWithoutDependencies({}), handlers, ScriptedModel.layer(script)).pipe(
      Layer.provideMerge(ResolveRuntime.layerDurable({ session: "agent", kinds: [noteKind(log)] })),
      Layer.provideMerge(store),
      Layer.provideMerge(ResolveConfig.layer({ enforcement: "force" }))
    )
    const context = yield* Layer.buildWithScope(layer, scope)
    return {
      run: <A, E>(effect: Effect.Effect<A, E, Layer.Layer.Success<typeof layer>>) => Effect.provide(effect, context),
      close: Scope.close(scope, Exit.void)
    }
  })

const drive = (prompt: string, maxTurns?: number) =>
  Effect.flatMap(TurnDriver, (driver) => Effect.either(driver.run(prompt, { toolkit: Tools, maxTurns })))

/** The ids of the session's open actions. */
const openIds = Effect.flatMap(PendingActions, (pending) => pending.listOpen).pipe(
  Effect.map((open) => open.map((info) => info.id))
)

describe("a reviewer's decision, on the session's side", () => {
  it.live("a closure only the session can run: its next turn applies it, tells the model, and stops forcing", () =>
    Effect.gen(function*() {
      const written = yield* Ref.make<Record<string, string>>({})
      const session = yield* openSession(
        [ScriptedModel.toolCall("write", { file: "a.ts", text: "hello" }), "Done."],
        written
      )
      // Turn 1 stages the preview; the run stops there (as a user's turn ends).
      assert.strictEqual((yield* session.run(drive("Say hello in a.ts", 1)))._tag, "Left")
      const [id] = yield* session.run(openIds)
      assert.isString(id)

      const answer = yield* Effect.promise(() =>
        post(running, `/api/actions/${id}/decision`, tokens.owner, { action: "apply", reason: "Looks right." })
      )
      assert.strictEqual(answer.status, 200, answer.text)
      assert.strictEqual(answer.json.outcome, "requested", "the inbox cannot run a closure")
      assert.deepStrictEqual(yield* Ref.get(written), {})

      const finished = yield* session.run(drive("Continue."))
      assert.strictEqual(finished._tag, "Right")
      assert.deepStrictEqual(yield* Ref.get(written), { "a.ts": "hello" })
      const requests = yield* session.run(ScriptedModel.requests)
      const next = requests.at(-1)!
      const told = next.userTexts.filter((t) => t.startsWith("A reviewer"))
      assert.deepStrictEqual(told, [
        `A reviewer (ann) applied ${id}: Looks right. Result: Wrote a.ts. Do not resolve ${id} again.`
      ])
      assert.isFalse(ScriptedModel.isForced(next), "the forcing for the action ended")
      const record = Option.getOrThrow(yield* Effect.promise(() => Effect.runPromise(running.store.get(id!))))
      assert.strictEqual(record.status, "applied")
      const [decision] = yield* Effect.promise(() => Effect.runPromise(running.store.decisions(id!)))
      assert.deepStrictEqual([decision!.state, decision!.settledBy], ["done", "session:agent"])
      assert.strictEqual(requests.length, 2, "one request for each turn: nothing forced resolve again")
      yield* session.close
    }))

  it.live("a kind the inbox runs, amended: the model's next request says what the reviewer changed, once", () =>
    Effect.gen(function*() {
      const written = yield* Ref.make<Record<string, string>>({})
      const session = yield* openSession(
        [ScriptedModel.toolCall("note", { text: "as staged" }), "Done.", "Still done."],
        written
      )
      assert.strictEqual((yield* session.run(drive("Take a note", 1)))._tag, "Left")
      const [id] = yield* session.run(openIds)

      const answer = yield* Effect.promise(() =>
        post(running, `/api/actions/${id}/decision`, tokens.owner, {
          action: "apply",
          reason: "Better wording.",
          amendment: { text: "as amended" }
        })
      )
      assert.strictEqual(answer.status, 200, answer.text)
      assert.strictEqual(answer.json.outcome, "applied", "the inbox registers the kind: it ran it")
      assert.strictEqual(fs.readFileSync(log, "utf8"), "as amended\n")

      assert.strictEqual((yield* session.run(drive("Continue.")))._tag, "Right")
      const next = (yield* session.run(ScriptedModel.requests)).at(-1)!
      assert.deepStrictEqual(next.userTexts.filter((t) => t.startsWith("A reviewer")), [
        `A reviewer (ann) applied ${id}: Before applying, the reviewer changed it to: ` +
        `{"text":"as amended"}. Result: Noted as amended (Better wording.). Do not resolve ${id} again.`
      ])
      assert.isFalse(ScriptedModel.isForced(next))
      // Told once: a later turn does not repeat it.
      assert.strictEqual((yield* session.run(drive("And now?")))._tag, "Right")
      const last = (yield* session.run(ScriptedModel.requests)).at(-1)!
      assert.strictEqual(last.userTexts.filter((t) => t.startsWith("A reviewer")).length, 1)
      assert.strictEqual(fs.readFileSync(log, "utf8"), "as amended\n", "applied once")
      yield* session.close
    }))

  it.live("a reviewer's reason on its way to the model: the owner reads the decision once, the request says it once", () =>
    Effect.gen(function*() {
      const written = yield* Ref.make<Record<string, string>>({})
      const reads: Array<string> = []
      const session = yield* openSession(
        [ScriptedModel.toolCall("note", { text: "first draft" }), "Done.", "Still done."],
        written,
        countingStore(reads)
      )
      assert.strictEqual((yield* session.run(drive("Take a note", 1)))._tag, "Left")
      const [id] = yield* session.run(openIds)
      const reason = "Reads well; ship it."
      const answer = yield* Effect.promise(() =>
        post(running, `/api/actions/${id}/decision`, tokens.owner, { action: "apply", reason })
      )
      assert.strictEqual(answer.json.outcome, "applied", answer.text)
      assert.deepStrictEqual(reads, [], "nothing of the decision read before the session's next turn")

      assert.strictEqual((yield* session.run(drive("Continue.")))._tag, "Right")
      // The owner's only read of it: the stored decision, once; the inbox ran it, so none is requested.
      assert.deepStrictEqual(reads, [`decisions ${id}`])
      const next = (yield* session.run(ScriptedModel.requests)).at(-1)!
      const occurrences = (text: string) => text.split(reason).length - 1
      assert.strictEqual(occurrences(JSON.stringify(next.prompt)), 1, "the reason, once in the whole request")
      assert.deepStrictEqual(next.userTexts.filter((text) => occurrences(text) > 0), [
        `A reviewer (ann) applied ${id}: Result: Noted first draft (${reason}). Do not resolve ${id} again.`
      ])
      // Told: a later turn neither reads it again nor repeats it.
      assert.strictEqual((yield* session.run(drive("And now?")))._tag, "Right")
      assert.deepStrictEqual(reads, [`decisions ${id}`])
      const last = (yield* session.run(ScriptedModel.requests)).at(-1)!
      assert.strictEqual(occurrences(JSON.stringify(last.prompt)), 1)
      yield* session.close
    }))

  it.live("a decision made while no process ran the session: the resumed session's first request says so, once", () =>
    Effect.gen(function*() {
      const written = yield* Ref.make<Record<string, string>>({})
      const first = yield* openSession([ScriptedModel.toolCall("note", { text: "while away" })], written)
      assert.strictEqual((yield* first.run(drive("Take a note", 1)))._tag, "Left")
      const [id] = yield* first.run(openIds)
      yield* first.close
      // The agent's process is gone; a reviewer decides in the inbox, which runs the kind.
      const answer = yield* Effect.promise(() =>
        post(running, `/api/actions/${id}/decision`, tokens.owner, { action: "apply", reason: "Fine." })
      )
      assert.strictEqual(answer.json.outcome, "applied", answer.text)
      const resumed = yield* openSession(["Done.", "Still done."], written)
      assert.strictEqual((yield* resumed.run(drive("Continue.")))._tag, "Right")
      const said = (request: ScriptedModel.ScriptedRequest | undefined) =>
        request!.userTexts.filter((t) => t.startsWith(`A reviewer (ann) applied ${id}:`))
      const [next] = yield* resumed.run(ScriptedModel.requests)
      assert.deepStrictEqual(said(next), [
        `A reviewer (ann) applied ${id}: Result: Noted while away (Fine.). Do not resolve ${id} again.`
      ])
      // Once: the next run's request holds it in the history only.
      assert.strictEqual((yield* resumed.run(drive("And now?")))._tag, "Right")
      assert.strictEqual(said((yield* resumed.run(ScriptedModel.requests)).at(-1)).length, 1)
      yield* resumed.close
    }))

  it.live("an idle owner waits for the reviewer: awaitDecision returns when the inbox records the decision", () =>
    Effect.gen(function*() {
      const written = yield* Ref.make<Record<string, string>>({})
      const session = yield* openSession(
        [ScriptedModel.toolCall("write", { file: "b.ts", text: "bye" }), "Done.", "Still done."],
        written
      )
      // Nothing waits yet: nothing to wait for.
      assert.deepStrictEqual(yield* session.run(Effect.flatMap(TurnDriver, (driver) => driver.awaitDecision)), [])
      assert.strictEqual((yield* session.run(drive("Say bye in b.ts", 1)))._tag, "Left")
      const [id] = yield* session.run(openIds)
      const waiting = yield* Effect.fork(session.run(Effect.flatMap(TurnDriver, (driver) => driver.awaitDecision)))
      // A preview waits, and nobody decided: it keeps waiting (past a sweep), and changed nothing.
      yield* Effect.sleep("1200 millis")
      assert.isTrue(Option.isNone(yield* Fiber.poll(waiting)), "it waits while nobody decided")
      // Another process's inbox (its own store layer on the file) records the decision: the owner wakes.
      const answer = yield* Effect.promise(() =>
        post(running, `/api/actions/${id}/decision`, tokens.owner, { action: "apply", reason: "Fine." })
      )
      assert.strictEqual(answer.status, 200, answer.text)
      assert.deepStrictEqual(yield* Fiber.join(waiting), [id!])
      // Decided already: at once.
      assert.deepStrictEqual(yield* session.run(Effect.flatMap(TurnDriver, (driver) => driver.awaitDecision)), [id!])
      // The next run runs it and tells the model; then nothing waits.
      assert.strictEqual((yield* session.run(drive("Continue.")))._tag, "Right")
      assert.deepStrictEqual(yield* Ref.get(written), { "b.ts": "bye" })
      const next = (yield* session.run(ScriptedModel.requests)).at(-1)!
      assert.deepStrictEqual(next.userTexts.filter((t) => t.startsWith("A reviewer")), [
        `A reviewer (ann) applied ${id}: Fine. Result: Wrote b.ts. Do not resolve ${id} again.`
      ])
      assert.deepStrictEqual(yield* session.run(Effect.flatMap(TurnDriver, (driver) => driver.awaitDecision)), [])
      yield* session.close
    }))

  it.live("a response: the idle owner wakes, the model reads it once in its next request, the action stays pending", () =>
    Effect.gen(function*() {
      const written = yield* Ref.make<Record<string, string>>({})
      const session = yield* openSession(
        [ScriptedModel.toolCall("write", { file: "c.ts", text: "v1" }), "Noted.", "Still here.", "Again."],
        written
      )
      assert.strictEqual((yield* session.run(drive("Write c.ts", 1)))._tag, "Left")
      const [id] = yield* session.run(openIds)
      const waiting = yield* Effect.fork(session.run(Effect.flatMap(TurnDriver, (driver) => driver.awaitDecision)))
      const answer = yield* Effect.promise(() =>
        post(running, `/api/actions/${id}/decision`, tokens.owner, {
          action: "respond",
          message: "Write v2 instead\u0000 please"
        })
      )
      assert.strictEqual(answer.status, 200, answer.text)
      assert.strictEqual(answer.json.outcome, "responded")
      assert.strictEqual(answer.json.action.status, "pending")
      assert.deepStrictEqual(yield* Fiber.join(waiting), [id!])
      const responses = () => Effect.promise(() => Effect.runPromise(running.store.responses(id!)))
      assert.deepStrictEqual((yield* responses()).map((r) => r.deliveredAt), [null])

      yield* session.run(drive("Continue.", 1))
      const next = (yield* session.run(ScriptedModel.requests)).at(-1)!
      assert.deepStrictEqual(next.userTexts.filter((t) => t.startsWith("A reviewer")), [
        `A reviewer (ann) responded about ${id}, which stays pending: Write v2 instead\u0000 please. Nothing was ` +
        `applied or discarded. Take it into account: stage a new preview, or resolve ${id} yourself.`
      ])
      // Nothing was decided: the action waits, and nothing was written.
      assert.deepStrictEqual(yield* session.run(openIds), [id!])
      assert.deepStrictEqual(yield* Ref.get(written), {})
      // The save after the request marked it delivered: read once; nothing wakes the owner for it again.
      assert.isNotNull((yield* responses())[0]!.deliveredAt)
      yield* session.run(drive("And now?", 1))
      const last = (yield* session.run(ScriptedModel.requests)).at(-1)!
      assert.strictEqual(last.userTexts.filter((t) => t.includes("responded about")).length, 1, "told once")
      const again = yield* session.run(
        Effect.flatMap(TurnDriver, (driver) => Effect.timeout(driver.awaitDecision, "300 millis"))
      ).pipe(Effect.option)
      assert.isTrue(Option.isNone(again), "a delivered response does not wake the owner")
      yield* session.close
    }))

  it.live("awaitDecision wakes for an action another process settled, and can be interrupted", () =>
    Effect.gen(function*() {
      const written = yield* Ref.make<Record<string, string>>({})
      const session = yield* openSession([ScriptedModel.toolCall("note", { text: "n" }), "Done."], written)
      assert.strictEqual((yield* session.run(drive("Take a note", 1)))._tag, "Left")
      const [id] = yield* session.run(openIds)
      const awaited = session.run(Effect.flatMap(TurnDriver, (driver) => driver.awaitDecision))
      // Raced with a timeout: it ends, having written nothing.
      const before = yield* Effect.promise(() => Effect.runPromise(running.store.list("agent")))
      assert.isTrue(Option.isNone(yield* Effect.timeoutOption(awaited, "300 millis")))
      assert.deepStrictEqual(yield* Effect.promise(() => Effect.runPromise(running.store.list("agent"))), before)
      const waiting = yield* Effect.fork(awaited)
      // The inbox runs the note kind itself: the action is settled, no decision stays requested.
      const answer = yield* Effect.promise(() =>
        post(running, `/api/actions/${id}/decision`, tokens.owner, { action: "discard", reason: "Not needed." })
      )
      assert.strictEqual(answer.json.outcome, "discarded", answer.text)
      assert.deepStrictEqual(yield* Fiber.join(waiting), [id!])
      yield* session.close
    }))
})
