/**
 * `decodeResolveParams` decodes the common `{ action, reason }` call without Schema, and accepts `extra` in its
 * strict wire form (JSON text or `null`). This property pins that the fast path, the wire form and the Schema agree
 * on every input: the same value as the `ResolveParams` Schema gives for the input with its wire `extra` turned into
 * the decoded form (by an independent reference below), a typed error when that is refused.
 */
import { describe, it } from "@effect/vitest"
import { Effect, Either, FastCheck as fc, Schema } from "effect"
import { deepStrictEqual, strictEqual } from "node:assert/strict"
import { decodeResolveParams, InvalidResolveParams, ResolveParams } from "../../src/index.js"
import { extraTextMaxLength } from "../../src/tools/Resolve.js"
import { yieldToEventLoop } from "../support/eventLoop.js"

const LONG = process.env.LONG !== undefined && process.env.LONG !== "" && process.env.LONG !== "0"
const numRuns = LONG ? 20_000 : 1_000

const bySchema = Schema.decodeUnknownEither(ResolveParams, { onExcessProperty: "error" })

const refused = Symbol("refused")

/** The wire rule, written independently of the library: what the Schema should see, or `refused`. */
const decodedForm = (raw: unknown): unknown => {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw) || !Object.hasOwn(raw, "extra")) return raw
  const { extra, ...rest } = raw as Record<string, unknown>
  if (extra === null) return rest
  if (typeof extra !== "string") return raw
  if (extra.length > extraTextMaxLength) return refused
  try {
    const parsed: unknown = JSON.parse(extra)
    return typeof parsed === "object" && parsed !== null && !Array.isArray(parsed)
      ? { ...rest, extra: parsed }
      : refused
  } catch {
    return refused
  }
}

const text = fc.oneof(
  fc.string(),
  fc.string({ unit: "grapheme" }),
  fc.string({ unit: "binary" }), // lone surrogates
  fc.constantFrom("", " ", "\n\t", "apply", "discard", "x".repeat(4_000), "x".repeat(4_001))
)

const value = fc.oneof(text, fc.integer(), fc.boolean(), fc.constant(null), fc.constant(undefined), fc.array(text))

const extraText = fc.oneof(
  fc.object().map((o) => JSON.stringify(o)),
  fc.jsonValue().map((v) => JSON.stringify(v)),
  fc.constantFrom("{\"__proto__\": {\"x\": 1}}", "{\"title\": \"my-plan\"}", "{", "null", "[]", "\"plan\"", " {} ")
)

const input = fc.oneof(
  fc.record({ action: fc.oneof(fc.constantFrom("apply", "discard"), value), reason: fc.oneof(text, value) }),
  fc.record({ action: fc.constantFrom("apply", "discard"), reason: text }, { requiredKeys: [] }),
  fc.record({ action: fc.constantFrom("apply", "discard"), reason: text, extra: fc.oneof(value, fc.object()) }),
  fc.record({
    action: fc.constantFrom("apply", "discard"),
    reason: text,
    extra: fc.oneof(extraText, fc.constant(null))
  }),
  fc.record({ action: fc.constantFrom("apply", "discard"), reason: text, other: value }),
  fc.constantFrom(JSON.parse("{\"action\":\"apply\",\"reason\":\"r\",\"__proto__\":1}"), null, [], "apply"),
  fc.anything()
)

describe("decodeResolveParams", () => {
  it("agrees with the ResolveParams Schema on every input, in the wire form too", async () => {
    await fc.assert(
      fc.asyncProperty(input, async (raw) => {
        const form = decodedForm(raw)
        const expected: Either.Either<ResolveParams, unknown> = form === refused ? Either.left(refused) : bySchema(form)
        const actual = Effect.runSync(Effect.either(decodeResolveParams(raw)))
        strictEqual(Either.isRight(actual), Either.isRight(expected), JSON.stringify(raw))
        if (Either.isRight(actual) && Either.isRight(expected)) deepStrictEqual(actual.right, expected.right)
        if (Either.isLeft(actual)) strictEqual(actual.left instanceof InvalidResolveParams, true)
        await yieldToEventLoop() // let vitest's worker answer its RPC (test/support/eventLoop.ts)
      }),
      { numRuns }
    )
  })
})
