/**
 * A list row's files and line counts (src/inbox/internal/diff.ts): the same lines the detail pane's diff shows,
 * the first 20 files named and every file counted, and each action's preview parsed once.
 */
import { assert, describe, it } from "@effect/vitest"
import * as DiffParser from "../../src/inbox/internal/diff.js"

const fileDiff = (name: string, removed: number, added: number) =>
  [
    `--- a/${name}`,
    `+++ b/${name}`,
    `@@ -1,${removed + 1} +1,${added + 1} @@`,
    " context",
    ...Array.from({ length: removed }, (_, i) => `-old ${i}`),
    ...Array.from({ length: added }, (_, i) => `+new ${i}`)
  ].join("\n")

describe("DiffParser.statsOf", () => {
  it("names each file with the lines it adds and removes, and totals them", () => {
    const preview = `Edit: 2 files\n\n${fileDiff("a.ts", 1, 2)}\n${fileDiff("b/c.md", 3, 0)}\n`
    assert.deepStrictEqual(DiffParser.statsOf(DiffParser.parse(preview)), {
      files: [{ path: "a.ts", added: 2, removed: 1 }, { path: "b/c.md", added: 0, removed: 3 }],
      fileCount: 2,
      added: 2,
      removed: 4
    })
  })

  it("a deleted file is named by its old path; a preview without a diff has no files", () => {
    const deleted = "--- a/gone.txt\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-x\n-y\n"
    assert.deepStrictEqual(DiffParser.statsOf(DiffParser.parse(deleted)).files, [
      { path: "gone.txt", added: 0, removed: 2 }
    ])
    assert.deepStrictEqual(DiffParser.statsOf(DiffParser.parse("+ just a note")), DiffParser.noStats)
  })

  it("names the first 20 files and counts them all", () => {
    const preview = Array.from({ length: 25 }, (_, i) => fileDiff(`f${i}.txt`, 1, 1)).join("\n")
    const stats = DiffParser.statsOf(DiffParser.parse(preview))
    assert.strictEqual(stats.files.length, DiffParser.maxStatFiles)
    assert.deepStrictEqual([stats.fileCount, stats.added, stats.removed], [25, 25, 25])
  })
})

describe("DiffParser.statsCache", () => {
  it("computes an action's stats once, and again only for a preview of another length", () => {
    const stats = DiffParser.statsCache(2)
    const preview = fileDiff("a.ts", 1, 1)
    const first = stats("pa_1", preview)
    assert.strictEqual(stats("pa_1", preview), first, "the same object: not parsed again")
    assert.notStrictEqual(stats("pa_1", fileDiff("a.ts", 1, 2)), first)
    // Bounded: the least recently used entry goes.
    const two = stats("pa_2", preview)
    stats("pa_3", preview)
    stats("pa_1", fileDiff("a.ts", 1, 2))
    assert.notStrictEqual(stats("pa_2", preview), two)
  })
})
