/**
 * `EditPreview`: what one `edit` call stages and shows (the diff, the counts, the bidirectional-control warnings,
 * names in the diff headers), and every typed error of a preview, with nothing staged and nothing written: text not
 * found or ambiguous, a file missing, not text or not a regular file, a path outside the workspace (`..`, an absolute
 * path, a symlink), the same file twice (by path or by hard link), and the caps on files, bytes and edits.
 */
import { assert, describe, it } from "@effect/vitest"
import { deepStrictEqual } from "@effect/vitest/utils"
import { Effect } from "effect"
import * as NFS from "node:fs/promises"
import * as NPath from "node:path"
import { SteeringBus, ToolChoiceQueue, ToolResult } from "../../src/index.js"
import * as FileEditPreview from "../../src/producers/FileEditPreview.js"
import {
  edit,
  expectPreviewError,
  inWorkspace,
  listing,
  nothingStaged,
  one,
  readText,
  tempDir,
  writeFiles
} from "../support/editWorkspace.js"
import { failureOf } from "../support/exits.js"

describe("EditPreview", () => {
  it.live("a preview writes nothing, shows the diff and stages one pending action", () =>
    inWorkspace({ "src/a.ts": "const a = 1\nconst b = 2\n" }, ({ root }) =>
      Effect.gen(function*() {
        const before = yield* listing(root)
        const result = yield* edit(one("src/a.ts", "const b = 2", "const b = 3"))
        const text = ToolResult.textOf(result)
        const [first] = text.split("\n")
        assert.strictEqual(first, FileEditPreview.previewHeadline)
        assert.include(first!, "Nothing is written yet")
        assert.include(
          text,
          "--- a/src/a.ts\n+++ b/src/a.ts\n@@ -1,2 +1,2 @@\n const a = 1\n-const b = 2\n+const b = 3"
        )
        assert.include(text, "Edit: 1 replacement in 1 file:\n  src/a.ts: 1 replacement")
        const details = result.details as any
        deepStrictEqual(details.files, [{ path: "src/a.ts", replacements: 1 }])
        assert.strictEqual(details.fileCount, 1)
        assert.strictEqual(details.replacements, 1)
        assert.strictEqual(yield* readText(root, "src/a.ts"), "const a = 1\nconst b = 2\n")
        deepStrictEqual(yield* listing(root), before)
        const queue = yield* ToolChoiceQueue
        deepStrictEqual(yield* queue.inspect, ["pending-action:edit"])
        const bus = yield* SteeringBus
        deepStrictEqual((yield* bus.pending).map((m) => m.customType), ["resolve-reminder"])
      })))

  it.live("bidirectional control characters in newText are flagged in the preview, by file and line", () =>
    inWorkspace({ "src/auth.ts": "const ok = 1\nif (isAdmin) {\n}\n" }, () =>
      Effect.gen(function*() {
        const result = yield* edit(one("src/auth.ts", "if (isAdmin) {", "if (isAdmin\u202E) {\u2066// ok\u2069"))
        const text = ToolResult.textOf(result)
        assert.include(
          text,
          "Warning: src/auth.ts line 2 holds Unicode bidirectional control character(s) U+202E, U+2066, U+2069: "
        )
        const plain = yield* edit(one("src/auth.ts", "const ok = 1", "const ok = 2"))
        assert.notInclude(ToolResult.textOf(plain), "Warning:")
      })))

  it.live("non-ASCII paths appear in the diff headers as text; a line break in a name cannot forge a header", () =>
    inWorkspace({ "données/résumé.txt": "é = 1\n", "evil\n+++ b/other.txt": "x\n" }, () =>
      Effect.gen(function*() {
        const text = ToolResult.textOf(
          yield* edit({
            files: [
              { path: "données/résumé.txt", edits: [{ oldText: "é = 1", newText: "é = 2" }] },
              { path: "evil\n+++ b/other.txt", edits: [{ oldText: "x", newText: "y" }] }
            ]
          })
        )
        assert.include(text, "--- a/données/résumé.txt\n+++ b/données/résumé.txt\n@@ -1,1 +1,1 @@\n-é = 1\n+é = 2")
        assert.include(text, "--- \"a/evil\\n+++ b/other.txt\"\n+++ \"b/evil\\n+++ b/other.txt\"\n")
        assert.notInclude(text, "\n+++ b/other.txt\n")
      })))

  // ---------------------------------------------------------------------------------------------------------------
  // typed errors at preview time; nothing staged
  // ---------------------------------------------------------------------------------------------------------------

  describe("preview errors", () => {
    const files = { "a.txt": "one one two\n", "b.txt": "b\n", "bin.dat": new Uint8Array([0xff, 0xfe, 0x00, 0x80]) }

    const expectError = <T>(input: unknown, check: (error: unknown) => T, limits = {}) =>
      expectPreviewError(files, input, check, limits)

    it.live("oldText not found names the file and the edit", () =>
      expectError(
        { files: [{ path: "a.txt", edits: [{ oldText: "two", newText: "2" }, { oldText: "three", newText: "3" }] }] },
        (error) => {
          assert.instanceOf(error, FileEditPreview.EditTextNotFound)
          assert.strictEqual(error.path, "a.txt")
          assert.strictEqual(error.editIndex, 1)
          assert.include(error.message, "a.txt, edits[1]: oldText was not found")
        }
      ))

    it.live("oldText found more than once without replaceAll", () =>
      expectError(one("a.txt", "one", "1"), (error) => {
        assert.instanceOf(error, FileEditPreview.EditTextAmbiguous)
        assert.strictEqual(error.path, "a.txt")
        assert.strictEqual(error.editIndex, 0)
        assert.strictEqual(error.occurrences, 2)
        assert.include(error.message, "replaceAll")
      }))

    it.live("a later file's error stages nothing for the earlier files", () =>
      expectError(
        {
          files: [{ path: "b.txt", edits: [{ oldText: "b", newText: "B" }] }, {
            path: "nope.txt",
            edits: [{ oldText: "x", newText: "y" }]
          }]
        },
        (error) => {
          assert.instanceOf(error, FileEditPreview.EditFileMissing)
          assert.strictEqual(error.path, "nope.txt")
        }
      ))

    it.live("file not UTF-8", () =>
      expectError(one("bin.dat", "x", "y"), (error) => {
        assert.instanceOf(error, FileEditPreview.EditFileNotText)
        assert.strictEqual(error.path, "bin.dat")
      }))

    it.live("a directory is not a file", () =>
      inWorkspace({ "dir/x.txt": "x" }, () =>
        Effect.gen(function*() {
          const error = failureOf(yield* Effect.exit(edit(one("dir", "x", "y"))))
          assert.instanceOf(error, FileEditPreview.EditFileUnreadable)
          assert.include(error.message, "not a regular file")
          yield* nothingStaged
        })))

    it.live("`..` escapes the workspace", () =>
      expectError(one("../outside.txt", "x", "y"), (error) => {
        assert.instanceOf(error, FileEditPreview.EditPathOutsideWorkspace)
        assert.strictEqual(error.path, "../outside.txt")
        assert.isFalse(error.viaSymlink)
      }))

    it.live("an absolute path elsewhere", () =>
      expectError(one("/etc/hostname", "x", "y"), (error) => {
        assert.instanceOf(error, FileEditPreview.EditPathOutsideWorkspace)
        assert.isFalse(error.viaSymlink)
      }))

    it.live("an absolute path inside the workspace is accepted", () =>
      inWorkspace({ "a.txt": "x\n" }, ({ root }) =>
        Effect.gen(function*() {
          const result = yield* edit(one(NPath.join(root, "a.txt"), "x", "y"))
          deepStrictEqual((result.details as any).files, [{ path: "a.txt", replacements: 1 }])
        })))

    it.live("a symlink (file or directory) that resolves outside the workspace", () =>
      Effect.scoped(Effect.gen(function*() {
        const outside = yield* tempDir
        yield* writeFiles(outside, { "secret.txt": "secret\n" })
        yield* inWorkspace({ "a.txt": "a\n" }, ({ root }) =>
          Effect.gen(function*() {
            yield* Effect.promise(() => NFS.symlink(NPath.join(outside, "secret.txt"), NPath.join(root, "link.txt")))
            yield* Effect.promise(() => NFS.symlink(outside, NPath.join(root, "linkdir")))
            for (const path of ["link.txt", "linkdir/secret.txt"]) {
              const error = failureOf(yield* Effect.exit(edit(one(path, "secret", "leaked"))))
              assert.instanceOf(error, FileEditPreview.EditPathOutsideWorkspace)
              assert.strictEqual(error.path, path)
              assert.isTrue(error.viaSymlink)
            }
            yield* nothingStaged
          }))
        assert.strictEqual(yield* readText(outside, "secret.txt"), "secret\n")
      })))

    it.live("too many files", () =>
      expectError(
        {
          files: [{ path: "a.txt", edits: [{ oldText: "two", newText: "2" }] }, {
            path: "b.txt",
            edits: [{ oldText: "b", newText: "B" }]
          }]
        },
        (error) => {
          assert.instanceOf(error, FileEditPreview.EditLimitExceeded)
          assert.strictEqual(error.limit, "files")
          assert.strictEqual(error.max, 1)
          assert.strictEqual(error.actual, 2)
        },
        { maxFiles: 1 }
      ))

    it.live("too many bytes names the file that crosses the limit", () =>
      expectError(
        {
          files: [{ path: "b.txt", edits: [{ oldText: "b", newText: "B" }] }, {
            path: "a.txt",
            edits: [{ oldText: "two", newText: "2" }]
          }]
        },
        (error) => {
          assert.instanceOf(error, FileEditPreview.EditLimitExceeded)
          assert.strictEqual(error.limit, "bytes")
          assert.strictEqual(error.path, "a.txt")
          assert.strictEqual(error.actual, 2 + 12)
        },
        { maxBytes: 10 }
      ))

    it.live("the same file twice", () =>
      expectError(
        {
          files: [{ path: "b.txt", edits: [{ oldText: "b", newText: "B" }] }, {
            path: "./b.txt",
            edits: [{ oldText: "b", newText: "C" }]
          }]
        },
        (error) => {
          assert.instanceOf(error, FileEditPreview.InvalidEditParams)
          assert.strictEqual(error.field, "files.1.path")
        }
      ))

    it.live("two names of one file (hard links) in one call are refused, naming both; nothing staged", () =>
      inWorkspace({ "hard.txt": "v = 1\nw = 1\n" }, ({ root }) =>
        Effect.gen(function*() {
          yield* Effect.promise(async () => {
            await NFS.mkdir(NPath.join(root, "a"))
            await NFS.link(NPath.join(root, "hard.txt"), NPath.join(root, "a/b.txt"))
          })
          const error = failureOf(
            yield* Effect.exit(edit({
              files: [
                { path: "hard.txt", edits: [{ oldText: "v = 1", newText: "v = 2" }] },
                { path: "a/b.txt", edits: [{ oldText: "w = 1", newText: "w = 2" }] }
              ]
            }))
          )
          assert.instanceOf(error, FileEditPreview.InvalidEditParams)
          assert.strictEqual(error.field, "files.1.path")
          assert.include(error.message, "\"a/b.txt\" and \"hard.txt\" are hard links to one file")
          yield* nothingStaged
          assert.strictEqual(yield* readText(root, "a/b.txt"), "v = 1\nw = 1\n")
        })))
  })

  describe("caps on what one call may cost", () => {
    it.live("more edits than maxEdits: refused before reading anything", () =>
      inWorkspace({ "a.txt": "a\n" }, () =>
        Effect.gen(function*() {
          const edits = Array.from({ length: 3 }, () => ({ oldText: "a", newText: "a" }))
          const error = failureOf(yield* Effect.exit(edit({ files: [{ path: "a.txt", edits }] })))
          assert.instanceOf(error, FileEditPreview.EditLimitExceeded)
          assert.strictEqual(error.limit, "edits")
          assert.include(error.message, "Too many edits: 3 in one call, at most 2 are allowed")
          yield* nothingStaged
        }), { maxEdits: 2 }))

    it.live("edits that would grow the files past maxBytes: refused, naming the file", () =>
      inWorkspace({ "a.txt": "aaaaaaaaaa\n" }, () =>
        Effect.gen(function*() {
          const error = failureOf(yield* Effect.exit(edit(one("a.txt", "a", "a".repeat(1_000_000), true))))
          assert.instanceOf(error, FileEditPreview.EditLimitExceeded)
          assert.strictEqual(error.limit, "editedBytes")
          assert.strictEqual(error.path, "a.txt")
          assert.strictEqual(error.actual, 10_000_001)
          yield* nothingStaged
        }), { maxBytes: 1_000 }))
  })
})
