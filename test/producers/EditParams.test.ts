/**
 * `EditParams`: what the model may send to the `edit` tool. The strict JSON Schema it sees, how `replaceAll: null`
 * decodes, and how a bad input is refused, naming the field, with nothing staged.
 */
import { assert, describe, it } from "@effect/vitest"
import { deepStrictEqual } from "@effect/vitest/utils"
import { Effect } from "effect"
import * as FileEditPreview from "../../src/producers/FileEditPreview.js"
import { edit, expectPreviewError, inWorkspace, readText, turn } from "../support/editWorkspace.js"
import { failureOf, successOf } from "../support/exits.js"

/** The keywords OpenAI's strict function calling accepts in every provider's subset we target. */
const strictKeywords = new Set([
  "type",
  "properties",
  "required",
  "additionalProperties",
  "items",
  "anyOf",
  "enum",
  "const",
  "description",
  "title"
])

/** Every way `schema` breaks OpenAI's strict rules (empty when it follows them), with the place it does. */
const strictProblems = (schema: any, at = "(root)"): Array<string> => {
  const problems: Array<string> = []
  if (schema === null || typeof schema !== "object") return [`${at}: not a schema`]
  for (const key of Object.keys(schema)) {
    if (!strictKeywords.has(key)) problems.push(`${at}: keyword ${key} is not allowed`)
  }
  if (schema.type === "object") {
    if (schema.additionalProperties !== false) problems.push(`${at}: additionalProperties must be false`)
    const keys = Object.keys(schema.properties ?? {}).sort()
    if (JSON.stringify([...(schema.required ?? [])].sort()) !== JSON.stringify(keys)) {
      problems.push(`${at}: required must list every property`)
    }
    for (const key of keys) problems.push(...strictProblems(schema.properties[key], `${at}.${key}`))
  }
  if (schema.type === "array") problems.push(...strictProblems(schema.items, `${at}[]`))
  if (schema.anyOf !== undefined) {
    schema.anyOf.forEach((member: unknown, i: number) => problems.push(...strictProblems(member, `${at}|${i}`)))
  }
  if (schema.type === undefined && schema.anyOf === undefined) problems.push(`${at}: no type`)
  return problems
}

describe("EditParams", () => {
  describe("the tool schema (issue 11 §4, edit tool)", () => {
    it.live("follows OpenAI's strict rules: closed objects, every property required, replaceAll nullable", () =>
      Effect.sync(() => {
        const params = FileEditPreview.tool.parameters as any
        deepStrictEqual(strictProblems(params), [])
        assert.strictEqual(params.type, "object")
        const text = JSON.stringify(params)
        for (const keyword of ["$schema", "$ref", "$defs", "definitions"]) assert.notInclude(text, keyword)
        deepStrictEqual(params.properties.files.items.properties.edits.items.properties.replaceAll.anyOf, [
          { type: "boolean" },
          { type: "null" }
        ])
        // The checker is not vacuous.
        assert.isNotEmpty(strictProblems({ type: "object", properties: { a: { type: "string", minLength: 1 } } }))
      }))

    it.live("decodes null and absence of replaceAll as not set; the decoded API is unchanged", () =>
      Effect.gen(function*() {
        const decoded = yield* FileEditPreview.decodeEditParams({
          files: [{
            path: "a.txt",
            edits: [
              { oldText: "a", newText: "b", replaceAll: null },
              { oldText: "c", newText: "d" },
              { oldText: "e", newText: "f", replaceAll: true }
            ]
          }]
        })
        deepStrictEqual(decoded, {
          files: [{
            path: "a.txt",
            edits: [{ oldText: "a", newText: "b" }, { oldText: "c", newText: "d" }, {
              oldText: "e",
              newText: "f",
              replaceAll: true
            }]
          }]
        })
        const error = yield* Effect.flip(FileEditPreview.decodeEditParams({
          files: [{ path: "a.txt", edits: [{ oldText: "a", newText: "b", replaceAll: "yes" }] }]
        }))
        assert.strictEqual(error.field, "files.0.edits.0.replaceAll")
        assert.include(error.problem, "must be true or false (or null: not set)")
      }))

    it.live("a strict-mode call (replaceAll: null) previews and applies like one without it", () =>
      inWorkspace({ "a.txt": "x y x\n" }, ({ root }) =>
        Effect.gen(function*() {
          const ambiguous = failureOf(
            yield* Effect.exit(
              edit({ files: [{ path: "a.txt", edits: [{ oldText: "x", newText: "z", replaceAll: null }] }] })
            )
          )
          assert.instanceOf(ambiguous, FileEditPreview.EditTextAmbiguous)
          yield* edit({ files: [{ path: "a.txt", edits: [{ oldText: "y", newText: "Y", replaceAll: null }] }] })
          successOf(yield* turn({ action: "apply", reason: "ok" }))
          assert.strictEqual(yield* readText(root, "a.txt"), "x Y x\n")
        })))
  })

  it.live("invalid input names the field: excess property, empty lists, empty oldText, wrong type", () =>
    Effect.gen(function*() {
      const files = { "a.txt": "one one two\n" }
      const cases: Array<[unknown, string]> = [
        [{ files: [{ path: "a.txt", edits: [{ oldText: "a", newText: "b" }] }], force: true }, "force"],
        [{ files: [] }, "files"],
        [{ files: [{ path: "a.txt", edits: [] }] }, "files.0.edits"],
        [{ files: [{ path: "a.txt", edits: [{ oldText: "", newText: "b" }] }] }, "files.0.edits.0.oldText"],
        [{ files: [{ path: "a.txt", edits: [{ oldText: "a", newText: 1 }] }] }, "files.0.edits.0.newText"],
        [{ files: [{ path: "a.txt", edits: [{ oldText: "a" }] }] }, "files.0.edits.0.newText"],
        ["files", "(root)"]
      ]
      for (const [input, field] of cases) {
        yield* expectPreviewError(files, input, (error) => {
          assert.instanceOf(error, FileEditPreview.InvalidEditParams)
          assert.strictEqual(error.field, field)
        })
      }
    }))
})
