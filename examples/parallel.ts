/**
 * Parallel tool calls with the real edit producer: a scripted model (no network, no keys) edits three files of a
 * temporary workspace in ONE response; each call stages its own preview, naming its id. The next request forces
 * `resolve` once for the whole batch, and the model resolves the three ids in ONE response: two requests for the
 * change (then the closing answer), three files written. The producer joins the loop in one line:
 * `{ toolkit: AiEditTool.toolkit }`. Run it with `npx tsx examples/parallel.ts`.
 */
import { NodeContext } from "@effect/platform-node"
import { Console, Effect, Layer } from "effect"
import { AiEditTool, ScriptedModel, TurnDriver } from "effect-resolve/ai"
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"

const root = mkdtempSync(join(tmpdir(), "effect-resolve-parallel-"))
for (const name of ["a", "b", "c"]) writeFileSync(join(root, `${name}.ts`), `export const ${name} = 1\n`)

/** The pending ids the model was shown (each preview's text names its id). */
const idsIn = (request: ScriptedModel.ScriptedRequest) => [
  ...new Set([...JSON.stringify(request.prompt).matchAll(/Pending action id: (pa_[A-Za-z0-9_-]+)/g)].map((m) => m[1]!))
]

const edit = (name: string) =>
  ScriptedModel.toolCallPart("edit", {
    files: [{ path: `${name}.ts`, edits: [{ oldText: `${name} = 1`, newText: `${name} = 2`, replaceAll: null }] }]
  })

// The model: three edits in one response, then one resolve per id it was shown, in one response.
const model = ScriptedModel.layer((request) =>
  request.index === 0 ?
    ScriptedModel.respond(edit("a"), edit("b"), edit("c")) :
    request.index === 1 ?
    ScriptedModel.respond(
      ...idsIn(request).map((id) =>
        ScriptedModel.toolCallPart("resolve", { action: "apply", reason: "As asked.", extra: null, id })
      )
    ) :
    ScriptedModel.text("Set a, b and c to 2.")
)

const program = Effect.gen(function*() {
  const driver = yield* TurnDriver
  const result = yield* driver.run("Set a, b and c to 2", { toolkit: AiEditTool.toolkit })
  const requests = yield* ScriptedModel.requests
  for (const turn of result.turns) {
    yield* Console.log(
      `request ${turn.turn}: tool_choice ${JSON.stringify(turn.toolChoice)}; ` +
        (turn.toolCalls.length === 0 ?
          `answer "${turn.text}"` :
          `calls ${turn.toolCalls.map((c) => `${c.name}${c.isFailure ? " (failed)" : ""}`).join(", ")}`)
    )
  }
  yield* Console.log(`model requests: ${requests.length} (the change took ${requests.length - 1})`)
  for (const name of ["a", "b", "c"]) {
    yield* Console.log(`${name}.ts: ${readFileSync(join(root, `${name}.ts`), "utf8").trim()}`)
  }
}).pipe(
  Effect.provide(Layer.mergeAll(TurnDriver.layer(), AiEditTool.layerWorkspace({ root }), model)),
  Effect.provide(NodeContext.layer),
  Effect.ensuring(Effect.sync(() => rmSync(root, { recursive: true, force: true })))
)

Effect.runPromise(program)
