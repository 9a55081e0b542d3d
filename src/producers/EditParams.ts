/**
 * What the model may send to the `edit` tool, and how it is decoded: the parameter schemas (`EditParams`), the
 * decoder that names the first bad field (`decodeEditParams`), and the strict JSON Schema the model sees
 * (`parametersJsonSchema`). The limits on how much one call may touch are the workspace's (`EditWorkspace`).
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { FileEditPreview } from "effect-resolve/edit"
 *
 * // `replaceAll: null` (what a strict tool schema sends for "not set") decodes as absent.
 * const params = FileEditPreview.decodeEditParams({
 *   files: [{ path: "a.txt", edits: [{ oldText: "x", newText: "y", replaceAll: null }] }]
 * })
 * Effect.runSync(params) // { files: [{ path: "a.txt", edits: [{ oldText: "x", newText: "y" }] }] }
 * ```
 *
 * @since 0.3.0
 */
import * as Effect from "effect/Effect"
import type * as JSONSchema from "effect/JSONSchema"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import { loneSurrogate, show, tooDeepField, valueAt } from "../internal/untrusted.js"
import { InvalidEditParams } from "./EditErrors.js"

// -----------------------------------------------------------------------------------------------------------------
// the parameters
// -----------------------------------------------------------------------------------------------------------------

const utf8Text = (s: string): true | string =>
  !loneSurrogate.test(s) || "must be valid UTF-8 text (it contains a lone surrogate)"

/**
 * One replacement: `oldText` (exact, non-empty) becomes `newText`. Without `replaceAll` (absent, `null` or
 * `false`), `oldText` must occur exactly once.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Replacement = Schema.Struct({
  oldText: Schema.String.pipe(
    Schema.minLength(1, { message: () => "must not be empty: copy the exact text to replace" }),
    Schema.filter(utf8Text)
  ).annotations({ title: "oldText", description: "The exact text to replace, including whitespace and line breaks." }),
  newText: Schema.String.pipe(Schema.filter(utf8Text)).annotations({ description: "The text that replaces oldText." }),
  // `null` (what a strict tool schema sends for "not set") decodes as absent.
  replaceAll: Schema.optionalWith(
    Schema.Boolean.annotations({
      description: "Replace every occurrence. Without it, oldText must occur exactly once."
    }),
    { nullable: true }
  )
})

/**
 * The replacements of one file, applied in order (each to the result of the previous one).
 *
 * @since 0.1.0
 * @category schemas
 */
export const FileEdits = Schema.Struct({
  path: Schema.String.pipe(
    Schema.minLength(1, { message: () => "must not be empty" }),
    Schema.maxLength(4096, { message: () => "must be at most 4096 characters" }),
    Schema.filter((s) => !s.includes("\u0000") || "must not contain a NUL byte"),
    Schema.filter(utf8Text)
  ).annotations({
    title: "path",
    description: "The file, relative to the workspace root."
  }),
  edits: Schema.NonEmptyArray(Replacement).annotations({ description: "The replacements, applied in order." })
})

/**
 * The parameters of the `edit` tool: one or more files, each listed once.
 *
 * @since 0.1.0
 * @category schemas
 */
export const EditParams = Schema.Struct({
  files: Schema.NonEmptyArray(FileEdits).annotations({ description: "The files to edit, each listed once." })
}).annotations({ identifier: "EditParams" })

/**
 * @since 0.1.0
 * @category models
 */
export type EditParams = typeof EditParams.Type

// -----------------------------------------------------------------------------------------------------------------
// decoding
// -----------------------------------------------------------------------------------------------------------------

const decodeParams = Schema.decodeUnknown(EditParams, { onExcessProperty: "error", errors: "first" })

/**
 * Decodes untrusted `edit` input; a failure names the first bad field.
 *
 * @since 0.1.0
 * @category decoding
 */
export const decodeEditParams = (input: unknown): Effect.Effect<EditParams, InvalidEditParams> => {
  // Schema's error formatting prints the offending value recursively: a value nested thousands of levels deep would
  // overflow the stack (a defect instead of a typed error), so such values are refused first.
  const deep = tooDeepField(input, maxNesting)
  return deep !== undefined ?
    Effect.fail(new InvalidEditParams({ field: deep, problem: `is nested deeper than ${maxNesting} levels` })) :
    decodeChecked(input)
}

/** Deeper than any valid input (root, files, file, edits, edit: 4 levels). */
const maxNesting = 16

/** What each field must be, for type errors (Schema's own text names annotations and prints the whole value). */
const expected = (path: ReadonlyArray<PropertyKey>): string => {
  const last = path[path.length - 1]
  const parent = path[path.length - 2]
  return path.length === 0 ?
    "must be a JSON object { \"files\": [...] }" :
    last === "files" ?
    "must be a non-empty array of { \"path\", \"edits\" }" :
    parent === "files" ?
    "must be an object { \"path\", \"edits\" }" :
    last === "edits" ?
    "must be a non-empty array of { \"oldText\", \"newText\" }" :
    parent === "edits" ?
    "must be an object { \"oldText\", \"newText\", \"replaceAll\" }" :
    last === "replaceAll" ?
    "must be true or false (or null: not set)" :
    "must be a string"
}

const decodeChecked = (input: unknown): Effect.Effect<EditParams, InvalidEditParams> =>
  Effect.mapError(decodeParams(input), (error) => {
    const [issue] = ParseResult.ArrayFormatter.formatErrorSync(error)
    // An empty non-empty array is reported as its missing element 0: name the array instead.
    const emptyList = issue?._tag === "Missing" && typeof issue.path[issue.path.length - 1] === "number"
    const path = (emptyList ? issue!.path.slice(0, -1) : issue?.path) ?? []
    const field = path.length === 0 ? "(root)" : path.map(String).join(".")
    const problem = issue === undefined ?
      "could not be decoded" :
      emptyList ?
      "must not be empty: list at least one" :
      issue._tag === "Unexpected" ?
      "is not an edit parameter" :
      issue._tag === "Missing" ?
      "is required" :
      issue._tag === "Type" ?
      `${expected(path)}, got ${show(valueAt(input, path))}` :
      issue.message
    return new InvalidEditParams({ field, problem })
  })

// -----------------------------------------------------------------------------------------------------------------
// the strict wire schema
// -----------------------------------------------------------------------------------------------------------------

/**
 * The JSON Schema of the `edit` tool's parameters, as the model sees it. Accepted by OpenAI's strict function
 * calling and by the other providers' schema subsets: every object closes its properties
 * (`additionalProperties: false`) and lists all of them as required; `replaceAll`, which may be left out, is
 * nullable instead (`null` means not set); no `$schema`, `$ref` or `$defs`, and no keyword a strict mode refuses
 * (the length and item-count rules are stated in the descriptions and checked when decoding).
 *
 * @since 0.2.0
 * @category schemas
 */
export const parametersJsonSchema: JSONSchema.JsonSchema7Root = {
  type: "object",
  properties: {
    files: {
      type: "array",
      description: "The files to edit (at least one), each listed once.",
      items: {
        type: "object",
        properties: {
          path: {
            type: "string",
            description: "The file, relative to the workspace root (not empty, at most 4096 characters)."
          },
          edits: {
            type: "array",
            description: "The replacements of this file (at least one), applied in order, each to the result of the " +
              "previous one.",
            items: {
              type: "object",
              properties: {
                oldText: {
                  type: "string",
                  description: "The exact text to replace (not empty), including whitespace and line breaks."
                },
                newText: { type: "string", description: "The text that replaces oldText." },
                replaceAll: {
                  anyOf: [{ type: "boolean" }, { type: "null" }],
                  description: "true: replace every occurrence. false or null: oldText must occur exactly once."
                }
              },
              required: ["oldText", "newText", "replaceAll"],
              additionalProperties: false
            }
          }
        },
        required: ["path", "edits"],
        additionalProperties: false
      }
    }
  },
  required: ["files"],
  additionalProperties: false
}
