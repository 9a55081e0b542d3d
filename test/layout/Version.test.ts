/**
 * One version everywhere: `package.json`, what the MCP server reports (`src/internal/version.ts`) and the CHANGELOG's
 * newest released section agree, and no JSDoc says a name arrived in a version after the next one.
 */
import { assert, describe, it } from "@effect/vitest"
import * as fs from "node:fs"
import * as path from "node:path"
import { packageVersion } from "../../src/internal/version.js"

const root = path.resolve(import.meta.dirname, "../..")
const pkg = JSON.parse(fs.readFileSync(path.join(root, "package.json"), "utf8")) as { readonly version: string }
const lock = JSON.parse(fs.readFileSync(path.join(root, "package-lock.json"), "utf8")) as {
  readonly version: string
  readonly packages: Record<string, { readonly version?: string }>
}

const filesUnder = (dir: string): ReadonlyArray<string> =>
  fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? filesUnder(path.join(dir, entry.name)) : [path.join(dir, entry.name)]
  )

describe("the version", () => {
  it("package.json, package-lock.json and the MCP server's version are one", () => {
    assert.strictEqual(packageVersion, pkg.version)
    assert.strictEqual(lock.version, pkg.version)
    assert.strictEqual(lock.packages[""]?.version, pkg.version)
  })

  it("the CHANGELOG's newest released section is package.json's version; what came after is Unreleased", () => {
    const changelog = fs.readFileSync(path.join(root, "CHANGELOG.md"), "utf8")
    const sections = [...changelog.matchAll(/^## \[([^\]]+)\]/gm)].map((m) => m[1])
    assert.strictEqual(sections[0], "Unreleased")
    assert.strictEqual(sections[1], pkg.version)
  })

  it("no @since names a version past the next minor one", () => {
    const [major, minor] = pkg.version.split(".").map(Number) as [number, number]
    const late: Array<string> = []
    for (const file of filesUnder(path.join(root, "src")).filter((f) => f.endsWith(".ts"))) {
      for (const match of fs.readFileSync(file, "utf8").matchAll(/@since (\d+)\.(\d+)\.\d+/g)) {
        const [, maj, min] = match.map(Number) as [number, number, number]
        if (maj > major || (maj === major && min > minor + 1)) late.push(`${path.relative(root, file)}: ${match[0]}`)
      }
    }
    assert.deepStrictEqual(late, [])
  })
})
