// Rendering resolve calls in a terminal: one block merging the call and its result, wrapped to the width.
import { Effect, Exit } from "effect"
import { ResolveRuntime, ResolveTool, stage, ToolResult } from "effect-resolve"
import { Renderer, renderResolve } from "effect-resolve/render"

const program = Effect.gen(function*() {
  const options = { width: 60, color: false } // color defaults to on, and to off when NO_COLOR is set

  yield* stage({
    label: "Edit: 2 replacements in 1 file",
    sourceToolName: "edit",
    apply: () => Effect.succeed(ToolResult.text("Applied Edit: 2 replacements in 1 file. Wrote src/greet.ts (2)."))
  })
  const apply = {
    action: "apply",
    reason: "The diff renames greet to hello in every file that imports it, exactly as the request asked."
  } as const
  for (const line of renderResolve(apply, yield* Effect.exit(ResolveTool.execute(apply)), options)) console.log(line)

  yield* stage({
    label: "Migration: 1 table",
    sourceToolName: "migrate",
    apply: () => Effect.fail(new Error("database is locked"))
  })
  const failing = { action: "apply", reason: "Run it." } as const
  for (const line of renderResolve(failing, yield* Effect.exit(ResolveTool.execute(failing)), options)) {
    console.log(line)
  }

  const nothing = { action: "discard", reason: "Stale." } as const
  for (const line of renderResolve(nothing, Exit.fail(new Error("No pending action.")), options)) console.log(line)

  console.log(Renderer.intent({ action: "discard", reason: "Too broad." })) // a one-line status-bar form
})

Effect.runPromise(program.pipe(Effect.provide(ResolveRuntime.layer)))
