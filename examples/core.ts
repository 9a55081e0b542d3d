/**
 * The core walk-through: a preview is staged, the model is reminded and forced to call `resolve`, and the
 * preview is applied, kept pending after a failing apply, and discarded. Part 1 of `npm run demo`; run it alone
 * with `npx tsx examples/core.ts`.
 */
import { NodeRuntime } from "@effect/platform-node"
import { Console, Effect, Option, Ref } from "effect"
import { Preview, ResolveRuntime, ResolveTool, stage, SteeringBus, ToolChoiceQueue, ToolResult } from "effect-resolve"
import { fileURLToPath } from "node:url"

const banner = `${"=".repeat(100)}
1. The core
(the code: examples/core.ts; start with examples/quick-start.ts)
${"=".repeat(100)}`

const step = (title: string) => Console.log(`\n-- ${title}`)

const show = (value: unknown) => JSON.stringify(value)

const shownOnce = new Set<string>()

/** One simulated model turn: serve the queue, let the "model" call resolve, end the turn. */
const modelTurn = (call: { readonly action: "apply" | "discard"; readonly reason: string }) =>
  Effect.gen(function*() {
    const queue = yield* ToolChoiceQueue
    const bus = yield* SteeringBus
    const steering = yield* bus.drain
    for (const message of steering) {
      // The reminder's text in full the first time; after that, its name.
      yield* Console.log(
        `   steering [${message.customType}]${shownOnce.has(message.content) ? "" : `: ${show(message.content)}`}`
      )
      shownOnce.add(message.content)
    }
    const choice = yield* queue.nextToolChoice
    yield* Console.log(`   tool_choice: ${Option.match(choice, { onNone: () => "auto", onSome: show })}`)
    yield* Console.log(`   model calls resolve ${show(call)}`)
    const result = yield* Effect.either(ResolveTool.execute(call))
    yield* queue.resolve
    if (result._tag === "Right") {
      yield* Console.log(`   result: ${ToolResult.textOf(result.right)}`)
      yield* Console.log(`   details: ${show(result.right.details)}`)
    } else {
      yield* Console.log(`   error ${result.left._tag}: ${result.left.message}`)
    }
  })

/** The whole walk-through, on a fresh session. */
export const coreWalkthrough = Effect.gen(function*() {
  const queue = yield* ToolChoiceQueue
  const file = yield* Ref.make("const greeting = 'hello'\n")
  const proposed = "const greeting = 'hello, world'\n"

  yield* Console.log(banner)
  yield* step("1. A tool stages an edit instead of writing it")
  const first = yield* stage({
    label: "Edit: 1 replacement in 1 file",
    sourceToolName: "edit",
    apply: (reason) =>
      Preview.commit(Ref.set(file, proposed)).pipe(
        Effect.as(ToolResult.text(`Applied the edit (${reason}).`, { files: 1 }))
      )
  })
  yield* Console.log(`   staged ${first.id}; queue: ${show(yield* queue.inspect)}; status: ${yield* first.status}`)

  yield* step("2. Next turn: the reminder is injected and resolve is forced; the model applies")
  yield* modelTurn({ action: "apply", reason: "The rename matches the request." })
  yield* Console.log(`   file now: ${show(yield* Ref.get(file))}; status: ${yield* first.status}`)

  yield* step("3. An apply that fails keeps the preview pending")
  const attempts = yield* Ref.make(0)
  const flaky = yield* stage({
    label: "Migration: 1 table",
    sourceToolName: "migrate",
    apply: () =>
      Effect.flatMap(
        Ref.getAndUpdate(attempts, (n) => n + 1),
        (n) => n === 0 ? Effect.fail(new Error("database is locked")) : Effect.succeed(ToolResult.text("Migrated."))
      )
  })
  yield* modelTurn({ action: "apply", reason: "Run the migration." })
  yield* Console.log(`   status: ${yield* flaky.status}; queue: ${show(yield* queue.inspect)}`)
  yield* Console.log("   the model retries on the next forced turn:")
  yield* modelTurn({ action: "apply", reason: "The lock is released; retry." })
  yield* Console.log(`   status: ${yield* flaky.status}`)

  yield* step("4. A preview the model discards")
  const unwanted = yield* stage({
    label: "Edit: 12 replacements in 4 files",
    sourceToolName: "edit",
    apply: () => Effect.die("never applied")
  })
  yield* modelTurn({ action: "discard", reason: "Too broad; I will narrow the pattern." })
  yield* Console.log(`   status: ${yield* unwanted.status}`)

  yield* step("5. Nothing is pending now")
  yield* modelTurn({ action: "apply", reason: "Again?" })
}).pipe(Effect.provide(ResolveRuntime.layer))

if (process.argv[1] === fileURLToPath(import.meta.url)) NodeRuntime.runMain(coreWalkthrough)
