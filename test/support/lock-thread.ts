/**
 * A worker thread (`node:worker_threads`) for the lock tests across threads of one process (started by
 * `LockThread.ts`, which registers tsx in the thread first). It answers every message from its parent with one
 * message:
 *
 * - `{ op: "try", target, timeoutMs }`: takes the lock of `target` (waiting up to `timeoutMs`) and releases it at
 *   once; answers `{ taken: true }`, or `{ taken: false, tag, holder?, message }` with the typed failure.
 * - `{ op: "hold", target }`: takes the lock of `target` and keeps it until `release`; answers `{ held: true }`.
 * - `{ op: "release" }`: releases the lock `hold` took; answers `{ released: true }`.
 * - `{ op: "critical", target, shared, at, rounds, holdMs, timeoutMs }`: from the wall-clock time `at` (epoch ms),
 *   `rounds` times: takes the lock of `target` and, holding it, checks that it is alone: `shared` must read "free";
 *   it writes its thread id there, checks that the lock file names this process and this thread, waits `holdMs`,
 *   checks its id is still there and writes "free" back. Answers `{ ok, violations, rounds }` (or `{ ok: false, error }`).
 */
import { Cause, Deferred, Duration, Effect, Exit, Option } from "effect"
import * as NFS from "node:fs/promises"
import { parentPort, threadId } from "node:worker_threads"
import * as FileLock from "../../src/producers/FileLock.js"

const options = (timeoutMs: number): FileLock.LockOptions => ({
  timeout: Duration.millis(timeoutMs),
  staleAfter: Duration.seconds(30)
})

/** Sleeps until `at` (epoch ms): coarse sleep, then a short spin, so both threads start within a millisecond. */
const until = async (at: number) => {
  const coarse = at - Date.now() - 3
  if (coarse > 0) await new Promise((resolve) => setTimeout(resolve, coarse))
  while (Date.now() < at) {
    // spin
  }
}

/** The lock `hold` took: what releases it, and the end of its scope (the lock file removed). */
let holding: { readonly release: Deferred.Deferred<void>; readonly ended: Promise<unknown> } | undefined

const critical = (command: any) =>
  Effect.gen(function*() {
    const me = `thread ${threadId}`
    const violations: Array<string> = []
    for (let round = 0; round < command.rounds; round++) {
      yield* Effect.scoped(Effect.gen(function*() {
        yield* FileLock.lockFiles([command.target], options(command.timeoutMs))
        const before = yield* Effect.promise(() => NFS.readFile(command.shared, "utf8"))
        if (before !== "free") violations.push(`round ${round}: found ${before} on entering`)
        yield* Effect.promise(() => NFS.writeFile(command.shared, me))
        // Taken over by another thread, the lock file would be gone, half written or someone else's.
        const line = yield* Effect.promise(() =>
          NFS.readFile(FileLock.lockFileOf(command.target), "utf8").catch((error) => `unreadable: ${String(error)}`)
        )
        const holder = yield* Effect.try(() => JSON.parse(line)).pipe(Effect.orElseSucceed(() => undefined))
        if (holder?.pid !== process.pid || holder?.threadId !== threadId) {
          violations.push(`round ${round}: the lock file is not this thread's: ${line.trim()}`)
        }
        yield* Effect.sleep(Duration.millis(command.holdMs))
        const after = yield* Effect.promise(() => NFS.readFile(command.shared, "utf8"))
        if (after !== me) violations.push(`round ${round}: found ${after} while holding`)
        yield* Effect.promise(() => NFS.writeFile(command.shared, "free"))
      }))
    }
    return violations
  })

const failureOf = (exit: Exit.Exit<unknown, FileLock.LockWaitTimeout | FileLock.LockFileError>) => {
  const failure = Exit.isFailure(exit) ? Cause.failureOption(exit.cause) : Option.none()
  return Option.isSome(failure) ?
    {
      tag: failure.value._tag,
      message: failure.value.message,
      ...(failure.value._tag === "LockWaitTimeout" && failure.value.holder !== undefined ?
        { holder: failure.value.holder } :
        {})
    } :
    { tag: "defect", message: Exit.isFailure(exit) ? Cause.pretty(exit.cause) : "" }
}

const handle = async (command: any): Promise<unknown> => {
  switch (command.op) {
    case "try": {
      const exit = await Effect.runPromiseExit(
        Effect.scoped(FileLock.lockFiles([command.target], options(command.timeoutMs)))
      )
      return Exit.isSuccess(exit) ? { taken: true } : { taken: false, ...failureOf(exit) }
    }
    case "hold": {
      const done = await Effect.runPromise(Deferred.make<void>())
      const held = await Effect.runPromise(Deferred.make<Exit.Exit<unknown, any>>())
      const ended = Effect.runPromise(Effect.scoped(
        Effect.exit(FileLock.lockFiles([command.target], options(1_000))).pipe(
          Effect.tap((exit) => Deferred.succeed(held, exit)),
          Effect.zipRight(Deferred.await(done))
        )
      ))
      holding = { release: done, ended }
      const exit = await Effect.runPromise(Deferred.await(held))
      return Exit.isSuccess(exit) ? { held: true } : { held: false, ...failureOf(exit) }
    }
    case "release": {
      if (holding !== undefined) {
        await Effect.runPromise(Deferred.succeed(holding.release, undefined))
        await holding.ended
      }
      holding = undefined
      return { released: true }
    }
    case "critical": {
      await until(command.at)
      const exit = await Effect.runPromiseExit(critical(command))
      return Exit.isSuccess(exit) ?
        { ok: true, violations: exit.value, rounds: command.rounds } :
        { ok: false, error: Cause.pretty(exit.cause) }
    }
    default:
      return { ok: false, error: `unknown op ${String(command.op)}` }
  }
}

// Commands run one at a time, in order.
let chain = Promise.resolve()
parentPort!.on("message", (command) => {
  chain = chain.then(() => handle(command)).then(
    (answer) => parentPort!.postMessage(answer),
    (error) => parentPort!.postMessage({ ok: false, error: String(error) })
  )
})
