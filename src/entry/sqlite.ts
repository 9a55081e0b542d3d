/**
 * The `import` condition of `effect-resolve/sqlite` (package.json `exports`): `../sqlite.js`, loaded so that a missing
 * optional peer fails with one message naming every missing peer and the `npm install` line
 * (`src/internal/peers.ts`). The types use `../sqlite.js`, `require` uses `sqlite.cts`; all
 * give the same objects.
 *
 * @internal
 */
import { loadEntry } from "../internal/peers.js"

const entry = await loadEntry("effect-resolve/sqlite", () => import("../sqlite.js"))

export const { SqliteStore, SqlPendingStore } = entry
