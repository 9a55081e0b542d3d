/**
 * `toStrict`: a plain JSON Schema becomes one that OpenAI's strict function calling accepts (checked by the
 * independent rules of `test/support/strictRules.ts`), or is refused with where and what to change; `decode` turns
 * the `null` of a formerly optional property back into an absent one.
 */
import { assert, describe, it } from "@effect/vitest"
import { Either, FastCheck as fc, Option } from "effect"
import { deepStrictEqual } from "node:assert/strict"
import { inlineDefinitions, type StrictProblem, type StrictSchema, toStrict } from "../../src/internal/strictSchema.js"
import { strictViolations } from "../support/strictRules.js"

const strict = (schema: unknown): StrictSchema => {
  const result = toStrict(schema)
  if (Either.isLeft(result)) throw new Error(`refused: ${result.left.path} ${result.left.problem}`)
  return result.right
}

const refusal = (schema: unknown): StrictProblem => {
  const result = toStrict(schema)
  if (Either.isRight(result)) throw new Error(`accepted: ${JSON.stringify(result.right.schema)}`)
  return result.left
}

describe("toStrict conversions", () => {
  it("closes every object, requires every property and makes an optional one nullable", () => {
    const result = strict({
      $schema: "http://json-schema.org/draft-07/schema#",
      type: "object",
      description: "Deploy.",
      properties: {
        service: { type: "string", description: "The service." },
        replicas: { type: "integer", minimum: 1 },
        options: {
          type: "object",
          properties: { force: { type: "boolean" }, note: { type: ["string", "null"] } },
          required: ["force"]
        }
      },
      required: ["service"]
    })
    deepStrictEqual(result.schema, {
      type: "object",
      description: "Deploy.",
      properties: {
        service: { type: "string", description: "The service." },
        replicas: { anyOf: [{ type: "integer", minimum: 1 }, { type: "null" }] },
        options: {
          anyOf: [{
            type: "object",
            properties: { force: { type: "boolean" }, note: { type: ["string", "null"] } },
            required: ["force", "note"],
            additionalProperties: false
          }, { type: "null" }]
        }
      },
      required: ["service", "replicas", "options"],
      additionalProperties: false
    })
    deepStrictEqual([...result.optional], ["replicas", "options"])
    deepStrictEqual(strictViolations(result.schema), [])
  })

  it("an optional anyOf gets one more null branch; an optional property that accepts null stays as it is", () => {
    const result = strict({
      type: "object",
      properties: {
        either: { anyOf: [{ type: "string" }, { type: "number" }] },
        maybe: { enum: ["a", null] }
      }
    })
    deepStrictEqual(result.schema.properties, {
      either: { anyOf: [{ type: "string" }, { type: "number" }, { type: "null" }] },
      maybe: { enum: ["a", null] }
    })
    // "maybe" accepts null itself: null is a value there, not "absent".
    deepStrictEqual(result.decode({ either: null, maybe: null }), { maybe: null })
  })

  it("moves a default into the description and drops $id and $comment", () => {
    const result = strict({
      type: "object",
      $id: "x",
      properties: { unit: { type: "string", enum: ["c", "f"], default: "c", description: "Unit.", $comment: "." } },
      required: ["unit"]
    })
    deepStrictEqual(result.schema.properties, {
      unit: { type: "string", description: "Unit. Default: \"c\".", enum: ["c", "f"] }
    })
  })

  it("an object with no properties and additionalProperties false is an empty object", () => {
    deepStrictEqual(strict({ type: "object", additionalProperties: false }).schema, {
      type: "object",
      properties: {},
      required: [],
      additionalProperties: false
    })
  })

  it("decode removes the null of optional properties at every depth, and keeps everything else", () => {
    const result = strict({
      type: "object",
      properties: {
        a: { type: "string" },
        list: {
          type: "array",
          items: {
            anyOf: [
              { type: "object", properties: { x: { type: "number" } } },
              { type: "object", properties: { y: { type: "number" } }, required: ["y"] },
              { type: "string" }
            ]
          }
        }
      },
      required: ["list"]
    })
    deepStrictEqual(
      result.decode({ a: null, list: [{ x: null }, { y: 1 }, "s", { x: 2 }] }),
      { list: [{}, { y: 1 }, "s", { x: 2 }] }
    )
    // A "__proto__" key (JSON.parse makes it an own property) stays plain data.
    const decoded = result.decode(JSON.parse("{\"list\":[],\"__proto__\":{\"polluted\":true}}")) as object
    assert.isUndefined((decoded as any).polluted)
    assert.isTrue(Object.hasOwn(decoded, "__proto__"))
  })
})

describe("toStrict refusals", () => {
  const cases: Array<[string, unknown, string, string]> = [
    ["a non-object root", { type: "string" }, "parameters", "must be a JSON Schema object with type \"object\""],
    ["a root anyOf", { anyOf: [{ type: "object" }] }, "parameters", "with type \"object\""],
    ["a free-form object", { type: "object" }, "parameters", "is a free-form object (no properties)"],
    [
      "additionalProperties true",
      { type: "object", properties: {}, additionalProperties: true },
      "parameters",
      "is a free-form object (additionalProperties is true)"
    ],
    [
      "additionalProperties as a schema",
      { type: "object", properties: { m: { type: "object", properties: {}, additionalProperties: {} } } },
      "parameters.properties.m",
      "additionalProperties is a schema"
    ],
    ["$ref", { type: "object", properties: { a: { $ref: "#/x" } } }, "parameters.properties.a", "inline"],
    ["oneOf", { type: "object", properties: { a: { oneOf: [] } } }, "parameters.properties.a", "use anyOf"],
    ["allOf", { type: "object", properties: { a: { allOf: [] } } }, "parameters.properties.a", "merge"],
    [
      "maxLength",
      { type: "object", properties: { a: { type: "string", maxLength: 3 } } },
      "parameters.properties.a",
      "\"maxLength\", which strict function calling refuses"
    ],
    [
      "uniqueItems",
      { type: "object", properties: { a: { type: "array", items: { type: "string" }, uniqueItems: true } } },
      "parameters.properties.a",
      "\"uniqueItems\""
    ],
    [
      "an unknown keyword",
      { type: "object", properties: { a: { type: "string", "x-ui": 1 } } },
      "parameters.properties.a",
      "\"x-ui\", which strict function calling does not accept"
    ],
    [
      "a keyword of another type",
      { type: "object", properties: { a: { type: "string", minimum: 1 } } },
      "parameters.properties.a",
      "uses \"minimum\" without type \"number\""
    ],
    [
      "an unsupported format",
      { type: "object", properties: { a: { type: "string", format: "uri" } } },
      "parameters.properties.a",
      "has format \"uri\""
    ],
    ["no type", { type: "object", properties: { a: { description: "?" } } }, "parameters.properties.a", "no type"],
    [
      "an unknown type",
      { type: "object", properties: { a: { type: "any" } } },
      "parameters.properties.a",
      "has type \"any\""
    ],
    [
      "a tuple",
      { type: "object", properties: { a: { type: "array", items: [{ type: "string" }] } } },
      "parameters.properties.a",
      "items that is not one schema object"
    ],
    [
      "required naming a missing property",
      { type: "object", properties: {}, required: ["ghost"] },
      "parameters",
      "lists \"ghost\" in required"
    ],
    [
      "a prototype key",
      JSON.parse("{\"type\":\"object\",\"properties\":{\"__proto__\":{\"type\":\"string\"}}}"),
      "parameters.properties.__proto__",
      "is not an allowed property name"
    ],
    [
      "objects nested 11 deep",
      Array.from({ length: 10 }).reduce<Record<string, unknown>>(
        (inner) => ({ type: "object", properties: { n: inner }, required: ["n"] }),
        { type: "object", properties: {}, required: [] }
      ),
      "parameters.properties.n.properties.n.properties.n.properties.n.properties.n.properties.n.properties.n." +
      "properties.n.properties.n.properties.n",
      "nests objects more than 10 levels deep"
    ],
    [
      "too many enum values",
      { type: "object", properties: { a: { enum: Array.from({ length: 1_001 }, (_, i) => i) } } },
      "parameters.properties.a",
      "exceed 1000 enum values"
    ]
  ]
  for (const [name, schema, path, problem] of cases) {
    it(`${name}: ${path}`, () => {
      const refused = refusal(schema)
      assert.strictEqual(refused.path, path)
      assert.include(refused.problem, problem)
    })
  }

  it("refuses a schema it cannot read instead of throwing: a throwing getter, a Proxy, a cycle, a bigint", () => {
    const getter = {
      type: "object",
      get properties(): never {
        throw new Error("no")
      }
    }
    assert.include(refusal(getter).problem, "could not be read")
    const proxy = new Proxy({}, {
      get: () => {
        throw new Error("trap")
      },
      ownKeys: () => {
        throw new Error("trap")
      }
    })
    assert.isTrue(Either.isLeft(toStrict(proxy)))
    assert.isTrue(Either.isLeft(toStrict({ type: "object", properties: { p: proxy } })))
    const cycle: Record<string, unknown> = { type: "object", properties: {} }
    ;(cycle.properties as Record<string, unknown>).self = cycle
    assert.include(refusal(cycle).problem, "nests objects more than 10 levels deep")
    assert.include(refusal({ type: "object", properties: { n: { const: 1n } } }).problem, "const")
  })
})

describe("inlineDefinitions", () => {
  const object = (properties: object) => ({ type: "object", properties })

  it("inlines $defs and definitions (keywords beside a $ref win), keeps a recursive $ref with the definitions", () => {
    const tree = object({ child: { $ref: "#/$defs/Tree" } })
    const schema = {
      ...object({
        a: { $ref: "#/$defs/A", description: "beside" },
        b: { $ref: "#/definitions/B" },
        // Property names are not keywords: a property may be called "$defs".
        $defs: { type: "boolean" },
        tree: { $ref: "#/$defs/Tree" }
      }),
      $defs: { A: { type: "string", description: "own" }, Tree: tree },
      definitions: { B: { type: "integer" } }
    }
    deepStrictEqual(
      inlineDefinitions(schema),
      Either.right({
        ...object({
          a: { type: "string", description: "beside" },
          b: { type: "integer" },
          $defs: { type: "boolean" },
          tree
        }),
        $defs: schema.$defs,
        definitions: schema.definitions
      })
    )
  })

  it("follows a $ref whose name holds / or ~ (escaped as ~1 and ~0, as effect's JSONSchema writes it)", () => {
    const schema = {
      ...object({ a: { $ref: "#/$defs/pkg~1Name~0v1" } }),
      $defs: { "pkg/Name~v1": { type: "string" } }
    }
    deepStrictEqual(
      inlineDefinitions(schema),
      Either.right(object({ a: { type: "string" } }))
    )
  })

  it("refuses, naming where, a schema nested too deeply or one that contains itself, instead of overflowing", () => {
    let deep: object = { type: "string" }
    for (let i = 0; i < 100_000; i++) deep = { anyOf: [{ type: "array", items: deep }, { type: "null" }] }
    const refused = inlineDefinitions(object({ a: deep }))
    assert.isTrue(Either.isLeft(refused))
    const { at, path, problem } = Either.getLeft(refused).pipe(Option.getOrThrow)
    assert.strictEqual(problem, "nests deeper than 64 levels; simplify the schema")
    assert.isTrue(path.startsWith("parameters.properties.a.anyOf[0].items.anyOf[0].items"), path)
    deepStrictEqual(at.slice(0, 5), ["properties", "a", "anyOf", 0, "items"])
    const itself: Record<string, unknown> = { type: "object" }
    itself.properties = { self: itself }
    deepStrictEqual(
      Either.getLeft(inlineDefinitions(itself, { maxDepth: 2, maxNodes: 100 })).pipe(Option.map((p) => p.path)),
      Option.some("parameters.properties.self.properties.self.properties.self")
    )
  })

  it("refuses definitions that expand past maxNodes objects (each use of a definition is a copy)", () => {
    const defs: Record<string, object> = { D10: { type: "string" } }
    for (let i = 9; i >= 0; i--) {
      defs[`D${i}`] = object({ l: { $ref: `#/$defs/D${i + 1}` }, r: { $ref: `#/$defs/D${i + 1}` } })
    }
    const schema = { ...object({ a: { $ref: "#/$defs/D0" } }), $defs: defs }
    assert.isTrue(Either.isRight(inlineDefinitions(schema, { maxDepth: 64, maxNodes: 20_000 })))
    deepStrictEqual(
      Either.getLeft(inlineDefinitions(schema, { maxDepth: 64, maxNodes: 1_000 })).pipe(Option.map((p) => p.problem)),
      Option.some("makes the schema exceed 1000 objects once its definitions are inlined; simplify it")
    )
  })
})

// -----------------------------------------------------------------------------------------------------------------
// property: plain schemas convert into schemas the strict rules accept, and decode undoes the nullable encoding
// -----------------------------------------------------------------------------------------------------------------

type Schema = Record<string, unknown>

const name = fc.stringMatching(/^[a-z_][a-z0-9_]{0,8}$/).filter((n) => !["__proto__", "constructor"].includes(n))

const leafSchema: fc.Arbitrary<Schema> = fc.oneof(
  fc.record({ type: fc.constant("string"), description: fc.string() }, { requiredKeys: ["type"] }),
  fc.record({ type: fc.constant("string"), format: fc.constantFrom("date", "uuid", "email") }),
  fc.record({ type: fc.constantFrom("number", "integer"), minimum: fc.integer(), default: fc.integer() }, {
    requiredKeys: ["type"]
  }),
  fc.constant({ type: "boolean" }),
  fc.constant({ type: "null" }),
  fc.constant({ type: ["string", "null"] }),
  fc.record({ enum: fc.uniqueArray(fc.string({ maxLength: 5 }), { minLength: 1, maxLength: 4 }) }),
  fc.record({ const: fc.string({ maxLength: 5 }) })
)

const schemaArb: fc.Arbitrary<Schema> = fc.letrec<{ schema: Schema; object: Schema }>((tie) => ({
  schema: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    leafSchema,
    tie("object"),
    tie("schema").map((items): Schema => ({ type: "array", items })),
    fc.array(tie("schema"), { minLength: 1, maxLength: 3 }).map((anyOf): Schema => ({ anyOf }))
  ),
  object: fc.uniqueArray(fc.tuple(name, tie("schema"), fc.boolean()), { maxLength: 4, selector: ([n]) => n }).chain((
    entries
  ) =>
    fc.boolean().map((closed): Schema => ({
      type: "object",
      properties: Object.fromEntries(entries.map(([n, s]) => [n, s])),
      required: entries.filter(([, , required]) => required).map(([n]) => n),
      ...(closed ? { additionalProperties: false } : {})
    }))
  )
})).object

const acceptsNull = (schema: Schema): boolean =>
  schema.type === "null" || (Array.isArray(schema.type) && schema.type.includes("null")) ||
  (Array.isArray(schema.enum) && schema.enum.includes(null)) || schema.const === null ||
  (Array.isArray(schema.anyOf) && (schema.anyOf as Array<Schema>).some(acceptsNull))

/** A value for the strict schema (optional properties sent as null) and what decode must make of it. */
const sample = (schema: Schema): { readonly sent: unknown; readonly decoded: unknown } => {
  if (Array.isArray(schema.anyOf)) return sample(schema.anyOf[0] as Schema)
  if ("const" in schema) return { sent: schema.const, decoded: schema.const }
  if (Array.isArray(schema.enum)) return { sent: schema.enum[0], decoded: schema.enum[0] }
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type
  switch (type) {
    case "string":
      return { sent: "s", decoded: "s" }
    case "number":
    case "integer":
      return { sent: 1, decoded: 1 }
    case "boolean":
      return { sent: true, decoded: true }
    case "null":
      return { sent: null, decoded: null }
    case "array": {
      const item = sample(schema.items as Schema)
      return { sent: [item.sent], decoded: [item.decoded] }
    }
    default: {
      const properties = schema.properties as Record<string, Schema>
      const required = schema.required as Array<string>
      const sent: Record<string, unknown> = {}
      const decoded: Record<string, unknown> = {}
      for (const [key, property] of Object.entries(properties)) {
        const value = sample(property)
        if (required.includes(key) || acceptsNull(property)) {
          sent[key] = value.sent
          decoded[key] = value.decoded
        } else {
          sent[key] = null
        }
      }
      return { sent, decoded }
    }
  }
}

describe("toStrict on generated schemas", () => {
  it("converts every plain schema into one the strict rules accept; decode undoes the null of optional fields", () => {
    fc.assert(
      fc.property(schemaArb, (schema) => {
        const before = structuredClone(schema)
        const result = strict(schema)
        deepStrictEqual(strictViolations(result.schema), [])
        const { decoded, sent } = sample(schema)
        deepStrictEqual(result.decode(sent), decoded)
        deepStrictEqual(schema, before, "the input schema is not modified")
      }),
      { numRuns: 500 }
    )
  })
})
