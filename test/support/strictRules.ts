/**
 * OpenAI's strict function-calling rules, written independently of `src/internal/strictSchema.ts`, to check what it
 * emits: the root is an object (not an `anyOf`); every object has `properties`, `additionalProperties: false` and a
 * `required` listing exactly its properties; arrays have one `items` schema; only the supported keywords appear; no
 * `$ref`, `$defs` or `default`; objects nest at most 10 levels. Returns the violations (empty when conforming).
 */
const supported = new Set([
  "type",
  "description",
  "title",
  "enum",
  "const",
  "anyOf",
  "properties",
  "required",
  "additionalProperties",
  "items",
  "minItems",
  "maxItems",
  "pattern",
  "format",
  "minimum",
  "maximum",
  "exclusiveMinimum",
  "exclusiveMaximum",
  "multipleOf"
])
const typeNames = new Set(["string", "number", "integer", "boolean", "object", "array", "null"])

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

export const strictViolations = (root: unknown): ReadonlyArray<string> => {
  const violations: Array<string> = []
  if (!isRecord(root) || root.type !== "object") violations.push("root: must be an object schema")
  if (isRecord(root) && "anyOf" in root) violations.push("root: must not be anyOf")
  const visit = (node: unknown, path: string, objects: number): void => {
    if (!isRecord(node)) return void violations.push(`${path}: not a schema object`)
    for (const key of Object.keys(node)) if (!supported.has(key)) violations.push(`${path}: keyword ${key}`)
    const types = node.type === undefined ? [] : Array.isArray(node.type) ? node.type : [node.type]
    for (const t of types) if (!typeNames.has(t as string)) violations.push(`${path}: type ${String(t)}`)
    if (node.type === undefined && node.anyOf === undefined && node.enum === undefined && node.const === undefined) {
      violations.push(`${path}: no type`)
    }
    if (Array.isArray(node.anyOf)) {
      if (node.anyOf.length === 0) violations.push(`${path}: empty anyOf`)
      node.anyOf.forEach((branch, i) => visit(branch, `${path}.anyOf[${i}]`, objects))
    }
    if (types.includes("object")) {
      if (objects + 1 > 10) violations.push(`${path}: objects nested deeper than 10`)
      if (node.additionalProperties !== false) violations.push(`${path}: additionalProperties is not false`)
      if (!isRecord(node.properties)) return void violations.push(`${path}: no properties`)
      const names = Object.keys(node.properties)
      const required = Array.isArray(node.required) ? node.required : undefined
      if (required === undefined || required.length !== names.length || !names.every((n) => required.includes(n))) {
        violations.push(`${path}: required does not list every property`)
      }
      for (const name of names) visit(node.properties[name], `${path}.properties.${name}`, objects + 1)
    }
    if (types.includes("array")) {
      if (!isRecord(node.items)) violations.push(`${path}: array without one items schema`)
      else visit(node.items, `${path}.items`, objects)
    }
  }
  visit(root, "parameters", 0)
  return violations
}
