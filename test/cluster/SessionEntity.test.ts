/**
 * The `Session` entity in one process: its messages (run, steer, decide, list, get) on a durable session, and what it
 * does when the cluster delivers a run again to a new activation (the runner that had it stopped or died): it
 * continues the run without adding the prompt twice, sending exactly the request the first activation would have
 * sent, and answers at once a run that had finished. `Entity.makeTestClient` activates the entity without a cluster
 * (each client is a fresh "runner"; closing its scope stops the session there); the last test runs the whole stack
 * on `SingleRunner` over a SQLite file.
 */
import { Prompt, Tool, Toolkit } from "@effect/ai"
import { Entity, ShardingConfig } from "@effect/cluster"
import { LibsqlClient } from "@effect/sql-libsql"
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Layer, Option, Schema, Scope } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { ScriptedModel } from "../../src/ai.js"
import {
  SessionAgent,
  SessionClient,
  SessionCluster,
  SessionEntity,
  SessionProtocol,
  SteeringJournal
} from "../../src/cluster.js"
import { ActionKind, PendingActions, PendingStore, PendingStoreError, stageKind, ToolResult } from "../../src/index.js"
import { SqlPendingStore } from "../../src/sqlite.js"

/**
 * A durable kind whose apply records its line (applied exactly once: the list shows it once), or the line a person's
 * `amend` gave (its amendment Schema: a trimmed line).
 */
const makeNotes = () => {
  const applied: Array<string> = []
  const extras: Array<unknown> = []
  const Note = ActionKind.make({
    name: "note",
    payload: Schema.Struct({ line: Schema.String }),
    amendment: Schema.Trim,
    apply: ({ line }, call) =>
      Effect.sync(() => {
        const written = Option.getOrElse(call.amendment, () => line)
        applied.push(written)
        extras.push(call.extra)
        return ToolResult.text(`Noted ${written}.`)
      })
  })
  const NoteTool = Tool.make("note", {
    description: "Stage a note; resolve applies it.",
    parameters: { line: Schema.String },
    success: Schema.String,
    failure: PendingStoreError,
    dependencies: [PendingActions]
  })
  const Tools = Toolkit.make(NoteTool)
  const handlers = Tools.toLayer({
    note: ({ line }) =>
      Effect.map(
        stageKind(Note, { line }, { label: `Note: ${line}`, sourceToolName: "note", preview: `+ ${line}` }),
        (handle) => `Preview (id ${handle.id}): + ${line}`
      )
  })
  return { applied, extras, Note, Tools, handlers }
}

type Step = ScriptedModel.ScriptedStep

/**
 * A store whose saves of a session's state can be stopped (`dead`): a runner that dies (SIGKILL) saves nothing more,
 * where an activation stopped in-process would still save its interrupted turn, steering included.
 */
const killable = (
  dead: { value: boolean },
  also: (store: PendingStore.Service) => Partial<PendingStore.Service> = () => ({})
) =>
  Layer.effect(
    PendingStore,
    Effect.map(PendingStore, (store) => {
      const refuse = Effect.fail(new PendingStoreError({ operation: "saveConversation", detail: "the runner died" }))
      const wrap = (s: PendingStore.Service): PendingStore.Service => ({
        ...s,
        saveConversation: (id, save) => dead.value ? refuse : s.saveConversation(id, save),
        saveSession: (id, state) => dead.value ? refuse : s.saveSession(id, state),
        ...also(s),
        fenced: (fence) => wrap(s.fenced(fence))
      })
      return wrap(store)
    })
  ).pipe(Layer.provide(PendingStore.layerMemory))

/** The agent, the shared store and the model's recorder, for a scripted list of answers. */
const setup = (
  steps: ReadonlyArray<Step>,
  dead: { value: boolean } = { value: false },
  also?: (store: PendingStore.Service) => Partial<PendingStore.Service>
) => {
  const notes = makeNotes()
  const model = ScriptedModel.layer(steps)
  const agent = SessionAgent.layer({ toolkit: notes.Tools, kinds: [notes.Note], system: "You take notes." }).pipe(
    Layer.provide(notes.handlers),
    Layer.provideMerge(model)
  )
  return {
    notes,
    layer: Layer.mergeAll(agent, killable(dead, also), SteeringJournal.layerMemory, ShardingConfig.layer())
  }
}

/** A fresh activation of the entity (a "runner"): its client, and the scope that stops it. */
const activate = Effect.gen(function*() {
  const scope = yield* Scope.make()
  const makeClient = yield* Entity.makeTestClient(SessionProtocol.Session, SessionEntity.layer({ logSaves: true }))
    .pipe(
      Scope.extend(scope)
    )
  return { client: (id: string) => makeClient(id).pipe(Scope.extend(scope)), stop: Scope.close(scope, Exit.void) }
})

const resolveCall = (action: "apply" | "discard") =>
  ScriptedModel.toolCall("resolve", { action, reason: "As asked.", extra: null, id: null })

const encode = Schema.encodeSync(Prompt.Prompt)

/** What the model reads of `by`'s apply of `id` with the reason "Reviewed.", whose apply gave `result`. */
const noteOf = (by: string, id: string, result: string) =>
  `A reviewer (${by}) applied ${id}: Reviewed. Result: ${result} Do not resolve ${id} again.`

/** How many of a request's user texts are exactly `text`. */
const count = (texts: ReadonlyArray<string>, text: string) => texts.filter((t) => t === text).length

/** Polls until the model has received `n` requests. */
const requestsReach = (n: number) =>
  Effect.gen(function*() {
    for (;;) {
      const requests = yield* ScriptedModel.requests
      if (requests.length >= n) return requests
      yield* Effect.sleep("10 millis")
    }
  }).pipe(
    Effect.timeoutFail({ duration: "10 seconds", onTimeout: () => new Error(`the model never got ${n} requests`) })
  )

describe("Session entity", () => {
  it.live("a run stopped mid-turn continues on the next activation: the same request, the prompt once", () => {
    const { layer, notes } = setup([
      ScriptedModel.toolCall("note", { line: "a" }),
      ScriptedModel.hang, // the runner stops while the model is answering
      resolveCall("apply"),
      "Done."
    ])
    return Effect.gen(function*() {
      const first = yield* activate
      const session = yield* first.client("s1")
      const running = yield* Effect.fork(session.Run({ runId: "run-1", prompt: "Note a." }))
      const [, stopped] = yield* requestsReach(2)
      yield* first.stop // the entity closes: the shard moved, or the runner stopped
      assert.isTrue(Exit.isInterrupted(yield* Fiber.await(running)))

      const second = yield* activate
      const reply = yield* (yield* second.client("s1")).Run({ runId: "run-1", prompt: "Note a." })
      assert.deepStrictEqual({ text: reply.text, resumed: reply.resumed, turns: reply.turns }, {
        text: "Done.",
        resumed: true,
        turns: 2
      })
      const requests = yield* ScriptedModel.requests
      const resent = requests[2]!
      // Exactly the request the first activation was sending when it stopped.
      assert.deepStrictEqual(encode(resent.prompt), encode(stopped!.prompt))
      assert.deepStrictEqual(resent.toolChoice, stopped!.toolChoice)
      assert.deepStrictEqual(resent.userTexts.filter((text) => text === "Note a."), ["Note a."])
      assert.deepStrictEqual(notes.applied, ["a"])

      // The owner log: two runtime instances, one after the other, the first closed before the second opened.
      const log = yield* Effect.flatMap(PendingStore, (store) => store.sessionLog("s1"))
      const owners = [...new Set(log.map((entry) => entry.owner))]
      assert.lengthOf(owners, 2)
      const firstEvents = log.filter((entry) => entry.owner === owners[0])
      assert.strictEqual(firstEvents[0]!.event, "open")
      assert.strictEqual(firstEvents.at(-1)!.event, "close")
      assert.isTrue(log.findIndex((entry) => entry.owner === owners[1]) > log.indexOf(firstEvents.at(-1)!))
      assert.isAbove(log.filter((entry) => entry.event === "save").length, 1)
      yield* second.stop
    }).pipe(Effect.provide(layer))
  })

  it.live("a run that finished before its reply was sent is answered at once: no request to the model", () => {
    const { layer, notes } = setup([
      ScriptedModel.toolCall("note", { line: "b" }),
      resolveCall("apply"),
      "Noted b."
    ])
    return Effect.gen(function*() {
      const first = yield* activate
      const reply = yield* (yield* first.client("s2")).Run({ runId: "run-2", prompt: "Note b." })
      assert.deepStrictEqual([reply.text, reply.turns, reply.resumed], ["Noted b.", 3, false])
      yield* first.stop
      const second = yield* activate
      const again = yield* (yield* second.client("s2")).Run({ runId: "run-2", prompt: "Note b." })
      assert.deepStrictEqual([again.text, again.turns, again.resumed], ["Noted b.", 0, true])
      assert.lengthOf(yield* ScriptedModel.requests, 3)
      // A new run id is a new run: the prompt is added, the model asked.
      const third = yield* (yield* second.client("s2")).Run({ runId: "run-3", prompt: "Anything else?" }).pipe(
        Effect.flip
      )
      assert.strictEqual(third._tag, "UnknownError") // the script has no 4th answer: the model was asked
      assert.deepStrictEqual(notes.applied, ["b"])
      yield* second.stop
    }).pipe(Effect.provide(layer))
  })

  it.live("a person amends an action: its apply gets the amendment decoded with the kind's Schema", () =>
    Effect.gen(function*() {
      const decided = yield* Deferred.make<void>()
      const { layer, notes } = setup([
        ScriptedModel.toolCall("note", { line: "d" }),
        Effect.as(Deferred.await(decided), resolveCall("apply")),
        "Done."
      ])
      return yield* Effect.gen(function*() {
        const runner = yield* activate
        const session = yield* runner.client("s3a")
        const running = yield* Effect.fork(session.Run({ runId: "run-4a", prompt: "Note d." }))
        yield* requestsReach(2)
        const [action] = (yield* session.List({})).items
        const reply = yield* session.Decide({
          id: action!.id,
          decision: "amend",
          reason: "Louder.",
          by: "alice",
          amendment: "  D!  "
        })
        assert.deepStrictEqual(reply, { id: action!.id, status: "applied", text: "Noted D!.", settledBefore: false })
        yield* Deferred.succeed(decided, void 0)
        yield* Fiber.join(running)
        assert.deepStrictEqual(notes.applied, ["D!"])
        // As in 0.3, the text is also the call's `extra.amendment`.
        assert.deepStrictEqual(notes.extras, [{ amendment: "  D!  " }])
      }).pipe(Effect.provide(layer))
    }))

  it.live("a person decides an action while the run is in progress: applied once, the model told", () =>
    Effect.gen(function*() {
      const decided = yield* Deferred.make<void>()
      const { layer, notes } = setup([
        ScriptedModel.toolCall("note", { line: "c" }),
        Effect.as(Deferred.await(decided), resolveCall("apply")), // the model resolves only after the person did
        "Done."
      ])
      return yield* Effect.gen(function*() {
        const runner = yield* activate
        const session = yield* runner.client("s3")
        const running = yield* Effect.fork(session.Run({ runId: "run-4", prompt: "Note c." }))
        yield* requestsReach(2)
        const page = yield* session.List({})
        const [action] = page.items
        assert.strictEqual(action?.status, "pending")
        const reply = yield* session.Decide({
          id: action!.id,
          decision: "apply",
          reason: "Reviewed.",
          by: "alice"
        })
        assert.deepStrictEqual(reply, { id: action!.id, status: "applied", text: "Noted c.", settledBefore: false })
        yield* Deferred.succeed(decided, void 0)
        const done = yield* Fiber.join(running)
        assert.strictEqual(done.text, "Done.")
        assert.deepStrictEqual(notes.applied, ["c"])
        const requests = yield* ScriptedModel.requests
        assert.include(requests[2]!.userTexts, noteOf("alice", action!.id, "Noted c."))
        // The same decision again (a redelivery): already so. The opposite one: refused, typed.
        const again = yield* session.Decide({
          id: action!.id,
          decision: "apply",
          reason: "Reviewed.",
          by: "alice"
        })
        assert.deepStrictEqual(again, { id: action!.id, status: "applied", text: "Noted c.", settledBefore: true })
        const refused = yield* Effect.flip(
          session.Decide({ id: action!.id, decision: "discard", reason: "No.", by: "bob" })
        )
        assert.strictEqual(refused._tag, "PendingActionNotPending")
        const unknown = yield* Effect.flip(
          session.Decide({ id: "pa_nope", decision: "apply", reason: "Yes.", by: "bob" })
        )
        assert.strictEqual(unknown._tag, "UnknownPendingAction")
        // The decision is stored as every reviewer's is (done, by alice); the refused ones left nothing.
        const store = yield* PendingStore
        const stored = yield* store.decisions(action!.id)
        assert.deepStrictEqual(stored.map((d) => [d.reviewer, d.action, d.state, d.outcome]), [
          ["alice", "apply", "done", "Noted c."]
        ])
        assert.deepStrictEqual(yield* store.decisions("pa_nope"), [])
        const got = yield* session.Get({ id: action!.id })
        assert.strictEqual(Option.map(got, (a) => a.status).pipe(Option.getOrNull), "applied")
        assert.deepStrictEqual(notes.applied, ["c"])
        yield* runner.stop
      }).pipe(Effect.provide(layer))
    }))

  it.live("a decision the store cannot record with the settle is recorded after it, before the answer; the model hears it once", () =>
    Effect.gen(function*() {
      const decided = yield* Deferred.make<void>()
      // The statement that settles the action and records the decision fails once (nothing of it is stored).
      let failures = 0
      const { layer, notes } = setup(
        [
          ScriptedModel.toolCall("note", { line: "k" }),
          Effect.as(Deferred.await(decided), resolveCall("apply")),
          "Done."
        ],
        { value: false },
        (store) => ({
          recordDone: (decision, settle) =>
            settle !== undefined && failures++ === 0 ?
              Effect.fail(new PendingStoreError({ operation: "recordDone", detail: "down once" })) :
              store.recordDone(decision, settle)
        })
      )
      return yield* Effect.gen(function*() {
        const runner = yield* activate
        const session = yield* runner.client("s10")
        const running = yield* Effect.fork(session.Run({ runId: "run-12", prompt: "Note k." }))
        yield* requestsReach(2)
        const [action] = (yield* session.List({})).items
        const reply = yield* session.Decide({ id: action!.id, decision: "apply", reason: "Reviewed.", by: "alice" })
        assert.deepStrictEqual(reply, { id: action!.id, status: "applied", text: "Noted k.", settledBefore: false })
        assert.strictEqual(failures, 1)
        // Recorded before the answer: a runner that died now would leave it for the next owner to tell.
        const stored = yield* Effect.flatMap(PendingStore, (store) => store.decisions(action!.id))
        assert.deepStrictEqual(stored.map((d) => [d.state, d.outcome]), [["done", "Noted k."]])
        yield* Deferred.succeed(decided, void 0)
        assert.strictEqual((yield* Fiber.join(running)).text, "Done.")
        const texts = (yield* ScriptedModel.requests)[2]!.userTexts
        assert.strictEqual(count(texts, noteOf("alice", action!.id, "Noted k.")), 1, JSON.stringify(texts))
        assert.deepStrictEqual(notes.applied, ["k"])
        yield* runner.stop
      }).pipe(Effect.provide(layer))
    }))

  it.live("a second runner given the session while the first still runs it waits until the first closed it", () => {
    const { layer } = setup([ScriptedModel.hang, "Done."])
    return Effect.gen(function*() {
      const first = yield* activate
      const running = yield* Effect.fork((yield* first.client("s6")).Run({ runId: "run-7", prompt: "Wait." }))
      yield* requestsReach(1)
      // The cluster erred: another runner gets a message for the session while the first has not stopped it.
      const second = yield* activate
      const reading = yield* Effect.fork((yield* second.client("s6")).Get({ id: "pa_x" }))
      yield* Effect.sleep("300 millis")
      assert.isNull(reading.unsafePoll(), "the second runner opened the session while the first ran it")
      yield* first.stop
      assert.isTrue(Option.isNone(yield* Fiber.join(reading)))
      assert.isTrue(Exit.isInterrupted(yield* Fiber.await(running)))
      const log = yield* Effect.flatMap(PendingStore, (store) => store.sessionLog("s6"))
      assert.deepStrictEqual(log.map((entry) => entry.event).filter((event) => event !== "save"), [
        "open",
        "close",
        "open"
      ])
      yield* second.stop
    }).pipe(Effect.provide(layer))
  })

  it.live("a steered message goes with the next request", () => {
    const { layer } = setup(["Will do."])
    return Effect.gen(function*() {
      const runner = yield* activate
      const session = yield* runner.client("s4")
      yield* session.Steer({ steerId: "st-1", text: "Use tabs, not spaces." })
      yield* session.Run({ runId: "run-5", prompt: "Format the file." })
      const [request] = yield* ScriptedModel.requests
      assert.deepStrictEqual(request!.userTexts, ["Format the file.", "Use tabs, not spaces."])
      yield* runner.stop
    }).pipe(Effect.provide(layer))
  })
})

describe("Session entity: steering and decision notes are durable at once", () => {
  it.live("a steer and a decision note sent just before the runner stops reach the next owner's next request, once", () => {
    const dead = { value: false }
    const { layer, notes } = setup([
      ScriptedModel.toolCall("note", { line: "e" }),
      ScriptedModel.hang, // the runner dies while the model is answering: nothing is saved after the steers
      "Done.",
      "Nothing else."
    ], dead)
    const steer = "Use tabs, not spaces."
    return Effect.gen(function*() {
      const first = yield* activate
      const session = yield* first.client("s7")
      const running = yield* Effect.fork(session.Run({ runId: "run-8", prompt: "Note e." }))
      yield* requestsReach(2)
      const [action] = (yield* session.List({})).items
      // Each answers once the message is recorded; the same steer sent again (the cluster redelivers a persisted
      // message whose reply was lost) is the same message.
      yield* session.Steer({ steerId: "st-7", text: steer })
      yield* session.Steer({ steerId: "st-7", text: steer })
      const decided = yield* session.Decide({ id: action!.id, decision: "apply", reason: "Reviewed.", by: "alice" })
      assert.isFalse(decided.settledBefore)
      const note = noteOf("alice", action!.id, "Noted e.")
      dead.value = true
      yield* first.stop // the runner dies: its steering bus is gone, and it saves nothing more
      dead.value = false
      assert.isTrue(Exit.isInterrupted(yield* Fiber.await(running)))

      const second = yield* activate
      const again = yield* second.client("s7")
      // The cluster delivers the run again to the new owner: its first request carries the steer and the note.
      const reply = yield* again.Run({ runId: "run-8", prompt: "Note e." })
      assert.strictEqual(reply.text, "Done.")
      const requests = yield* ScriptedModel.requests
      const next = requests[2]!.userTexts
      assert.strictEqual(count(next, steer), 1, `the steer in the new owner's first request: ${JSON.stringify(next)}`)
      assert.strictEqual(count(next, note), 1, `the decision note in it: ${JSON.stringify(next)}`)
      // The cluster delivers the steer again (its reply was never stored), the person's client the decision (it was
      // never answered): neither is sent to the model again.
      yield* again.Steer({ steerId: "st-7", text: steer })
      const redecided = yield* again.Decide({ id: action!.id, decision: "apply", reason: "Reviewed.", by: "alice" })
      assert.isTrue(redecided.settledBefore)
      // Delivered once: the next run's request holds each once (in the history), not again as steering.
      yield* again.Run({ runId: "run-9", prompt: "Anything else?" })
      const last = (yield* ScriptedModel.requests)[3]!.userTexts
      assert.deepStrictEqual([count(last, steer), count(last, note)], [1, 1])
      assert.deepStrictEqual(notes.applied, ["e"])
      // The journal has nothing left to deliver.
      assert.deepStrictEqual(yield* Effect.flatMap(SteeringJournal, (journal) => journal.undelivered("s7")), [])
      yield* second.stop
    }).pipe(Effect.provide(layer))
  })

  it.live("a steer the journal cannot record fails, typed, and is not sent", () => {
    const { layer } = setup(["Will do."])
    const failing = Layer.succeed(SteeringJournal, {
      ...SteeringJournal.makeMemory(),
      record: () => Effect.fail(new PendingStoreError({ operation: "SteeringJournal.record", detail: "down" }))
    })
    return Effect.gen(function*() {
      const runner = yield* activate
      const session = yield* runner.client("s8")
      const error = yield* Effect.flip(session.Steer({ steerId: "st-8", text: "Lost?" }))
      assert.strictEqual(error._tag, "PendingStoreError")
      yield* session.Run({ runId: "run-10", prompt: "Go." })
      assert.deepStrictEqual((yield* ScriptedModel.requests)[0]!.userTexts, ["Go."])
      yield* runner.stop
    }).pipe(Effect.provide(Layer.merge(layer, failing)))
  })
})

describe("SessionCluster.layerSingle (one process, SQLite file)", () => {
  it.live("runs a session through SessionClient; the same run id twice is one run", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "effect-resolve-single-"))
    const notes = makeNotes()
    const model = ScriptedModel.layer([ScriptedModel.toolCall("note", { line: "d" }), resolveCall("apply"), "Done."])
    const agent = SessionAgent.layer({ toolkit: notes.Tools, kinds: [notes.Note] }).pipe(
      Layer.provide(notes.handlers),
      Layer.provideMerge(model)
    )
    // libsql must return integers as bigint (intMode "bigint"), as the cluster's message storage reads its 64-bit ids.
    const store = SqlPendingStore.layer.pipe(
      Layer.provideMerge(LibsqlClient.layer({ url: `file:${path.join(dir, "app.db")}`, intMode: "bigint" }))
    )
    const single = SessionCluster.layerSingle({ sharding: { entityMessagePollInterval: "200 millis" } }).pipe(
      Layer.provideMerge(agent),
      Layer.provideMerge(store)
    )
    return Effect.gen(function*() {
      const sessions = yield* SessionClient
      const reply = yield* sessions.run("s5", "Note d.", { runId: "run-6" })
      assert.deepStrictEqual([reply.text, reply.turns, reply.open], ["Done.", 3, []])
      const again = yield* sessions.run("s5", "Note d.", { runId: "run-6" })
      assert.deepStrictEqual(again, reply)
      assert.lengthOf(yield* ScriptedModel.requests, 3)
      const page = yield* sessions.list("s5")
      assert.deepStrictEqual(page.items.map((action) => [action.label, action.status]), [["Note: d", "applied"]])
      assert.isTrue(Option.isNone(yield* sessions.get("s5", "pa_unknown")))
      assert.deepStrictEqual(notes.applied, ["d"])
    }).pipe(
      Effect.provide(single),
      Effect.ensuring(Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true })))
    )
  }, 60_000)
})
