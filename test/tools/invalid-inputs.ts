/**
 * Untrusted `resolve` inputs that must fail with `InvalidResolveParams` naming `field` (and, where it matters,
 * a problem matching `problem`). `JSON.parse` makes `__proto__` an own property, as a model's JSON would.
 */
export interface InvalidInput {
  readonly name: string
  readonly input: unknown
  readonly field: string
  readonly problem?: RegExp
}

const deep = (levels: number): unknown => JSON.parse("{\"a\":".repeat(levels) + "1" + "}".repeat(levels))

export const invalidInputs: ReadonlyArray<InvalidInput> = [
  { name: "wrong action", input: { action: "accept", reason: "ok" }, field: "action", problem: /"apply" or "discard"/ },
  { name: "action of the wrong case", input: { action: "Apply", reason: "ok" }, field: "action" },
  { name: "numeric action", input: { action: 1, reason: "ok" }, field: "action" },
  { name: "missing action", input: { reason: "ok" }, field: "action", problem: /required/ },
  { name: "missing reason", input: { action: "apply" }, field: "reason", problem: /required/ },
  { name: "non-string reason", input: { action: "apply", reason: 42 }, field: "reason" },
  { name: "null reason", input: { action: "discard", reason: null }, field: "reason" },
  { name: "empty reason", input: { action: "apply", reason: "" }, field: "reason", problem: /empty/ },
  { name: "blank reason", input: { action: "apply", reason: "   \n" }, field: "reason", problem: /empty/ },
  { name: "huge reason", input: { action: "apply", reason: "x".repeat(100_000) }, field: "reason", problem: /at most/ },
  { name: "extra a string", input: { action: "apply", reason: "ok", extra: "title" }, field: "extra" },
  { name: "extra an array", input: { action: "apply", reason: "ok", extra: ["a"] }, field: "extra", problem: /array/ },
  {
    name: "extra text holding null",
    input: { action: "apply", reason: "ok", extra: "null" },
    field: "extra",
    problem: /null/
  },
  {
    name: "extra text not JSON",
    input: { action: "apply", reason: "ok", extra: "{" },
    field: "extra",
    problem: /JSON/
  },
  { name: "extra a number", input: { action: "apply", reason: "ok", extra: 3 }, field: "extra" },
  { name: "unknown top-level key", input: { action: "apply", reason: "ok", force: true }, field: "force" },
  {
    name: "own __proto__ at the top level",
    input: JSON.parse("{\"action\":\"apply\",\"reason\":\"ok\",\"__proto__\":{\"polluted\":true}}"),
    field: "__proto__"
  },
  {
    name: "own __proto__ in extra",
    input: JSON.parse("{\"action\":\"apply\",\"reason\":\"ok\",\"extra\":{\"__proto__\":{\"polluted\":true}}}"),
    field: "extra.__proto__",
    problem: /prototype/
  },
  {
    name: "own __proto__ nested in extra",
    input: JSON.parse("{\"action\":\"apply\",\"reason\":\"ok\",\"extra\":{\"a\":[{\"__proto__\":{}}]}}"),
    field: "extra",
    problem: /__proto__/
  },
  {
    name: "constructor key at the top level",
    input: { action: "apply", reason: "ok", constructor: {} },
    field: "constructor"
  },
  {
    name: "constructor key in extra",
    input: { action: "apply", reason: "ok", extra: { constructor: { prototype: {} } } },
    field: "extra.constructor"
  },
  {
    name: "prototype key in extra",
    input: { action: "apply", reason: "ok", extra: { prototype: 1 } },
    field: "extra.prototype"
  },
  {
    name: "too-deep extra",
    input: { action: "apply", reason: "ok", extra: deep(20) },
    field: "extra",
    problem: /deeper/
  },
  {
    name: "huge extra",
    input: { action: "apply", reason: "ok", extra: { blob: "x".repeat(100_000) } },
    field: "extra",
    problem: /at most/
  },
  {
    name: "non-finite number in extra",
    input: { action: "apply", reason: "ok", extra: { n: Infinity } },
    field: "extra"
  },
  { name: "function in extra", input: { action: "apply", reason: "ok", extra: { f: () => 1 } }, field: "extra" },
  { name: "root an array", input: [{ action: "apply", reason: "ok" }], field: "(root)" },
  { name: "root null", input: null, field: "(root)" },
  { name: "root undefined", input: undefined, field: "(root)" },
  { name: "root a string", input: "{\"action\":\"apply\",\"reason\":\"ok\"}", field: "(root)" },
  { name: "root a number", input: 7, field: "(root)" }
]
