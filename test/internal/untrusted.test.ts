import { assert, describe, it } from "@effect/vitest"
import { FastCheck as fc } from "effect"
import { tooDeepField, tooDeepPath, utf8Length } from "../../src/internal/untrusted.js"

describe("utf8Length", () => {
  it("agrees with Buffer.byteLength on any string, lone surrogates included", () => {
    fc.assert(
      fc.property(fc.oneof(fc.string({ unit: "binary" }), fc.string({ unit: "grapheme" }), fc.string()), (text) => {
        assert.strictEqual(utf8Length(text), Buffer.byteLength(text, "utf8"))
      }),
      { numRuns: 2_000 }
    )
    for (const text of ["", "a", "é", "€", "😀", "\uD800", "\uDC00", "\uD800a", "a\uD800", "\uDBFF\uDFFF"]) {
      assert.strictEqual(utf8Length(text), Buffer.byteLength(text, "utf8"), JSON.stringify(text))
    }
  })
})

describe("tooDeepPath and tooDeepField", () => {
  const nested = (levels: number, leaf: unknown = 1): unknown => {
    let value: unknown = leaf
    for (let i = 0; i < levels; i++) value = [value]
    return value
  }

  it("answers a value nested 100 000 levels deep without overflowing the stack, naming its path", () => {
    assert.deepStrictEqual(tooDeepPath({ a: nested(100_000) }, 3), ["a", "0", "0", "0"])
    assert.strictEqual(tooDeepField({ ok: 1, deep: nested(100_000) }, 32), "deep")
    assert.strictEqual(tooDeepField(nested(100_000), 32), "(root)")
  })

  it("looks at every value, however wide a level is (a deep value after 200 000 shallow ones)", () => {
    const wide = [...Array.from({ length: 200_000 }, () => [0]), nested(1_000)]
    assert.strictEqual(tooDeepField({ wide }, 32), "wide")
    assert.deepStrictEqual(tooDeepPath(wide, 5)?.slice(0, 2), ["200000", "0"])
  })

  it("counts levels as before: a field's value is level 0; a value at the limit passes", () => {
    assert.strictEqual(tooDeepField({ a: nested(3) }, 3), undefined)
    assert.strictEqual(tooDeepField({ a: nested(4) }, 3), "a")
    assert.strictEqual(tooDeepField({ a: nested(3, []) }, 3), undefined)
    assert.strictEqual(tooDeepPath(nested(3), 3), undefined)
    assert.isDefined(tooDeepPath(nested(4), 3))
    assert.strictEqual(tooDeepField("text", 0), undefined)
    assert.strictEqual(tooDeepField(null, 0), undefined)
  })

  it("ends on cycles and on shared parts (60 levels each holding the next twice)", () => {
    const cycle: Record<string, unknown> = {}
    cycle.self = cycle
    assert.strictEqual(tooDeepField({ cycle }, 32), "cycle")
    let shared: unknown = 1
    for (let i = 0; i < 60; i++) shared = [shared, shared]
    assert.strictEqual(tooDeepField({ shared }, 32), "shared")
    let shallow: unknown = 1
    for (let i = 0; i < 30; i++) shallow = [shallow, shallow]
    assert.strictEqual(tooDeepField({ shallow }, 32), undefined)
  })
})
