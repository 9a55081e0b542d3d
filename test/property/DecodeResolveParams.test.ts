/**
 * `decodeResolveParams` decodes the common `{ action, reason }` call without Schema. This property pins that the
 * fast path and the Schema agree on every input: the same value when the Schema accepts, a typed error when it
 * does not.
 */
import { describe, it } from "@effect/vitest"
import { Effect, Either, FastCheck as fc, Schema } from "effect"
import { deepStrictEqual, strictEqual } from "node:assert/strict"
import { decodeResolveParams, InvalidResolveParams, ResolveParams } from "../../src/index.js"

const LONG = process.env.LONG !== undefined && process.env.LONG !== "" && process.env.LONG !== "0"
const numRuns = LONG ? 20_000 : 1_000

const bySchema = Schema.decodeUnknownEither(ResolveParams, { onExcessProperty: "error" })

const text = fc.oneof(
  fc.string(),
  fc.string({ unit: "grapheme" }),
  fc.string({ unit: "binary" }), // lone surrogates
  fc.constantFrom("", " ", "\n\t", "apply", "discard", "x".repeat(4_000), "x".repeat(4_001))
)

const value = fc.oneof(text, fc.integer(), fc.boolean(), fc.constant(null), fc.constant(undefined), fc.array(text))

const input = fc.oneof(
  fc.record({ action: fc.oneof(fc.constantFrom("apply", "discard"), value), reason: fc.oneof(text, value) }),
  fc.record({ action: fc.constantFrom("apply", "discard"), reason: text }, { requiredKeys: [] }),
  fc.record({ action: fc.constantFrom("apply", "discard"), reason: text, extra: fc.oneof(value, fc.object()) }),
  fc.record({ action: fc.constantFrom("apply", "discard"), reason: text, other: value }),
  fc.constantFrom(JSON.parse("{\"action\":\"apply\",\"reason\":\"r\",\"__proto__\":1}"), null, [], "apply"),
  fc.anything()
)

describe("decodeResolveParams", () => {
  it("agrees with the ResolveParams Schema on every input", () => {
    fc.assert(
      fc.property(input, (raw) => {
        const expected = bySchema(raw)
        const actual = Effect.runSync(Effect.either(decodeResolveParams(raw)))
        strictEqual(Either.isRight(actual), Either.isRight(expected), JSON.stringify(raw))
        if (Either.isRight(actual) && Either.isRight(expected)) deepStrictEqual(actual.right, expected.right)
        if (Either.isLeft(actual)) strictEqual(actual.left instanceof InvalidResolveParams, true)
      }),
      { numRuns }
    )
  })
})
