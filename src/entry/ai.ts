/**
 * The `import` condition of `effect-resolve/ai` (package.json `exports`): `../ai.js`, loaded so that a missing
 * optional peer fails with one message naming every missing peer and the `npm install` line
 * (`src/internal/peers.ts`). The types use `../ai.js`, `require` uses `ai.cts`; all
 * give the same objects.
 *
 * @internal
 */
import { loadEntry } from "../internal/peers.js"

const entry = await loadEntry("effect-resolve/ai", () => import("../ai.js"))

export const {
  AiEditTool,
  AiPlanTool,
  AiResolveTool,
  MaxTurnsExceeded,
  ProviderToolChoice,
  RequeueLimitExceeded,
  ResolveMetrics,
  ResolveNotCalled,
  SessionLost,
  ScriptedModel,
  TurnDriver
} = entry
