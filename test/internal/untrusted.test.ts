import { assert, describe, it } from "@effect/vitest"
import { FastCheck as fc } from "effect"
import { utf8Length } from "../../src/internal/untrusted.js"

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
