/**
 * The `import` condition of `effect-resolve/mcp` (package.json `exports`): `../mcp.js`, loaded so that a missing
 * optional peer fails with one message naming every missing peer and the `npm install` line
 * (`src/internal/peers.ts`). The types use `../mcp.js`, `require` uses `mcp.cts`; all
 * give the same objects.
 *
 * @internal
 */
import { loadEntry } from "../internal/peers.js"

const entry = await loadEntry("effect-resolve/mcp", () => import("../mcp.js"))

export const { ResolveMcp } = entry
