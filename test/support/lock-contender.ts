/**
 * A second process for the lock-file tests that need another user (run with `node --import tsx`, possibly as an
 * unprivileged user; see `LockFiles.test.ts`). It reads one JSON command per line on stdin and answers one JSON line
 * on stdout per command:
 *
 * - `{ op: "apply", root, path, oldText, newText, lockTimeoutMs, lockStaleAfterMs }`: a fresh session (its own
 *   `ResolveRuntime.layer`, a workspace with those lock options) previews the edit and applies it; answers
 *   `{ applied, tag?, causeTag?, message?, pendingAfter }` (or `{ applied: false, previewError }`), then discards
 *   what is still pending and ends the session.
 */
import { NodeContext } from "@effect/platform-node"
import { Cause, Effect, Exit, Layer, ManagedRuntime, Option } from "effect"
import * as readline from "node:readline"
import { FileEditPreview } from "../../src/edit.js"
import { ResolveRuntime, ResolveTool, ToolChoiceQueue } from "../../src/index.js"

const reply = (value: unknown): void => {
  process.stdout.write(`${JSON.stringify(value)}\n`)
}

const turn = (action: "apply" | "discard") =>
  Effect.gen(function*() {
    const queue = yield* ToolChoiceQueue
    yield* queue.nextToolChoice
    const exit = yield* Effect.exit(ResolveTool.execute({ action, reason: `contender ${action}` }))
    yield* queue.resolve
    return exit
  })

const apply = async (command: any): Promise<unknown> => {
  const session = ManagedRuntime.make(Layer.mergeAll(
    ResolveRuntime.layer,
    NodeContext.layer,
    FileEditPreview.layer({
      root: command.root,
      lockTimeout: command.lockTimeoutMs,
      lockStaleAfter: command.lockStaleAfterMs
    })
  ))
  try {
    const previewed = await session.runPromiseExit(FileEditPreview.tool.execute({
      files: [{ path: command.path, edits: [{ oldText: command.oldText, newText: command.newText }] }]
    }))
    if (Exit.isFailure(previewed)) return { applied: false, previewError: Cause.pretty(previewed.cause) }
    const exit = await session.runPromise(turn("apply"))
    const pendingAfter = (await session.runPromise(Effect.flatMap(ToolChoiceQueue, (q) => q.inspect))).length > 0
    const failure = Exit.isFailure(exit) ? Cause.failureOption(exit.cause) : Option.none()
    const cause = Option.isSome(failure)
      ? (failure.value as { readonly cause?: { readonly _tag?: unknown } }).cause
      : {}
    if (pendingAfter) await session.runPromise(turn("discard"))
    return {
      applied: Exit.isSuccess(exit),
      ...(Option.isSome(failure) ? { tag: failure.value._tag, message: failure.value.message } : {}),
      ...(typeof cause?._tag === "string" ? { causeTag: cause._tag } : {}),
      ...(Exit.isFailure(exit) && Option.isNone(failure) ? { message: Cause.pretty(exit.cause) } : {}),
      pendingAfter
    }
  } finally {
    await session.dispose()
  }
}

// Commands run one at a time, in order.
let chain = Promise.resolve()
readline.createInterface({ input: process.stdin }).on("line", (line) => {
  chain = chain.then(async () => {
    const command = JSON.parse(line)
    reply(command.op === "apply" ? await apply(command) : { ok: false, error: `unknown op ${String(command.op)}` })
  }).catch((error) => reply({ ok: false, error: String(error) }))
})
reply({ ready: true })
