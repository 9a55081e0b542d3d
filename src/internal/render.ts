/**
 * Rendering values of unknown shape into error text without ever throwing.
 *
 * A callback may fail or die with anything: a null-prototype object (no `toString`), an object whose getters throw,
 * a Proxy whose every trap throws (or a revoked one), a bigint (`JSON.stringify` throws), a symbol (a template
 * literal throws), a cycle, a string of many megabytes. `JSON.stringify`, `String(...)` and effect's own
 * `Inspectable.toStringUnknown` each throw on some of these (`toStringUnknown` falls back to `String(value)`, which
 * throws for a null-prototype object), so the library renders such values here: every read of the value is guarded,
 * the walk is bounded (depth, output length), and the result is capped and well-formed UTF-16.
 *
 * @internal
 */

/** The default cap on a rendered value, in UTF-16 code units. */
export const defaultMaxLength = 2_000

/** Nesting levels rendered before an object or array is shown as `[Object]` / `[Array]`. */
const maxDepth = 4

const loneSurrogates = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g

/** Runs `f`; its result, or `fallback` when it throws. */
export const safely = <A, B>(f: () => A, fallback: B): A | B => {
  try {
    return f()
  } catch {
    return fallback
  }
}

/** `value[key]`, or `undefined` when `value` is not an object or reading throws (a getter, a Proxy trap). */
export const safeGet = (value: unknown, key: PropertyKey): unknown =>
  (typeof value === "object" && value !== null) || typeof value === "function" ?
    safely(() => (value as any)[key], undefined) :
    undefined

/** `value instanceof C` that answers `false` instead of throwing (a Proxy's `getPrototypeOf` trap). */
export const safeInstanceOf = (value: unknown, C: abstract new(...args: Array<any>) => unknown): boolean =>
  typeof value === "object" && value !== null && safely(() => value instanceof C, false)

/** A string field of `value` when it is a non-empty string; reading is guarded. */
export const stringProperty = (value: unknown, key: PropertyKey): string | undefined => {
  const field = safeGet(value, key)
  return typeof field === "string" && field !== "" ? field : undefined
}

// Cuts `text` to at most `max` code units without splitting a surrogate pair.
const cut = (text: string, max: number): string => {
  if (text.length <= max) return text
  const end = max > 0 && /[\uD800-\uDBFF]/.test(text[max - 1]!) ? max - 1 : max
  return text.slice(0, end)
}

/** `text` capped at `maxLength` code units (ending with `…` when cut), lone surrogates replaced by U+FFFD. */
export const capText = (text: string, maxLength: number = defaultMaxLength): string => {
  const max = Math.max(1, Math.floor(maxLength))
  const capped = text.length <= max ? text : `${cut(text, max - 1)}…`
  return capped.replace(loneSurrogates, "\uFFFD")
}

/** Accumulates output up to a budget; once full, every further write is dropped and `full` stays true. */
class Out {
  readonly parts: Array<string> = []
  length = 0
  full = false
  constructor(readonly budget: number) {}
  write(text: string): void {
    if (this.full) return
    const room = this.budget - this.length
    if (text.length > room) {
      this.parts.push(cut(text, room))
      this.length = this.budget
      this.full = true
      return
    }
    this.parts.push(text)
    this.length += text.length
  }
}

const quote = (text: string, out: Out): string =>
  // Cut before quoting: JSON-quoting a megabyte string to keep a few hundred characters would be wasted work.
  JSON.stringify(cut(text, out.budget - out.length + 1))

/** What a guarded read gives when reading threw. */
const unreadable: unique symbol = Symbol("unreadable")

const read = (object: object, key: PropertyKey): unknown => safely(() => (object as any)[key], unreadable)

const functionName = (f: unknown): string => {
  const name = safeGet(f, "name")
  return typeof name === "string" && name !== "" ? `[Function ${cut(name, 100)}]` : "[Function]"
}

interface Walk {
  readonly out: Out
  /** The objects on the path from the root: a cycle points back at one of them. */
  readonly ancestors: Set<object>
  /** Own keys read once per object: an object met several times (a DAG) is not enumerated again. */
  readonly keys: Map<object, ReadonlyArray<string> | undefined>
}

const walk = (value: unknown, depth: number, w: Walk): void => {
  const out = w.out
  if (out.full) return
  if (value === unreadable) return out.write("[unreadable]")
  switch (typeof value) {
    case "string":
      return out.write(quote(value, out))
    case "number":
    case "boolean":
    case "undefined":
      return out.write(String(value))
    case "bigint":
      return out.write(`${safely(() => value.toString(), "?")}n`)
    case "symbol":
      return out.write(safely(() => String(value), "Symbol()"))
    case "function":
      return out.write(functionName(value))
  }
  if (value === null) return out.write("null")
  const object = value as object
  if (w.ancestors.has(object)) return out.write("[Circular]")
  const isArray = safely(() => Array.isArray(object), undefined)
  if (isArray === undefined) return out.write("[unreadable]")
  if (depth >= maxDepth) return out.write(isArray ? "[Array]" : "[Object]")
  w.ancestors.add(object)
  try {
    if (isArray) return walkArray(object as ReadonlyArray<unknown>, depth, w)
    if (safeInstanceOf(object, Error)) {
      const name = stringProperty(object, "name") ?? "Error"
      const message = stringProperty(object, "message")
      return out.write(message === undefined ? cut(name, 200) : `${cut(name, 200)}: ${cut(message, out.budget)}`)
    }
    if (safeInstanceOf(object, Date)) {
      return out.write(safely(() => Date.prototype.toISOString.call(object), "Invalid Date"))
    }
    if (safeInstanceOf(object, Map) || safeInstanceOf(object, Set)) {
      const size = safely(() => String((object as Map<unknown, unknown>).size), "?")
      return out.write(`${safeInstanceOf(object, Map) ? "Map" : "Set"}(${size})`)
    }
    walkObject(object, depth, w)
  } finally {
    w.ancestors.delete(object)
  }
}

const walkArray = (array: ReadonlyArray<unknown>, depth: number, w: Walk): void => {
  const length = safely(() => array.length, 0)
  w.out.write("[")
  for (let i = 0; i < length && !w.out.full; i++) {
    if (i > 0) w.out.write(",")
    walk(read(array, i), depth + 1, w)
  }
  w.out.write("]")
}

const walkObject = (object: object, depth: number, w: Walk): void => {
  if (!w.keys.has(object)) w.keys.set(object, safely(() => Object.keys(object), undefined))
  const keys = w.keys.get(object)
  if (keys === undefined) return w.out.write("[unreadable]")
  w.out.write("{")
  for (let i = 0; i < keys.length && !w.out.full; i++) {
    if (i > 0) w.out.write(",")
    w.out.write(quote(keys[i]!, w.out))
    w.out.write(":")
    walk(read(object, keys[i]!), depth + 1, w)
  }
  w.out.write("}")
}

/**
 * Any value as short text, never throwing: JSON-like for plain data (`{"code":28}`, `[1,2]`), `12n` for a bigint,
 * `Symbol(x)`, `[Function f]`, `Name: message` for an `Error` inside a value, `[Circular]` for a cycle, `[Object]`
 * below 4 levels, `[unreadable]` where reading threw. At most `maxLength` code units, ending with `…` when cut.
 * A string at the top level is returned as is (capped).
 */
export const renderUnknown = (value: unknown, maxLength: number = defaultMaxLength): string => {
  const max = Math.max(1, Math.floor(maxLength))
  if (typeof value === "string") return capText(value, max)
  try {
    const out = new Out(max + 1)
    walk(value, 0, { out, ancestors: new Set(), keys: new Map() })
    return capText(out.parts.join(""), max)
  } catch {
    return "[unreadable]"
  }
}

/**
 * What a failure says, as text for an error message, never throwing: a string as is (`""` for the empty one); else
 * the value's own non-empty string `message` (an `Error`, a tagged error); else `renderUnknown` of the value (an
 * `Error` with an empty message gives its name). Capped at `maxLength`.
 */
export const messageOf = (failure: unknown, maxLength: number = defaultMaxLength): string => {
  if (typeof failure === "string") return failure === "" ? "\"\"" : capText(failure, maxLength)
  const message = stringProperty(failure, "message")
  if (message !== undefined) return capText(message, maxLength)
  if (safeInstanceOf(failure, Error)) return capText(stringProperty(failure, "name") ?? "Error", maxLength)
  return renderUnknown(failure, maxLength)
}

/** Tags of errors whose message is generic and whose `cause` is the real error (`@effect/sql`'s). */
const wrapperTags: ReadonlySet<string> = new Set(["SqlError", "MigrationError"])

/**
 * `messageOf` the error a wrapper holds: a `SqlError` says "Failed to execute statement" and holds the driver's
 * error ("SQLITE_BUSY: database is locked") as its `cause`, a `MigrationError` holds a `SqlError`. Through at most
 * 8 wrappers, to the first cause that is not one; a wrapper whose `cause` has no message is described itself. Never
 * throws; capped at `maxLength`.
 */
export const innerMessageOf = (failure: unknown, maxLength: number = defaultMaxLength): string => {
  let current = failure
  for (let hops = 0; hops < 8 && wrapperTags.has(stringProperty(current, "_tag") ?? ""); hops++) {
    const cause = safeGet(current, "cause")
    if (stringProperty(cause, "message") === undefined) break
    current = cause
  }
  return messageOf(current, maxLength)
}

/**
 * An `Error` standing in for a failure value that effect's own `Cause.pretty` cannot print (it JSON-stringifies
 * values and follows `cause` chains without guards, so a bigint inside, a Proxy or a throwing getter make it throw,
 * and with it `Effect.runPromise`'s rejection). Its message is the rendered value; the original value stays
 * reachable under the non-enumerable `original` property, out of the way of printers and serializers.
 */
export class UnprintableFailure extends Error {
  declare readonly original: unknown
  constructor(original: unknown, message: string) {
    super(message)
    this.name = "UnprintableFailure"
    Object.defineProperty(this, "original", { value: original, enumerable: false })
  }
}
