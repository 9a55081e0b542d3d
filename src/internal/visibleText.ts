/**
 * Characters a screen does not show as themselves, made visible: what a preview shows a person or a model in place
 * of each control character (C0 but tab and line feed, DEL, C1), each lone carriage return (one not ending a line:
 * on a terminal it moves back over the line), the Unicode line and paragraph separators, and the bidirectional
 * formatting characters (embeddings, overrides, isolates and marks, which reorder the text around them). Each is
 * shown as `<U+XXXX>`, its code point.
 *
 * @internal
 */

/** The characters `showInvisible` replaces (global: use with `replace` / `matchAll` only). */
const invisibleGlobal =
  /[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F\u061C\u200E\u200F\u2028\u2029\u202A-\u202E\u2066-\u2069]|\r(?!\n)/g

const invisibleOne =
  /[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F\u061C\u200E\u200F\u2028\u2029\u202A-\u202E\u2066-\u2069]|\r(?!\n)/

/** `U+0000`: the code point of the first UTF-16 unit of `char`, four hex digits at least, upper case. */
export const codePointOf = (char: string): string =>
  `U+${char.charCodeAt(0).toString(16).toUpperCase().padStart(4, "0")}`

/** `text` with each invisible character shown as `<U+XXXX>`; text without any is returned as it is. */
export const showInvisible = (text: string): string =>
  invisibleOne.test(text) ? text.replace(invisibleGlobal, (char) => `<${codePointOf(char)}>`) : text

/** The code points (`U+0000`, ...) of the invisible characters in `text`, each once, in order of appearance. */
export const invisibleIn = (text: string): ReadonlyArray<string> =>
  invisibleOne.test(text) ? [...new Set(Array.from(text.matchAll(invisibleGlobal), (m) => codePointOf(m[0])))] : []
