// Plan approval: plan mode installs a standing resolve handler; the model writes the plan, then `resolve apply`
// asks for approval (here a policy; in an app, a person).
import { NodeContext } from "@effect/platform-node"
import { Effect, Layer } from "effect"
import { ResolveRuntime, ResolveTool, ToolResult } from "effect-resolve"
import { PlanApproval } from "effect-resolve/plan"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"

const workspace = mkdtempSync(join(tmpdir(), "plan-example-"))
const planFilePath = join(workspace, "PLAN.md")

// Approve a plan only when it says how it is tested.
const approve = (submission: PlanApproval.PlanSubmission) =>
  Effect.succeed(
    submission.content.includes("## Tests") ? PlanApproval.approved : PlanApproval.refused("Add a ## Tests section.")
  )

const program = Effect.gen(function*() {
  const mode = yield* PlanApproval.enter({ planFilePath, approve })

  // The model writes a first plan and asks for approval: refused, with feedback; plan mode goes on.
  writeFileSync(planFilePath, "# Cache layer\n\nAdd an LRU cache in front of the store.\n")
  const refusal = yield* Effect.flip(ResolveTool.execute({ action: "apply", reason: "The plan is ready." }))
  console.log(refusal.message.replace(planFilePath, "PLAN.md"))
  console.log("still in plan mode:", yield* mode.active)

  // It revises the plan: approved, and plan mode ends.
  writeFileSync(planFilePath, "# Cache layer\n\nAdd an LRU cache in front of the store.\n\n## Tests\n\nHit and miss.\n")
  const approval = yield* ResolveTool.execute({ action: "apply", reason: "Tests added." })
  console.log(ToolResult.textOf(approval).replace(planFilePath, "PLAN.md"))
  const left = yield* mode.left
  console.log("plan mode left:", left._tag, left._tag === "Approved" ? left.title : "")
})

Effect.runPromise(
  program.pipe(Effect.scoped, Effect.provide(Layer.mergeAll(ResolveRuntime.layer, NodeContext.layer)))
).finally(() => rmSync(workspace, { recursive: true, force: true }))
