import { assert, describe, it } from "@effect/vitest"
import { deepStrictEqual } from "@effect/vitest/utils"
import { Deferred, Effect, Exit, Fiber, Option, Schema } from "effect"
import { ResolveRuntime, ResolveTool, SteeringBus, ToolChoiceQueue, ToolResult, toolsFor } from "../../src/index.js"
import * as CustomTools from "../../src/producers/CustomTools.js"
import { failureOf, successOf } from "../support/exits.js"
import { anthropic, openAiStrict } from "../support/providerSchemas.js"

const turn = (call: { readonly action: "apply" | "discard"; readonly reason: string; readonly extra?: any }) =>
  Effect.gen(function*() {
    const queue = yield* ToolChoiceQueue
    yield* queue.nextToolChoice
    const exit = yield* Effect.exit(ResolveTool.execute(call))
    yield* queue.resolve
    return exit
  })

describe("CustomTools.stage", () => {
  it.effect("forwards into stage with sourceToolName custom_tool; apply gets reason and extra", () =>
    Effect.gen(function*() {
      const calls: Array<unknown> = []
      const handle = yield* CustomTools.stage({
        label: "Deploy: api",
        apply: async (reason, extra) => {
          calls.push([reason, extra])
          return "Deployed api."
        }
      })
      assert.strictEqual(handle.sourceToolName, "custom_tool")
      assert.strictEqual(handle.label, "Deploy: api")
      const queue = yield* ToolChoiceQueue
      deepStrictEqual(yield* queue.inspect, ["pending-action:custom_tool"])
      const bus = yield* SteeringBus
      deepStrictEqual((yield* bus.pending)[0]?.details, { toolName: "custom_tool" })
      const result = successOf(yield* turn({ action: "apply", reason: "Ship it.", extra: { region: "eu" } }))
      assert.strictEqual(ToolResult.textOf(result), "Deployed api.")
      deepStrictEqual(calls, [["Ship it.", { region: "eu" }]])
      assert.strictEqual((result.details as any).sourceToolName, "custom_tool")
      assert.strictEqual(yield* handle.status, "applied")
    }).pipe(Effect.provide(ResolveRuntime.layer)))

  it.effect("forwards a given sourceToolName and a returned ToolResult's details", () =>
    Effect.gen(function*() {
      yield* CustomTools.stage({
        label: "Deploy: api",
        sourceToolName: "deploy",
        apply: () => ToolResult.text("done", { version: 3 })
      })
      const queue = yield* ToolChoiceQueue
      deepStrictEqual(yield* queue.inspect, ["pending-action:deploy"])
      const result = successOf(yield* turn({ action: "apply", reason: "ok" }))
      deepStrictEqual((result.details as any).sourceResultDetails, { version: 3 })
      assert.strictEqual((result.details as any).sourceToolName, "deploy")
    }).pipe(Effect.provide(ResolveRuntime.layer)))

  it.effect("a thrown Error becomes ApplyFailed and the action stays pending", () =>
    Effect.gen(function*() {
      let attempts = 0
      const handle = yield* CustomTools.stage({
        label: "Deploy: api",
        apply: async () => {
          if (attempts++ === 0) throw new Error("registry unreachable")
          return "Deployed."
        }
      })
      const error = failureOf(yield* turn({ action: "apply", reason: "ok" }))
      assert.strictEqual(error._tag, "ApplyFailed")
      assert.strictEqual(error.message, "Apply failed: registry unreachable")
      assert.strictEqual(yield* handle.status, "pending")
      assert.strictEqual(ToolResult.textOf(successOf(yield* turn({ action: "apply", reason: "retry" }))), "Deployed.")
      assert.strictEqual(yield* handle.status, "applied")
    }).pipe(Effect.provide(ResolveRuntime.layer)))

  it.effect("a synchronous throw and a thrown string are apply failures too", () =>
    Effect.gen(function*() {
      yield* CustomTools.stage({
        label: "a",
        apply: () => {
          throw "disk full"
        }
      })
      const error = failureOf(yield* turn({ action: "apply", reason: "ok" }))
      assert.strictEqual(error.message, "Apply failed: disk full")
    }).pipe(Effect.provide(ResolveRuntime.layer)))

  it.effect("a thrown tool-error marker stays a ToolError (toolError helper and a plain object)", () =>
    Effect.gen(function*() {
      for (
        const thrown of [
          CustomTools.toolError("Deploying prod needs a ticket."),
          { isToolError: true, message: "Deploying prod needs a ticket." }
        ]
      ) {
        const handle = yield* CustomTools.stage({
          label: "Deploy: prod",
          apply: async () => {
            throw thrown
          }
        })
        const error = failureOf(yield* turn({ action: "apply", reason: "ok" }))
        assert.strictEqual(error._tag, "ToolError")
        assert.strictEqual(error.message, "Deploying prod needs a ticket.")
        assert.strictEqual(yield* handle.status, "pending")
        successOf(yield* turn({ action: "discard", reason: "No ticket." }))
        assert.strictEqual(yield* handle.status, "discarded")
      }
    }).pipe(Effect.provide(ResolveRuntime.layer)))

  it.effect("an apply that returns something else is an apply failure", () =>
    Effect.gen(function*() {
      yield* CustomTools.stage({ label: "a", apply: async () => 42 as any })
      const error = failureOf(yield* turn({ action: "apply", reason: "ok" }))
      assert.strictEqual(error.message, "Apply failed: apply returned number, not a ToolResult or a string")
    }).pipe(Effect.provide(ResolveRuntime.layer)))

  it.effect("reject: nothing returned → default text; a string → that text; a throw → ToolError", () =>
    Effect.gen(function*() {
      yield* CustomTools.stage({ label: "A: one", apply: () => "x", reject: async () => undefined })
      const first = successOf(yield* turn({ action: "discard", reason: "no" }))
      assert.strictEqual(ToolResult.textOf(first), "Discarded: A: one. Reason: no")

      const seen: Array<unknown> = []
      yield* CustomTools.stage({
        label: "A: two",
        apply: () => "x",
        reject: (reason, extra) => {
          seen.push([reason, extra])
          return "Rolled back the staging slot."
        }
      })
      const second = successOf(yield* turn({ action: "discard", reason: "no", extra: { why: "late" } }))
      assert.strictEqual(ToolResult.textOf(second), "Rolled back the staging slot.")
      deepStrictEqual(seen, [["no", { why: "late" }]])

      yield* CustomTools.stage({
        label: "A: three",
        apply: () => "x",
        reject: async () => {
          throw new Error("lock held")
        }
      })
      const third = failureOf(yield* turn({ action: "discard", reason: "no" }))
      assert.strictEqual(third._tag, "ToolError")
      assert.strictEqual(third.message, "lock held")
    }).pipe(Effect.provide(ResolveRuntime.layer)))

  it.effect("values that cannot be turned into text still give typed errors (issue 11 §1)", () =>
    Effect.gen(function*() {
      const nullProto = Object.assign(Object.create(null), { n: 1n })
      const getter = {
        get message(): string {
          throw new Error("no message")
        }
      }
      const handle = yield* CustomTools.stage({
        label: "A: hostile",
        apply: () => Promise.reject(nullProto),
        reject: () => {
          throw getter
        }
      })
      const applied = failureOf(yield* turn({ action: "apply", reason: "go" }))
      assert.strictEqual(applied._tag, "ApplyFailed")
      assert.strictEqual(applied.message, "Apply failed: {\"n\":1n}")
      const discarded = failureOf(yield* turn({ action: "discard", reason: "no" }))
      assert.strictEqual(discarded._tag, "ToolError")
      assert.strictEqual(discarded.message, "{\"message\":[unreadable]}")
      assert.strictEqual(yield* handle.status, "pending")

      const [tool] = yield* CustomTools.registerCustomTools([{
        name: "hostile",
        description: "Throws a value without a prototype.",
        parameters: { type: "object", properties: {}, additionalProperties: false },
        execute: () => {
          throw nullProto
        }
      }])
      const error = failureOf(yield* Effect.exit(tool!.execute({})))
      assert.strictEqual(error._tag, "ToolError")
      assert.strictEqual(error.message, "hostile failed: {\"n\":1n}")
    }).pipe(Effect.provide(ResolveRuntime.layer)))

  it.effect("an action whose fields cannot be read fails with InvalidPendingAction", () =>
    Effect.gen(function*() {
      const action = {
        get label(): string {
          throw new Error("no label")
        },
        apply: () => "x"
      }
      const error = failureOf(yield* Effect.exit(CustomTools.stage(action)))
      assert.instanceOf(error, CustomTools.InvalidPendingAction)
      assert.strictEqual(error.field, "(root)")
    }).pipe(Effect.provide(ResolveRuntime.layer)))

  it.effect("a malformed action fails with InvalidPendingAction and stages nothing", () =>
    Effect.gen(function*() {
      const cases: Array<[any, string]> = [
        [{ label: "", apply: () => "x" }, "label"],
        [{ label: "a" }, "apply"],
        [{ label: "a", apply: () => "x", reject: "no" }, "reject"],
        [{ label: "a", apply: () => "x", sourceToolName: " " }, "sourceToolName"]
      ]
      for (const [action, field] of cases) {
        const error = failureOf(yield* Effect.exit(CustomTools.stage(action)))
        assert.instanceOf(error, CustomTools.InvalidPendingAction)
        assert.strictEqual(error.field, field)
      }
      const queue = yield* ToolChoiceQueue
      deepStrictEqual(yield* queue.inspect, [])
    }).pipe(Effect.provide(ResolveRuntime.layer)))

  it.live("by default apply is the commit: interrupting resolve waits for it and the action counts as applied", () =>
    Effect.gen(function*() {
      const started = yield* Deferred.make<void>()
      let finish: () => void = () => {}
      let aborted = false
      const handle = yield* CustomTools.stage({
        label: "Deploy: api",
        apply: (_reason, _extra, { signal }) =>
          new Promise((resolve) => {
            signal.addEventListener("abort", () => (aborted = true))
            finish = () => resolve("Deployed.")
            Deferred.unsafeDone(started, Exit.void)
          })
      })
      const queue = yield* ToolChoiceQueue
      yield* queue.nextToolChoice
      const fiber = yield* Effect.fork(ResolveTool.execute({ action: "apply", reason: "ok" }))
      yield* Deferred.await(started)
      const interrupter = yield* Effect.fork(Fiber.interrupt(fiber))
      yield* Effect.sleep("10 millis")
      assert.strictEqual(yield* handle.status, "resolving")
      assert.isTrue(Option.isNone(yield* Fiber.poll(interrupter)), "the interruption waits for the commit")
      finish()
      yield* Fiber.join(interrupter)
      yield* queue.resolve
      assert.strictEqual(yield* handle.status, "applied")
      assert.isFalse(aborted)
      deepStrictEqual(yield* queue.inspect, [])
    }).pipe(Effect.provide(ResolveRuntime.layer)))

  it.live("abortable: interrupting resolve aborts the signal and leaves the action pending", () =>
    Effect.gen(function*() {
      const started = yield* Deferred.make<void>()
      const abortedDeferred = yield* Deferred.make<void>()
      const handle = yield* CustomTools.stage({
        label: "Deploy: api",
        abortable: true,
        apply: (_reason, _extra, { signal }) =>
          new Promise((_resolve, reject) => {
            signal.addEventListener("abort", () => {
              Deferred.unsafeDone(abortedDeferred, Exit.void)
              reject(new Error("aborted"))
            })
            Deferred.unsafeDone(started, Exit.void)
          })
      })
      const queue = yield* ToolChoiceQueue
      yield* queue.nextToolChoice
      const fiber = yield* Effect.fork(ResolveTool.execute({ action: "apply", reason: "ok" }))
      yield* Deferred.await(started)
      const exit = yield* Fiber.interrupt(fiber)
      assert.isTrue(Exit.isInterrupted(exit))
      yield* Deferred.await(abortedDeferred)
      yield* queue.resolve
      assert.strictEqual(yield* handle.status, "pending")
      deepStrictEqual(yield* queue.inspect, ["pending-action:custom_tool"])
    }).pipe(Effect.provide(ResolveRuntime.layer)))
})

describe("custom-tool adapter", () => {
  const deploy: CustomTools.CustomTool<{ service: string; replicas?: number }> = {
    name: "deploy",
    description: "Deploy a service, as a preview.",
    parameters: {
      type: "object",
      properties: { service: { type: "string" }, replicas: { type: "integer" } },
      required: ["service"],
      additionalProperties: false
    },
    execute: async (params, api) => {
      if (params.service === "prod") throw CustomTools.toolError("prod is frozen this week.")
      if (params.service === "crash") throw new Error("kube config missing")
      const info = await api.stage({
        label: `Deploy: ${params.service}`,
        sourceToolName: "deploy",
        apply: async (reason) => `Deployed ${params.service} x${params.replicas ?? 1} (${reason}).`
      })
      return ToolResult.text(`Ready to deploy ${params.service}. Call resolve to apply or discard.`, {
        id: info.id,
        status: await info.status()
      })
    }
  }

  it.effect("registers tools as ToolDefinitions that toolsFor can select", () =>
    Effect.gen(function*() {
      const tools = yield* CustomTools.registerCustomTools([deploy])
      assert.strictEqual(tools.length, 1)
      assert.strictEqual(tools[0]!.name, "deploy")
      assert.strictEqual(tools[0]!.label, "deploy")
      // The strict form: closed, every property required, the optional one nullable.
      deepStrictEqual(tools[0]!.parameters, {
        type: "object",
        properties: { service: { type: "string" }, replicas: { anyOf: [{ type: "integer" }, { type: "null" }] } },
        required: ["service", "replicas"],
        additionalProperties: false
      } as any)
      const selected = yield* toolsFor(["deploy"], tools)
      deepStrictEqual(selected.map((t) => t.name), ["deploy", "resolve"])
    }))

  it.effect("execute stages through the session-bound api.stage; resolve applies it", () =>
    Effect.gen(function*() {
      const [tool] = yield* CustomTools.registerCustomTools([deploy])
      const preview = yield* tool!.execute({ service: "api", replicas: 2 })
      assert.strictEqual(ToolResult.textOf(preview), "Ready to deploy api. Call resolve to apply or discard.")
      assert.strictEqual((preview.details as any).status, "pending")
      const queue = yield* ToolChoiceQueue
      deepStrictEqual(yield* queue.inspect, ["pending-action:deploy"])
      const result = successOf(yield* turn({ action: "apply", reason: "Approved." }))
      assert.strictEqual(ToolResult.textOf(result), "Deployed api x2 (Approved.).")
    }).pipe(Effect.provide(ResolveRuntime.layer)))

  it.effect("each session gets its own pending actions", () =>
    Effect.gen(function*() {
      const [tool] = yield* CustomTools.registerCustomTools([deploy])
      yield* tool!.execute({ service: "api" }).pipe(Effect.provide(ResolveRuntime.layer))
      const queue = yield* ToolChoiceQueue
      deepStrictEqual(yield* queue.inspect, [])
    }).pipe(Effect.provide(ResolveRuntime.layer)))

  it.effect("a thrown marker is the ToolError; any other throw is `<name> failed: …`", () =>
    Effect.gen(function*() {
      const [tool] = yield* CustomTools.registerCustomTools([deploy])
      const frozen = failureOf(yield* Effect.exit(tool!.execute({ service: "prod" })))
      assert.strictEqual(frozen._tag, "ToolError")
      assert.strictEqual(frozen.message, "prod is frozen this week.")
      const crash = failureOf(yield* Effect.exit(tool!.execute({ service: "crash" })))
      assert.strictEqual(crash._tag, "ToolError")
      assert.strictEqual(crash.message, "deploy failed: kube config missing")
      const queue = yield* ToolChoiceQueue
      deepStrictEqual(yield* queue.inspect, [])
    }).pipe(Effect.provide(ResolveRuntime.layer)))

  it.effect("input is checked against the JSON Schema before execute runs", () =>
    Effect.gen(function*() {
      let ran = 0
      const [tool] = yield* CustomTools.registerCustomTools([{ ...deploy, execute: () => (ran++, "ok") }])
      const cases: Array<[unknown, string, string]> = [
        [null, "(root)", "must be a JSON object"],
        [["api"], "(root)", "must be a JSON object"],
        [{}, "service", "is required"],
        [{ service: 1 }, "service", "must be of type string"],
        [{ service: "api", replicas: 1.5 }, "replicas", "must be of type integer"],
        [{ service: "api", force: true }, "force", "is not a parameter"],
        [JSON.parse("{\"service\":\"api\",\"__proto__\":{}}"), "__proto__", "is not an allowed key"]
      ]
      for (const [input, field, problem] of cases) {
        const error = failureOf(yield* Effect.exit(tool!.execute(input)))
        assert.instanceOf(error, CustomTools.InvalidCustomToolParams)
        assert.strictEqual(error.field, field)
        assert.include(error.problem, problem)
        assert.include(error.message, "Invalid parameters for deploy")
      }
      assert.strictEqual(ran, 0)
    }).pipe(Effect.provide(ResolveRuntime.layer)))

  it.effect("a result that is not a ToolResult or a string is a ToolError", () =>
    Effect.gen(function*() {
      const [tool] = yield* CustomTools.registerCustomTools([{ ...deploy, execute: () => ({ nope: true }) as any }])
      const error = failureOf(yield* Effect.exit(tool!.execute({ service: "api" })))
      assert.strictEqual(error.message, "deploy failed: it returned an object, not a ToolResult or a string")
    }).pipe(Effect.provide(ResolveRuntime.layer)))

  it.effect("an optional parameter sent as null or left out reaches execute as absent", () =>
    Effect.gen(function*() {
      const seen: Array<unknown> = []
      const [tool] = yield* CustomTools.registerCustomTools([{
        ...deploy,
        execute: (params) => (seen.push(params), "ok")
      }])
      successOf(yield* Effect.exit(tool!.execute({ service: "api", replicas: null })))
      successOf(yield* Effect.exit(tool!.execute({ service: "api" })))
      successOf(yield* Effect.exit(tool!.execute({ service: "api", replicas: 3 })))
      deepStrictEqual(seen, [{ service: "api" }, { service: "api" }, { service: "api", replicas: 3 }])
      // A required one may not be null.
      const error = failureOf(yield* Effect.exit(tool!.execute({ service: null })))
      assert.instanceOf(error, CustomTools.InvalidCustomToolParams)
      assert.strictEqual(error.problem, "must be of type string")
    }).pipe(Effect.provide(ResolveRuntime.layer)))

  it.effect("nested optional properties are nullable too, and their null is removed before execute", () =>
    Effect.gen(function*() {
      const seen: Array<unknown> = []
      const [tool] = yield* CustomTools.registerCustomTools([{
        name: "schedule",
        description: "Schedules jobs.",
        parameters: {
          type: "object",
          properties: {
            jobs: {
              type: "array",
              items: {
                type: "object",
                properties: { name: { type: "string" }, cron: { type: "string", default: "@daily" } },
                required: ["name"]
              }
            }
          },
          required: ["jobs"]
        },
        execute: (params) => (seen.push(params), "ok")
      }])
      deepStrictEqual(tool!.parameters, {
        type: "object",
        properties: {
          jobs: {
            type: "array",
            items: {
              type: "object",
              properties: {
                name: { type: "string" },
                cron: { anyOf: [{ type: "string", description: "Default: \"@daily\"." }, { type: "null" }] }
              },
              required: ["name", "cron"],
              additionalProperties: false
            }
          }
        },
        required: ["jobs"],
        additionalProperties: false
      } as any)
      successOf(
        yield* Effect.exit(tool!.execute({ jobs: [{ name: "a", cron: null }, { name: "b", cron: "@hourly" }] }))
      )
      deepStrictEqual(seen, [{ jobs: [{ name: "a" }, { name: "b", cron: "@hourly" }] }])
    }).pipe(Effect.provide(ResolveRuntime.layer)))

  it.effect("a schema that cannot be strict is refused with what to change, naming the entry and the place", () =>
    Effect.gen(function*() {
      const cases: Array<[Record<string, unknown>, string]> = [
        [
          { type: "object", properties: { meta: { type: "object" } } },
          "parameters.properties.meta is a free-form object (no properties)"
        ],
        [
          { type: "object", properties: { a: { type: "string" } }, additionalProperties: true },
          "parameters is a free-form object (additionalProperties is true)"
        ],
        [
          { type: "object", properties: { tags: { type: "object", additionalProperties: { type: "string" } } } },
          "parameters.properties.tags is a free-form object (additionalProperties is a schema)"
        ],
        [
          { type: "object", patternProperties: { "^x": { type: "string" } } },
          "parameters uses \"patternProperties\", which strict function calling refuses"
        ],
        [
          { type: "object", properties: { s: { type: "string", minLength: 1 } } },
          "parameters.properties.s uses \"minLength\", which strict function calling refuses: state the bound"
        ],
        [
          { type: "object", properties: { x: { $ref: "#/$defs/X" } }, $defs: { X: { type: "string" } } },
          "uses \"$defs\", which strict function calling refuses: inline the definitions"
        ],
        [
          { type: "object", properties: { v: { oneOf: [{ type: "string" }, { type: "number" }] } } },
          "parameters.properties.v uses \"oneOf\", which strict function calling refuses: use anyOf"
        ],
        [
          { type: "object", properties: { list: { type: "array" } } },
          "parameters.properties.list is an array without items"
        ]
      ]
      for (const [parameters, problem] of cases) {
        const error = failureOf(
          yield* Effect.exit(CustomTools.registerCustomTools([deploy, { ...deploy, name: "other", parameters }]))
        )
        assert.instanceOf(error, CustomTools.InvalidCustomTool)
        assert.strictEqual(error.tool, "other")
        assert.strictEqual(error.index, 1)
        assert.include(error.problem, problem)
        assert.include(error.message, "Invalid custom tool \"other\" (entry 1): ")
      }
    }))

  it.effect("a null, undefined or non-object entry, or a non-string name, is InvalidCustomTool naming the entry", () =>
    Effect.gen(function*() {
      const cases: Array<[ReadonlyArray<any>, string, number, string]> = [
        [[null], "#0", 0, "the entry is null"],
        [[deploy, undefined], "#1", 1, "the entry is undefined"],
        [
          [deploy, { ...deploy, name: "b" }, "deploy"],
          "#2",
          2,
          "the entry is a string; each entry must be a custom tool object"
        ],
        [[[deploy]], "#0", 0, "the entry is an array"],
        [[{ ...deploy, name: 123 }], "#0", 0, "the name must be a string, not a number"],
        [[{ ...deploy, name: undefined }], "#0", 0, "the name must be a string, not undefined"]
      ]
      for (const [tools, tool, index, problem] of cases) {
        const error = failureOf(yield* Effect.exit(CustomTools.registerCustomTools(tools)))
        assert.instanceOf(error, CustomTools.InvalidCustomTool)
        assert.strictEqual(error.tool, tool)
        assert.strictEqual(error.index, index)
        assert.include(error.problem, problem)
      }
      const getter = {
        get name(): string {
          throw new Error("no name")
        }
      }
      const error = failureOf(yield* Effect.exit(CustomTools.registerCustomTools([getter as any])))
      assert.strictEqual(error.problem, "cannot be read (a getter threw)")
    }))

  it.effect("registration rejects bad names, resolve, duplicates, missing descriptions and non-object schemas", () =>
    Effect.gen(function*() {
      const cases: Array<[ReadonlyArray<any>, string, string]> = [
        [[{ ...deploy, name: "has space" }], "has space", "must match"],
        [[{ ...deploy, name: "resolve" }], "resolve", "reserved"],
        [[deploy, deploy], "deploy", "same name"],
        [[{ ...deploy, description: "" }], "deploy", "description"],
        [[{ ...deploy, execute: undefined }], "deploy", "execute"],
        [[{ ...deploy, parameters: { type: "string" } }], "deploy", "type \"object\""]
      ]
      for (const [tools, name, problem] of cases) {
        const error = failureOf(yield* Effect.exit(CustomTools.registerCustomTools(tools)))
        assert.instanceOf(error, CustomTools.InvalidCustomTool)
        assert.strictEqual(error.tool, name)
        assert.include(error.problem, problem)
      }
    }))
})

describe("custom tools with Effect Schema parameters", () => {
  const Deploy = Schema.Struct({
    service: Schema.String.pipe(Schema.minLength(1)),
    replicas: Schema.optional(Schema.Int.pipe(Schema.between(1, 10)))
  })
  const seen: Array<unknown> = []
  const deploy = CustomTools.make({
    name: "deploy",
    description: "Deploy a service.",
    parameters: Deploy,
    // `params` is typed from the Schema: { readonly service: string; readonly replicas?: number }
    execute: async (params) => {
      seen.push(params)
      return `Would deploy ${params.service} with ${params.replicas ?? 1} replica(s).`
    }
  })

  it.effect("sends the derived JSON Schema in its strict form, and decodes the arguments into typed params", () =>
    Effect.gen(function*() {
      seen.length = 0
      const [tool] = yield* CustomTools.registerCustomTools([deploy])
      const schema = tool!.parameters as any
      deepStrictEqual(schema.required, ["service", "replicas"])
      assert.isFalse(schema.additionalProperties)
      assert.isUndefined(schema.$schema)
      deepStrictEqual(openAiStrict(schema), [])
      deepStrictEqual(anthropic(schema), [])
      // null is the strict wire form of "not given".
      const result = yield* tool!.execute({ service: "api", replicas: null })
      assert.strictEqual(ToolResult.textOf(result), "Would deploy api with 1 replica(s).")
      yield* tool!.execute({ service: "web", replicas: 3 })
      deepStrictEqual(seen, [{ service: "api" }, { service: "web", replicas: 3 }])
    }).pipe(Effect.provide(ResolveRuntime.layer)))

  it.effect("arguments the Schema refuses get InvalidCustomToolParams naming the field, and execute does not run", () =>
    Effect.gen(function*() {
      seen.length = 0
      const [tool] = yield* CustomTools.registerCustomTools([deploy])
      const tooMany = yield* Effect.flip(tool!.execute({ service: "api", replicas: 50 }))
      assert.instanceOf(tooMany, CustomTools.InvalidCustomToolParams)
      assert.strictEqual((tooMany as CustomTools.InvalidCustomToolParams).field, "replicas")
      const empty = yield* Effect.flip(tool!.execute({ service: "", replicas: null }))
      assert.strictEqual((empty as CustomTools.InvalidCustomToolParams).field, "service")
      deepStrictEqual(seen, [])
    }).pipe(Effect.provide(ResolveRuntime.layer)))

  it.effect("arguments nested 50 000 levels deep are InvalidCustomToolParams naming the field, not a stack overflow", () =>
    Effect.gen(function*() {
      const tag = CustomTools.make({
        name: "tag",
        description: "Tag a service.",
        parameters: Schema.Struct({ service: Schema.String, tags: Schema.Array(Schema.String) }),
        execute: async ({ service }) => `Would tag ${service}.`
      })
      const [tool] = yield* CustomTools.registerCustomTools([tag])
      let deep: unknown = "x"
      for (let i = 0; i < 50_000; i++) deep = [deep]
      const error = yield* Effect.flip(tool!.execute({ service: "api", tags: deep }))
      assert.instanceOf(error, CustomTools.InvalidCustomToolParams)
      assert.strictEqual((error as CustomTools.InvalidCustomToolParams).field, "tags")
      assert.include(error.message, "nested deeper than")
    }).pipe(Effect.provide(ResolveRuntime.layer)))

  it.effect("a Schema without a JSON Schema is InvalidCustomTool with JSONSchema.make's message and what to do", () =>
    Effect.gen(function*() {
      const transfer = CustomTools.make({
        name: "transfer",
        description: "Transfer an amount.",
        parameters: Schema.Struct({ to: Schema.String, amount: Schema.BigIntFromSelf }),
        execute: async ({ amount, to }) => `Would transfer ${amount} to ${to}.`
      })
      const error = failureOf(yield* Effect.exit(CustomTools.registerCustomTools([deploy, transfer])))
      assert.instanceOf(error, CustomTools.InvalidCustomTool)
      assert.strictEqual(error.tool, "transfer")
      assert.strictEqual(error.index, 1)
      assert.strictEqual(
        error.message,
        "Invalid custom tool \"transfer\" (entry 1): parameters cannot be turned into JSON Schema: Missing " +
          "annotation; at path: [\"amount\"]; details: Generating a JSON Schema for this schema requires a " +
          "\"jsonSchema\" annotation; schema (BigIntKeyword): bigint. Change that part of the Schema as this says " +
          "(a \"jsonSchema\" annotation gives any schema its JSON Schema), or give parameters as a JSON Schema object."
      )
    }))
})
