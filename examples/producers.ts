/**
 * The producers walk-through: the `edit` tool previews and applies file edits in a temporary workspace, a stale
 * preview is refused, a plan is approved, and a custom tool stages an action with Promise callbacks. Every
 * `resolve` call is shown as the renderer's block. Turns are driven like `core.ts`: nextToolChoice →
 * ResolveTool.execute → queue.resolve. Part 2 of `npm run demo`; run it alone with `npx tsx examples/producers.ts`.
 */
import { NodeContext, NodeRuntime } from "@effect/platform-node"
import * as FileSystem from "@effect/platform/FileSystem"
import * as Path from "@effect/platform/Path"
import { Console, Effect, Exit, Layer, Option } from "effect"
import { ResolveRuntime, ResolveTool, SteeringBus, ToolChoiceQueue, ToolResult } from "effect-resolve"
import { CustomTools } from "effect-resolve/custom"
import { FileEditPreview } from "effect-resolve/edit"
import { PlanApproval } from "effect-resolve/plan"
import { Renderer } from "effect-resolve/render"
import { fileURLToPath } from "node:url"

const banner = `${"=".repeat(100)}
2. The producers
(the code: examples/producers.ts; examples/edit.ts, plan.ts, custom-tools.ts, render.ts)
${"=".repeat(100)}`

const step = (title: string) => Console.log(`\n-- ${title}`)

const indent = (text: string) => text.split("\n").map((line) => `   | ${line}`).join("\n")

const renderOptions = { width: 100, color: process.stdout.isTTY === true } as const

/** One simulated model turn that calls resolve; prints the steering, the tool choice and the rendered block. */
const modelTurn = (
  call: { readonly action: "apply" | "discard"; readonly reason: string; readonly extra?: Record<string, unknown> },
  label?: string
) =>
  Effect.gen(function*() {
    const queue = yield* ToolChoiceQueue
    const bus = yield* SteeringBus
    for (const message of yield* bus.drain) yield* Console.log(`   steering [${message.customType}]`)
    const choice = yield* queue.nextToolChoice
    yield* Console.log(`   tool_choice: ${Option.match(choice, { onNone: () => "auto", onSome: JSON.stringify })}`)
    yield* Console.log(`   status bar: ${Renderer.intent(call)}`)
    const exit = yield* Effect.exit(ResolveTool.execute(call))
    yield* queue.resolve
    // The plan's messages name the temporary workspace's absolute path: show the paths relative to the workspace.
    const { root } = yield* FileEditPreview.Workspace
    const relative = (text: string) => text.replaceAll(`${root}/`, "")
    const shown = Exit.mapBoth(exit, {
      onSuccess: (result) => ({
        ...result,
        content: result.content.map((block) => ({ ...block, text: relative(block.text) }))
      }),
      onFailure: (error) => ({ ...error, message: relative(error.message) })
    })
    const lines = Renderer.renderResolve(call, shown, label === undefined ? renderOptions : { ...renderOptions, label })
    for (const line of lines) yield* Console.log(`   ${line}`)
    return exit
  })

const editWalkthrough = Effect.gen(function*() {
  const fs = yield* FileSystem.FileSystem
  const path = yield* Path.Path
  const workspace = yield* FileEditPreview.Workspace
  const file = (name: string) => path.join(workspace.root, name)
  const show = (name: string) =>
    Effect.flatMap(fs.readFileString(file(name)), (text) => Console.log(`   ${name}: ${JSON.stringify(text)}`))

  yield* fs.makeDirectory(file("src"), { recursive: true })
  yield* fs.writeFileString(
    file("src/greeting.ts"),
    "export const greeting = \"hello\"\nexport const name = \"world\"\n"
  )
  yield* fs.writeFileString(file("README.md"), "# Greeter\r\nSays hello.\r\n")

  yield* step("1. The edit tool previews two files; nothing is written yet")
  const preview = yield* FileEditPreview.tool.execute({
    files: [
      { path: "src/greeting.ts", edits: [{ oldText: "\"hello\"", newText: "\"hello, there\"" }] },
      { path: "README.md", edits: [{ oldText: "Says hello.", newText: "Says hello, there." }] }
    ]
  })
  yield* Console.log(indent(ToolResult.textOf(preview)))
  yield* show("src/greeting.ts")

  yield* step("2. Next turn: resolve is forced; the model applies; both files are written (CRLF kept)")
  yield* modelTurn({ action: "apply", reason: "The diff matches the request." })
  yield* show("src/greeting.ts")
  yield* show("README.md")

  yield* step("3. A preview goes stale: the file changes before apply, so apply refuses and writes nothing")
  const stale = yield* FileEditPreview.tool.execute({
    files: [{ path: "src/greeting.ts", edits: [{ oldText: "\"world\"", newText: "\"Effect\"" }] }]
  })
  const label = FileEditPreview.editLabel((stale.details as FileEditPreview.EditSummary).replacements, 1)
  yield* fs.writeFileString(file("src/greeting.ts"), "export const greeting = \"hi\"\nexport const name = \"world\"\n")
  yield* Console.log("   (someone else rewrote src/greeting.ts)")
  yield* modelTurn({ action: "apply", reason: "Rename the audience." }, label)
  yield* show("src/greeting.ts")
  yield* Console.log("   the preview is still pending; the model discards it on the next forced turn:")
  yield* modelTurn({ action: "discard", reason: "Stale; I will read the file and preview again." })
})

const planWalkthrough = Effect.gen(function*() {
  const fs = yield* FileSystem.FileSystem
  const path = yield* Path.Path
  const workspace = yield* FileEditPreview.Workspace
  const planFilePath = path.join(workspace.root, "PLAN.md")

  yield* step("4. Plan mode: a standing handler approves the plan file")
  const mode = yield* PlanApproval.enter({
    planFilePath,
    approve: (submission) =>
      Effect.as(
        Console.log(`   (host approval UI) approving "${submission.title}", ${submission.content.length} characters`),
        PlanApproval.approved
      )
  })
  yield* Console.log("   the model calls resolve before writing the plan:")
  yield* modelTurn({ action: "apply", reason: "The plan is ready." }, "Plan: PLAN.md")
  yield* fs.writeFileString(planFilePath, "# Greeting Overhaul\n\n1. Rename the audience.\n2. Update the README.\n")
  yield* Console.log(`   the model writes PLAN.md and asks again; plan mode active: ${yield* mode.active}`)
  yield* modelTurn({ action: "apply", reason: "The plan covers both files.", extra: { title: "greeting overhaul" } })
  yield* Console.log(`   plan mode left: ${JSON.stringify((yield* mode.left)._tag)}; active: ${yield* mode.active}`)
})

const customToolWalkthrough = Effect.gen(function*() {
  yield* step("5. A custom tool written with Promises stages an action through api.stage")
  const [deploy] = yield* CustomTools.registerCustomTools([{
    name: "deploy",
    description: "Deploy a service, as a preview.",
    parameters: { type: "object", properties: { service: { type: "string" } }, required: ["service"] },
    execute: async (params: { service: string }, api) => {
      await api.stage({
        label: `Deploy: ${params.service}`,
        sourceToolName: "deploy",
        apply: async (reason) => `Deployed ${params.service} (${reason}).`
      })
      return `Ready to deploy ${params.service}. Call resolve to apply or discard.`
    }
  }])
  const preview = yield* deploy!.execute({ service: "greeter" })
  yield* Console.log(`   deploy: ${ToolResult.textOf(preview)}`)
  yield* modelTurn({ action: "apply", reason: "Ship the greeting." })
})

/** The whole walk-through, on a fresh session and a temporary workspace (removed at the end). */
export const producersWalkthrough = Effect.gen(function*() {
  yield* Console.log(banner)
  const fs = yield* FileSystem.FileSystem
  const root = yield* fs.makeTempDirectoryScoped({ prefix: "effect-resolve-demo-" })
  yield* Effect.gen(function*() {
    yield* editWalkthrough
    yield* planWalkthrough
    yield* customToolWalkthrough
  }).pipe(Effect.provide(Layer.merge(ResolveRuntime.layer, FileEditPreview.layer({ root }))))
}).pipe(Effect.scoped, Effect.provide(NodeContext.layer))

if (process.argv[1] === fileURLToPath(import.meta.url)) NodeRuntime.runMain(producersWalkthrough)
