/**
 * How many file operations of one edit preview or apply run at once.
 *
 * @internal
 */

/**
 * How many file operations of one preview or apply run at once (reads, checks, temporary files): one at a time for
 * a few files (forking fibers would cost more than it saves), up to 16 for more.
 */
export const concurrencyFor = (files: number): number => files > 4 ? 16 : 1
