/**
 * `npm start`: the approval inbox on its embedded default, with a demo agent session. No keys, no network.
 *
 * - a SQLite file and a workspace in `.effect-resolve/start` under the current directory, kept across restarts (a
 *   restart resumes the session and its previews), or in the directory given as the first argument
 *   (`npm start -- DIR`); delete the directory to start over;
 * - an agent session through the turn driver that edits the workspace with the edit producer's tool
 *   (`AiEditTool.toolkit`): the scripted model (previews two edits), or a real provider when `OPENAI_API_KEY` (OpenAI,
 *   `OPENAI_MODEL`, default gpt-4.1) or `ANTHROPIC_API_KEY` (Anthropic, `ANTHROPIC_MODEL`, default claude-sonnet-4-5)
 *   is set; `OPENAI_API_URL` / `ANTHROPIC_API_URL` point the client elsewhere (a gateway);
 * - the inbox on 127.0.0.1 (port 4411, or `PORT`) over the same SQLite file, registering the edit kind; it prints a
 *   one-time login link. Open it, apply or discard, and watch the terminal: the session, waiting for the reviewer
 *   (`TurnDriver.awaitDecision`), runs a turn at once that tells its model what the reviewer decided ("A reviewer
 *   (owner) applied pa_…: reason").
 *
 * Written as an app would be: only the package's public entries. Stop it with Ctrl-C.
 */
import type { LanguageModel } from "@effect/ai"
import { AnthropicClient, AnthropicLanguageModel } from "@effect/ai-anthropic"
import { OpenAiClient, OpenAiLanguageModel } from "@effect/ai-openai"
import { FetchHttpClient } from "@effect/platform"
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Config, Console, Effect, Layer, Option } from "effect"
import { PendingActions, ResolveConfig, ResolveRuntime } from "effect-resolve"
import { AiEditTool, ScriptedModel, TurnDriver } from "effect-resolve/ai"
import { FileEditPreview } from "effect-resolve/edit"
import { Inbox, InboxServer } from "effect-resolve/inbox"
import { SqliteStore } from "effect-resolve/sqlite"
import * as fs from "node:fs"
import * as path from "node:path"

const dir = path.resolve(process.argv[2] ?? path.join(".effect-resolve", "start"))
const workspace = path.join(dir, "workspace")
fs.mkdirSync(workspace, { recursive: true })
if (!fs.existsSync(path.join(workspace, "greeting.ts"))) {
  fs.writeFileSync(path.join(workspace, "greeting.ts"), "export const greeting = \"hello\"\n")
  fs.writeFileSync(path.join(workspace, "README.md"), "# Demo\n\nA workspace for the approval inbox's demo.\n")
}
const database = path.join(dir, "pending.db")
const port = Number(process.env.PORT ?? 4411)

// The model's edit tool: the edit producer's tool as an @effect/ai toolkit, over the workspace.
const Tools = AiEditTool.toolkit
const editing = Layer.mergeAll(FileEditPreview.layer({ root: workspace }), NodeContext.layer)
const handlers = AiEditTool.layer.pipe(Layer.provide(editing))

// The scripted model: previews two edits, then reads what reviewers decided.
const script: ScriptedModel.Script = (request) => {
  if (request.index === 0) {
    return ScriptedModel.toolCall("edit", {
      files: [{ path: "greeting.ts", edits: [{ oldText: "\"hello\"", newText: "\"hello, world\"" }] }]
    })
  }
  if (request.index === 1) {
    return ScriptedModel.toolCall("edit", {
      files: [{ path: "README.md", edits: [{ oldText: "A workspace", newText: "A small workspace" }] }]
    })
  }
  const told = request.userTexts.at(-1) ?? ""
  return told.startsWith("A reviewer") ? `Understood: ${told}` : "Both previews wait for a reviewer."
}

/** `NAME` from the environment, when set and not empty. */
const env = (name: string) => Option.filter(Option.fromNullable(process.env[name]), (value) => value !== "")
const apiUrl = (name: string) =>
  Config.option(Config.string(name)).pipe(Config.map((url) => Option.getOrUndefined(url)))

// The model: a real provider when its key is set, else the scripted one (no keys, no network).
const openAiModel = Option.getOrElse(env("OPENAI_MODEL"), () => "gpt-4.1")
const anthropicModel = Option.getOrElse(env("ANTHROPIC_MODEL"), () => "claude-sonnet-4-5")
const model: { readonly name: string; readonly layer: Layer.Layer<LanguageModel.LanguageModel> } =
  Option.isSome(env("OPENAI_API_KEY")) ?
    {
      name: `OpenAI ${openAiModel}`,
      layer: OpenAiLanguageModel.layer({ model: openAiModel }).pipe(
        Layer.provide(
          OpenAiClient.layerConfig({ apiKey: Config.redacted("OPENAI_API_KEY"), apiUrl: apiUrl("OPENAI_API_URL") })
        ),
        Layer.provide(FetchHttpClient.layer),
        Layer.orDie
      )
    } :
    Option.isSome(env("ANTHROPIC_API_KEY")) ?
    {
      name: `Anthropic ${anthropicModel}`,
      layer: AnthropicLanguageModel.layer({ model: anthropicModel, config: { max_tokens: 4096 } }).pipe(
        Layer.provide(AnthropicClient.layerConfig({
          apiKey: Config.redacted("ANTHROPIC_API_KEY"),
          apiUrl: apiUrl("ANTHROPIC_API_URL")
        })),
        Layer.provide(FetchHttpClient.layer),
        Layer.orDie
      )
    } :
    {
      name: "the scripted model (set OPENAI_API_KEY or ANTHROPIC_API_KEY for a real one)",
      layer: ScriptedModel.layer(script)
    }

const store = SqliteStore.layer({ filename: database })
const session = Layer.mergeAll(
  TurnDriver.layerWithoutDependencies({
    system: "You edit files in the workspace with the edit tool. A person reviews every preview in an approval " +
      "inbox: leave the previews pending for them unless you are told to resolve them."
  }),
  handlers
).pipe(
  Layer.provideMerge(model.layer),
  Layer.provideMerge(ResolveRuntime.layerDurable({ session: "demo", kinds: [FileEditPreview.kind] })),
  Layer.provideMerge(editing),
  Layer.provideMerge(ResolveConfig.layer({ enforcement: "soft" }))
)
const inbox = InboxServer.layer({ port }).pipe(
  Layer.provideMerge(Inbox.layer({ kinds: [FileEditPreview.kind] }).pipe(Layer.provide(editing)))
)

const program = Effect.gen(function*() {
  const driver = yield* TurnDriver
  const pending = yield* PendingActions
  // A run ends when its turns are used up, or its forcing gave up, while previews wait for a reviewer: that is the
  // demo's normal state (the model is told to leave them to the reviewer).
  const turn = (prompt: string, maxTurns: number) =>
    Effect.asVoid(
      Effect.catchTags(driver.run(prompt, { toolkit: Tools, maxTurns }), {
        MaxTurnsExceeded: () => Effect.void,
        ResolveNotCalled: () => Effect.void
      })
    )
  yield* Console.log(`The agent's model: ${model.name}`)
  if ((yield* pending.listOpen).length === 0) {
    yield* turn("Greet the world in greeting.ts, and tighten README.md.", 3)
  }
  const server = yield* InboxServer
  yield* Console.log(
    `Workspace: ${workspace}\nDatabase:  ${database}\n(kept: a restart resumes; \`npm start -- DIR\` keeps another, ` +
      `and deleting ${dir} starts over)`
  )
  yield* Console.log(`\nThe approval inbox: open this one-time login link (it works once):\n\n  ${yield* server
    .loginLink()}\n`)
  // The agent's turn each time a reviewer decides one of its previews (awaitDecision: woken by the store's signal,
  // no polling): its model hears what the reviewer decided. With no preview waiting, the inbox stays up.
  const printed = new Set<string>()
  yield* Effect.forever(Effect.gen(function*() {
    const decided = yield* driver.awaitDecision
    if (decided.length === 0) return yield* Effect.never
    yield* turn("Anything new from the reviewers?", 1)
    // What the model's last request told it (the scripted model records its requests; a real one does not).
    const requests = yield* Effect.serviceOption(ScriptedModel.ScriptedModel).pipe(
      Effect.flatMap(Option.match({
        onNone: () => Effect.succeed<ReadonlyArray<ScriptedModel.ScriptedRequest>>([]),
        onSome: (scripted) => scripted.requests
      }))
    )
    const last = requests.at(-1)
    for (const text of last?.userTexts ?? []) {
      if (text.startsWith("A reviewer") && !printed.has(text)) {
        printed.add(text)
        yield* Console.log(`The agent's model was told: ${text}`)
      }
    }
  }))
})

NodeRuntime.runMain(
  program.pipe(
    Effect.provide(Layer.mergeAll(session, inbox).pipe(Layer.provideMerge(store))),
    // A second `npm start` finds the port taken: say so, and how to pick another, instead of a stack trace.
    Effect.catchTag("InboxAddressInUse", (error) =>
      Effect.zipRight(
        Console.error(
          `${error.message}\nAnother \`npm start\` may be running: stop it, or run PORT=${port + 1} npm start`
        ),
        Effect.sync(() => (process.exitCode = 1))
      ))
  )
)
