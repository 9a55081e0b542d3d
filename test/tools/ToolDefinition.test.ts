import { assert, describe, it } from "@effect/vitest"
import { deepStrictEqual } from "@effect/vitest/utils"
import { Effect } from "effect"
import { ResolveRuntime, ResolveTool, type ToolDefinition, ToolResult, toolsFor, UnknownTool } from "../../src/index.js"
import { selectTools } from "../../src/tools/ToolDefinition.js"

const fakeTool = (name: string, hidden = false): ToolDefinition => ({
  name,
  label: name,
  description: `The ${name} tool.`,
  hidden,
  parameters: { $schema: "http://json-schema.org/draft-07/schema#", type: "object", properties: {} } as any,
  execute: () => Effect.succeed(ToolResult.text(name))
})

const read = fakeTool("read")
const edit = fakeTool("edit")
const grep = fakeTool("grep")
const secret = fakeTool("secret", true)
const available = [read, edit, grep, secret, ResolveTool]

describe("ResolveTool (§6)", () => {
  it("is named resolve, labelled and hidden", () => {
    assert.strictEqual(ResolveTool.name, "resolve")
    assert.strictEqual(ResolveTool.label, "Resolve")
    assert.isTrue(ResolveTool.hidden)
  })

  it("describes how and when to call it", () => {
    assert.include(ResolveTool.description, "apply")
    assert.include(ResolveTool.description, "discard")
    assert.include(ResolveTool.description, "reason")
    assert.match(ResolveTool.description, /most recent/)
  })

  it("has strict JSON Schema parameters: every property required, extra and id nullable text, nothing else", () => {
    const schema = ResolveTool.parameters as any
    assert.strictEqual(schema.type, "object")
    deepStrictEqual(schema.required, ["action", "reason", "extra", "id"])
    assert.isFalse(schema.additionalProperties)
    deepStrictEqual(Object.keys(schema.properties).sort(), ["action", "extra", "id", "reason"])
    deepStrictEqual(schema.properties.id.anyOf, [{ type: "string" }, { type: "null" }])
    deepStrictEqual([...schema.properties.action.enum].sort(), ["apply", "discard"])
    assert.strictEqual(schema.properties.reason.type, "string")
    deepStrictEqual(schema.properties.extra.anyOf, [{ type: "string" }, { type: "null" }])
    assert.include(schema.properties.extra.description, "JSON object as text")
    // Plain JSON: what a provider receives.
    deepStrictEqual(JSON.parse(JSON.stringify(schema)), schema)
  })

  it.effect("execute decodes untrusted input and runs resolve", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(ResolveTool.execute({ action: "discard", reason: "nothing" }))
      assert.strictEqual(error._tag, "NoPendingAction")
      const invalid = yield* Effect.flip(ResolveTool.execute({ action: "maybe", reason: "x" }))
      assert.strictEqual(invalid._tag, "InvalidResolveParams")
    }).pipe(Effect.provide(ResolveRuntime.layer)))
})

describe("toolsFor", () => {
  it.effect("returns the requested tools in order with resolve appended last", () =>
    Effect.gen(function*() {
      const tools = yield* toolsFor(["grep", "read"], available)
      deepStrictEqual(tools.map((t) => t.name), ["grep", "read", "resolve"])
      assert.strictEqual(tools[2], ResolveTool)
    }))

  it.effect("filters resolve out of the request and still appends it exactly once, last", () =>
    Effect.gen(function*() {
      const tools = yield* toolsFor(["resolve", "edit", "resolve", "read"], available)
      deepStrictEqual(tools.map((t) => t.name), ["edit", "read", "resolve"])
    }))

  it.effect("appends resolve even when nothing is requested or available", () =>
    Effect.gen(function*() {
      deepStrictEqual((yield* toolsFor([], [])).map((t) => t.name), ["resolve"])
      deepStrictEqual((yield* toolsFor(["resolve"], [read])).map((t) => t.name), ["resolve"])
    }))

  it.effect("lists a duplicated name once and never selects hidden tools by name", () =>
    Effect.gen(function*() {
      const tools = yield* toolsFor(["read", "secret", "read"], available)
      deepStrictEqual(tools.map((t) => t.name), ["read", "resolve"])
    }))

  it.effect("an unknown name fails with UnknownTool listing what is available", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(toolsFor(["read", "wirte"], available))
      assert.instanceOf(error, UnknownTool)
      assert.strictEqual(error.name, "wirte")
      deepStrictEqual(error.available, ["read", "edit", "grep", "secret"])
      assert.strictEqual(error.message, "Unknown tool \"wirte\". Available tools: read, edit, grep, secret.")
      const none = yield* Effect.flip(toolsFor(["x"], []))
      assert.strictEqual(none.message, "Unknown tool \"x\". Available tools: (none).")
    }))

  it.effect("selectTools appends its own always-tools", () =>
    Effect.gen(function*() {
      const tools = yield* selectTools(["edit", "grep"], [read, edit, grep], [read])
      deepStrictEqual(tools.map((t) => t.name), ["edit", "grep", "read"])
    }))
})
