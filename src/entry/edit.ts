/**
 * The `import` condition of `effect-resolve/edit` (package.json `exports`): `../edit.js`, loaded so that a missing
 * optional peer fails with one message naming every missing peer and the `npm install` line
 * (`src/internal/peers.ts`). The types use `../edit.js`, `require` uses `edit.cts`; all
 * give the same objects.
 *
 * @internal
 */
import { loadEntry } from "../internal/peers.js"

const entry = await loadEntry("effect-resolve/edit", () => import("../edit.js"))

export const { FileEditPreview } = entry
