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
 * The top-level key (`"(root)"` for an array) whose value nests objects or arrays more than `maxDepth` levels
 * deep. Iterative and bounded: it gives up (answers `undefined`) past 100 000 values on one level.
 */
export const tooDeepField = (input: unknown, maxDepth: number): string | undefined => {
  if (input === null || typeof input !== "object") return undefined
  const fields = Array.isArray(input) ? [["(root)", input] as const] : Object.entries(input)
  for (const [key, value] of fields) {
    let level: Array<unknown> = [value]
    for (let depth = 0; level.length > 0 && level.length <= 100_000; depth++) {
      if (depth > maxDepth) return key
      level = level.flatMap((item) => item !== null && typeof item === "object" ? Object.values(item) : [])
    }
  }
  return undefined
}
