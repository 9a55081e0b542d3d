/**
 * Starts `lock-thread.ts` in a worker thread of this process (`node:worker_threads`) and talks to it: one message
 * per command, one answer per command. The thread is terminated when the scope closes.
 *
 * Loading TypeScript in a worker: on Node 20, `execArgv: ["--import", "tsx"]` does not reach the worker's module
 * loader (the entry fails with `ERR_UNKNOWN_FILE_EXTENSION`), so a small bootstrap, evaluated in the thread,
 * registers tsx's hooks there (`tsx/esm/api`'s `register`) before importing the script.
 */
import { Effect } from "effect"
import { Worker } from "node:worker_threads"

/** A running worker thread. */
export interface LockThread {
  /** Its `node:worker_threads` `threadId`: what its lock files record. */
  readonly threadId: number
  /** Sends a command; resolves with its answer. */
  readonly send: (command: Record<string, unknown>) => Promise<any>
}

const script = new URL("./lock-thread.ts", import.meta.url).href

const bootstrap = `import("tsx/esm/api")
  .then(({ register }) => { register(); return import(${JSON.stringify(script)}) })
  .then(() => require("node:worker_threads").parentPort.postMessage({ ready: true }))`

const start = (): Promise<LockThread & { readonly worker: Worker }> =>
  new Promise((resolve, reject) => {
    const worker = new Worker(bootstrap, { eval: true })
    const waiting: Array<(value: any) => void> = []
    let ready = false
    worker.once("error", (error) => {
      reject(error)
      for (const answer of waiting.splice(0)) answer({ ok: false, error: String(error) })
    })
    worker.on("message", (value: any) => {
      if (!ready && value?.ready === true) {
        ready = true
        resolve({
          threadId: worker.threadId,
          worker,
          send: (command) =>
            new Promise<any>((answer) => {
              waiting.push(answer)
              worker.postMessage(command)
            })
        })
        return
      }
      waiting.shift()?.(value)
    })
  })

/** A worker thread for the scope. */
export const lockThread: Effect.Effect<LockThread, never, import("effect/Scope").Scope> = Effect.acquireRelease(
  Effect.promise(start),
  ({ worker }) => Effect.promise(() => worker.terminate())
)
