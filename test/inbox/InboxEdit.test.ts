/**
 * Edit before apply, for the edit producer (`FileEditPreview.kind` declares `EditAmendment`), through a real inbox
 * server on 127.0.0.1 over a SQLite file, with an agent session staging real edits of a temp workspace: the amended
 * text is what is written, with the normal guarantees (a file changed since the preview is refused, nothing
 * written; a path the edit does not touch is refused; an amendment that is not the Schema is refused before it is
 * recorded).
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import { afterEach, assert, beforeEach, describe, it } from "@effect/vitest"
import { type Context, Effect, Exit, Layer, Option, Scope } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { FileEditPreview } from "../../src/edit.js"
import { ResolveRuntime, track } from "../../src/index.js"
import * as SqliteStore from "../../src/stores/SqliteStore.js"
import { get, post, type Running, startInbox, tokens } from "../support/inbox.js"

let dir: string
let workspace: string
let file: string
let running: Running
let scope: Scope.CloseableScope

beforeEach(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "effect-resolve-inbox-edit-"))
  workspace = path.join(dir, "workspace")
  fs.mkdirSync(workspace)
  file = path.join(dir, "pending.db")
  const requirements = Layer.mergeAll(FileEditPreview.layer({ root: workspace }), NodeContext.layer)
  running = await startInbox({
    store: SqliteStore.layer({ filename: file }),
    kinds: [FileEditPreview.kind],
    requirements
  })
  scope = Effect.runSync(Scope.make())
})
afterEach(async () => {
  await Effect.runPromise(Scope.close(scope, Exit.void))
  await running.close()
  fs.rmSync(dir, { recursive: true, force: true })
})

const sessionLayer = () =>
  ResolveRuntime.layerDurable({ session: "agent", kinds: [FileEditPreview.kind] }).pipe(
    Layer.provideMerge(SqliteStore.layer({ filename: file })),
    Layer.provideMerge(Layer.mergeAll(FileEditPreview.layer({ root: workspace }), NodeContext.layer))
  )
let session: Promise<Context.Context<Layer.Layer.Success<ReturnType<typeof sessionLayer>>>> | undefined

/** Previews an edit in the agent's session (nothing written); the action's id. */
const previewEdit = async (files: ReadonlyArray<readonly [string, string, string]>) => {
  session ??= Effect.runPromise(Layer.buildWithScope(sessionLayer(), scope))
  const context = await session
  const [, handles] = await Effect.runPromise(Effect.provide(
    track(FileEditPreview.tool.execute({
      files: files.map(([path, oldText, newText]) => ({ path, edits: [{ oldText, newText }] }))
    })),
    context
  ))
  return handles[0]!.id
}
afterEach(() => {
  session = undefined
})

const read = (name: string) => fs.readFileSync(path.join(workspace, name), "utf8")
const status = async (id: string) => Option.getOrThrow(await Effect.runPromise(running.store.get(id))).status

describe("edit before apply, for the edit producer", () => {
  it("the amended text is written for the files it names; the others as previewed; the decision keeps it", async () => {
    fs.writeFileSync(path.join(workspace, "a.txt"), "hello\n")
    fs.writeFileSync(path.join(workspace, "b.txt"), "one\n")
    const id = await previewEdit([["a.txt", "hello", "hello, world"], ["b.txt", "one", "two"]])
    // The reviewer starts from every file's new text as the preview would write it.
    const shown = await get(running, `/api/actions/${id}`, tokens.owner)
    assert.deepStrictEqual(shown.json.amendmentDraft, {
      files: [{ path: "a.txt", text: "hello, world\n" }, { path: "b.txt", text: "two\n" }]
    })
    const detail = await post(running, `/api/actions/${id}/decision`, tokens.owner, {
      action: "apply",
      reason: "Friendlier.",
      amendment: { files: [{ path: "a.txt", text: "hello, dear world\n" }] }
    })
    assert.strictEqual(detail.status, 200, detail.text)
    assert.strictEqual(detail.json.outcome, "applied", detail.text)
    assert.strictEqual(read("a.txt"), "hello, dear world\n")
    assert.strictEqual(read("b.txt"), "two\n")
    assert.strictEqual(await status(id), "applied")
    const [decision] = await Effect.runPromise(running.store.decisions(id))
    assert.deepStrictEqual(decision!.amendment, { files: [{ path: "a.txt", text: "hello, dear world\n" }] })
  })

  it("a file changed since the preview: the amended apply is refused like any apply; nothing is written", async () => {
    fs.writeFileSync(path.join(workspace, "a.txt"), "hello\n")
    const id = await previewEdit([["a.txt", "hello", "hello, world"]])
    fs.writeFileSync(path.join(workspace, "a.txt"), "hello there\n")
    const answer = await post(running, `/api/actions/${id}/decision`, tokens.owner, {
      action: "apply",
      reason: "x",
      amendment: { files: [{ path: "a.txt", text: "amended\n" }] }
    })
    assert.strictEqual(answer.status, 200, answer.text)
    assert.strictEqual(answer.json.outcome, "failed")
    assert.include(answer.json.message, "Preview is stale")
    assert.strictEqual(read("a.txt"), "hello there\n")
  })

  it("a path the edit does not touch is refused and nothing is written; a malformed amendment is never recorded", async () => {
    fs.writeFileSync(path.join(workspace, "a.txt"), "hello\n")
    fs.writeFileSync(path.join(workspace, "secret.txt"), "keep\n")
    const id = await previewEdit([["a.txt", "hello", "hello, world"]])
    const outside = await post(running, `/api/actions/${id}/decision`, tokens.owner, {
      action: "apply",
      reason: "x",
      amendment: { files: [{ path: "secret.txt", text: "overwritten\n" }] }
    })
    assert.strictEqual(outside.status, 200, outside.text)
    assert.strictEqual(outside.json.outcome, "failed")
    assert.include(outside.json.message, "does not touch")
    assert.strictEqual(read("secret.txt"), "keep\n")
    assert.strictEqual(read("a.txt"), "hello\n")
    assert.strictEqual(await status(id), "pending", "the action can be decided again")

    const malformed = await post(running, `/api/actions/${id}/decision`, tokens.owner, {
      action: "apply",
      reason: "x",
      amendment: { files: [{ path: "a.txt" }] }
    })
    assert.strictEqual(malformed.status, 422, malformed.text)
    assert.strictEqual(malformed.json._tag, "AmendmentRejected")
    assert.strictEqual((await Effect.runPromise(running.store.decisions(id))).length, 1, "only the first decision")
    assert.strictEqual(read("a.txt"), "hello\n")
  })
})
