/**
 * The safe renderer behind every error message made from an unknown value (`ApplyFailed.detail`, custom tools'
 * `ToolError`s, `AiResolveTool.toFailure`, the terminal renderer): its format, its guards and its cap.
 */
import { assert, describe, it } from "@effect/vitest"
import { FastCheck as fc } from "effect"
import { capText, innerMessageOf, messageOf, renderUnknown } from "../../src/internal/render.js"
import { build, recipe } from "../support/hostile.js"

const loneSurrogate = /\p{Surrogate}/u

describe("renderUnknown", () => {
  it("renders plain data like JSON, with bigints, symbols and functions spelled out", () => {
    assert.strictEqual(
      renderUnknown({ code: 28, path: ["a", 1, null, true] }),
      "{\"code\":28,\"path\":[\"a\",1,null,true]}"
    )
    assert.strictEqual(renderUnknown(Object.assign(Object.create(null), { n: 1n })), "{\"n\":1n}")
    assert.strictEqual(renderUnknown(Symbol("gone")), "Symbol(gone)")
    assert.strictEqual(renderUnknown(function named() {}), "[Function named]")
    assert.strictEqual(renderUnknown(undefined), "undefined")
    assert.strictEqual(renderUnknown({ e: new RangeError("out of range") }), "{\"e\":RangeError: out of range}")
    assert.strictEqual(renderUnknown(new Date(0)), "1970-01-01T00:00:00.000Z")
    assert.strictEqual(renderUnknown(new Map([[1, 2]])), "Map(1)")
  })

  it("marks cycles, but renders an object shared by two fields twice", () => {
    const cycle: Record<string, unknown> = { a: 1 }
    cycle.self = cycle
    assert.strictEqual(renderUnknown(cycle), "{\"a\":1,\"self\":[Circular]}")
    const shared = { x: 1 }
    assert.strictEqual(renderUnknown({ a: shared, b: shared }), "{\"a\":{\"x\":1},\"b\":{\"x\":1}}")
  })

  it("guards every read: throwing getters, Proxies that throw on every trap, revoked Proxies", () => {
    const getter = {
      ok: 1,
      get bad(): number {
        throw new Error("no")
      }
    }
    assert.strictEqual(renderUnknown(getter), "{\"ok\":1,\"bad\":[unreadable]}")
    const trap = new Proxy(
      {},
      new Proxy({}, {
        get: () => () => {
          throw new Error("trap")
        }
      })
    )
    assert.strictEqual(renderUnknown(trap), "[unreadable]")
    const { proxy, revoke } = Proxy.revocable({}, {})
    revoke()
    assert.strictEqual(renderUnknown(proxy), "[unreadable]")
    assert.strictEqual(renderUnknown([1, proxy]), "[1,[unreadable]]")
  })

  it("stops below four levels of nesting", () => {
    assert.strictEqual(renderUnknown({ a: { b: { c: { d: { e: 1 } } } } }), "{\"a\":{\"b\":{\"c\":{\"d\":[Object]}}}}")
    assert.strictEqual(renderUnknown([[[[[1]]]]]), "[[[[[Array]]]]]")
  })

  it("caps the text, on a code point boundary, ending with …", () => {
    const huge = renderUnknown({ text: "x".repeat(10_000_000) }, 100)
    assert.strictEqual(huge.length, 100)
    assert.isTrue(huge.endsWith("…"))
    const wide = renderUnknown("😀".repeat(1_000), 100)
    assert.isAtMost(wide.length, 100)
    assert.isFalse(loneSurrogate.test(wide), "no half of a surrogate pair")
    assert.strictEqual(renderUnknown(new Array(1_000_000).fill(0), 20), "[0,0,0,0,0,0,0,0,0,…")
    assert.strictEqual(capText("\uD800 lone"), "\uFFFD lone")
  })

  it("never throws, stays under the cap and is well-formed UTF-16 for any value", () => {
    fc.assert(
      fc.property(recipe, fc.integer({ min: 1, max: 3_000 }), (r, max) => {
        const value = build(r)
        const wrapped = { _tag: "SqlError", message: "Failed to execute statement", cause: value }
        for (const text of [renderUnknown(value, max), messageOf(value, max), innerMessageOf(wrapped, max)]) {
          assert.isString(text)
          assert.isAtMost(text.length, max)
          assert.isFalse(loneSurrogate.test(text))
        }
      }),
      { numRuns: 300 }
    )
  })
})

describe("messageOf", () => {
  it("prefers a non-empty string, then a non-empty message, then an Error's name, then the rendering", () => {
    assert.strictEqual(messageOf("disk full"), "disk full")
    assert.strictEqual(messageOf(new Error("disk full")), "disk full")
    assert.strictEqual(messageOf({ _tag: "X", message: "tagged" }), "tagged")
    assert.strictEqual(messageOf(new TypeError("")), "TypeError")
    assert.strictEqual(messageOf({ message: 42n }), "{\"message\":42n}")
    assert.strictEqual(messageOf(""), "\"\"")
    assert.strictEqual(messageOf(null), "null")
  })
})

describe("innerMessageOf", () => {
  // What @effect/sql's errors look like: a generic message over the driver's error.
  const sqlError = (cause: unknown) => ({ _tag: "SqlError", message: "Failed to execute statement", cause })
  const driverError = Object.assign(new Error("SQLITE_BUSY: database is locked"), {
    cause: new Error("database is locked")
  })

  it("describes what a SqlError or a MigrationError wraps, through several wrappers", () => {
    assert.strictEqual(innerMessageOf(sqlError(driverError)), "SQLITE_BUSY: database is locked")
    const migration = { _tag: "MigrationError", message: "Migration \"1_tables\" failed", cause: sqlError(driverError) }
    assert.strictEqual(innerMessageOf(migration), "SQLITE_BUSY: database is locked")
    assert.strictEqual(innerMessageOf(sqlError(driverError), 10), "SQLITE_BU…")
  })

  it("is messageOf for anything else: a wrapper whose cause says nothing, an error that is not a wrapper", () => {
    assert.strictEqual(innerMessageOf(sqlError({ code: 5 })), "Failed to execute statement")
    assert.strictEqual(innerMessageOf(sqlError(new Error(""))), "Failed to execute statement")
    assert.strictEqual(innerMessageOf(driverError), "SQLITE_BUSY: database is locked")
    assert.strictEqual(innerMessageOf("disk full"), "disk full")
    const cycle: Record<string, unknown> = sqlError(undefined)
    cycle.cause = cycle
    assert.strictEqual(innerMessageOf(cycle), "Failed to execute statement")
  })
})
