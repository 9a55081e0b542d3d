/**
 * The `import` condition of `effect-resolve/plan` (package.json `exports`): `../plan.js`, loaded so that a missing
 * optional peer fails with one message naming every missing peer and the `npm install` line
 * (`src/internal/peers.ts`). The types use `../plan.js`, `require` uses `plan.cts`; all
 * give the same objects.
 *
 * @internal
 */
import { loadEntry } from "../internal/peers.js"

const entry = await loadEntry("effect-resolve/plan", () => import("../plan.js"))

export const { PlanApproval } = entry
