/**
 * `npm run demo`: a guided tour of effect-resolve on an embedded scripted model. No network, no keys, no server.
 * Each part opens with a banner naming the example file that holds its code (and runs alone from that file); every
 * README example is a file under examples/ too.
 */
import { NodeRuntime } from "@effect/platform-node"
import { Console, Effect } from "effect"
import { agentWalkthrough } from "./agent.js"
import { coreWalkthrough } from "./core.js"
import { producersWalkthrough } from "./producers.js"

const main = Effect.gen(function*() {
  yield* Console.log([
    "effect-resolve: a tool stages its work as a preview; the model (or a person) resolves it: apply or discard.",
    "This tour runs three parts:",
    "  1. the core: staging, the reminder, the forced resolve, a failing apply, a discard;",
    "  2. the producers: file edits, a stale preview, plan approval, a custom tool, rendering;",
    "  3. an agent loop on @effect/ai with a scripted model, under \"force\" and \"soft\" enforcement.",
    "Shorter, single-purpose examples: examples/quick-start.ts, pending-set.ts, edit.ts, plan.ts, custom-tools.ts,",
    "render.ts, turn-driver.ts, scripted-model.ts, provider-tool-choice.ts, durable-session.ts, durable-resume.ts,",
    "real-provider.ts. Run any of them with npx tsx examples/<name>.ts."
  ].join("\n"))
  yield* Console.log("")
  yield* coreWalkthrough
  yield* Console.log("")
  yield* producersWalkthrough
  yield* Console.log("")
  yield* agentWalkthrough
  yield* Console.log(
    "\nNext: durable sessions that survive a restart, in examples/durable-session.ts; to watch one resume in a new" +
      "\nprocess, run npx tsx examples/durable-resume.ts twice."
  )
})

NodeRuntime.runMain(main)
