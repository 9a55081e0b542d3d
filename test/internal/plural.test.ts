import { assert, describe, it } from "@effect/vitest"
import { count } from "../../src/internal/plural.js"

describe("count", () => {
  it("is singular for one, plural otherwise", () => {
    assert.strictEqual(count(1, "file"), "1 file")
    assert.strictEqual(count(2, "file"), "2 files")
    assert.strictEqual(count(0, "replacement"), "0 replacements")
    assert.strictEqual(count(3, "entry", "entries"), "3 entries")
  })
})
