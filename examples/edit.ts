// The edit tool: exact-text replacements in a workspace, previewed as a unified diff; nothing is written until the
// model resolves the preview, and then every file or none.
import { NodeContext } from "@effect/platform-node"
import { Effect, Layer } from "effect"
import { ResolveRuntime, ResolveTool, ToolResult } from "effect-resolve"
import { FileEditPreview } from "effect-resolve/edit"
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"

const root = mkdtempSync(join(tmpdir(), "edit-example-"))
mkdirSync(join(root, "src"))
writeFileSync(join(root, "src/greet.ts"), "export const greet = (name: string) => `hello ${name}`\n")
writeFileSync(join(root, "src/main.ts"), "import { greet } from \"./greet.js\"\n\nconsole.log(greet(\"world\"))\n")

const program = Effect.gen(function*() {
  // The model calls the edit tool: a preview of two files.
  const preview = yield* FileEditPreview.tool.execute({
    files: [
      { path: "src/greet.ts", edits: [{ oldText: "hello ${name}", newText: "hello, ${name}!", replaceAll: null }] },
      { path: "src/main.ts", edits: [{ oldText: "\"world\"", newText: "\"effect\"", replaceAll: null }] }
    ]
  })
  const id = (preview.details as { pendingActionId: string }).pendingActionId
  console.log(ToolResult.textOf(preview).replace(id, "<id>"))
  console.log("\nsrc/greet.ts before resolve:", readFileSync(join(root, "src/greet.ts"), "utf8").trim())

  // The model applies it: every file is written, or none.
  const applied = yield* ResolveTool.execute({ action: "apply", reason: "As asked.", extra: null, id })
  console.log(ToolResult.textOf(applied))
  console.log("src/greet.ts after:", readFileSync(join(root, "src/greet.ts"), "utf8").trim())

  // A preview that went stale (the file changed after it) is refused, and nothing is written.
  yield* FileEditPreview.tool.execute({
    files: [{ path: "src/main.ts", edits: [{ oldText: "\"effect\"", newText: "\"you\"", replaceAll: null }] }]
  })
  writeFileSync(join(root, "src/main.ts"), "console.log(\"someone else's change\")\n")
  const stale = yield* Effect.flip(ResolveTool.execute({ action: "apply", reason: "Go.", extra: null, id: null }))
  console.log(`${stale._tag}: ${stale.message}`)
})

Effect.runPromise(program.pipe(
  Effect.provide(Layer.mergeAll(ResolveRuntime.layer, FileEditPreview.layer({ root }), NodeContext.layer))
)).finally(() => rmSync(root, { recursive: true, force: true }))
