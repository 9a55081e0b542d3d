/**
 * Text that a database column keeps exactly: a lossless escape for the characters SQL drivers do not carry. libsql
 * returns TEXT cut at the first NUL, Postgres refuses NUL in a text column, and both replace a lone UTF-16
 * surrogate (`"\uD800"`, which UTF-8 cannot encode) with U+FFFD. Every other string is stored as it is, so rows
 * written before the escape existed read back unchanged.
 *
 * The escape: a value that holds a NUL or a lone surrogate, or that starts with the marker U+FDD0 (a Unicode
 * noncharacter, "permanently reserved for internal use", so text from people, models and files does not hold it), is
 * stored as the marker followed by the value in which each NUL, lone surrogate and U+FDD0 is written as U+FDD0 and
 * the four lowercase hex digits of its UTF-16 code unit (`"a\u0000b"` is stored as `"\uFDD0a\uFDD00000b"`). A stored
 * value is read back through the escape only when it is exactly what `encode` makes of some value; anything else
 * (every value written before 0.4, any text a person put in the table) is read as it is.
 *
 * @internal
 */

/** The marker that starts an escaped value, and the escape character inside one: U+FDD0, a noncharacter. */
export const marker = "\uFDD0"

const markerCode = 0xFDD0

/** NUL or a lone surrogate anywhere: what a driver cannot carry. */
const undeliverable = /\0|\p{Surrogate}/u

/** Any surrogate: a quick test that rules out most text before `undeliverable` looks at pairs. */
const surrogate = /[\uD800-\uDFFF]/

const hex4 = (code: number) => code.toString(16).padStart(4, "0")

/** Whether `text` is stored escaped: it holds NUL or a lone surrogate, or it starts with the marker. */
export const needsEscape = (text: string): boolean =>
  text.charCodeAt(0) === markerCode || text.includes("\0") || (surrogate.test(text) && undeliverable.test(text))

/** The marker, then `text` with each NUL, lone surrogate and U+FDD0 escaped: one pass, copying the runs between. */
const escapeAll = (text: string): string => {
  const parts: Array<string> = [marker]
  let from = 0
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i)
    if (code >= 0xD800 && code <= 0xDBFF) {
      const next = text.charCodeAt(i + 1)
      if (next >= 0xDC00 && next <= 0xDFFF) {
        i++ // a pair: kept
        continue
      }
    } else if (!(code === 0 || code === markerCode || (code >= 0xDC00 && code <= 0xDFFF))) {
      continue
    }
    parts.push(text.slice(from, i), marker, hex4(code))
    from = i + 1
  }
  parts.push(text.slice(from))
  return parts.join("")
}

/**
 * `text` as a column stores it: itself, unless `needsEscape`; then the marker and `text` with NUL, lone surrogates
 * and U+FDD0 escaped. Injective, and the identity on every string without NUL or lone surrogates that does not start
 * with U+FDD0.
 */
export const encode = (text: string): string => needsEscape(text) ? escapeAll(text) : text

const hexDigits = /^[0-9a-f]{4}$/

/**
 * What a column's `stored` text holds: `decode(encode(s)) === s` for every string `s`, and a stored value that is not
 * exactly `encode` of some string (a row written before the escape existed) is returned as it is.
 */
export const decode = (stored: string): string => {
  if (stored.charCodeAt(0) !== markerCode) return stored
  const parts: Array<string> = []
  let from = 1
  for (let at = stored.indexOf(marker, from); at !== -1; at = stored.indexOf(marker, from)) {
    const hex = stored.slice(at + 1, at + 5)
    if (!hexDigits.test(hex)) return stored
    parts.push(stored.slice(from, at), String.fromCharCode(Number.parseInt(hex, 16)))
    from = at + 5
  }
  parts.push(stored.slice(from))
  const decoded = parts.join("")
  // Canonical only: an escape of a character that needs none, or a value that needed no escape, is not ours.
  return encode(decoded) === stored ? decoded : stored
}
