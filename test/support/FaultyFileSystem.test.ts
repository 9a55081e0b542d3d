/**
 * The test support `FaultyFileSystem`: a real `FileSystem` with faults injected on demand.
 */
import * as FileSystemTag from "@effect/platform/FileSystem"
import { assert, describe, it } from "@effect/vitest"
import { deepStrictEqual } from "@effect/vitest/utils"
import { Effect, Ref } from "effect"
import * as NPath from "node:path"
import { tempDir, writeFiles } from "./editWorkspace.js"
import * as FaultyFileSystem from "./FaultyFileSystem.js"

describe("FaultyFileSystem (test support)", () => {
  it.live("counts calls from arming, filters by path, fires once and records a journal", () =>
    Effect.scoped(Effect.gen(function*() {
      const root = yield* tempDir
      yield* writeFiles(root, { "a.txt": "a", "b.txt": "b" })
      const plan = yield* FaultyFileSystem.makePlan
      const journal = yield* Ref.make<ReadonlyArray<FaultyFileSystem.Call>>([])
      yield* Effect.gen(function*() {
        const fs = yield* FileSystemTag.FileSystem
        yield* fs.readFile(NPath.join(root, "a.txt"))
        yield* FaultyFileSystem.arm(
          plan,
          FaultyFileSystem.fail("readFile", 2, { path: (p) => p.endsWith("b.txt"), message: "boom" })
        )
        yield* fs.readFile(NPath.join(root, "a.txt")) // does not match the path filter
        yield* fs.readFile(NPath.join(root, "b.txt")) // 1st matching call
        const failed = yield* Effect.flip(fs.readFile(NPath.join(root, "b.txt"))) // 2nd: fires
        assert.strictEqual(failed._tag, "SystemError")
        assert.include(failed.message, "boom")
        yield* fs.readFile(NPath.join(root, "b.txt")) // fired once, gone
        deepStrictEqual(yield* Ref.get(plan), [])
        deepStrictEqual((yield* Ref.get(journal)).map((c) => [NPath.basename(c.path), c.failed]), [
          ["a.txt", false],
          ["a.txt", false],
          ["b.txt", false],
          ["b.txt", true],
          ["b.txt", false]
        ])
        assert.strictEqual(yield* fs.readFileString(NPath.join(root, "a.txt")), "a")
      }).pipe(Effect.provide(FaultyFileSystem.layer(plan, { journal })))
    })))
})
