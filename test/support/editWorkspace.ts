/**
 * The `edit` tool in a test: a real temporary workspace per test, a fresh session over it (with a `FileSystem` that
 * can inject faults), one model turn that resolves the preview, and the checks that nothing was staged.
 */
import type { Path } from "@effect/platform"
import { NodePath } from "@effect/platform-node"
import type * as FileSystemTag from "@effect/platform/FileSystem"
import { assert } from "@effect/vitest"
import { deepStrictEqual } from "@effect/vitest/utils"
import { Effect, Layer } from "effect"
import * as NFS from "node:fs/promises"
import * as OS from "node:os"
import * as NPath from "node:path"
import { ResolveRuntime, ResolveTool, SteeringBus, ToolChoiceQueue } from "../../src/index.js"
import * as FileEditPreview from "../../src/producers/FileEditPreview.js"
import { failureOf } from "./exits.js"
import * as FaultyFileSystem from "./FaultyFileSystem.js"

/** A temporary directory, removed when the scope closes. */
export const tempDir = Effect.acquireRelease(
  Effect.promise(() => NFS.mkdtemp(NPath.join(OS.tmpdir(), "effect-resolve-edit-"))),
  (dir) => Effect.promise(() => NFS.rm(dir, { recursive: true, force: true }))
)

/** Writes `files` (relative names, parent directories made) under `root`. */
export const writeFiles = (root: string, files: Record<string, string | Uint8Array>) =>
  Effect.promise(async () => {
    for (const [name, content] of Object.entries(files)) {
      await NFS.mkdir(NPath.dirname(NPath.join(root, name)), { recursive: true })
      await NFS.writeFile(NPath.join(root, name), content)
    }
  })

export const readText = (root: string, name: string) =>
  Effect.promise(() => NFS.readFile(NPath.join(root, name), "utf8"))

/** Every entry under `root`, recursively, sorted. */
export const listing = (root: string) =>
  Effect.promise(() => NFS.readdir(root, { recursive: true }).then((l) => l.sort()))

export interface TestWorkspace {
  readonly root: string
  /** The faults to inject into the session's `FileSystem`. */
  readonly plan: FaultyFileSystem.Plan
}

/** The limits a test may give the workspace. */
export interface Limits {
  readonly maxFiles?: number
  readonly maxBytes?: number
  readonly maxEdits?: number
}

/** Runs `body` in a fresh session over a fresh temporary workspace holding `files`. */
export const inWorkspace = <A, E>(
  files: Record<string, string | Uint8Array>,
  body: (
    ws: TestWorkspace
  ) => Effect.Effect<
    A,
    E,
    ResolveRuntime.Services | FileEditPreview.Workspace | FileSystemTag.FileSystem | Path.Path
  >,
  limits: Limits = {}
) =>
  Effect.scoped(Effect.gen(function*() {
    const root = yield* tempDir
    yield* writeFiles(root, files)
    const plan = yield* FaultyFileSystem.makePlan
    const layer = Layer.mergeAll(
      ResolveRuntime.layer,
      FaultyFileSystem.layer(plan),
      NodePath.layer,
      FileEditPreview.layer({ root, ...limits })
    )
    return yield* body({ root, plan }).pipe(Effect.provide(layer))
  }))

/** The model calls the `edit` tool. */
export const edit = (input: unknown) => FileEditPreview.tool.execute(input)

/** One model turn that calls resolve: serve the queue, call, end the turn. */
export const turn = (call: { readonly action: "apply" | "discard"; readonly reason: string }) =>
  Effect.gen(function*() {
    const queue = yield* ToolChoiceQueue
    yield* queue.nextToolChoice
    const exit = yield* Effect.exit(ResolveTool.execute(call))
    yield* queue.resolve
    return exit
  })

/** Nothing is queued and nothing steers the model: no preview was staged. */
export const nothingStaged = Effect.gen(function*() {
  const queue = yield* ToolChoiceQueue
  const bus = yield* SteeringBus
  deepStrictEqual(yield* queue.inspect, [])
  deepStrictEqual(yield* bus.pending, [])
})

/** The input of an edit of one file with one replacement. */
export const one = (path: string, oldText: string, newText: string, replaceAll?: boolean) => ({
  files: [{ path, edits: [{ oldText, newText, ...(replaceAll === undefined ? {} : { replaceAll }) }] }]
})

/**
 * Previews `input` in a workspace holding `files` and checks its error with `check`; then that nothing was staged
 * and nothing written: the workspace lists the same entries, and its `a.txt` (when `files` has one, as text) holds
 * the same text.
 */
export const expectPreviewError = <T>(
  files: Record<string, string | Uint8Array>,
  input: unknown,
  check: (error: unknown) => T,
  limits: Limits = {}
) =>
  inWorkspace(files, ({ root }) =>
    Effect.gen(function*() {
      const before = yield* listing(root)
      const error = failureOf(yield* Effect.exit(edit(input)))
      check(error)
      yield* nothingStaged
      deepStrictEqual(yield* listing(root), before)
      const a = files["a.txt"]
      if (typeof a === "string") assert.strictEqual(yield* readText(root, "a.txt"), a)
    }), limits)
