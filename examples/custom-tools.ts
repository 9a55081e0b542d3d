// Custom tools for authors who write Promises: a tool declares its parameters (an Effect Schema here, or a plain
// JSON Schema) and stages a pending action with Promise callbacks.
import { Effect, Schema } from "effect"
import { ResolveRuntime, ResolveTool, ToolResult } from "effect-resolve"
import { CustomTools, toolError } from "effect-resolve/custom"

const deployed: Array<string> = []

const deploy = CustomTools.make({
  name: "deploy",
  description: "Deploy a service, as a preview: call resolve to apply or discard it.",
  parameters: Schema.Struct({ service: Schema.String, replicas: Schema.optional(Schema.Int) }),
  // `params` is typed by the Schema: { readonly service: string; readonly replicas?: number }
  execute: async ({ replicas = 1, service }, api) => {
    await api.stage({
      label: `Deploy: ${service} ×${replicas}`,
      apply: async (reason) => {
        if (service === "prod") throw toolError("prod is frozen until Monday.") // reaches the model as is
        deployed.push(service)
        return `Deployed ${service} with ${replicas} replica(s) (${reason}).` // a thrown Error would be ApplyFailed
      }
    })
    return `Ready to deploy ${service}. Call resolve to apply or discard.`
  }
})

const program = Effect.gen(function*() {
  const [tool] = yield* CustomTools.registerCustomTools([deploy])
  // What the provider receives: a strict JSON Schema (every property required, the optional one nullable).
  console.log("parameters:", JSON.stringify(tool!.parameters))

  // The model's call, as the provider returns it.
  console.log(ToolResult.textOf(yield* tool!.execute({ service: "api", replicas: null })))
  const applied = yield* ResolveTool.execute({ action: "apply", reason: "Tests are green." })
  console.log(ToolResult.textOf(applied))

  yield* tool!.execute({ service: "prod", replicas: 3 })
  const frozen = yield* Effect.flip(ResolveTool.execute({ action: "apply", reason: "Ship it." }))
  console.log(`${frozen._tag}: ${frozen.message}`)

  // Arguments the Schema refuses never reach execute.
  const invalid = yield* Effect.flip(tool!.execute({ service: "api", replicas: 1.5 }))
  console.log(`${invalid._tag}: ${invalid.message}`)
  console.log("deployed:", deployed)
})

Effect.runPromise(program.pipe(Effect.provide(ResolveRuntime.layer)))
