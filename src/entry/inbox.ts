/**
 * The `import` condition of `effect-resolve/inbox` (package.json `exports`): `../inbox.js`, loaded so that a missing
 * optional peer fails with one message naming every missing peer and the `npm install` line
 * (`src/internal/peers.ts`). The types use `../inbox.js`, `require` uses `inbox.cts`; all
 * give the same objects.
 *
 * @internal
 */
import { loadEntry } from "../internal/peers.js"

const entry = await loadEntry("effect-resolve/inbox", () => import("../inbox.js"))

export const { Inbox, InboxApi, InboxAuth, InboxClient, InboxServer } = entry
