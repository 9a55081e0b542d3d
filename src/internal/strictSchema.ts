/**
 * Strict tool schemas: converting a hand-written JSON Schema into the subset that OpenAI's strict function calling
 * accepts (the `@effect/ai-openai` client sends every tool with `strict: true`), and reporting what to change when
 * that is not possible.
 *
 * The rules applied (OpenAI's strict mode, which Anthropic also accepts):
 * - every object is closed: `additionalProperties: false` (added when absent; `true` or a schema is a free-form
 *   object and refused), and `required` lists every property;
 * - a property that was optional becomes required and nullable, `anyOf: [<its schema>, { type: "null" }]`; `decode`
 *   turns such a `null` back into an absent property before the tool sees its input;
 * - the root is an object, not an `anyOf`;
 * - only these keywords: `type` (`string`, `number`, `integer`, `boolean`, `object`, `array`, `null`, or a list of
 *   them), `description`, `title`, `enum`, `const`, `anyOf`, `properties`, `required`, `additionalProperties`, `items`,
 *   `minItems`, `maxItems`, `pattern`, `format` (`date-time`, `time`, `date`, `duration`, `email`, `hostname`, `ipv4`,
 *   `ipv6`, `uuid`), `minimum`, `maximum`, `exclusiveMinimum`, `exclusiveMaximum`, `multipleOf`. `default` is moved
 *   into the description; `$schema`, `$id` and `$comment` are dropped; anything else is refused with a hint
 *   (`$ref`/`$defs`: inline the definition; `oneOf`: use `anyOf`; `minLength`: say it in the description; ...);
 * - at most 10 levels of nested objects, 5 000 properties, 1 000 enum values, and 120 000 characters of property
 *   names, enum and const values in all.
 *
 * The conversion never throws: a schema that cannot be read (a getter throws, a Proxy) or that is not JSON is
 * refused like any other.
 *
 * @internal
 */
import * as Either from "effect/Either"

/** A JSON Schema node as emitted. */
export type JsonSchemaNode = { readonly [key: string]: unknown }

/** Why a schema cannot be strict: where (`parameters`, `parameters.properties.tags.items`, ...) and what to change. */
export interface StrictProblem {
  readonly path: string
  readonly problem: string
}

/** How to undo the nullable encoding of optional properties in a value that matches the strict schema. */
type Plan =
  | { readonly _tag: "Leaf" }
  | {
    readonly _tag: "Object"
    /** Per property: whether `null` stands for "absent", and the property's own plan. */
    readonly properties: ReadonlyMap<string, { readonly absentOnNull: boolean; readonly plan: Plan }>
  }
  | { readonly _tag: "Array"; readonly items: Plan }
  | { readonly _tag: "AnyOf"; readonly branches: ReadonlyArray<Plan> }

/** A converted schema. */
export interface StrictSchema {
  /** The strict schema to send. */
  readonly schema: JsonSchemaNode
  /** Top-level properties that may be absent (they were optional); a missing one is not an error. */
  readonly optional: ReadonlySet<string>
  /** Input that matches `schema`, with the `null` of every formerly optional property removed (a new value). */
  readonly decode: (input: unknown) => unknown
}

/** Bounds from OpenAI's strict mode. */
export const strictLimits = {
  maxObjectDepth: 10,
  maxProperties: 5_000,
  maxEnumValues: 1_000,
  maxTotalStringLength: 120_000,
  /** Any schema node deeper than this is refused (bounds the recursion whatever the nesting keyword). */
  maxNodeDepth: 64
} as const

const types = new Set(["string", "number", "integer", "boolean", "object", "array", "null"])
const formats = new Set(["date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"])
const dropped = new Set(["$schema", "$id", "$comment"])
const forbiddenNames = new Set(["__proto__", "constructor", "prototype"])

/** Keywords strict mode refuses, each with what to do instead. */
const refused: Readonly<Record<string, string>> = {
  $ref: "inline the referenced schema ($ref and $defs are not sent)",
  $defs: "inline the definitions where they are used ($ref and $defs are not sent)",
  definitions: "inline the definitions where they are used ($ref and $defs are not sent)",
  oneOf: "use anyOf",
  allOf: "merge the schemas into one",
  not: "describe the restriction in the description and check it in execute",
  if: "describe the condition in the description and check it in execute",
  then: "describe the condition in the description and check it in execute",
  else: "describe the condition in the description and check it in execute",
  patternProperties: "declare each property, or take the data as a JSON string",
  propertyNames: "declare each property, or take the data as a JSON string",
  unevaluatedProperties: "declare each property and leave additionalProperties out",
  dependentRequired: "make the properties nullable and check the dependency in execute",
  dependentSchemas: "make the properties nullable and check the dependency in execute",
  dependencies: "make the properties nullable and check the dependency in execute",
  minProperties: "state the bound in the description and check it in execute",
  maxProperties: "state the bound in the description and check it in execute",
  minLength: "state the bound in the description and check it in execute",
  maxLength: "state the bound in the description and check it in execute",
  uniqueItems: "state it in the description and check it in execute",
  contains: "state it in the description and check it in execute",
  minContains: "state it in the description and check it in execute",
  maxContains: "state it in the description and check it in execute",
  prefixItems: "use an object with named properties instead of a tuple",
  additionalItems: "use one items schema",
  unevaluatedItems: "use one items schema",
  nullable: "use anyOf: [<schema>, { \"type\": \"null\" }], or leave the property out of required",
  examples: "put the examples in the description",
  readOnly: "leave it out",
  writeOnly: "leave it out",
  deprecated: "leave it out"
}

/** Keywords allowed on every node, and per type. */
const common = new Set(["type", "description", "title", "enum", "const", "anyOf", "default"])
const byType: Readonly<Record<string, ReadonlySet<string>>> = {
  object: new Set(["properties", "required", "additionalProperties"]),
  array: new Set(["items", "minItems", "maxItems"]),
  string: new Set(["pattern", "format"]),
  number: new Set(["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"]),
  integer: new Set(["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"]),
  boolean: new Set(),
  null: new Set()
}

class Refusal {
  constructor(readonly path: string, readonly problem: string) {}
}

interface Budget {
  properties: number
  enumValues: number
  stringLength: number
}

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

const isJsonPrimitive = (value: unknown): boolean =>
  value === null || typeof value === "string" || typeof value === "boolean" ||
  (typeof value === "number" && Number.isFinite(value))

const isNonNegativeInteger = (value: unknown): boolean =>
  typeof value === "number" && Number.isSafeInteger(value) && value >= 0

const json = (value: unknown): string => {
  const text = JSON.stringify(value)
  return text.length > 60 ? `${text.slice(0, 60)}…` : text
}

const leaf: Plan = { _tag: "Leaf" }

/** Defines an own data property: a key such as "__proto__" or "toString" must not reach the prototype. */
const defineOwn = (target: Record<string, unknown>, key: string, value: unknown): void => {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true })
}

const spend = (budget: Budget, path: string, field: keyof Budget, amount: number): void => {
  budget[field] += amount
  const limit = field === "properties" ?
    strictLimits.maxProperties :
    field === "enumValues" ?
    strictLimits.maxEnumValues :
    strictLimits.maxTotalStringLength
  if (budget[field] > limit) {
    const what = field === "properties" ?
      `${limit} properties` :
      field === "enumValues" ?
      `${limit} enum values` :
      `${limit} characters of property names, enum and const values`
    throw new Refusal(path, `makes the schema exceed ${what} in all; simplify it`)
  }
}

/** Whether a converted node already accepts `null` (so an optional property needs no wrapping). */
const acceptsNull = (node: JsonSchemaNode): boolean => {
  const type = node.type
  if (type === "null" || (Array.isArray(type) && type.includes("null"))) return true
  if (Array.isArray(node.anyOf)) return node.anyOf.some((branch) => acceptsNull(branch as JsonSchemaNode))
  if (Array.isArray(node.enum)) return node.enum.includes(null)
  return "const" in node && node.const === null
}

/** `schema` or null: one more anyOf branch when it is an anyOf already, else `anyOf: [schema, { type: "null" }]`. */
const nullable = (schema: JsonSchemaNode): JsonSchemaNode =>
  Array.isArray(schema.anyOf) ?
    { ...schema, anyOf: [...schema.anyOf, { type: "null" }] } :
    { anyOf: [schema, { type: "null" }] }

const withDefaultInDescription = (description: unknown, value: unknown, path: string): string | undefined => {
  if (!isJsonPrimitive(value) && !isPlainObject(value) && !Array.isArray(value)) {
    throw new Refusal(path, "has a default that is not JSON")
  }
  const note = `Default: ${json(value)}.`
  return typeof description === "string" && description !== "" ? `${description} ${note}` : note
}

const convertNode = (
  node: unknown,
  path: string,
  depth: number,
  objectDepth: number,
  budget: Budget
): { readonly schema: JsonSchemaNode; readonly plan: Plan } => {
  if (depth > strictLimits.maxNodeDepth) throw new Refusal(path, "nests too deeply; simplify the schema")
  if (!isPlainObject(node)) throw new Refusal(path, "must be a JSON Schema object")
  const keys = Object.keys(node)
  const rawType = node.type
  const typeList: ReadonlyArray<unknown> = rawType === undefined ? [] : Array.isArray(rawType) ? rawType : [rawType]
  for (const type of typeList) {
    if (typeof type !== "string" || !types.has(type)) {
      throw new Refusal(
        path,
        `has type ${json(type)}; use string, number, integer, boolean, object, array or null`
      )
    }
  }
  if (typeList.length > 1 && typeList.some((t) => t === "object" || t === "array")) {
    throw new Refusal(path, "mixes object or array with other types; use anyOf with one schema per type")
  }
  const allowed = new Set(common)
  for (const type of typeList) for (const keyword of byType[type as string]!) allowed.add(keyword)
  for (const key of keys) {
    if (dropped.has(key) || allowed.has(key)) continue
    const hint = refused[key]
    if (hint !== undefined) throw new Refusal(path, `uses "${key}", which strict function calling refuses: ${hint}`)
    const owner = Object.entries(byType).find(([, keywords]) => keywords.has(key))
    throw new Refusal(
      path,
      owner === undefined ?
        `uses "${key}", which strict function calling does not accept; remove it` :
        `uses "${key}" without type "${owner[0]}"`
    )
  }

  const out: Record<string, unknown> = {}
  if (rawType !== undefined) out.type = Array.isArray(rawType) ? [...rawType] : rawType
  for (const key of ["title", "description"] as const) {
    if (node[key] === undefined) continue
    if (typeof node[key] !== "string") throw new Refusal(path, `has a ${key} that is not a string`)
    out[key] = node[key]
  }
  if (node.default !== undefined) out.description = withDefaultInDescription(out.description, node.default, path)
  if (node.enum !== undefined) {
    if (!Array.isArray(node.enum) || node.enum.length === 0 || !node.enum.every(isJsonPrimitive)) {
      throw new Refusal(path, "has an enum that is not a non-empty list of strings, numbers, booleans or null")
    }
    spend(budget, path, "enumValues", node.enum.length)
    for (const value of node.enum) if (typeof value === "string") spend(budget, path, "stringLength", value.length)
    out.enum = [...node.enum]
  }
  if (node.const !== undefined) {
    if (!isJsonPrimitive(node.const)) {
      throw new Refusal(path, "has a const that is not a string, number, boolean or null")
    }
    if (typeof node.const === "string") spend(budget, path, "stringLength", node.const.length)
    out.const = node.const
  }

  if (node.anyOf !== undefined) {
    if (!Array.isArray(node.anyOf) || node.anyOf.length === 0) throw new Refusal(path, "has an empty or invalid anyOf")
    if (rawType !== undefined) throw new Refusal(path, "has both type and anyOf; put the type in each anyOf branch")
    const branches = node.anyOf.map((branch, i) =>
      convertNode(branch, `${path}.anyOf[${i}]`, depth + 1, objectDepth, budget)
    )
    out.anyOf = branches.map((b) => b.schema)
    // Nested anyOf branches are flattened: decode picks among the leaves.
    const plans = branches.flatMap((b) => b.plan._tag === "AnyOf" ? b.plan.branches : [b.plan])
    return { schema: out, plan: { _tag: "AnyOf", branches: plans } }
  }
  if (rawType === undefined && node.enum === undefined && node.const === undefined) {
    throw new Refusal(path, "has no type; give it one (string, number, integer, boolean, object, array or null)")
  }

  if (typeList.includes("object")) return convertObject(node, out, path, depth, objectDepth + 1, budget)
  if (typeList.includes("array")) {
    if (node.items === undefined) throw new Refusal(path, "is an array without items; give items a schema")
    if (!isPlainObject(node.items)) throw new Refusal(path, "has items that is not one schema object")
    for (const key of ["minItems", "maxItems"] as const) {
      if (node[key] !== undefined && !isNonNegativeInteger(node[key])) {
        throw new Refusal(path, `has a ${key} that is not a non-negative integer`)
      }
    }
    const items = convertNode(node.items, `${path}.items`, depth + 1, objectDepth, budget)
    out.items = items.schema
    if (node.minItems !== undefined) out.minItems = node.minItems
    if (node.maxItems !== undefined) out.maxItems = node.maxItems
    return { schema: out, plan: items.plan._tag === "Leaf" ? leaf : { _tag: "Array", items: items.plan } }
  }
  for (const key of ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"] as const) {
    if (node[key] === undefined) continue
    if (typeof node[key] !== "number" || !Number.isFinite(node[key])) {
      throw new Refusal(path, `has a ${key} that is not a finite number`)
    }
    if (key === "multipleOf" && (node[key] as number) <= 0) {
      throw new Refusal(path, "has a multipleOf that is not positive")
    }
    out[key] = node[key]
  }
  if (node.pattern !== undefined) {
    if (typeof node.pattern !== "string") throw new Refusal(path, "has a pattern that is not a string")
    out.pattern = node.pattern
  }
  if (node.format !== undefined) {
    if (typeof node.format !== "string" || !formats.has(node.format)) {
      throw new Refusal(
        path,
        `has format ${json(node.format)}; strict function calling accepts only ${[...formats].join(", ")}`
      )
    }
    out.format = node.format
  }
  return { schema: out, plan: leaf }
}

const convertObject = (
  node: Record<string, unknown>,
  out: Record<string, unknown>,
  path: string,
  depth: number,
  objectDepth: number,
  budget: Budget
): { readonly schema: JsonSchemaNode; readonly plan: Plan } => {
  if (objectDepth > strictLimits.maxObjectDepth) {
    throw new Refusal(path, `nests objects more than ${strictLimits.maxObjectDepth} levels deep; flatten the schema`)
  }
  const additional = node.additionalProperties
  if (additional !== undefined && additional !== false) {
    throw new Refusal(
      path,
      `is a free-form object (additionalProperties is ${additional === true ? "true" : "a schema"}); declare its ` +
        `properties and leave additionalProperties out or set it to false, or take the data as a JSON string`
    )
  }
  if (node.properties === undefined && additional !== false) {
    throw new Refusal(
      path,
      "is a free-form object (no properties); declare its properties, or take the data as a JSON string"
    )
  }
  const properties = node.properties ?? {}
  if (!isPlainObject(properties)) throw new Refusal(path, "has properties that is not an object")
  const names = Object.keys(properties)
  const required = node.required ?? []
  if (!Array.isArray(required) || !required.every((name) => typeof name === "string")) {
    throw new Refusal(path, "has a required that is not a list of property names")
  }
  const requiredSet = new Set<string>(required)
  for (const name of requiredSet) {
    if (!Object.hasOwn(properties, name)) {
      throw new Refusal(path, `lists "${name}" in required, but has no such property`)
    }
  }
  spend(budget, path, "properties", names.length)
  const outProperties: Record<string, unknown> = {}
  const plans = new Map<string, { readonly absentOnNull: boolean; readonly plan: Plan }>()
  for (const name of names) {
    const childPath = `${path}.properties.${name}`
    if (forbiddenNames.has(name)) throw new Refusal(childPath, "is not an allowed property name")
    spend(budget, path, "stringLength", name.length)
    const child = convertNode(properties[name], childPath, depth + 1, objectDepth, budget)
    const optional = !requiredSet.has(name)
    const wrap = optional && !acceptsNull(child.schema)
    defineOwn(outProperties, name, wrap ? nullable(child.schema) : child.schema)
    plans.set(name, { absentOnNull: wrap, plan: child.plan })
  }
  out.properties = outProperties
  out.required = names
  out.additionalProperties = false
  // Always an object plan, even with nothing to undo: an anyOf picks its branch by the keys it declares.
  return { schema: out, plan: { _tag: "Object", properties: plans } }
}

const kind = (value: unknown): "object" | "array" | "other" =>
  Array.isArray(value) ? "array" : isPlainObject(value) ? "object" : "other"

const planKind = (plan: Plan): "object" | "array" | "other" =>
  plan._tag === "Object" ? "object" : plan._tag === "Array" ? "array" : "other"

const decodeWith = (plan: Plan, value: unknown): unknown => {
  switch (plan._tag) {
    case "Leaf":
      return value
    case "Array":
      return Array.isArray(value) ? value.map((item) => decodeWith(plan.items, item)) : value
    case "AnyOf": {
      const valueKind = kind(value)
      if (valueKind === "other") return value
      const candidates = plan.branches.filter((b) => planKind(b) === valueKind)
      // Of several object branches, the first that declares every key of the value.
      const branch = valueKind === "object" && candidates.length > 1 ?
        candidates.find((b) =>
          b._tag === "Object" && Object.keys(value as object).every((key) => b.properties.has(key))
        ) ?? candidates[0] :
        candidates[0]
      return branch === undefined ? value : decodeWith(branch, value)
    }
    case "Object": {
      if (!isPlainObject(value)) return value
      const entries: Array<[string, unknown]> = []
      for (const [key, item] of Object.entries(value)) {
        const property = plan.properties.get(key)
        if (property === undefined) entries.push([key, item])
        else if (!(property.absentOnNull && item === null)) entries.push([key, decodeWith(property.plan, item)])
      }
      // fromEntries defines own properties: a "__proto__" key stays data.
      return Object.fromEntries(entries)
    }
  }
}

/**
 * Converts a tool's parameter schema (`type: "object"` at the root) to the strict form, or says where and why it
 * cannot be strict.
 */
export const toStrict = (parameters: unknown): Either.Either<StrictSchema, StrictProblem> => {
  try {
    if (!isPlainObject(parameters) || parameters.type !== "object") {
      return Either.left({ path: "parameters", problem: "must be a JSON Schema object with type \"object\"" })
    }
    const budget: Budget = { properties: 0, enumValues: 0, stringLength: 0 }
    const { plan, schema } = convertNode(parameters, "parameters", 0, 0, budget)
    const optional = new Set<string>()
    if (plan._tag === "Object") {
      for (const [name, property] of plan.properties) if (property.absentOnNull) optional.add(name)
    }
    return Either.right({ schema, optional, decode: (input) => decodeWith(plan, input) })
  } catch (error) {
    if (error instanceof Refusal) return Either.left({ path: error.path, problem: error.problem })
    return Either.left({ path: "parameters", problem: "could not be read as JSON (a getter threw, or it is not JSON)" })
  }
}

/** Bounds of `inlineDefinitions`, on the inlined schema. */
export interface InlineLimits {
  /**
   * The deepest nesting: a schema inside another (a property's, `items`, an `anyOf` branch, any keyword's object
   * value) is one level deeper, and so is an array inside an array; an inlined definition takes the level of its
   * `$ref`. Bounds the walk whatever the input: a deep schema, or one that contains itself (a cycle of objects).
   */
  readonly maxDepth: number
  /**
   * The most JSON objects walked, a definition once per use (about the inlined schema's size): bounds the expansion
   * of definitions that use each other several times (ten levels of two uses are a thousand copies).
   */
  readonly maxNodes: number
}

/** The defaults: the depth `toStrict` accepts, and 100 000 objects. */
export const defaultInlineLimits: InlineLimits = { maxDepth: strictLimits.maxNodeDepth, maxNodes: 100_000 }

/**
 * Where inlining stopped and why: `path` as `toStrict` names places (`parameters.properties.a.items`), `at` the keys
 * from the root (a number for an array index), for callers that name places otherwise.
 */
export interface InlineProblem extends StrictProblem {
  readonly at: ReadonlyArray<string | number>
}

/** Where local `$ref`s point: `#/$defs/<name>` into `$defs`, `#/definitions/<name>` into `definitions`. */
const definitionKeywords: ReadonlyArray<string> = ["$defs", "definitions"]

/** The definition a local `$ref` (`#/$defs/<name>` or `#/definitions/<name>`) names in `root`, if it has one. */
export const definitionOf = (root: JsonSchemaNode, ref: string): unknown => {
  const keyword = definitionKeywords.find((keyword) => ref.startsWith(`#/${keyword}/`))
  if (keyword === undefined) return undefined
  const defs = root[keyword]
  // A JSON Pointer token: `~1` stands for `/` and `~0` for `~` (effect escapes an identifier such as `a/b` so).
  const name = ref.slice(keyword.length + 3).replaceAll("~1", "/").replaceAll("~0", "~")
  return isPlainObject(defs) && Object.hasOwn(defs, name) ? defs[name] : undefined
}

/** The keys from the root to a node, innermost first (a path is only spelled out when a problem names it). */
type At = { readonly key: string | number; readonly parent: At } | undefined

const keysOf = (at: At): Array<string | number> => {
  const keys: Array<string | number> = []
  for (let node = at; node !== undefined; node = node.parent) keys.unshift(node.key)
  return keys
}

class InlineRefusal {
  constructor(readonly at: At, readonly problem: string) {}
}

/**
 * `schema` with every local `$ref` (`#/$defs/<name>`, `#/definitions/<name>`) replaced by a copy of its definition
 * (keywords beside the `$ref` win over the definition's) and `$defs` / `definitions` dropped, as strict function
 * calling and Gemini need (effect's `JSONSchema.make` refers to every annotated schema, such as `Int`, by `$ref`).
 * A `$ref` that cannot be inlined (a recursive definition's, or one that names no definition) is kept, with the
 * definitions so that the schema stays whole, and `toStrict` then reports it. A schema nested deeper than
 * `limits.maxDepth`, or larger than `limits.maxNodes` objects once inlined, is refused, naming where: the walk stops
 * at the limits, so it cannot overflow the stack or expand without end.
 */
export const inlineDefinitions = (
  schema: JsonSchemaNode,
  limits: InlineLimits = defaultInlineLimits
): Either.Either<JsonSchemaNode, InlineProblem> => {
  let nodes = 0
  let kept = false
  const countNode = (at: At): void => {
    if (++nodes > limits.maxNodes) {
      throw new InlineRefusal(
        at,
        `makes the schema exceed ${limits.maxNodes} objects once its definitions are inlined; simplify it`
      )
    }
  }
  const go = (node: unknown, at: At, depth: number, expanding: ReadonlySet<string>): unknown => {
    if (typeof node !== "object" || node === null) return node
    // A list of plain values (`required`, `enum`) ends the walk: only the objects and lists in it nest.
    const nests = !Array.isArray(node) || node.some((item) => typeof item === "object" && item !== null)
    if (nests && depth > limits.maxDepth) {
      throw new InlineRefusal(at, `nests deeper than ${limits.maxDepth} levels; simplify the schema`)
    }
    if (Array.isArray(node)) {
      return node.map((item, i) => go(item, { key: i, parent: at }, Array.isArray(item) ? depth + 1 : depth, expanding))
    }
    countNode(at)
    const record = node as JsonSchemaNode
    const ref = record.$ref
    if (typeof ref === "string") {
      const definition = expanding.has(ref) ? undefined : definitionOf(schema, ref)
      if (definition === undefined) {
        kept = true
      } else {
        const { $ref: _, ...rest } = record
        const inlined = go(definition, at, depth, new Set([...expanding, ref]))
        return { ...(inlined as object), ...(go(rest, at, depth, expanding) as object) }
      }
    }
    const out: Record<string, unknown> = {}
    for (const [key, value] of Object.entries(record)) {
      if (definitionKeywords.includes(key)) continue
      const child: At = { key, parent: at }
      // Inside `properties`, keys are property names, not keywords: a property may be called "$defs".
      defineOwn(
        out,
        key,
        key === "properties" && isPlainObject(value) ?
          propertiesOf(value, child, depth, expanding) :
          go(value, child, depth + 1, expanding)
      )
    }
    return out
  }
  const propertiesOf = (properties: Record<string, unknown>, at: At, depth: number, expanding: ReadonlySet<string>) => {
    countNode(at)
    const out: Record<string, unknown> = {}
    for (const [name, value] of Object.entries(properties)) {
      defineOwn(out, name, go(value, { key: name, parent: at }, depth + 1, expanding))
    }
    return out
  }
  try {
    const inlined = go(schema, undefined, 0, new Set()) as JsonSchemaNode
    if (kept) {
      for (const keyword of definitionKeywords) {
        if (schema[keyword] !== undefined) defineOwn(inlined, keyword, schema[keyword])
      }
    }
    return Either.right(inlined)
  } catch (error) {
    if (!(error instanceof InlineRefusal)) throw error
    const at = keysOf(error.at)
    const path = at.reduce<string>(
      (path, key) => typeof key === "number" ? `${path}[${key}]` : `${path}.${key}`,
      "parameters"
    )
    return Either.left({ path, at, problem: error.problem })
  }
}

/** Keywords that only bound values, which strict mode refuses but a decoding Schema enforces anyway. */
const valueBounds = new Set([
  "minLength",
  "maxLength",
  "minProperties",
  "maxProperties",
  "uniqueItems",
  "contains",
  "minContains",
  "maxContains",
  "examples"
])

/**
 * `schema` without the keywords that only bound values (`minLength`, `maxLength`, ...), for a schema derived from an
 * Effect Schema that decodes every call: the bound is still enforced, by the decoding, and its description (which
 * effect writes from the refinement, e.g. "a string at least 1 character(s) long") still tells the model.
 */
export const withoutValueBounds = (schema: JsonSchemaNode): JsonSchemaNode => {
  const go = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(go)
    if (typeof node !== "object" || node === null) return node
    const out: Record<string, unknown> = {}
    for (const [key, value] of Object.entries(node)) {
      // Inside `properties`, keys are property names, not keywords.
      if (key === "properties" && typeof value === "object" && value !== null) {
        out[key] = Object.fromEntries(Object.entries(value).map(([name, child]) => [name, go(child)]))
      } else if (!valueBounds.has(key)) {
        out[key] = go(value)
      }
    }
    return out
  }
  return go(schema) as JsonSchemaNode
}
