/**
 * A second process for the cross-process tests of the `edit` tool (run with `node --import tsx`, see
 * `EditWorker.ts`). It reads one JSON command per line on stdin and answers one JSON line on stdout per command:
 *
 * - `{ op: "preview", root, path, oldText, newText }`: a fresh session (its own `ResolveRuntime.layer`) previews the
 *   edit; answers `{ ok }` (or `{ ok: false, error }`).
 * - `{ op: "apply", at }`: at the wall-clock time `at` (epoch ms), the session's model turn calls resolve apply;
 *   answers `{ applied, tag?, message?, pendingAfter }`, then discards what is still pending and ends the session.
 * - `{ op: "hold", root, path, oldText, newText }`: previews and applies, but the apply blocks at its first rename
 *   (holding its lock, its temporary file written); answers `{ blocked: true }` and waits to be killed.
 * - `{ op: "critical", target, shared, at, holdMs, timeoutMs }`: at `at`, takes the lock of `target` and, holding
 *   it, checks that it is alone: `shared` must read "free"; it writes its pid, waits `holdMs`, checks its pid is
 *   still there and writes "free" back. Answers `{ ok, violation? }`.
 */
import { NodeContext, NodePath } from "@effect/platform-node"
import { Cause, Deferred, Duration, Effect, Exit, Layer, ManagedRuntime, Option } from "effect"
import * as NFS from "node:fs/promises"
import * as readline from "node:readline"
import { FileEditPreview } from "../../src/edit.js"
import { ResolveRuntime, ResolveTool, ToolChoiceQueue } from "../../src/index.js"
import * as FileLock from "../../src/producers/FileLock.js"
import * as FaultyFileSystem from "./FaultyFileSystem.js"

type Session = ManagedRuntime.ManagedRuntime<any, never>

let session: Session | undefined

const reply = (value: unknown): void => {
  process.stdout.write(`${JSON.stringify(value)}\n`)
}

/** Sleeps until `at` (epoch ms): coarse sleep, then a short spin, so both processes start within a millisecond. */
const until = async (at: number) => {
  const coarse = at - Date.now() - 3
  if (coarse > 0) await new Promise((resolve) => setTimeout(resolve, coarse))
  while (Date.now() < at) {
    // spin
  }
}

const edit = (path: string, oldText: string, newText: string) => ({
  files: [{ path, edits: [{ oldText, newText }] }]
})

const turn = (action: "apply" | "discard") =>
  Effect.gen(function*() {
    const queue = yield* ToolChoiceQueue
    yield* queue.nextToolChoice
    const exit = yield* Effect.exit(ResolveTool.execute({ action, reason: `worker ${action}` }))
    yield* queue.resolve
    return exit
  })

const handle = async (command: any): Promise<void> => {
  switch (command.op) {
    case "preview": {
      session = ManagedRuntime.make(Layer.mergeAll(
        ResolveRuntime.layer,
        NodeContext.layer,
        FileEditPreview.layer({ root: command.root, maxBytes: 64 * 1024 * 1024 })
      ))
      const exit = await session.runPromiseExit(
        FileEditPreview.tool.execute(edit(command.path, command.oldText, command.newText))
      )
      return reply(Exit.isSuccess(exit) ? { ok: true } : { ok: false, error: Cause.pretty(exit.cause) })
    }
    case "apply": {
      const current = session!
      await until(command.at)
      const exit = await current.runPromise(turn("apply"))
      const pendingAfter = (await current.runPromise(Effect.flatMap(ToolChoiceQueue, (q) => q.inspect))).length > 0
      const failure = Exit.isFailure(exit) ? Cause.failureOption(exit.cause) : Option.none()
      reply({
        applied: Exit.isSuccess(exit),
        ...(Option.isSome(failure) ? { tag: failure.value._tag, message: failure.value.message } : {}),
        ...(Exit.isFailure(exit) && Option.isNone(failure) ? { message: Cause.pretty(exit.cause) } : {}),
        pendingAfter
      })
      if (pendingAfter) await current.runPromise(turn("discard"))
      await current.dispose()
      session = undefined
      return
    }
    case "hold": {
      const plan = await Effect.runPromise(FaultyFileSystem.makePlan)
      const runtime = ManagedRuntime.make(Layer.mergeAll(
        ResolveRuntime.layer,
        FaultyFileSystem.layer(plan),
        NodePath.layer,
        FileEditPreview.layer({ root: command.root })
      ))
      await runtime.runPromise(FileEditPreview.tool.execute(edit(command.path, command.oldText, command.newText)))
      const reached = await Effect.runPromise(Deferred.make<void>())
      const release = await Effect.runPromise(Deferred.make<void>())
      await Effect.runPromise(FaultyFileSystem.arm(plan, FaultyFileSystem.block("rename", 1, { reached, release })))
      void runtime.runPromise(turn("apply"))
      await Effect.runPromise(Deferred.await(reached))
      return reply({ blocked: true })
    }
    case "critical": {
      await until(command.at)
      const pid = String(process.pid)
      const program = Effect.scoped(Effect.gen(function*() {
        yield* FileLock.lockFiles([command.target], {
          timeout: Duration.millis(command.timeoutMs),
          staleAfter: Duration.seconds(30)
        })
        const before = yield* Effect.promise(() => NFS.readFile(command.shared, "utf8"))
        if (before !== "free") return `found ${before} on entering`
        yield* Effect.promise(() => NFS.writeFile(command.shared, pid))
        yield* Effect.sleep(Duration.millis(command.holdMs))
        const after = yield* Effect.promise(() => NFS.readFile(command.shared, "utf8"))
        if (after !== pid) return `found ${after} while holding`
        yield* Effect.promise(() => NFS.writeFile(command.shared, "free"))
        return undefined
      }))
      const exit = await Effect.runPromiseExit(program)
      return reply(
        Exit.isSuccess(exit) ?
          { ok: true, ...(exit.value === undefined ? {} : { violation: exit.value }) } :
          { ok: false, error: Cause.pretty(exit.cause) }
      )
    }
    default:
      return reply({ ok: false, error: `unknown op ${String(command.op)}` })
  }
}

// Commands run one at a time, in order.
let chain = Promise.resolve()
readline.createInterface({ input: process.stdin }).on("line", (line) => {
  chain = chain.then(() => handle(JSON.parse(line))).catch((error) => reply({ ok: false, error: String(error) }))
})
reply({ ready: true })
