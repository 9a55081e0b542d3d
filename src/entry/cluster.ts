/**
 * The `import` condition of `effect-resolve/cluster` (package.json `exports`): `../cluster.js`, loaded so that a missing
 * optional peer fails with one message naming every missing peer and the `npm install` line
 * (`src/internal/peers.ts`). The types use `../cluster.js`, `require` uses `cluster.cts`; all
 * give the same objects.
 *
 * @internal
 */
import { loadEntry } from "../internal/peers.js"

const entry = await loadEntry("effect-resolve/cluster", () => import("../cluster.js"))

export const {
  SessionAgent,
  SessionClient,
  SessionCluster,
  SessionEntity,
  SessionProtocol,
  SessionUnreachable,
  SteeringJournal
} = entry
