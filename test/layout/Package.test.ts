/**
 * The published package as a consumer meets it (the build in dist/, which `npm test` makes first): a project with
 * only `effect` installed imports the core entry, with `import` and with `require`, and an entry whose optional
 * peer is missing fails naming it. The project is a temp directory whose node_modules holds a copy of this package
 * and a link to `effect`, nothing else.
 */
import { assert, describe, it } from "@effect/vitest"
import { execFileSync, spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, beforeAll } from "vitest"

const root = path.resolve(import.meta.dirname, "../..")
const pkg = JSON.parse(fs.readFileSync(path.join(root, "package.json"), "utf8"))
let project: string

beforeAll(() => {
  if (!fs.existsSync(path.join(root, "dist/index.js"))) throw new Error("dist/ is missing: run `npm run build` first")
  project = fs.mkdtempSync(path.join(os.tmpdir(), "effect-resolve-consumer-"))
  const modules = path.join(project, "node_modules")
  const self = path.join(modules, "effect-resolve")
  fs.mkdirSync(self, { recursive: true })
  fs.copyFileSync(path.join(root, "package.json"), path.join(self, "package.json"))
  // A copy, not a link: Node resolves a linked file's imports from where it really is (this repository, which has
  // every optional peer installed).
  fs.cpSync(path.join(root, "dist"), path.join(self, "dist"), { recursive: true })
  fs.symlinkSync(path.join(root, "node_modules/effect"), path.join(modules, "effect"))
  fs.writeFileSync(path.join(project, "package.json"), JSON.stringify({ name: "consumer", type: "module" }))
})
afterAll(() => fs.rmSync(project, { recursive: true, force: true }))

const node = (args: ReadonlyArray<string>) =>
  spawnSync(process.execPath, args, { cwd: project, encoding: "utf8", timeout: 60_000 })

describe("the published package", () => {
  it("every export condition set has types, import and default", () => {
    for (const [entry, conditions] of Object.entries(pkg.exports as Record<string, unknown>)) {
      if (entry === "./package.json") continue
      assert.deepStrictEqual(Object.keys(conditions as object), ["types", "import", "default"], entry)
    }
    assert.deepStrictEqual(Object.keys(pkg.peerDependencies).filter((p) => pkg.peerDependenciesMeta[p] === undefined), [
      "effect"
    ])
  })

  it("the core entry imports where only effect is installed, and stages and resolves", () => {
    const run = node([
      "--input-type=module",
      "-e",
      `import { Effect } from "effect"
import { queueResolveHandler, ResolveRuntime, ResolveTool, ToolResult } from "effect-resolve"
const program = Effect.gen(function*() {
  yield* queueResolveHandler({ label: "Edit: a", sourceToolName: "edit", apply: () => Effect.succeed(ToolResult.text("applied")) })
  return ToolResult.textOf(yield* ResolveTool.execute({ action: "apply", reason: "ok" }))
})
console.log(await Effect.runPromise(program.pipe(Effect.provide(ResolveRuntime.layer))))`
    ])
    assert.strictEqual(run.stderr, "")
    assert.strictEqual(run.stdout.trim(), "applied")
  })

  it("require() loads the core entry too (Node 20.19 or later)", () => {
    const run = node(["-e", "console.log(typeof require('effect-resolve').queueResolveHandler)"])
    assert.strictEqual(run.stdout.trim(), "function", run.stderr)
  })

  it("an entry whose optional peer is not installed fails naming it", () => {
    const run = node(["--input-type=module", "-e", "await import('effect-resolve/ai')"])
    assert.notStrictEqual(run.status, 0)
    assert.include(run.stderr, "@effect/ai")
  })

  it("the build holds every entry the exports name", () => {
    for (const conditions of Object.values(pkg.exports as Record<string, unknown>)) {
      if (typeof conditions === "string") continue
      for (const file of Object.values(conditions as Record<string, string>)) {
        assert.isTrue(fs.existsSync(path.join(root, file)), file)
      }
    }
    execFileSync(process.execPath, ["-e", "0"]) // the runtime itself is fine
  })
})
