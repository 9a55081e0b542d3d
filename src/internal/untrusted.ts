/**
 * Helpers for decoding untrusted model input into typed errors: bounded depth checks before Schema (whose error
 * formatting recurses through the value), short renderings of bad values, and the UTF-8 check.
 *
 * @internal
 */

/** A lone UTF-16 surrogate: a string holding one cannot be encoded as UTF-8. */
export const loneSurrogate = /\p{Surrogate}/u

/**
 * The length of `text` in UTF-8 bytes, without encoding it: 1 byte below U+0080, 2 below U+0800, 4 for a surrogate
 * pair, 3 otherwise (a lone surrogate counts 3, as the U+FFFD it would be encoded as).
 */
export const utf8Length = (text: string): number => {
  let bytes = text.length
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i)
    if (code < 0x80) continue
    if (code < 0x800) bytes += 1
    else if (code >= 0xD800 && code <= 0xDBFF && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1)
      if (next >= 0xDC00 && next <= 0xDFFF) {
        bytes += 2 // 4 bytes for 2 code units
        i++
      } else bytes += 2
    } else bytes += 2
  }
  return bytes
}

/** The value at `path` inside `input`, or `undefined`. */
export const valueAt = (input: unknown, path: ReadonlyArray<PropertyKey>): unknown =>
  path.reduce<unknown>(
    (value, key) => value !== null && typeof value === "object" ? (value as any)[key] : undefined,
    input
  )

/** A bad value as an error message shows it: short, and never the whole of a large value. */
export const show = (value: unknown): string => {
  const text = Array.isArray(value) ?
    "an array" :
    value === null ?
    "null" :
    typeof value === "object" ?
    "an object" :
    typeof value === "string" ?
    JSON.stringify(value) :
    String(value)
  return text.length > 40 ? `${text.slice(0, 40)}…` : text
}

/**
 * The path to the first value that nests objects or arrays more than `maxDepth` levels below `input` (`input` is
 * level 0; an object or array at level `maxDepth` holding anything is too deep), or `undefined` when none does.
 * Iterative (an explicit stack, never recursion, so a value nested 100 000 levels deep is answered, not a stack
 * overflow), and it looks at every value: there is no width past which it gives up. Own enumerable keys only;
 * cycles and shared parts end (a cycle is too deep).
 */
export const tooDeepPath = (input: unknown, maxDepth: number): ReadonlyArray<string> | undefined => {
  if (input === null || typeof input !== "object") return undefined
  // Every object seen, with its depth, its parent's index and its key there: the path is rebuilt from them.
  const values: Array<object> = [input]
  const depths: Array<number> = [0]
  const parents: Array<number> = [-1]
  const keys: Array<string> = [""]
  const stack: Array<number> = [0]
  // The greatest depth each object was met at: an object shared (or a cycle) is walked again only from deeper (where
  // it could be too deep), so a value built by code with shared parts costs at most `maxDepth` walks of each part,
  // not one per path.
  const seen = new WeakMap<object, number>([[input, 0]])
  const pathTo = (index: number, key: string): ReadonlyArray<string> => {
    const path = [key]
    for (let at = index; at > 0; at = parents[at]!) path.push(keys[at]!)
    return path.reverse()
  }
  while (stack.length > 0) {
    const index = stack.pop()!
    const value = values[index]!
    const depth = depths[index]!
    for (const key of Object.keys(value)) {
      if (depth >= maxDepth) return pathTo(index, key)
      const child: unknown = (value as Record<string, unknown>)[key]
      if (child !== null && typeof child === "object" && (seen.get(child) ?? -1) < depth + 1) {
        seen.set(child, depth + 1)
        stack.push(values.length)
        values.push(child)
        depths.push(depth + 1)
        parents.push(index)
        keys.push(key)
      }
    }
  }
  return undefined
}

/**
 * The top-level key (`"(root)"` for an array) whose value nests objects or arrays more than `maxDepth` levels
 * deep (the key's value is level 0). Iterative and complete (see `tooDeepPath`).
 */
export const tooDeepField = (input: unknown, maxDepth: number): string | undefined => {
  if (input === null || typeof input !== "object") return undefined
  if (Array.isArray(input)) return tooDeepPath(input, maxDepth) === undefined ? undefined : "(root)"
  return tooDeepPath(input, maxDepth + 1)?.[0]
}
