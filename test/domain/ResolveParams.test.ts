/**
 * Issue 10 §4: `extra` is limited in UTF-8 bytes of its JSON text (16 KiB), not in characters.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Either, Schema } from "effect"
import { limits } from "../../src/domain/ResolveParams.js"
import { decodeResolveParams, InvalidResolveParams, ResolveParams } from "../../src/index.js"

const decode = Schema.decodeUnknownEither(ResolveParams)

/** An `extra` whose JSON text is `{"t":"<text>"}`: 8 bytes around the text. */
const extraWith = (text: string) => ({ action: "apply", reason: "ok", extra: { t: text } })

describe("extra size (issue 10 §4)", () => {
  it("is at most 16 KiB of UTF-8 JSON: 16 384 bytes pass, 16 385 fail", () => {
    assert.strictEqual(limits.extraMaxBytes, 16_384)
    assert.isTrue(Either.isRight(decode(extraWith("x".repeat(16_384 - 8)))))
    assert.isTrue(Either.isLeft(decode(extraWith("x".repeat(16_384 - 7)))))
  })

  it("counts bytes, not characters: 3-byte and 4-byte characters fill it sooner", () => {
    // 8 000 characters of "€" are 24 000 bytes: refused, though far fewer than 16 384 characters.
    assert.isTrue(Either.isLeft(decode(extraWith("€".repeat(8_000)))))
    assert.isTrue(Either.isRight(decode(extraWith("€".repeat(5_458))))) // 16 374 + 8 bytes
    assert.isTrue(Either.isLeft(decode(extraWith("€".repeat(5_459))))) // 16 377 + 8 bytes
    // An emoji is 2 UTF-16 code units and 4 bytes.
    assert.isTrue(Either.isRight(decode(extraWith("😀".repeat(4_094))))) // 16 376 + 8 bytes
    assert.isTrue(Either.isLeft(decode(extraWith("😀".repeat(4_095)))))
    // 49 KB of UTF-8 in 16 332 characters (the example) is refused.
    assert.isTrue(Either.isLeft(decode(extraWith("€".repeat(16_332)))))
  })

  it.effect("the model reads a typed error in bytes", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(decodeResolveParams(extraWith("€".repeat(8_000))))
      assert.instanceOf(error, InvalidResolveParams)
      assert.strictEqual(error.field, "extra")
      assert.include(error.problem, "is 24008 bytes as JSON (UTF-8); at most 16384 bytes (16 KiB) are allowed")
    }))
})
