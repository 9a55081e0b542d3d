/**
 * The generated values of the malformed-input corpora (test/corpus/*.json, see their `description`), expanded: used
 * by the corpus tests and by the MCP server's test of the same inputs.
 */

const nest = (levels: number, leaf: unknown, wrap: (inner: unknown) => unknown) => {
  let value = leaf
  for (let i = 0; i < levels; i++) value = wrap(value)
  return value
}

/** Expands the corpus's generated values (see its `description`); `$OUTSIDE` in strings becomes `outside`. */
export const expand = (value: unknown, outside: string): unknown => {
  if (typeof value === "string") return value.replaceAll("$OUTSIDE", outside)
  if (Array.isArray(value)) return value.map((item) => expand(item, outside))
  if (value === null || typeof value !== "object") return value
  const v = value as Record<string, any>
  if ("$repeat" in v) return String(v.$repeat[0]).repeat(v.$repeat[1])
  if ("$repeatArray" in v) return Array.from({ length: v.$repeatArray[0] }, () => expand(v.$repeatArray[1], outside))
  if ("$deep" in v) return nest(v.$deep[0], expand(v.$deep[1], outside), (inner) => ({ a: inner }))
  if ("$deepArray" in v) return nest(v.$deepArray[0], expand(v.$deepArray[1], outside), (inner) => [inner])
  if ("$json" in v) return JSON.parse(v.$json)
  if ("$number" in v) return Number(v.$number)
  if ("$undefined" in v) return undefined
  return Object.fromEntries(Object.entries(v).map(([k, item]) => [k, expand(item, outside)]))
}
