/**
 * The optional peers of the entry points, and one error that names every missing one.
 *
 * Node resolves a module's whole static import graph before it runs any of it, so a check at the top of an entry
 * (even in a module the entry imports first) never runs before Node's own `ERR_MODULE_NOT_FOUND`, which names only
 * the first missing package. The entries with optional peers therefore have an `import` condition of their own
 * (`src/entry/*.ts`) that loads the entry with a dynamic import through `loadEntry`: when that fails because a peer
 * is missing, the error lists every missing peer of the entry with its version range, and the `npm install` line.
 * Their `require` condition (`src/entry/*.cts`, built to `.cjs`) does the same synchronously with `requireEntry`.
 * Nothing is checked when the entry loads (a bundled app whose peers are bundled is never refused).
 *
 * @internal
 */

/** The optional peers and their ranges: package.json's `peerDependencies` (test/layout/Peers.test.ts). */
export const peerRanges = {
  "@effect/platform": "^0.97.2",
  "@effect/platform-node": "^0.108.2",
  "@effect/ai": "^0.37.0",
  "@effect/sql": "^0.52.1",
  "@effect/sql-libsql": "^0.42.0",
  "@effect/sql-pg": "^0.53.0",
  "@effect/experimental": "^0.61.1",
  "@effect/cluster": "^0.60.2",
  "@effect/rpc": "^0.76.2",
  "pg": "^8.16.3"
} as const

/** An optional peer. */
export type Peer = keyof typeof peerRanges

/** The optional peers that loading each entry loads (test/layout/Peers.test.ts traces them). */
export const entryPeers = {
  "effect-resolve/edit": ["@effect/platform"],
  "effect-resolve/plan": ["@effect/platform"],
  "effect-resolve/ai": ["@effect/ai", "@effect/platform"],
  "effect-resolve/sqlite": ["@effect/sql", "@effect/sql-libsql", "@effect/experimental", "@effect/platform"],
  "effect-resolve/postgres": ["@effect/sql", "@effect/sql-pg", "pg", "@effect/experimental", "@effect/platform"],
  "effect-resolve/inbox": ["@effect/platform", "@effect/platform-node"],
  "effect-resolve/mcp": ["@effect/ai", "@effect/rpc", "@effect/platform", "@effect/platform-node"],
  "effect-resolve/cluster": [
    "@effect/cluster",
    "@effect/rpc",
    "@effect/platform-node",
    "@effect/platform",
    "@effect/sql",
    "@effect/experimental",
    "@effect/ai"
  ]
} as const satisfies Record<string, ReadonlyArray<Peer>>

/** An entry point with optional peers. */
export type Entry = keyof typeof entryPeers

/** The message for `entry` when `missing` (not empty) are not installed. */
export const missingPeersMessage = (entry: Entry, missing: ReadonlyArray<Peer>): string => {
  const one = missing.length === 1
  return [
    `${entry} needs ${one ? "a package that is" : "packages that are"} not installed:`,
    ...missing.map((peer) => `  ${peer} ${peerRanges[peer]}`),
    `Install ${one ? "it" : "them"} with:`,
    `  npm install ${missing.map((peer) => `"${peer}@${peerRanges[peer]}"`).join(" ")}`
  ].join("\n")
}

const codeOf = (error: unknown): unknown =>
  typeof error === "object" && error !== null && "code" in error ? error.code : undefined

/** Whether `peer` resolves from this package's place (a missing package is `ERR_MODULE_NOT_FOUND`). */
const resolves = (peer: Peer): boolean => {
  try {
    import.meta.resolve(peer)
    return true
  } catch (error) {
    return codeOf(error) !== "ERR_MODULE_NOT_FOUND"
  }
}

/**
 * Loads an entry; when that fails with `ERR_MODULE_NOT_FOUND` and some of the entry's peers are not installed,
 * fails with an error (code `ERR_MODULE_NOT_FOUND`, the original as its `cause`) naming all of them. Any other
 * failure is passed on as it is.
 */
export const loadEntry = async <A>(
  entry: Entry,
  load: () => Promise<A>,
  isInstalled: (peer: Peer) => boolean = resolves
): Promise<A> => {
  try {
    return await load()
  } catch (error) {
    throw explained(entry, error, isInstalled)
  }
}

/**
 * `loadEntry` for `require()` (the `require` condition, `src/entry/*.cts`): Node 20.19 loads the ES module build
 * synchronously, and a missing peer fails with the same message as under `import`.
 */
export const requireEntry = <A>(
  entry: Entry,
  load: () => A,
  isInstalled: (peer: Peer) => boolean = resolves
): A => {
  try {
    return load()
  } catch (error) {
    throw explained(entry, error, isInstalled)
  }
}

/** The error naming every missing peer of `entry` when `error` is a missing module and some are; else `error`. */
const explained = (entry: Entry, error: unknown, isInstalled: (peer: Peer) => boolean): unknown => {
  if (codeOf(error) !== "ERR_MODULE_NOT_FOUND") return error
  const missing = entryPeers[entry].filter((peer) => !isInstalled(peer))
  if (missing.length === 0) return error
  return Object.assign(new Error(missingPeersMessage(entry, missing), { cause: error }), {
    code: "ERR_MODULE_NOT_FOUND"
  })
}
