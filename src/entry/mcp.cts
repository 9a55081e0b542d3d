/**
 * The `require` condition of `effect-resolve/mcp` (package.json `exports`): `../mcp.js`, loaded with `require()`
 * (Node 20.19 loads the ES module build synchronously) so that a missing optional peer fails with the same message as
 * under `import`, naming every missing peer and the `npm install` line (`src/internal/peers.ts`).
 *
 * @internal
 */
import peers = require("../internal/peers.js")

export = peers.requireEntry("effect-resolve/mcp", () => require("../mcp.js"))
