/**
 * Helpers for decoding untrusted model input into typed errors: bounded depth checks before Schema (whose error
 * formatting recurses through the value), short renderings of bad values, and the UTF-8 check.
 *
 * @internal
 */

/** A lone UTF-16 surrogate: a string holding one cannot be encoded as UTF-8. */
export const loneSurrogate = /\p{Surrogate}/u

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
