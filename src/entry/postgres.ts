/**
 * The `import` condition of `effect-resolve/postgres` (package.json `exports`): `../postgres.js`, loaded so that a missing
 * optional peer fails with one message naming every missing peer and the `npm install` line
 * (`src/internal/peers.ts`). The types use `../postgres.js`, `require` uses `postgres.cts`; all
 * give the same objects.
 *
 * @internal
 */
import { loadEntry } from "../internal/peers.js"

const entry = await loadEntry("effect-resolve/postgres", () => import("../postgres.js"))

export const { PostgresStore, SqlPendingStore } = entry
