/**
 * The bytes of a staged edit file: what the preview read and what an apply will write. A preview makes each
 * `EditFile` here (the hash of the bytes it read and the bytes to write, both computed only when first needed) and
 * keeps the bytes it read for the process's own applies; an apply or a recovery compares the bytes it finds with
 * them.
 *
 * @internal
 */
import { createHash } from "node:crypto"
import type { EditFile } from "../EditKind.js"

/**
 * The bytes a preview read, kept for files staged in this process: apply compares them byte for byte, and a
 * rollback restores them. A file restored after a restart has none: apply compares SHA-256 (`before`), and the
 * bytes it read under the locks are the snapshot.
 */
const originals = new WeakMap<EditFile, Uint8Array>()

/** The SHA-256 of `bytes`, in hex: an `EditFile`'s `before`. */
export const sha256 = (bytes: Uint8Array): string => createHash("sha256").update(bytes).digest("hex")

/** `bytes` as a `Buffer` over the same memory (no copy). */
export const asBuffer = (bytes: Uint8Array): Buffer => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)

export const sameBytes = (a: Uint8Array, b: Uint8Array): boolean => asBuffer(a).equals(b)

/** `make`'s value, computed on the first call. */
const once = <A>(make: () => A): () => A => {
  let value: { readonly a: A } | undefined
  return () => (value ??= { a: make() }).a
}

/**
 * A file of a preview, staged: where it is and how many replacements (`where`), the bytes the preview read
 * (`original`, kept in this process) and how to build the bytes to write (`after`).
 */
export const stagedFile = (
  where: Omit<EditFile, "before" | "after">,
  original: Uint8Array,
  after: () => Uint8Array
): EditFile => {
  // The bytes to write are built when they are needed (an apply, or a durable store keeping the payload), and
  // the hash of the bytes read likewise: a preview pays for neither.
  const afterOnce = once(after)
  const before = once(() => sha256(original))
  const file: EditFile = {
    ...where,
    get before() {
      return before()
    },
    get after() {
      return afterOnce()
    }
  }
  originals.set(file, original)
  return file
}

/** Whether `bytes` are what the preview read: byte for byte when this process staged the file, else by SHA-256. */
export const isBefore = (file: EditFile, bytes: Uint8Array): boolean => {
  const original = originals.get(file)
  return original !== undefined ? sameBytes(bytes, original) : sha256(bytes) === file.before
}

/**
 * The edited file's bytes, from an ASCII original: its unchanged byte ranges (ASCII: character offsets are byte
 * offsets) and the encoded text of each changed region, copied into one buffer of `size` bytes.
 */
export const spliceBytes = (
  original: Uint8Array,
  { regionText, regions }: {
    readonly regions: ReadonlyArray<number>
    readonly regionText: (index: number) => string
  },
  size: number
): Buffer => {
  const out = Buffer.allocUnsafe(size)
  const source = asBuffer(original)
  let at = 0
  let from = 0
  for (let r = 0; r < regions.length; r += 4) {
    at += source.copy(out, at, from, regions[r + 2]!)
    at += out.write(regionText(r / 4), at, "utf8")
    from = regions[r + 3]!
  }
  at += source.copy(out, at, from)
  if (at !== size) throw new Error(`spliceBytes: wrote ${at} of ${size} bytes`)
  return out
}
