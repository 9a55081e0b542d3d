/**
 * An approval inbox that holds a kind's contract only (`ActionKind.contract`: no requirements, no handlers): it lists
 * the kind's actions, offers the amendment's JSON Schema and draft and checks a reviewer's amendment against the
 * contract, but runs nothing; the agent session, which registers the kind with its handlers, runs the decision on its
 * next turn and its `apply` gets the amendment typed and decoded (`call.amendment`). Real inbox server on 127.0.0.1,
 * a SQLite file, the public `TurnDriver`.
 */
import { Tool, Toolkit } from "@effect/ai"
import { afterEach, assert, beforeEach, describe, expectTypeOf, it } from "@effect/vitest"
import { Effect, Exit, Layer, Option, Schema, Scope } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as ScriptedModel from "../../src/agent/ScriptedModel.js"
import { TurnDriver } from "../../src/agent/TurnDriver.js"
import { Inbox } from "../../src/inbox/Inbox.js"
import {
  ActionKind,
  PendingActions,
  PendingStore,
  PendingStoreError,
  ResolveConfig,
  ResolveRuntime,
  stageKind,
  ToolResult
} from "../../src/index.js"
import * as SqliteStore from "../../src/stores/SqliteStore.js"
import { get, post, type Running, startInbox, tokens } from "../support/inbox.js"

/** The contract the inbox holds: a note whose text a reviewer may change, starting from the staged text. */
const NoteContract = ActionKind.contract({
  name: "note",
  payload: Schema.Struct({ text: Schema.String }),
  amendment: Schema.Struct({
    text: Schema.String.pipe(Schema.maxLength(1000)),
    shout: Schema.optionalWith(Schema.Boolean, { default: () => false })
  }),
  amendmentDraft: ({ text }) => Option.some({ text })
})

let dir: string
let file: string
let log: string
let running: Running

/** The session's kind: the contract with its handlers (the amendment typed by the contract). */
const noteKind = (contract: typeof NoteContract) =>
  ActionKind.implement(contract, {
    apply: ({ text }, call) =>
      Effect.sync(() => {
        const written = Option.match(call.amendment, {
          onNone: () => text,
          onSome: (amended) => amended.shout ? amended.text.toUpperCase() : amended.text
        })
        fs.appendFileSync(log, `${written}\n`)
        return ToolResult.text(`Noted ${written}`)
      })
  })

beforeEach(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "effect-resolve-contracts-"))
  file = path.join(dir, "pending.db")
  log = path.join(dir, "notes.log")
  fs.writeFileSync(log, "")
  running = await startInbox({ store: SqliteStore.layer({ filename: file }), kinds: [NoteContract] })
})
afterEach(async () => {
  await running.close()
  fs.rmSync(dir, { recursive: true, force: true })
})

const Note = Tool.make("note", {
  parameters: { text: Schema.String },
  success: Schema.String,
  failure: PendingStoreError,
  dependencies: [PendingActions]
})
const Tools = Toolkit.make(Note)

/** An agent session on the SQLite file that registers `kind`, its model following `script`. */
const openSession = (script: ScriptedModel.Script, kind: ReturnType<typeof noteKind>) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    const handlers = Tools.toLayer({
      note: ({ text }) =>
        Effect.map(
          stageKind(kind, { text }, { label: `Note: ${text}`, sourceToolName: "note", preview: `+ ${text}` }),
          (handle) => `Preview ${handle.id}: note ${text}`
        )
    })
    const layer = Layer.mergeAll(TurnDriver.layerWithoutDependencies({}), handlers, ScriptedModel.layer(script)).pipe(
      Layer.provideMerge(ResolveRuntime.layerDurable({ session: "agent", kinds: [kind] })),
      Layer.provideMerge(SqliteStore.layer({ filename: file })),
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

const openIds = Effect.map(
  Effect.flatMap(PendingActions, (pending) => pending.listOpen),
  (open) => open.map((i) => i.id)
)

const record = (id: string) =>
  Effect.map(Effect.promise(() => Effect.runPromise(running.store.get(id))), Option.getOrThrow)

describe("an inbox holding only a kind's contract", () => {
  it("needs nothing but the store: a contract has no requirements", () => {
    const _layer = Inbox.layer({ kinds: [NoteContract] })
    type Needs<L> = L extends Layer.Layer<infer _A, infer _E, infer R> ? R : never
    expectTypeOf<Needs<typeof _layer>>().toEqualTypeOf<PendingStore>()
    expectTypeOf<Needs<ReturnType<typeof Inbox.layer<[]>>>>().toEqualTypeOf<PendingStore>()
  })

  it.live("lists and decodes the action, offers the amendment's schema and draft, checks an amendment, runs nothing", () =>
    Effect.gen(function*() {
      const session = yield* openSession(
        [ScriptedModel.toolCall("note", { text: "as staged" }), "Done."],
        noteKind(NoteContract)
      )
      assert.strictEqual((yield* session.run(drive("Take a note", 1)))._tag, "Left")
      const [id] = yield* session.run(openIds)
      assert.isString(id)

      const listed = yield* Effect.promise(() => get(running, "/api/actions", tokens.owner))
      assert.strictEqual(listed.status, 200, listed.text)
      const row = listed.json.items.find((item: { id: string }) => item.id === id)
      assert.deepStrictEqual([row.kind, row.runsHere, row.amendable], ["note", false, true])

      const detail = yield* Effect.promise(() => get(running, `/api/actions/${id}`, tokens.owner))
      assert.strictEqual(detail.status, 200, detail.text)
      assert.deepStrictEqual(detail.json.amendmentSchema.required, ["text"])
      assert.deepStrictEqual(detail.json.amendmentDraft, { text: "as staged" })
      assert.deepStrictEqual(running.inbox.kinds, [], "it runs no kind")

      // Checked against the contract: never recorded.
      const malformed = yield* Effect.promise(() =>
        post(running, `/api/actions/${id}/decision`, tokens.owner, {
          action: "apply",
          reason: "x",
          amendment: { text: 42 }
        })
      )
      assert.strictEqual(malformed.status, 422, malformed.text)
      assert.deepStrictEqual(yield* Effect.promise(() => Effect.runPromise(running.store.decisions(id!))), [])

      const answer = yield* Effect.promise(() =>
        post(running, `/api/actions/${id}/decision`, tokens.owner, {
          action: "apply",
          reason: "Louder.",
          amendment: { text: "as amended", shout: true }
        })
      )
      assert.strictEqual(answer.status, 200, answer.text)
      assert.strictEqual(answer.json.outcome, "requested", "the inbox holds only the contract: the session runs it")
      assert.strictEqual(fs.readFileSync(log, "utf8"), "")

      // The session's next turn runs the decision: its apply gets the amendment, decoded and typed.
      assert.strictEqual((yield* session.run(drive("Continue.")))._tag, "Right")
      assert.strictEqual(fs.readFileSync(log, "utf8"), "AS AMENDED\n")
      assert.strictEqual((yield* record(id!)).status, "applied")
      const [decision] = yield* Effect.promise(() => Effect.runPromise(running.store.decisions(id!)))
      assert.deepStrictEqual([decision!.state, decision!.settledBy], ["done", "session:agent"])
      const next = (yield* session.run(ScriptedModel.requests)).at(-1)!
      assert.deepStrictEqual(next.userTexts.filter((t) => t.startsWith("A reviewer")), [
        `A reviewer (ann) applied ${id}: Louder. Before applying, the reviewer changed it to: ` +
        `{"text":"as amended","shout":true}. Result: Noted AS AMENDED. Do not resolve ${id} again.`
      ])
      yield* session.close
    }))

  it.live("an amendment the session's kind no longer takes fails the decision typed; the action is unchanged", () =>
    Effect.gen(function*() {
      // The session's kind changed since the inbox checked the amendment: it takes at most 3 characters now.
      const Stricter = noteKind({
        ...NoteContract,
        amendment: NoteContract.amendment!.pipe(Schema.filter((a) => a.text.length <= 3 || "at most 3 characters"))
      })
      const session = yield* openSession([ScriptedModel.toolCall("note", { text: "abc" }), "Done.", "Done."], Stricter)
      assert.strictEqual((yield* session.run(drive("Take a note", 1)))._tag, "Left")
      const [id] = yield* session.run(openIds)
      const before = yield* record(id!)

      const answer = yield* Effect.promise(() =>
        post(running, `/api/actions/${id}/decision`, tokens.owner, {
          action: "apply",
          reason: "Longer.",
          amendment: { text: "much longer" }
        })
      )
      assert.strictEqual(answer.json.outcome, "requested", answer.text)

      // The decision runs before the turn (the turn itself is forced to resolve the still pending action).
      yield* session.run(drive("Continue.", 1))
      assert.strictEqual(fs.readFileSync(log, "utf8"), "", "nothing was applied")
      const after = yield* record(id!)
      assert.deepStrictEqual(
        [after.status, after.attempts, after.outcome, after.updatedAt],
        [before.status, before.attempts, before.outcome, before.updatedAt]
      )
      const [decision] = yield* Effect.promise(() => Effect.runPromise(running.store.decisions(id!)))
      assert.strictEqual(decision!.state, "failed")
      assert.include(decision!.outcome ?? "", "no longer matches")
      yield* session.close
    }))
})
