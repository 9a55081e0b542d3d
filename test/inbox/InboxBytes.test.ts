/**
 * What a reviewer and the model are shown is all that applies (issue 26 §5, §6), on every store (memory, SQLite,
 * Postgres), through a real edit preview, a real inbox server and an apply from it:
 * - a file `header\0…\nkeep\nchange me\n` shows its change in the model's preview, in the stored preview and in the
 *   inbox's structured diff (libsql used to cut the preview at the NUL: the diff ended at `header`, yet Apply wrote
 *   the change), with its NUL and control bytes shown as `<U+XXXX>`, never raw;
 * - a file whose name the diff must quote (a quote, a bidirectional override, a tab) appears in the structured diff
 *   under its real name, not as a rename `"a/…" → "b/…"`, and its name is quoted wherever the preview shows it;
 * - every byte the apply writes is in the preview: the new side of the structured diff, each `<U+XXXX>` read back,
 *   is exactly the file as written.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Option } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll } from "vitest"
import { FileEditPreview } from "../../src/edit.js"
import { PendingStore, ResolveRuntime, ToolResult, track } from "../../src/index.js"
import { subjects, tempDir } from "../stores/subjects.js"
import { get, post, startInbox, tokens } from "../support/inbox.js"
import { postgresForTests, postgresSuiteName } from "../support/pgTest.js"

const pg = await postgresForTests()
const tmp = tempDir()
afterAll(() => tmp.cleanup())

const dataText = "header\u0000\u0000\u0001\u001b[2J\nkeep\nchange me\n"
const quotedName = "quote\"name\u202E\ttxt.js"
const unseen = /[\u0000-\u0008\u000B-\u001F\u007F-\u009F\u202A-\u202E\u2066-\u2069]/

/** Each `<U+XXXX>` of a diff line read back as its character (these files never hold `<U+` themselves). */
const unshown = (text: string) =>
  text.replace(/<U\+([0-9A-F]{4})>/g, (_, hex: string) => String.fromCharCode(Number.parseInt(hex, 16)))

interface DiffFile {
  readonly oldPath: string
  readonly newPath: string
  readonly hunks: ReadonlyArray<{ readonly lines: ReadonlyArray<{ readonly op: string; readonly text: string }> }>
}

/** The new side of a file's structured diff, read back: the whole new file when its one hunk covers it. */
const newSide = (file: DiffFile) =>
  file.hunks.flatMap((hunk) => hunk.lines.filter((l) => l.op !== "remove" && l.op !== "note")).map((l) =>
    `${unshown(l.text)}\n`
  ).join("")

for (const subject of subjects(tmp.dir, pg)) {
  const name = subject.name === "postgres" ? postgresSuiteName("postgres", pg) : subject.name
  describe.skipIf(subject.skipReason !== undefined)(`byte-exact previews: ${name}`, () => {
    it.live(
      "a NUL-bearing file and a quoted name: the change is shown everywhere, and what is shown is written",
      () =>
        Effect.gen(function*() {
          const dir = fs.mkdtempSync(path.join(os.tmpdir(), "effect-resolve-bytes-"))
          yield* Effect.addFinalizer(() => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true })))
          fs.writeFileSync(path.join(dir, "data.txt"), dataText)
          fs.writeFileSync(path.join(dir, quotedName), "x\n")
          // One store instance for the agent's session and the inbox.
          const store = yield* Effect.provide(PendingStore, yield* Layer.build(subject.layer()))
          const storeLayer = Layer.succeed(PendingStore, store)
          const requirements = Layer.mergeAll(FileEditPreview.layer({ root: dir }), NodeContext.layer)
          const running = yield* Effect.acquireRelease(
            Effect.promise(() => startInbox({ store: storeLayer, kinds: [FileEditPreview.kind], requirements })),
            (r) => Effect.promise(() => r.close())
          )
          const session = yield* Layer.build(
            ResolveRuntime.layerDurable({ session: "agent", kinds: [FileEditPreview.kind] }).pipe(
              Layer.provideMerge(storeLayer),
              Layer.provideMerge(requirements)
            )
          )
          const [result, handles] = yield* Effect.provide(
            track(FileEditPreview.tool.execute({
              files: [
                { path: "data.txt", edits: [{ oldText: "change me", newText: "changed\u0000!" }] },
                { path: quotedName, edits: [{ oldText: "x", newText: "y" }] }
              ]
            })),
            session
          )
          const id = handles[0]!.id

          // The model's text: the change, every control visible, the quoted name quoted, no raw control anywhere.
          const modelText = ToolResult.textOf(result)
          assert.include(modelText, " header<U+0000><U+0000><U+0001><U+001B>[2J\n keep\n-change me\n+changed<U+0000>!")
          assert.include(modelText, "--- \"a/quote\\\"name\\342\\200\\256\\ttxt.js\"\n")
          assert.include(modelText, "  \"quote\\\"name\\342\\200\\256\\ttxt.js\": 1 replacement")
          assert.include(modelText, "Warning: data.txt line 1 holds control or invisible character(s) U+0000, U+0001")
          assert.include(modelText, "Warning: data.txt line 3 holds control or invisible character(s) U+0000")
          assert.notMatch(modelText, unseen)

          // The store gives the preview back exactly.
          const record = Option.getOrThrow(yield* store.get(id))
          assert.isTrue(modelText.endsWith(record.preview))
          assert.include(record.preview, "-change me\n+changed<U+0000>!")

          // The inbox: the same preview, and a structured diff with the change and the real names.
          const detail = yield* Effect.promise(() => get(running, `/api/actions/${id}`, tokens.owner))
          assert.strictEqual(detail.status, 200, detail.text)
          assert.strictEqual(detail.json.preview, record.preview)
          const files = detail.json.diff.files as ReadonlyArray<DiffFile>
          assert.deepStrictEqual(files.map((f) => [f.oldPath, f.newPath]), [
            ["data.txt", "data.txt"],
            [quotedName, quotedName]
          ])
          assert.deepStrictEqual(files[0]!.hunks[0]!.lines, [
            { op: "context", text: "header<U+0000><U+0000><U+0001><U+001B>[2J" },
            { op: "context", text: "keep" },
            { op: "remove", text: "change me" },
            { op: "add", text: "changed<U+0000>!" }
          ])

          // Apply from the inbox: what is written is exactly the new side of the diff the reviewer read.
          const applied = yield* Effect.promise(() =>
            post(running, `/api/actions/${id}/decision`, tokens.owner, { action: "apply", reason: "Shown in full." })
          )
          assert.strictEqual(applied.json.outcome, "applied", applied.text)
          const written = fs.readFileSync(path.join(dir, "data.txt"), "utf8")
          assert.strictEqual(written, "header\u0000\u0000\u0001\u001b[2J\nkeep\nchanged\u0000!\n")
          assert.strictEqual(newSide(files[0]!), written)
          assert.strictEqual(newSide(files[1]!), fs.readFileSync(path.join(dir, quotedName), "utf8"))
        }).pipe(Effect.scoped),
      60_000
    )
  })
}

describe("the structured diff", () => {
  it.live("reads git-quoted names (quotes, bidi, tabs, line breaks, non-ASCII) as the names themselves", () =>
    Effect.gen(function*() {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "effect-resolve-names-"))
      yield* Effect.addFinalizer(() => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true })))
      const names = [
        "quote\"name.txt",
        "bidi\u202Eevil.js",
        "tab\there.txt",
        "line\nbreak.txt",
        "résumé\u2066.md",
        "plain.txt"
      ]
      for (const n of names) fs.writeFileSync(path.join(dir, n), "a\n")
      const running = yield* Effect.acquireRelease(
        Effect.promise(() =>
          startInbox({
            store: PendingStore.layerMemory,
            kinds: [FileEditPreview.kind],
            requirements: Layer.mergeAll(FileEditPreview.layer({ root: dir }), NodeContext.layer)
          })
        ),
        (r) => Effect.promise(() => r.close())
      )
      const storeLayer = Layer.succeed(PendingStore, running.store)
      const session = yield* Layer.build(
        ResolveRuntime.layerDurable({ session: "agent", kinds: [FileEditPreview.kind] }).pipe(
          Layer.provideMerge(storeLayer),
          Layer.provideMerge(Layer.mergeAll(FileEditPreview.layer({ root: dir }), NodeContext.layer))
        )
      )
      const [, handles] = yield* Effect.provide(
        track(FileEditPreview.tool.execute({
          files: names.map((n) => ({ path: n, edits: [{ oldText: "a", newText: "b" }] }))
        })),
        session
      )
      const detail = yield* Effect.promise(() => get(running, `/api/actions/${handles[0]!.id}`, tokens.owner))
      const files = detail.json.diff.files as ReadonlyArray<DiffFile>
      assert.deepStrictEqual(files.map((f) => [f.oldPath, f.newPath]), names.map((n) => [n, n]))
      assert.notMatch(detail.json.preview, unseen)
    }).pipe(Effect.scoped))
})
