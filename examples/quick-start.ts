// Quick start: a tool stages its work as a preview, the model is reminded and forced to call `resolve`, and the
// preview is applied exactly once.
import { Effect, Option } from "effect"
import {
  PendingActions,
  Preview,
  ResolveRuntime,
  ResolveTool,
  stage,
  SteeringBus,
  ToolChoiceQueue,
  ToolResult
} from "effect-resolve"

const session = Effect.gen(function*() {
  const queue = yield* ToolChoiceQueue
  const bus = yield* SteeringBus
  let file = "export const greet = 'hello'"

  // 1. A tool stages its work instead of doing it. `commit` marks the irreversible part of apply.
  const preview = yield* stage({
    label: "Edit: 1 replacement in 1 file",
    sourceToolName: "edit",
    preview: "- export const greet = 'hello'\n+ export const greet = 'hello, world'",
    apply: (reason) =>
      Preview.commit(Effect.sync(() => {
        file = "export const greet = 'hello, world'"
        return ToolResult.text(`Wrote greet.ts (${reason})`)
      }))
  })
  console.log("status:", yield* preview.status)

  // 2. Before the next model request: the hidden reminder, and the forced tool choice.
  const [reminder] = yield* bus.drain
  console.log("steering:", reminder?.customType)
  console.log("tool_choice:", JSON.stringify(Option.getOrNull(yield* queue.nextToolChoice)))

  // 3. The model calls resolve; its raw arguments are decoded and the staged action runs once.
  const result = yield* ResolveTool.execute({
    action: "apply",
    reason: "The diff matches the request.",
    extra: null,
    id: null
  })
  yield* queue.resolve // the turn ended
  console.log("result:", ToolResult.textOf(result))
  console.log("status:", yield* preview.status)
  console.log("file:", file)

  // The pending set is the source of truth: every action by id, most recent first.
  const pending = yield* PendingActions
  console.log("pending set:", (yield* pending.list).map((action) => `${action.label} (${action.status})`))

  // A second resolve finds nothing: the action was applied exactly once.
  const again = yield* Effect.flip(ResolveTool.execute({ action: "apply", reason: "Again." }))
  console.log("again:", again._tag)
})

Effect.runPromise(session.pipe(Effect.provide(ResolveRuntime.layer)))
