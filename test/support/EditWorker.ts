/**
 * Spawns `edit-worker.ts` in a second real Node process (`node --import tsx`) and talks to it: one JSON command per
 * line, one JSON answer per command. The process is killed when the scope closes.
 */
import { Effect } from "effect"
import * as ChildProcess from "node:child_process"
import * as readline from "node:readline"
import { fileURLToPath } from "node:url"

/** A running worker process. */
export interface Worker {
  readonly pid: number
  /** Sends a command; resolves with its answer. */
  readonly send: (command: Record<string, unknown>) => Promise<any>
  /** Sends a command without waiting for its answer; returns the promise of the answer. */
  readonly post: (command: Record<string, unknown>) => Promise<any>
  readonly kill: (signal: NodeJS.Signals) => Promise<void>
}

const script = fileURLToPath(new URL("./edit-worker.ts", import.meta.url))
const root = fileURLToPath(new URL("../..", import.meta.url))

const start = (): Promise<Worker & { readonly process: ChildProcess.ChildProcess }> =>
  new Promise((resolve, reject) => {
    const child = ChildProcess.spawn(process.execPath, ["--import", "tsx", script], {
      cwd: root,
      stdio: ["pipe", "pipe", "inherit"]
    })
    const waiting: Array<(value: any) => void> = []
    let ready = false
    child.once("error", reject)
    const exited = new Promise<void>((done) => child.once("exit", () => done()))
    readline.createInterface({ input: child.stdout! }).on("line", (line) => {
      let value: any
      try {
        value = JSON.parse(line)
      } catch {
        return // not an answer (a stray log line)
      }
      if (!ready && value.ready === true) {
        ready = true
        const post = (command: Record<string, unknown>) =>
          new Promise<any>((answer) => {
            waiting.push(answer)
            child.stdin!.write(`${JSON.stringify(command)}\n`)
          })
        resolve({
          pid: child.pid!,
          process: child,
          send: post,
          post,
          kill: (signal) => {
            if (child.exitCode === null && child.signalCode === null) child.kill(signal)
            return exited
          }
        })
        return
      }
      waiting.shift()?.(value)
    })
  })

/** A worker for the scope. */
export const worker: Effect.Effect<Worker, never, import("effect/Scope").Scope> = Effect.acquireRelease(
  Effect.promise(start),
  (w) => Effect.promise(() => w.kill("SIGKILL"))
)
