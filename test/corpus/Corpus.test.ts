/**
 * Runs the corpus of malformed `resolve` inputs (`resolve-inputs.json`, SPEC §6): each must fail with
 * `InvalidResolveParams` naming the bad field and the problem, and change nothing — the staged preview stays
 * pending and in flight, nothing is steered, `apply` never runs, no prototype is polluted.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import { deepStrictEqual } from "node:assert/strict"
import { readFileSync } from "node:fs"
import { ResolveRuntime, ResolveTool, stage, SteeringBus, ToolChoiceQueue, ToolResult } from "../../src/index.js"

interface Case {
  readonly name: string
  readonly input: unknown
  readonly field: string
  readonly problem?: string
}

const corpus: { readonly cases: ReadonlyArray<Case> } = JSON.parse(
  readFileSync(new URL("./resolve-inputs.json", import.meta.url), "utf8")
)

const nest = (levels: number, leaf: unknown, wrap: (inner: unknown) => unknown) => {
  let value = leaf
  for (let i = 0; i < levels; i++) value = wrap(value)
  return value
}

/** Expands the corpus's generated values (see its `description`). */
const expand = (value: unknown): unknown => {
  if (Array.isArray(value)) return value.map(expand)
  if (value === null || typeof value !== "object") return value
  const v = value as Record<string, any>
  if ("$repeat" in v) return String(v.$repeat[0]).repeat(v.$repeat[1])
  if ("$concat" in v) return v.$concat.map((part: unknown) => String(expand(part))).join("")
  if ("$deep" in v) return nest(v.$deep[0], v.$deep[1], (inner) => ({ a: inner }))
  if ("$deepArray" in v) return nest(v.$deepArray[0], v.$deepArray[1], (inner) => [inner])
  if ("$json" in v) return JSON.parse(v.$json)
  if ("$number" in v) return Number(v.$number)
  if ("$undefined" in v) return undefined
  if ("$bigint" in v) return BigInt(v.$bigint)
  if ("$fn" in v) return () => "apply"
  if ("$symbol" in v) return Symbol("apply")
  return Object.fromEntries(Object.entries(v).map(([k, item]) => [k, expand(item)]))
}

describe("malformed resolve inputs", () => {
  it("the corpus holds at least 50 cases with unique names", () => {
    assert.isAtLeast(corpus.cases.length, 50)
    assert.strictEqual(new Set(corpus.cases.map((c) => c.name)).size, corpus.cases.length)
  })

  it.effect("each gives InvalidResolveParams naming the field and the problem, and changes nothing", () =>
    Effect.gen(function*() {
      const queue = yield* ToolChoiceQueue
      const bus = yield* SteeringBus
      let applied = 0
      const handle = yield* stage({
        label: "Edit: 1 replacement in 1 file",
        sourceToolName: "edit",
        apply: () => Effect.sync(() => (applied++, ToolResult.text("applied")))
      })
      yield* queue.nextToolChoice
      const before = {
        inspect: yield* queue.inspect,
        inFlight: yield* queue.inFlight,
        steered: (yield* bus.pending).length
      }
      const failures: Array<string> = []
      for (const c of corpus.cases) {
        const input = expand(c.input)
        const result = yield* Effect.either(ResolveTool.execute(input))
        if (result._tag === "Right") {
          failures.push(`${c.name}: accepted`)
          break
        }
        const error = result.left
        if (error._tag !== "InvalidResolveParams") {
          failures.push(`${c.name}: ${error._tag} ${error.message}`)
          continue
        }
        if (error.field !== c.field) failures.push(`${c.name}: field ${error.field}, expected ${c.field}`)
        if (c.problem !== undefined && !error.problem.includes(c.problem)) {
          failures.push(`${c.name}: problem "${error.problem}" lacks "${c.problem}"`)
        }
        if (!error.message.includes(error.field) || error.message.length > 2_000) {
          failures.push(`${c.name}: message "${error.message.slice(0, 200)}" does not name the field briefly`)
        }
        // No state change.
        deepStrictEqual(yield* queue.inspect, before.inspect, c.name)
        deepStrictEqual(yield* queue.inFlight, before.inFlight, c.name)
        assert.strictEqual((yield* bus.pending).length, before.steered, c.name)
        assert.strictEqual(yield* handle.status, "pending", c.name)
        assert.strictEqual(applied, 0, c.name)
        assert.isUndefined(({} as Record<string, unknown>).polluted, `${c.name}: Object.prototype polluted`)
        assert.isUndefined(({} as Record<string, unknown>).isAdmin, `${c.name}: Object.prototype polluted`)
      }
      deepStrictEqual(failures, [])
      // The preview is still resolvable, once.
      const result = yield* ResolveTool.execute({ action: "apply", reason: "The corpus changed nothing." })
      assert.strictEqual(ToolResult.textOf(result), "applied")
      assert.strictEqual(applied, 1)
      assert.isTrue(Option.isSome(yield* queue.inFlight))
    }).pipe(Effect.provide(ResolveRuntime.layer)))
})
