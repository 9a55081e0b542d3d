/**
 * The optional peers of the entry points (src/internal/peers.ts): their ranges are package.json's, each entry with
 * optional peers has an `import` and a `require` condition (src/entry/*.ts, *.cts) exporting what the entry exports,
 * the README's entry table lists them, and a load that fails
 * for want of peers fails with one message naming every missing one. test/layout/Package.test.ts checks the same
 * against the packed package, and that the list of each entry is what loading it loads.
 */
import { assert, describe, it } from "@effect/vitest"
import * as fs from "node:fs"
import * as path from "node:path"
import { entryPeers, loadEntry, missingPeersMessage, type Peer, peerRanges } from "../../src/internal/peers.js"

const root = path.resolve(import.meta.dirname, "../..")
const pkg = JSON.parse(fs.readFileSync(path.join(root, "package.json"), "utf8"))
const entries = Object.keys(entryPeers) as Array<keyof typeof entryPeers>
const short = (entry: string) => entry.replace("effect-resolve/", "")

const notFound = (name: string) =>
  Object.assign(new Error(`Cannot find package '${name}'`), { code: "ERR_MODULE_NOT_FOUND" })

describe("optional peers", () => {
  it("their ranges are package.json's optional peerDependencies", () => {
    const optional = Object.keys(pkg.peerDependenciesMeta).sort()
    assert.deepStrictEqual(Object.keys(peerRanges).sort(), optional)
    for (const peer of optional) assert.strictEqual(peerRanges[peer as Peer], pkg.peerDependencies[peer], peer)
  })

  it("an entry with optional peers imports and requires through src/entry; types use the entry itself", () => {
    for (const [name, conditions] of Object.entries(pkg.exports as Record<string, Record<string, string>>)) {
      if (name === "./package.json" || name === ".") continue
      const entry = `effect-resolve/${name.slice(2)}`
      const checked = entry in entryPeers
      assert.strictEqual(conditions.import, checked ? `./dist/entry/${name.slice(2)}.js` : conditions.default, name)
      assert.strictEqual(conditions.require, checked ? `./dist/entry/${name.slice(2)}.cjs` : undefined, name)
      assert.strictEqual(conditions.default, `./dist/${name.slice(2)}.js`)
      assert.strictEqual(conditions.types, `./dist/${name.slice(2)}.d.ts`)
    }
  })

  it("the README's entry table lists, for each entry, the optional peers loading it loads, with their ranges", () => {
    const readme = fs.readFileSync(path.join(root, "README.md"), "utf8")
    for (const entry of entries) {
      const row = readme.split("\n").find((line) => line.startsWith(`| \`${entry}\` |`))
      assert.isDefined(row, `the README's entry table has a row for ${entry}`)
      const install = row!.split(" | ")[2] ?? ""
      // What comes before "and" or "(" is the list; the rest says what else a use needs.
      const listed = install.split(/ and | \(/)[0]!.match(/(?:@effect\/[a-z-]+|pg)@[^\s`]+/g) ?? []
      assert.deepStrictEqual(
        [...listed].sort(),
        entryPeers[entry].map((peer) => `${peer}@${peerRanges[peer]}`).sort(),
        entry
      )
    }
  })

  for (const entry of entries) {
    it(`src/entry/${short(entry)}.ts exports what src/${short(entry)}.ts exports, the same objects`, async () => {
      const checked = await import(`../../src/entry/${short(entry)}.ts`)
      const plain = await import(`../../src/${short(entry)}.ts`)
      assert.deepStrictEqual(Object.keys(checked).sort(), Object.keys(plain).sort())
      for (const key of Object.keys(plain)) assert.strictEqual(checked[key], plain[key], key)
    })
  }

  it("a load that fails for want of peers names every missing one, its range, and the npm install line", async () => {
    const missing = new Set<Peer>(["@effect/sql", "@effect/experimental"])
    const error = await loadEntry(
      "effect-resolve/sqlite",
      () => Promise.reject(notFound("@effect/sql")),
      (peer) => !missing.has(peer)
    ).then(() => undefined, (e: Error & { code?: string }) => e)
    assert.strictEqual(error?.code, "ERR_MODULE_NOT_FOUND")
    assert.strictEqual(
      error?.message,
      "effect-resolve/sqlite needs packages that are not installed:\n" +
        "  @effect/sql ^0.52.1\n" +
        "  @effect/experimental ^0.61.1\n" +
        "Install them with:\n" +
        "  npm install \"@effect/sql@^0.52.1\" \"@effect/experimental@^0.61.1\""
    )
    assert.strictEqual((error?.cause as Error).message, "Cannot find package '@effect/sql'")
    assert.strictEqual(
      missingPeersMessage("effect-resolve/ai", ["@effect/ai"]),
      "effect-resolve/ai needs a package that is not installed:\n  @effect/ai ^0.37.0\n" +
        "Install it with:\n  npm install \"@effect/ai@^0.37.0\""
    )
  })

  it("any other failure, or a missing package that is not a peer, is passed on as it is", async () => {
    const other = new Error("boom")
    const fails = (error: unknown, installed: boolean) =>
      loadEntry("effect-resolve/ai", () => Promise.reject(error), () => installed).then(() => undefined, (e) => e)
    assert.strictEqual(await fails(other, false), other)
    const deeper = notFound("@libsql/client")
    assert.strictEqual(await fails(deeper, true), deeper)
    assert.strictEqual(await loadEntry("effect-resolve/ai", () => Promise.resolve(1), () => false), 1)
  })
})
