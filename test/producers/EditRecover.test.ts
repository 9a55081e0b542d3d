/**
 * `FileEditPreview.kind.recover`: what a restarted process decides, from the files, about an edit a crashed process
 * left `resolving`; and that a recovery that cannot look now fails (the action stays `resolving` for the next start)
 * instead of ending in `conflict`.
 */
import { NodeContext } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Layer, Schema } from "effect"
import { createHash } from "node:crypto"
import * as FS from "node:fs"
import * as OS from "node:os"
import * as NPath from "node:path"
import { FileEditPreview } from "../../src/edit.js"
import * as FileLock from "../../src/producers/FileLock.js"

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex")

const setup = (contents: string) => {
  const root = FS.realpathSync(FS.mkdtempSync(NPath.join(OS.tmpdir(), "edit-recover-")))
  const file = NPath.join(root, "a.txt")
  FS.writeFileSync(file, contents)
  const payload = Schema.decodeSync(FileEditPreview.EditPayload)({
    givenRoot: root,
    realRoot: root,
    label: "Edit: 1 replacement in 1 file",
    files: [{
      inputPath: "a.txt",
      displayPath: "a.txt",
      lexicalPath: file,
      realPath: file,
      replacements: 1,
      before: sha256("old\n"),
      after: Buffer.from("new\n").toString("base64")
    }]
  })
  const layer = Layer.merge(NodeContext.layer, FileEditPreview.layer({ root, lockTimeout: "200 millis" }))
  return { root, file, payload, layer }
}

describe("FileEditPreview.kind.recover", () => {
  for (
    const [contents, verdict] of [["new\n", "applied"], ["old\n", "pending"], ["someone else's\n", "pending"]] as const
  ) {
    it.live(`a file holding ${JSON.stringify(contents)}: ${verdict}`, () => {
      const { layer, payload, root } = setup(contents)
      return Effect.gen(function*() {
        assert.strictEqual(yield* FileEditPreview.kind.recover!(payload, { id: "pa_1", attempts: 1 }), verdict)
      }).pipe(Effect.provide(layer), Effect.ensuring(Effect.sync(() => FS.rmSync(root, { recursive: true }))))
    })
  }

  it.live("a file another writer holds locked now: recover fails (tried again at the next start), not conflict", () => {
    const { file, layer, payload, root } = setup("old\n")
    return Effect.gen(function*() {
      const exit = yield* Effect.scoped(Effect.flatMap(
        FileLock.lockFiles([file], FileLock.defaultLockOptions),
        () => Effect.exit(FileEditPreview.kind.recover!(payload, { id: "pa_1", attempts: 1 }))
      ))
      assert.isTrue(Exit.isFailure(exit), String(exit))
      // Once the lock is released, the same recovery decides.
      assert.strictEqual(yield* FileEditPreview.kind.recover!(payload, { id: "pa_1", attempts: 1 }), "pending")
    }).pipe(Effect.provide(layer), Effect.ensuring(Effect.sync(() => FS.rmSync(root, { recursive: true }))))
  })

  it.live("a file that is gone: conflict, for a person to look at (not a failure at every start)", () => {
    const { file, layer, payload, root } = setup("old\n")
    FS.rmSync(file)
    return Effect.gen(function*() {
      assert.strictEqual(yield* FileEditPreview.kind.recover!(payload, { id: "pa_1", attempts: 1 }), "conflict")
    }).pipe(Effect.provide(layer), Effect.ensuring(Effect.sync(() => FS.rmSync(root, { recursive: true }))))
  })
})
