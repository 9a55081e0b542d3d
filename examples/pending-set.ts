// The pending set: several previews at once, listed by id, resolved in any order; an app can watch every change.
import { Chunk, Effect, Fiber, Stream } from "effect"
import { PendingActions, ResolveRuntime, ResolveTool, stage, ToolResult } from "effect-resolve"

const stageEdit = (file: string) =>
  stage({
    label: `Edit: ${file}`,
    sourceToolName: "edit",
    preview: `the diff of ${file}`,
    apply: () => Effect.succeed(ToolResult.text(`Wrote ${file}.`)),
    expiresIn: "10 minutes" // resolving later fails with PendingActionNotPending (status "expired")
  })

const program = Effect.gen(function*() {
  const pending = yield* PendingActions
  // A UI follows every status change (here: the first seven).
  const changes = yield* pending.subscribe
  const ui = yield* Effect.fork(Stream.runCollect(Stream.take(changes, 7)))

  const a = yield* stageEdit("a.ts")
  yield* stageEdit("b.ts")
  yield* stageEdit("c.ts")
  console.log("pending:", (yield* pending.list).map((action) => action.label).join(", "))

  // The model names the preview it wants first (each preview tells it the id); without an id, the most recent.
  const first = yield* ResolveTool.execute({ action: "apply", reason: "a.ts first.", extra: null, id: a.id })
  console.log("resolve a.ts by id:", ToolResult.textOf(first))
  const next = yield* ResolveTool.execute({ action: "discard", reason: "Not needed.", extra: null, id: null })
  console.log("resolve without id:", ToolResult.textOf(next))

  // A wrong id is a typed error that tells the model what is pending.
  const wrong = yield* Effect.flip(ResolveTool.execute({ action: "apply", reason: "?", extra: null, id: "pa_nope" }))
  if (wrong._tag === "UnknownPendingAction") {
    console.log(`${wrong._tag}; pending now: ${wrong.pending.map((action) => action.label).join(", ")}`)
  }

  const seen = Chunk.toReadonlyArray(yield* Fiber.join(ui))
  console.log("the UI saw:", seen.map((action) => `${action.label} ${action.status}`).join(", "))
})

Effect.runPromise(program.pipe(Effect.scoped, Effect.provide(ResolveRuntime.layer)))
