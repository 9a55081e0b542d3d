/**
 * `npm run demo`: the library's walk-through on an embedded, scripted default. No network, no keys.
 */
import { NodeRuntime } from "@effect/platform-node"
import { Effect } from "effect"
import { agentWalkthrough } from "./agent.js"
import { coreWalkthrough } from "./core.js"
import { producersWalkthrough } from "./producers.js"

const main = Effect.gen(function*() {
  yield* coreWalkthrough
  yield* producersWalkthrough
  yield* agentWalkthrough
})

NodeRuntime.runMain(main)
