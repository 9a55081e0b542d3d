/**
 * What reminders cost in a long session (docs/agent-loop.md, "Reminders in a long session"): a scripted session of N previews
 * (100 by default; `PREVIEWS=n`), each a 9-line diff applied at once, through the turn driver. Prints the reminders
 * in the last request's prompt (messages, characters, tokens with `@effect/ai-openai`'s gpt-4o tokenizer, share of
 * the prompt) and the reminder messages sent over the whole session. Not part of `npm run bench` (no timing);
 * run it with `npm run build && npx tsx bench/reminders.ts`.
 */
import { Tokenizer, Tool, Toolkit } from "@effect/ai"
import { OpenAiTokenizer } from "@effect/ai-openai"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import { ScriptedModel, TurnDriver } from "../dist/ai.js"
import { PendingActions, PendingStoreError, stage, SteeringMessage, ToolResult } from "../dist/index.js"

const previews = Number(process.env.PREVIEWS ?? 100)

const Edit = Tool.make("edit", {
  parameters: { file: Schema.String },
  success: Schema.String,
  failure: PendingStoreError,
  dependencies: [PendingActions]
})
const Tools = Toolkit.make(Edit)

const diff = (file: string) =>
  [
    `--- a/${file}`,
    `+++ b/${file}`,
    "@@ -1,6 +1,6 @@",
    " import { compute } from \"./compute\"",
    " ",
    "-export const value = compute(1)",
    "+export const value = compute(2)",
    " ",
    " export default value"
  ].join("\n")

const handlers = Tools.toLayer({
  edit: ({ file }) =>
    Effect.as(
      stage({
        label: `Edit: ${file}`,
        sourceToolName: "edit",
        apply: () => Effect.succeed(ToolResult.text(`Applied: 1 replacement in ${file}.`))
      }),
      `Preview of ${file}:\n${diff(file)}`
    )
})

const script: ScriptedModel.Script = (request) => {
  const k = Math.floor(request.index / 2)
  if (k >= previews) return "Done."
  return request.index % 2 === 0 ?
    ScriptedModel.toolCall("edit", { file: `src/file${k}.ts` }) :
    ScriptedModel.toolCall("resolve", { action: "apply", reason: "The diff matches the request.", extra: null })
}

const isReminder = (text: string) => text === SteeringMessage.resolveReminderText

const program = Effect.gen(function*() {
  const driver = yield* TurnDriver
  yield* driver.run("Change every value to compute(2).", { toolkit: Tools, maxTurns: 2 * previews + 1 })
  const requests = yield* ScriptedModel.requests
  const last = requests[requests.length - 1]!
  const tokenizer = yield* Tokenizer.Tokenizer
  const promptTokens = (yield* tokenizer.tokenize(last.prompt)).length
  const reminderTokens = (yield* tokenizer.tokenize([{ role: "user", content: SteeringMessage.resolveReminderText }]))
    .length
  const reminders = last.userTexts.filter(isReminder).length
  const sent = requests.reduce((sum, request) => sum + request.userTexts.filter(isReminder).length, 0)
  console.table({
    previews,
    requests: requests.length,
    "reminders in the last prompt": reminders,
    "their characters": reminders * SteeringMessage.resolveReminderText.length,
    "tokens per reminder message": reminderTokens,
    "their tokens": reminders * reminderTokens,
    "last prompt tokens": promptTokens,
    "reminder share": `${(100 * reminders * reminderTokens / promptTokens).toFixed(1)}%`,
    "reminder messages sent over the session": sent,
    "their tokens over the session": sent * reminderTokens
  })
})

Effect.runPromise(program.pipe(Effect.provide(Layer.mergeAll(
  TurnDriver.layer({ system: "You are a careful coding agent." }),
  handlers,
  ScriptedModel.layer(script),
  OpenAiTokenizer.layer({ model: "gpt-4o" })
))))
