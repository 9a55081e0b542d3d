/**
 * Independent checkers of each provider's rules for a tool's parameters schema, written from the providers'
 * documented rules (not from the code under test):
 * - OpenAI strict function calling (the default of `@effect/ai-openai`): an object root; every object has
 *   `additionalProperties: false` and lists every property in `required` (optional means nullable); only the
 *   supported keywords; local `$ref`s resolve; at most 10 levels of nesting and 5000 properties.
 * - Anthropic `input_schema`: a JSON Schema whose root is `type: "object"` without a top-level `anyOf`, `oneOf` or
 *   `allOf`; property names match `^[a-zA-Z0-9_.-]{1,64}$`; `required` names existing properties.
 * - Gemini function declarations: the OpenAPI 3.0 subset (one type per schema, `nullable`, no `additionalProperties`,
 *   `anyOf`, `$ref`, `const`; string enums only; objects with at least one property; arrays with one `items`).
 * Each returns the list of violations: empty means accepted.
 */

type Json = Record<string, unknown>

const isObject = (u: unknown): u is Json => typeof u === "object" && u !== null && !Array.isArray(u)

const jsonTypes = new Set(["string", "number", "integer", "boolean", "object", "array", "null"])

const typesOf = (schema: Json): ReadonlyArray<unknown> =>
  Array.isArray(schema.type) ? schema.type : schema.type === undefined ? [] : [schema.type]

/** Calls `visit` on every subschema with its path and its depth in objects. */
const walk = (
  schema: unknown,
  visit: (schema: unknown, path: string, objectDepth: number) => void,
  path = "(root)",
  objectDepth = 0
): void => {
  visit(schema, path, objectDepth)
  if (!isObject(schema)) return
  const depth = objectDepth + (isObject(schema.properties) ? 1 : 0)
  if (isObject(schema.properties)) {
    for (const [key, value] of Object.entries(schema.properties)) walk(value, visit, `${path}.${key}`, depth)
  }
  if (schema.items !== undefined) walk(schema.items, visit, `${path}[]`, depth)
  for (const key of ["anyOf", "oneOf", "allOf"]) {
    const list = schema[key]
    if (Array.isArray(list)) list.forEach((item, i) => walk(item, visit, `${path}.${key}[${i}]`, depth))
  }
  for (const key of ["$defs", "definitions"]) {
    const defs = schema[key]
    if (isObject(defs)) { for (const [name, value] of Object.entries(defs)) walk(value, visit, `#/${key}/${name}`, 0) }
  }
}

const openAiKeywords = new Set([
  "type",
  "properties",
  "required",
  "additionalProperties",
  "items",
  "enum",
  "const",
  "anyOf",
  "description",
  "title",
  "$ref",
  "$defs",
  "definitions",
  "pattern",
  "format",
  "minLength",
  "maxLength",
  "minimum",
  "maximum",
  "exclusiveMinimum",
  "exclusiveMaximum",
  "multipleOf",
  "minItems",
  "maxItems"
])

/** OpenAI strict function calling; the list of violations (empty: accepted). */
export const openAiStrict = (root: unknown): ReadonlyArray<string> => {
  const problems: Array<string> = []
  if (!isObject(root) || root.type !== "object" || root.anyOf !== undefined) {
    return ["the root must be an object schema, not anyOf"]
  }
  let properties = 0
  walk(root, (schema, path, depth) => {
    if (!isObject(schema)) return void problems.push(`${path}: a schema must be an object`)
    for (const key of Object.keys(schema)) {
      if (!openAiKeywords.has(key) && !(key === "$schema" && path === "(root)")) {
        problems.push(`${path}: "${key}" is not permitted`)
      }
    }
    for (const type of typesOf(schema)) if (!jsonTypes.has(String(type))) problems.push(`${path}: bad type ${type}`)
    if (typeof schema.$ref === "string") {
      const match = /^#\/(\$defs|definitions)\/(.+)$/.exec(schema.$ref)
      const defs = match === null ? undefined : root[match[1]!]
      if (schema.$ref !== "#" && !(isObject(defs) && isObject(defs[match![2]!]))) {
        problems.push(`${path}: $ref ${schema.$ref} does not resolve`)
      }
    }
    if (depth > 10) problems.push(`${path}: more than 10 levels of nesting`)
    const isObjectSchema = typesOf(schema).includes("object") || schema.properties !== undefined
    if (!isObjectSchema) return
    if (schema.additionalProperties !== false) problems.push(`${path}: additionalProperties must be false`)
    const keys = isObject(schema.properties) ? Object.keys(schema.properties) : []
    properties += keys.length
    const required = Array.isArray(schema.required) ? schema.required : undefined
    if (required === undefined) return void problems.push(`${path}: 'required' must be an array`)
    for (const key of keys) if (!required.includes(key)) problems.push(`${path}: Missing '${key}' in required`)
    for (const key of required) {
      if (!keys.includes(key as string)) problems.push(`${path}: required '${key}' is no property`)
    }
  })
  if (properties > 5000) problems.push("more than 5000 properties")
  return problems
}

/** Anthropic `input_schema`; the list of violations. */
export const anthropic = (root: unknown): ReadonlyArray<string> => {
  const problems: Array<string> = []
  if (!isObject(root) || root.type !== "object") return ["input_schema.type must be \"object\""]
  for (const key of ["anyOf", "oneOf", "allOf"]) {
    if (root[key] !== undefined) problems.push(`input_schema does not support ${key} at the top level`)
  }
  walk(root, (schema, path) => {
    if (typeof schema === "boolean") return
    if (!isObject(schema)) return void problems.push(`${path}: a schema must be an object or a boolean`)
    for (const type of typesOf(schema)) if (!jsonTypes.has(String(type))) problems.push(`${path}: bad type ${type}`)
    if (isObject(schema.properties)) {
      for (const key of Object.keys(schema.properties)) {
        if (!/^[a-zA-Z0-9_.-]{1,64}$/.test(key)) problems.push(`${path}: property key "${key}" is not allowed`)
      }
    }
    if (schema.required !== undefined) {
      const keys = isObject(schema.properties) ? Object.keys(schema.properties) : []
      if (!Array.isArray(schema.required) || !schema.required.every((r) => keys.includes(r as string))) {
        problems.push(`${path}: required must name properties`)
      }
    }
  })
  return problems
}

const geminiKeywords = new Set([
  "type",
  "format",
  "title",
  "description",
  "nullable",
  "enum",
  "properties",
  "required",
  "items",
  "minItems",
  "maxItems",
  "minLength",
  "maxLength",
  "pattern",
  "minimum",
  "maximum",
  "minProperties",
  "maxProperties",
  "propertyOrdering",
  "example",
  "default"
])

const geminiTypes = new Set(["STRING", "NUMBER", "INTEGER", "BOOLEAN", "ARRAY", "OBJECT"])

/** Gemini's function-declaration schema (OpenAPI 3.0 subset); the list of violations. */
export const gemini = (root: unknown): ReadonlyArray<string> => {
  const problems: Array<string> = []
  walk(root, (schema, path) => {
    if (!isObject(schema)) return void problems.push(`${path}: a schema must be an object`)
    for (const key of Object.keys(schema)) {
      if (!geminiKeywords.has(key)) problems.push(`${path}: unknown field "${key}"`)
    }
    const type = typeof schema.type === "string" ? schema.type.toUpperCase() : undefined
    if (type === undefined || !geminiTypes.has(type)) return void problems.push(`${path}: one type is required`)
    if (schema.nullable !== undefined && typeof schema.nullable !== "boolean") problems.push(`${path}: bad nullable`)
    if (
      schema.enum !== undefined &&
      (type !== "STRING" || !(schema.enum as Array<unknown>).every((v) => typeof v === "string"))
    ) {
      problems.push(`${path}: enum is for strings only`)
    }
    if (type === "OBJECT") {
      const keys = isObject(schema.properties) ? Object.keys(schema.properties) : []
      if (keys.length === 0) problems.push(`${path}: properties should be non-empty for OBJECT type`)
      if (
        schema.required !== undefined && !(schema.required as Array<unknown>).every((r) => keys.includes(r as string))
      ) {
        problems.push(`${path}: required must name properties`)
      }
    }
    if (type === "ARRAY" && !isObject(schema.items)) problems.push(`${path}: ARRAY needs items`)
  })
  return problems
}
