/**
 * Runs the corpus of malformed `edit` inputs (`edit-inputs.json`, issue 5 §4) against a real temporary workspace:
 * each must fail with the typed error the corpus names (its `_tag`, the bad field for `InvalidEditParams`, and a
 * message naming the problem), stage nothing (empty queue, nothing steered) and change no file — the whole
 * workspace, and the directory outside it that its symlinks point to, are byte-compared before and after.
 */
import { NodeContext } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Exit, Layer, Option } from "effect"
import { deepStrictEqual } from "node:assert/strict"
import { readFileSync } from "node:fs"
import * as NFS from "node:fs/promises"
import * as OS from "node:os"
import * as NPath from "node:path"
import { FileEditPreview } from "../../src/edit.js"
import { ResolveRuntime, SteeringBus, ToolChoiceQueue } from "../../src/index.js"
import { expand } from "../support/corpus.js"

interface Case {
  readonly name: string
  readonly input: unknown
  readonly tag: string
  readonly field?: string
  readonly message: string
}

const corpus: { readonly cases: ReadonlyArray<Case> } = JSON.parse(
  readFileSync(new URL("./edit-inputs.json", import.meta.url), "utf8")
)

const resolveCorpusSize: number = JSON.parse(
  readFileSync(new URL("./resolve-inputs.json", import.meta.url), "utf8")
).cases.length

/** Every entry under `dir` (not following symlinks): its kind, mode and bytes, or its link target. */
const snapshot = (dir: string) =>
  Effect.promise(async () => {
    const entries = (await NFS.readdir(dir, { recursive: true })).sort()
    const out: Record<string, string> = {}
    for (const entry of entries) {
      const full = NPath.join(dir, entry)
      const stat = await NFS.lstat(full)
      out[entry] = stat.isSymbolicLink() ?
        `link -> ${await NFS.readlink(full)}` :
        stat.isDirectory() ?
        `dir ${stat.mode.toString(8)}` :
        `file ${stat.mode.toString(8)} ${(await NFS.readFile(full)).toString("hex")}`
    }
    return out
  })

const tempDir = Effect.acquireRelease(
  Effect.promise(() => NFS.mkdtemp(NPath.join(OS.tmpdir(), "effect-resolve-edit-corpus-"))),
  (dir) => Effect.promise(() => NFS.rm(dir, { recursive: true, force: true }))
)

/** The workspace the corpus describes, and a directory outside it holding `secret.txt`. */
const setUp = Effect.gen(function*() {
  const root = yield* tempDir
  const outside = yield* tempDir
  yield* Effect.promise(async () => {
    await NFS.writeFile(NPath.join(outside, "secret.txt"), "secret\n")
    await NFS.writeFile(NPath.join(root, "a.txt"), "one one two\nthree\n")
    await NFS.mkdir(NPath.join(root, "src"))
    await NFS.writeFile(NPath.join(root, "src", "b.ts"), "export const b = 1\n")
    await NFS.writeFile(NPath.join(root, "bin.dat"), new Uint8Array([0xff, 0xfe, 0x41, 0x42]))
    await NFS.mkdir(NPath.join(root, "dir"))
    await NFS.writeFile(NPath.join(root, "dir", "c.txt"), "c\n")
    await NFS.symlink(NPath.join(outside, "secret.txt"), NPath.join(root, "link-out.txt"))
    await NFS.symlink(outside, NPath.join(root, "linkdir"))
    await NFS.symlink("loop.txt", NPath.join(root, "loop.txt"))
  })
  return { root, outside }
})

describe("malformed edit inputs", () => {
  it("the corpus holds at least 30 cases with unique names, 50 or more with the resolve corpus", () => {
    assert.isAtLeast(corpus.cases.length, 30)
    assert.isAtLeast(corpus.cases.length + resolveCorpusSize, 50)
    assert.strictEqual(new Set(corpus.cases.map((c) => c.name)).size, corpus.cases.length)
  })

  it.live(
    "each gives its typed error naming the problem, stages nothing and changes no file",
    () =>
      Effect.scoped(Effect.gen(function*() {
        const { outside, root } = yield* setUp
        const layer = Layer.mergeAll(ResolveRuntime.layer, NodeContext.layer, FileEditPreview.layer({ root }))
        yield* Effect.gen(function*() {
          const queue = yield* ToolChoiceQueue
          const bus = yield* SteeringBus
          const before = { root: yield* snapshot(root), outside: yield* snapshot(outside) }
          const failures: Array<string> = []
          for (const c of corpus.cases) {
            const exit = yield* Effect.exit(FileEditPreview.tool.execute(expand(c.input, outside)))
            if (Exit.isSuccess(exit)) {
              failures.push(`${c.name}: accepted`)
              break // it staged a preview: the checks below would fail for it
            }
            const failure = Cause.failureOption(exit.cause)
            if (Option.isNone(failure)) {
              failures.push(`${c.name}: not a typed failure: ${Cause.pretty(exit.cause).slice(0, 300)}`)
              continue
            }
            const error = failure.value
            if (error._tag !== c.tag) failures.push(`${c.name}: ${error._tag} (${error.message}), expected ${c.tag}`)
            if (c.field !== undefined && (error as { readonly field?: string }).field !== c.field) {
              failures.push(`${c.name}: field ${(error as { readonly field?: string }).field}, expected ${c.field}`)
            }
            if (!error.message.includes(c.message)) {
              failures.push(`${c.name}: message "${error.message.slice(0, 300)}" lacks "${c.message}"`)
            }
            if (error.message.length > 2_000) failures.push(`${c.name}: message of ${error.message.length} characters`)
            // Nothing staged, nothing steered, no file changed, no prototype polluted.
            deepStrictEqual(yield* queue.inspect, [], c.name)
            assert.isTrue(Option.isNone(yield* queue.inFlight), c.name)
            deepStrictEqual(yield* bus.pending, [], c.name)
            deepStrictEqual(yield* snapshot(root), before.root, c.name)
            deepStrictEqual(yield* snapshot(outside), before.outside, c.name)
            assert.isUndefined(({} as Record<string, unknown>).polluted, `${c.name}: Object.prototype polluted`)
            assert.isUndefined(({} as Record<string, unknown>).isAdmin, `${c.name}: Object.prototype polluted`)
            assert.isUndefined(({} as Record<string, unknown>).replaceAll, `${c.name}: Object.prototype polluted`)
          }
          deepStrictEqual(failures, [])
          // The session is still usable: a valid edit stages one preview.
          yield* FileEditPreview.tool.execute({ files: [{ path: "a.txt", edits: [{ oldText: "two", newText: "2" }] }] })
          deepStrictEqual(yield* queue.inspect, ["pending-action:edit"])
          deepStrictEqual(yield* snapshot(root), before.root)
        }).pipe(Effect.provide(layer))
      })),
    60_000
  )
})
