/**
 * Counted nouns in text a person or a model reads: `1 file`, `2 files`, never `2 file(s)`.
 *
 * @internal
 */

/** `count(1, "file")` is `"1 file"`, `count(2, "file")` is `"2 files"`; `plural` for an irregular noun. */
export const count = (n: number, singular: string, plural = `${singular}s`): string =>
  `${n} ${n === 1 ? singular : plural}`
