/**
 * The published package as a consumer meets it (the build in dist/, which `npm test` makes first): a project that
 * installs the packed package (`npm pack`, then `npm install` of the tarball with `effect`, and none of the optional
 * peers) imports the core entry, with `import` and with `require`, and an entry whose optional peers are missing
 * fails with one message naming every missing peer and the line that installs them.
 */
import { assert, describe, it } from "@effect/vitest"
import { execFileSync, spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as url from "node:url"
import { afterAll, beforeAll } from "vitest"
import { entryPeers } from "../../src/internal/peers.js"

const root = path.resolve(import.meta.dirname, "../..")
const pkg = JSON.parse(fs.readFileSync(path.join(root, "package.json"), "utf8"))
const effectVersion = JSON.parse(fs.readFileSync(path.join(root, "node_modules/effect/package.json"), "utf8")).version
let project: string

// npm run describes this repository in npm_package_*, npm_lifecycle_* and npm_config_local_prefix: the consumer's npm
// must not see those (its other settings, such as the cache and the registry, stay).
const npmEnv = Object.fromEntries(
  Object.entries(process.env).filter(([name]) => !/^npm_(package_|lifecycle_|config_local_prefix$)/i.test(name))
)
const npm = (args: ReadonlyArray<string>, cwd: string) =>
  execFileSync("npm", [...args], { cwd, env: npmEnv, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] })

beforeAll(() => {
  if (!fs.existsSync(path.join(root, "dist/index.js"))) throw new Error("dist/ is missing: run `npm run build` first")
  project = fs.mkdtempSync(path.join(os.tmpdir(), "effect-resolve-consumer-"))
  fs.writeFileSync(path.join(project, "package.json"), JSON.stringify({ name: "consumer", type: "module" }))
  // The tarball npm would publish (dist/ is built: no prepack build), installed from the npm cache when it can be.
  const [packed] = JSON.parse(npm(["pack", "--ignore-scripts", "--json", "--pack-destination", project], root))
  npm([
    "install",
    "--prefix",
    project,
    "--no-save",
    "--no-package-lock",
    "--prefer-offline",
    "--no-audit",
    "--no-fund",
    path.join(project, packed.filename),
    `effect@${effectVersion}`
  ], project)
}, 120_000)
afterAll(() => fs.rmSync(project, { recursive: true, force: true }))

/** What the probes print for an entry whose `peers` are all missing: the error's code, then its message. */
const missingPeersOutput = (entry: string, peers: ReadonlyArray<string>): string => {
  const range = (peer: string) => pkg.peerDependencies[peer] as string
  return [
    "ERR_MODULE_NOT_FOUND",
    `${entry} needs packages that are not installed:`,
    ...peers.map((peer) => `  ${peer} ${range(peer)}`),
    "Install them with:",
    `  npm install ${peers.map((peer) => `"${peer}@${range(peer)}"`).join(" ")}`,
    ""
  ].join("\n")
}

const node = (args: ReadonlyArray<string>) =>
  spawnSync(process.execPath, args, { cwd: project, encoding: "utf8", timeout: 60_000 })

describe("the published package", () => {
  it("every export condition set has types, import and default, and require where the entry has optional peers", () => {
    for (const [entry, conditions] of Object.entries(pkg.exports as Record<string, unknown>)) {
      if (entry === "./package.json") continue
      const guarded = `effect-resolve/${entry.slice(2)}` in entryPeers
      assert.deepStrictEqual(
        Object.keys(conditions as object),
        guarded ? ["types", "import", "require", "default"] : ["types", "import", "default"],
        entry
      )
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
import { stage, ResolveRuntime, ResolveTool, ToolResult } from "effect-resolve"
const program = Effect.gen(function*() {
  yield* stage({ label: "Edit: a", sourceToolName: "edit", apply: () => Effect.succeed(ToolResult.text("applied")) })
  return ToolResult.textOf(yield* ResolveTool.execute({ action: "apply", reason: "ok" }))
})
console.log(await Effect.runPromise(program.pipe(Effect.provide(ResolveRuntime.layer))))`
    ])
    assert.strictEqual(run.stderr, "")
    assert.strictEqual(run.stdout.trim(), "applied")
  })

  it("require() loads the core entry too (Node 20.19 or later)", () => {
    const run = node(["-e", "console.log(typeof require('effect-resolve').stage)"])
    assert.strictEqual(run.stdout.trim(), "function", run.stderr)
  })

  it("the entries without optional peers import with only effect installed", () => {
    const run = node([
      "--input-type=module",
      "-e",
      "for (const e of ['effect-resolve/custom', 'effect-resolve/render']) console.log(Object.keys(await import(e)))"
    ])
    assert.strictEqual(run.stderr, "")
    assert.strictEqual(
      run.stdout,
      "[ 'CustomTools', 'pushPendingAction', 'toolError' ]\n[ 'Renderer', 'renderResolve' ]\n"
    )
  })

  it("no optional peer is installed", () => {
    for (const peer of Object.keys(pkg.peerDependenciesMeta)) {
      assert.isFalse(fs.existsSync(path.join(project, "node_modules", peer)), peer)
    }
  })

  it("an entry whose optional peers are missing names every one, with its range, and the install line", () => {
    const run = node([
      "--input-type=module",
      "-e",
      "try { await import('effect-resolve/sqlite') } catch (e) { console.log(e.code); console.log(e.message) }"
    ])
    assert.strictEqual(run.stderr, "")
    assert.strictEqual(
      run.stdout,
      missingPeersOutput("effect-resolve/sqlite", [
        "@effect/sql",
        "@effect/sql-libsql",
        "@effect/experimental",
        "@effect/platform"
      ]),
      run.stderr
    )
  })

  it("require() of an entry whose optional peers are missing gives the same message", () => {
    const run = node([
      "-e",
      "try { require('effect-resolve/postgres') } catch (e) { console.log(e.code); console.log(e.message) }"
    ])
    assert.strictEqual(
      run.stdout,
      missingPeersOutput("effect-resolve/postgres", [
        "@effect/sql",
        "@effect/sql-pg",
        "pg",
        "@effect/experimental",
        "@effect/platform"
      ]),
      run.stderr
    )
  })

  it("an entry with one missing peer names it", () => {
    // (effect-resolve/ai needs @effect/platform too since 0.3, for AiEditTool and AiPlanTool: a peer of @effect/ai.)
    const run = node(["--input-type=module", "-e", "await import('effect-resolve/edit')"])
    assert.notStrictEqual(run.status, 0)
    assert.include(
      run.stderr,
      "effect-resolve/edit needs a package that is not installed:\n  @effect/platform ^0.97.2\n"
    )
    assert.include(run.stderr, `npm install "@effect/platform@^0.97.2"`)
  })

  it("each entry's optional peers (src/internal/peers.ts) are the peers loading its build loads", () => {
    // A resolve hook that logs the package of every module loaded, run here where every peer is installed.
    const hook = path.join(project, "trace-hook.mjs")
    fs.writeFileSync(
      hook,
      `export const resolve = async (specifier, context, next) => {
  const resolved = await next(specifier, context)
  const m = /.*node_modules\\/((?:@[^/]+\\/)?[^/]+)\\//.exec(resolved.url)
  if (m) console.log(m[1])
  return resolved
}`
    )
    const register = `import { register } from "node:module"; register(${JSON.stringify(url.pathToFileURL(hook).href)})`
    for (const [entry, peers] of Object.entries(entryPeers)) {
      const file = url.pathToFileURL(path.join(root, "dist", `${entry.replace("effect-resolve/", "")}.js`)).href
      const run = spawnSync(process.execPath, [
        "--import",
        `data:text/javascript,${encodeURIComponent(register)}`,
        "--input-type=module",
        "-e",
        `await import(${JSON.stringify(file)})`
      ], { cwd: root, encoding: "utf8", timeout: 60_000 })
      assert.strictEqual(run.status, 0, run.stderr)
      // Counted: the optional peers a consumer installs (a peer's own dependencies come with it).
      const loaded = new Set(run.stdout.split("\n").filter((line) => line in pkg.peerDependenciesMeta))
      assert.deepStrictEqual([...loaded].sort(), [...peers].sort(), entry)
    }
  })

  it("require() of each entry with optional peers, where they are installed, gives what import gives", () => {
    // One process, here where every peer is installed: each entry through its require condition, then its import one.
    const run = spawnSync(process.execPath, [
      "--input-type=module",
      "-e",
      `import { createRequire } from "node:module"
const require = createRequire(import.meta.url)
const keys = (m) => Object.keys(m).sort().join(",")
const out = {}
for (const entry of ${
        JSON.stringify(Object.keys(entryPeers))
      }) out[entry] = [keys(require(entry)), keys(await import(entry))]
console.log(JSON.stringify(out))`
    ], { cwd: root, encoding: "utf8", timeout: 120_000 })
    assert.strictEqual(run.status, 0, run.stderr)
    const out = JSON.parse(run.stdout) as Record<string, [string, string]>
    for (const [entry, [required, imported]] of Object.entries(out)) {
      assert.isAbove(imported.length, 0, entry)
      assert.strictEqual(required, imported, entry)
    }
    assert.deepStrictEqual(Object.keys(out), Object.keys(entryPeers))
  }, 120_000)

  it("the build holds every entry the exports name", () => {
    for (const conditions of Object.values(pkg.exports as Record<string, unknown>)) {
      if (typeof conditions === "string") continue
      for (const file of Object.values(conditions as Record<string, string>)) {
        assert.isTrue(fs.existsSync(path.join(root, file)), file)
      }
    }
    // The bin (`npx effect-resolve mcp ...`): built, with its interpreter line.
    for (const file of Object.values(pkg.bin as Record<string, string>)) {
      assert.isTrue(fs.readFileSync(path.join(root, file), "utf8").startsWith("#!/usr/bin/env node\n"), file)
    }
    execFileSync(process.execPath, ["-e", "0"]) // the runtime itself is fine
  })
})
