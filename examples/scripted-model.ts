// ScriptedModel: test an agent without a provider. It answers from a script (or a function of the request) and
// records what every request carried, as the provider would have seen it.
import { Effect, Layer } from "effect"
import { ScriptedModel, TurnDriver } from "effect-resolve/ai"

const program = Effect.gen(function*() {
  const driver = yield* TurnDriver
  yield* driver.run("Hi")
  yield* driver.run("How are you?")
  for (const request of yield* ScriptedModel.requests) {
    console.log(
      `request ${request.index}: tool_choice ${JSON.stringify(request.toolChoice)}, tools [${
        request.tools.join(", ")
      }], last user text ${JSON.stringify(request.userTexts.at(-1))}`
    )
  }
  console.log("history:", (yield* driver.history).content.map((message) => message.role).join(" → "))
})

Effect.runPromise(program.pipe(Effect.provide(Layer.mergeAll(
  TurnDriver.layer(),
  ScriptedModel.layer((request) => `You said: ${request.userTexts.at(-1)}`)
))))
