import { assert, describe, it } from "@effect/vitest"
import { deepStrictEqual } from "@effect/vitest/utils"
import { Either, Option } from "effect"
import * as ProviderToolChoice from "../../src/agent/ProviderToolChoice.js"
import { ToolChoice } from "../../src/index.js"

const resolve = ToolChoice.forceTool("resolve")

describe("ProviderToolChoice", () => {
  it("Anthropic Messages: auto, any, a named tool, and none as no tools at all (what the real client sends)", () => {
    deepStrictEqual(ProviderToolChoice.toAnthropic("auto"), Option.some({ type: "auto" as const }))
    deepStrictEqual(ProviderToolChoice.toAnthropic("required"), Option.some({ type: "any" as const }))
    deepStrictEqual(ProviderToolChoice.toAnthropic("none"), Option.some({ type: "omit_tools" as const }))
    deepStrictEqual(
      ProviderToolChoice.toAnthropic(resolve),
      Option.some({ type: "tool" as const, name: "resolve" })
    )
  })

  it("Anthropic with extended thinking cannot force: required and named are none", () => {
    const thinking = ProviderToolChoice.anthropicExtendedThinking
    assert.isTrue(Option.isNone(ProviderToolChoice.toAnthropic(resolve, thinking)))
    assert.isTrue(Option.isNone(ProviderToolChoice.toAnthropic("required", thinking)))
    deepStrictEqual(ProviderToolChoice.toAnthropic("auto", thinking), Option.some({ type: "auto" as const }))
    deepStrictEqual(ProviderToolChoice.toAnthropic("none", thinking), Option.some({ type: "omit_tools" as const }))
  })

  it("OpenAI Chat Completions: strings and { type: function, function: { name } }", () => {
    deepStrictEqual(ProviderToolChoice.toOpenAiChat("auto"), Option.some("auto" as const))
    deepStrictEqual(ProviderToolChoice.toOpenAiChat("none"), Option.some("none" as const))
    deepStrictEqual(ProviderToolChoice.toOpenAiChat("required"), Option.some("required" as const))
    deepStrictEqual(
      ProviderToolChoice.toOpenAiChat(resolve),
      Option.some({ type: "function" as const, function: { name: "resolve" } })
    )
  })

  it("OpenAI Responses: strings and { type: function, name }", () => {
    deepStrictEqual(ProviderToolChoice.toOpenAiResponses("required"), Option.some("required" as const))
    deepStrictEqual(
      ProviderToolChoice.toOpenAiResponses(resolve),
      Option.some({ type: "function" as const, name: "resolve" })
    )
  })

  it("Gemini: AUTO, NONE, ANY, and ANY with allowedFunctionNames", () => {
    deepStrictEqual(
      ProviderToolChoice.toGemini("auto"),
      Option.some({ functionCallingConfig: { mode: "AUTO" as const } })
    )
    deepStrictEqual(
      ProviderToolChoice.toGemini("none"),
      Option.some({ functionCallingConfig: { mode: "NONE" as const } })
    )
    deepStrictEqual(
      ProviderToolChoice.toGemini("required"),
      Option.some({ functionCallingConfig: { mode: "ANY" as const } })
    )
    deepStrictEqual(
      ProviderToolChoice.toGemini(resolve),
      Option.some({ functionCallingConfig: { mode: "ANY" as const, allowedFunctionNames: ["resolve"] } })
    )
  })

  it("@effect/ai: strings and { tool: name }", () => {
    deepStrictEqual(ProviderToolChoice.toEffectAi("auto"), Option.some("auto" as const))
    deepStrictEqual(ProviderToolChoice.toEffectAi(resolve), Option.some({ tool: "resolve" }))
  })

  it("names a provider rejects are none, never a malformed request", () => {
    const spaced = ToolChoice.forceTool("my tool")
    assert.isTrue(Option.isNone(ProviderToolChoice.toAnthropic(spaced)))
    assert.isTrue(Option.isNone(ProviderToolChoice.toOpenAiChat(spaced)))
    assert.isTrue(Option.isNone(ProviderToolChoice.toOpenAiResponses(spaced)))
    assert.isTrue(Option.isNone(ProviderToolChoice.toGemini(spaced)))
    assert.isTrue(Option.isNone(ProviderToolChoice.toGemini(ToolChoice.forceTool("1tool"))))
    assert.isTrue(Option.isNone(ProviderToolChoice.toOpenAiChat(ToolChoice.forceTool("x".repeat(65)))))
    assert.isTrue(Option.isSome(ProviderToolChoice.toGemini(ToolChoice.forceTool("ns.tool"))))
  })

  it("an auto-only model can express nothing but auto, on every provider", () => {
    const only = ProviderToolChoice.autoOnly
    const mappings: ReadonlyArray<(choice: ToolChoice.ToolChoice, c: typeof only) => Option.Option<unknown>> = [
      ProviderToolChoice.toAnthropic,
      ProviderToolChoice.toOpenAiChat,
      ProviderToolChoice.toOpenAiResponses,
      ProviderToolChoice.toGemini,
      ProviderToolChoice.toEffectAi
    ]
    for (const to of mappings) {
      assert.isTrue(Option.isSome(to("auto", only)))
      assert.isTrue(Option.isNone(to("none", only)))
      assert.isTrue(Option.isNone(to("required", only)))
      assert.isTrue(Option.isNone(to(resolve, only)))
    }
  })

  describe("toGeminiSchema", () => {
    const problemAt = (schema: object) =>
      Either.match(ProviderToolChoice.toGeminiSchema(schema), {
        onLeft: (error) => [error.path, error.problem] as const,
        onRight: () => ["accepted", ""] as const
      })
    const object = (properties: object) => ({ type: "object", properties, required: [] })
    const nested = (levels: number, leaf: object = { type: "string" }) => {
      let schema = leaf
      for (let i = 0; i < levels; i++) schema = { type: "array", items: schema }
      return schema
    }

    it("turns nullable unions into nullable, inlines references, upper-cases types, drops what Gemini lacks", () => {
      const schema = {
        $schema: "http://json-schema.org/draft-07/schema#",
        type: "object",
        properties: {
          mode: { const: "fast", description: "Only one." },
          note: { anyOf: [{ type: "string", maxLength: 10 }, { type: "null" }], description: "Or null." },
          count: { type: ["integer", "null"], minimum: 0 },
          when: { type: "string", format: "date-time" },
          id: { type: "string", format: "uuid" },
          tags: { type: "array", items: { $ref: "#/$defs/Tag" }, maxItems: 3 }
        },
        required: ["mode", "note", "count", "when", "id", "tags"],
        additionalProperties: false,
        $defs: { Tag: { type: "object", properties: { name: { type: "string" } }, required: ["name"] } }
      }
      deepStrictEqual(
        ProviderToolChoice.toGeminiSchema(schema),
        Either.right<ProviderToolChoice.GeminiSchema>({
          type: "OBJECT",
          properties: {
            mode: { type: "STRING", description: "Only one.", enum: ["fast"] },
            note: { type: "STRING", description: "Or null.", maxLength: 10, nullable: true },
            count: { type: "INTEGER", minimum: 0, nullable: true },
            when: { type: "STRING", format: "date-time" },
            id: { type: "STRING" },
            tags: {
              type: "ARRAY",
              maxItems: 3,
              items: { type: "OBJECT", properties: { name: { type: "STRING" } }, required: ["name"] }
            }
          },
          required: ["mode", "note", "count", "when", "id", "tags"]
        })
      )
    })

    it("what Gemini cannot express fails with UnsupportedGeminiSchema naming where", () => {
      deepStrictEqual(problemAt(object({ a: { anyOf: [{ type: "string" }, { type: "number" }] } }))[0], "a")
      deepStrictEqual(problemAt(object({ a: { oneOf: [{ type: "string" }], type: "string" } }))[0], "a")
      deepStrictEqual(problemAt(object({ a: { type: "integer", enum: [1, 2] } }))[0], "a")
      deepStrictEqual(problemAt(object({ a: { type: "object", properties: {} } }))[0], "a")
      deepStrictEqual(problemAt(object({ a: { type: "array", items: [{ type: "string" }] } }))[0], "a")
      deepStrictEqual(problemAt({ type: "object", properties: {} })[0], "(root)")
      const recursive = {
        ...object({ node: { $ref: "#/$defs/Node" } }),
        $defs: { Node: object({ next: { $ref: "#/$defs/Node" } }) }
      }
      deepStrictEqual(problemAt(recursive), [
        "node.next",
        "#/$defs/Node is recursive, and Gemini's schema has no references"
      ])
      assert.include(
        Either.getLeft(ProviderToolChoice.toGeminiSchema(object({ a: { type: "null" } }))).pipe(Option.getOrThrow)
          .message,
        "cannot be sent to Gemini: at a,"
      )
    })

    it("bounds the real nesting, with or without $ref: a schema deeper than 32 levels is refused, not walked", () => {
      deepStrictEqual(problemAt(object({ a: nested(30) }))[0], "accepted")
      const deep = `a${".items".repeat(32)}`
      deepStrictEqual(problemAt(object({ a: nested(40) })), [
        deep,
        "it nests deeper than 32 levels; simplify the schema"
      ])
      // Deeper than the stack: refused, not a RangeError.
      deepStrictEqual(problemAt(object({ a: nested(100_000) }))[0], deep)
      // Levels reached through references count where they are used.
      const viaRefs = {
        ...object({ a: { $ref: "#/$defs/Deep" } }),
        $defs: { Deep: nested(20, { $ref: "#/definitions/Deeper" }) },
        definitions: { Deeper: nested(20) }
      }
      deepStrictEqual(problemAt(viaRefs)[0], deep)
    })

    it("a cycle ends: a schema that contains itself, definitions that refer to each other", () => {
      const itself: Record<string, unknown> = { type: "object", required: [] }
      itself.properties = { self: itself, other: { type: "string" } }
      deepStrictEqual(problemAt(itself), [
        Array.from({ length: 33 }, () => "self").join("."),
        "it nests deeper than 32 levels; simplify the schema"
      ])
      const mutual = {
        ...object({ a: { anyOf: [{ $ref: "#/$defs/A" }, { type: "null" }] } }),
        $defs: { A: object({ b: { $ref: "#/$defs/B" } }), B: object({ a: { $ref: "#/$defs/A" } }) }
      }
      deepStrictEqual(problemAt(mutual), ["a.b.a", "#/$defs/A is recursive, and Gemini's schema has no references"])
    })

    it("definitions that use each other many times are refused once inlining them passes 100 000 objects", () => {
      const defs: Record<string, object> = { D16: { type: "string" } }
      for (let i = 15; i >= 0; i--) {
        defs[`D${i}`] = object({ l: { $ref: `#/$defs/D${i + 1}` }, r: { $ref: `#/$defs/D${i + 1}` } })
      }
      const [, problem] = problemAt({ ...object({ a: { $ref: "#/$defs/D0" } }), $defs: defs })
      deepStrictEqual(
        problem,
        "it makes the schema exceed 100000 objects once its definitions are inlined; simplify it"
      )
      // Used a few times, they are inlined as usual.
      assert.isTrue(
        Either.isRight(ProviderToolChoice.toGeminiSchema({ ...object({ a: { $ref: "#/$defs/D8" } }), $defs: defs }))
      )
    })
  })
})
