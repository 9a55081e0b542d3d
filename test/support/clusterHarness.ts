/**
 * Runner processes for cluster tests that pause them (test/cluster/PausedRunner.test.ts): start a runner
 * (test/support/clusterRunner.ts) with an event log, pause it (SIGSTOP) and wake it (SIGCONT), terminate its Postgres
 * connections (found by the application name it sets, `effect-resolve-runner-<pid>`), and read back what it did.
 *
 * The checks are pure functions of what the runners and the store recorded, each tested on its own:
 *
 * - `afterTakeover`: from the runners' event logs, whether a runner did anything for a session once another owner had
 *   acquired it under a newer epoch: a model request, a write to the store that was not refused, a change to one of
 *   the session's files. Each runner logs its acquisitions and actions with `process.hrtime` (the host's monotonic
 *   clock, shared by every process), so "after" means: started after the newer owner's acquire returned.
 * - `ownerLogRegressions`: from the store alone (the owner log), whether an owner wrote to the log after a newer
 *   owner opened the session.
 * - `conversationShrank`: whether a session's saved conversation lost or changed a message it held before.
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import { assert } from "@effect/vitest"
import { Effect } from "effect"
import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"

const root = path.resolve(import.meta.dirname, "../..")

/** Options of a runner process (its fifth argument, as JSON). */
export interface RunnerOptions {
  /** The file to which it appends its events (`RunnerEvent`, one JSON object a line). */
  readonly events?: string | undefined
  /** The lease of each session's runtime instance (`SessionAgent` `lease`), e.g. `"2 seconds"`. */
  readonly lease?: string | undefined
  /** How long the model waits before every third resolve (default 3 s). */
  readonly decideDelayMs?: number | undefined
}

/**
 * What a runner process logs. Times are `process.hrtime` in milliseconds (`hrNow`): `t0` when a call started, `t1`
 * when it returned. `epoch` is the owner epoch the action was taken under (`null` when none was in context).
 */
export type RunnerEvent =
  | {
    readonly e: "acquire"
    readonly s: string
    readonly epoch: number
    readonly owner: string
    readonly t0: number
    readonly t1: number
  }
  | { readonly e: "request"; readonly s: string; readonly epoch: number | null; readonly t: number }
  | {
    readonly e: "write"
    readonly op: string
    /** The session of the write's fence (`null`: the store without a fence). */
    readonly s: string | null
    readonly epoch: number | null
    readonly t0: number
    readonly t1: number
    /** Not refused (it may still have changed nothing: `result` `false` or `0`). */
    readonly ok: boolean
    readonly result: number | boolean | null
    /** Why it failed (`fenced`, `leaseLapsed`, or an error's tag). */
    readonly reason: string | null
    /** The action it concerns, and the status it moves it to, when the write names them. */
    readonly id?: string | null
    readonly to?: string | null
  }
  | {
    readonly e: "fs"
    readonly op: string
    readonly path: string
    /** The destination of a rename, copy or link. */
    readonly to: string | null
    readonly epoch: number | null
    readonly t0: number
    readonly t1: number
    readonly ok: boolean
  }
  /** Woken by SIGCONT: logged once the step the process was stopped in has finished. */
  | { readonly e: "woke"; readonly t: number }
  | {
    readonly e: "staged"
    readonly s: string
    readonly id: string
    readonly marker: string
    readonly files: ReadonlyArray<string>
    readonly t: number
  }

/** An event and the pid of the runner that logged it. */
export type Attributed = RunnerEvent & { readonly runner: number }

/** Now, on the clock the runners log with (`process.hrtime`, in milliseconds). */
export const hrNow = (): number => Number(process.hrtime.bigint()) / 1e6

/** The application name of a runner process's Postgres connections. */
export const applicationNameOf = (pid: number): string => `effect-resolve-runner-${pid}`

/** A runner process. */
export interface Runner {
  readonly port: number
  readonly pid: number
  readonly child: ChildProcess
  readonly exited: Promise<void>
  /** Its event log, if it keeps one. */
  readonly events: string | undefined
}

/**
 * Starts a runner process on `port` and resolves once it joined the cluster (it printed `ready`); every line it
 * prints is pushed to `lines`. With `CLUSTER_TEST_LOGS=<dir>`, its output is kept in `<dir>/runner-<port>.log`.
 */
export const startRunner = (options: {
  readonly port: number
  readonly url: string
  readonly workspace: string
  readonly sharding: Record<string, unknown>
  readonly runner?: RunnerOptions | undefined
  readonly lines: Array<string>
}): Promise<Runner> =>
  new Promise<Runner>((resolve, reject) => {
    const { lines, port } = options
    const child = spawn(process.execPath, [
      "--import",
      "tsx",
      "test/support/clusterRunner.ts",
      options.url,
      String(port),
      options.workspace,
      JSON.stringify(options.sharding),
      JSON.stringify(options.runner ?? {})
    ], { cwd: root, stdio: ["ignore", "pipe", "pipe"] })
    let out = ""
    let err = ""
    let ready = false
    const exited = new Promise<void>((done) => child.once("exit", () => done()))
    const log = process.env.CLUSTER_TEST_LOGS
    child.stdout!.on("data", (chunk: Buffer) => {
      if (log !== undefined) fs.appendFileSync(path.join(log, `runner-${port}.log`), chunk)
      out += chunk.toString()
      let newline: number
      while ((newline = out.indexOf("\n")) >= 0) {
        const line = out.slice(0, newline)
        out = out.slice(newline + 1)
        lines.push(line)
        if (line === "ready" && !ready) {
          ready = true
          resolve({ port, pid: child.pid!, child, exited, events: options.runner?.events })
        }
      }
    })
    child.stderr!.on("data", (chunk: Buffer) => {
      err = (err + chunk.toString()).slice(-20_000)
      if (log !== undefined) fs.appendFileSync(path.join(log, `runner-${port}.log`), chunk)
    })
    child.once("exit", (code, signal) => {
      if (!ready) reject(new Error(`runner on ${port} exited before it was ready (${code ?? signal}): ${err}`))
    })
    setTimeout(() => {
      if (!ready) {
        child.kill("SIGKILL")
        reject(new Error(`runner on ${port} not ready after 90 s: ${err}`))
      }
    }, 90_000)
  })

/** Whether the process is still running (or paused). */
export const isAlive = (runner: Runner): boolean => runner.child.exitCode === null && runner.child.signalCode === null

/** Stops a runner for good: woken if paused, then SIGKILLed; resolves once it exited. */
export const stopRunner = async (runner: Runner): Promise<void> => {
  if (isAlive(runner)) {
    runner.child.kill("SIGCONT")
    runner.child.kill("SIGKILL")
  }
  await runner.exited
}

/**
 * Terminates every Postgres connection of the runner process `pid` (`pg_terminate_backend` of the backends whose
 * application name is the runner's): how many there were.
 */
export const terminateConnections = (sql: SqlClient.SqlClient, pid: number): Effect.Effect<number, SqlError> =>
  Effect.map(
    sql<{ readonly terminated: unknown }>`SELECT pg_terminate_backend(pid) AS terminated FROM pg_stat_activity
      WHERE application_name = ${applicationNameOf(pid)}`.withoutTransform,
    (rows) => rows.filter((row) => row.terminated === true).length
  )

/** The events a runner logged (every complete line of its event log). */
export const readEvents = (runner: Runner): ReadonlyArray<Attributed> => {
  if (runner.events === undefined || !fs.existsSync(runner.events)) return []
  return fs.readFileSync(runner.events, "utf8").split("\n").flatMap((line) => {
    if (line === "") return []
    try {
      return [{ ...(JSON.parse(line) as RunnerEvent), runner: runner.pid }]
    } catch {
      return [] // a line cut short by a SIGKILL
    }
  })
}

/** The session of a workspace file (`<session>-a.md`, `<session>-b.md`) or of its temporary file, if it is one. */
export const fileOf = (
  file: string
): { readonly session: string; readonly temporary: boolean } | undefined => {
  const name = path.basename(file)
  const target = /^([a-z]\d\d)-[ab]\.md$/.exec(name)
  if (target !== null) return { session: target[1]!, temporary: false }
  const temp = /^\.([a-z]\d\d)-[ab]\.md\.[0-9a-f]+\.edit-tmp$/.exec(name)
  return temp === null ? undefined : { session: temp[1]!, temporary: true }
}

/** What the runners did for sessions that a newer owner had acquired (see `afterTakeover`). */
export interface AfterTakeover {
  /** Model requests, store writes that were not refused, and changes to a session's files: none may exist. */
  readonly violations: ReadonlyArray<string>
  /** Store writes of an older owner refused after the newer owner acquired (the stale owner tried, and was stopped). */
  readonly refused: number
  /** Writes of temporary files (never renamed onto a session's file) by an older owner after the takeover. */
  readonly temporary: number
  /**
   * Model requests and file changes of an older owner after the takeover that the runner was frozen in the middle of:
   * logged before its `woke` event, so in the step that was running when it was stopped, whose check of its lease
   * came before the pause. No store can fence them (see docs/cluster.md); counted, not violations.
   */
  readonly resumed: ReadonlyArray<string>
  /** Acquisitions that took a session from another runner process. */
  readonly takeovers: number
}

/**
 * From the runners' events: everything a runner did for a session once a newer owner had acquired it. An action
 * counts when it started (`t0`, or a request's `t`) after another acquisition with a newer epoch returned (`t1`):
 * a model request, a write to the store under the older epoch that was not refused (`release`, which cannot tell,
 * and writes that report changing nothing excepted), or a change to one of the session's files (a rename onto it, a
 * write, a removal). An action without an epoch in context is judged by its runner: the newest acquisition before it
 * must be that runner's. A model request or file change logged after the takeover but before the runner's next
 * `woke` event was under way when the runner was stopped: it is counted in `resumed`.
 */
export const afterTakeover = (events: ReadonlyArray<Attributed>): AfterTakeover => {
  const acquisitions = new Map<
    string,
    Array<{ readonly epoch: number; readonly t1: number; readonly runner: number }>
  >()
  for (const event of events) {
    if (event.e !== "acquire") continue
    const list = acquisitions.get(event.s) ?? []
    list.push({ epoch: event.epoch, t1: event.t1, runner: event.runner })
    acquisitions.set(event.s, list)
  }
  let takeovers = 0
  for (const list of acquisitions.values()) {
    list.sort((a, b) => a.epoch - b.epoch)
    for (let i = 1; i < list.length; i++) if (list[i]!.runner !== list[i - 1]!.runner) takeovers++
  }
  /** The newest acquisition of `session` that returned before `t`. */
  const newestBefore = (session: string, t: number) => {
    let newest: { readonly epoch: number; readonly t1: number; readonly runner: number } | undefined
    for (const a of acquisitions.get(session) ?? []) {
      if (a.t1 < t && (newest === undefined || a.epoch > newest.epoch)) newest = a
    }
    return newest
  }
  /** The acquisition that makes an action of `runner` under `epoch` at `t` stale, if any. */
  const supersededBy = (session: string, epoch: number | null, runner: number, t: number) => {
    const newest = newestBefore(session, t)
    if (newest === undefined) return undefined
    return (epoch === null ? newest.runner !== runner : epoch < newest.epoch) ? newest : undefined
  }
  const late = (
    event: Attributed,
    session: string,
    epoch: number | null,
    t: number,
    by: { readonly epoch: number; readonly t1: number; readonly runner: number }
  ) =>
    `runner ${event.runner} (epoch ${epoch ?? "?"}) ${(t - by.t1).toFixed(1)} ms after runner ${by.runner} ` +
    `acquired ${session} under epoch ${by.epoch}`
  const wakes = new Map<number, Array<number>>()
  for (const event of events) {
    if (event.e === "woke") wakes.set(event.runner, [...(wakes.get(event.runner) ?? []), event.t])
  }
  /** Whether `runner` had not yet handled the SIGCONT that followed `since` at `t`: it was mid-step when stopped. */
  const midStep = (runner: number, since: number, t: number) => {
    const woke = (wakes.get(runner) ?? []).filter((w) => w > since).sort((a, b) => a - b)[0]
    return woke !== undefined && t < woke
  }
  const violations: Array<string> = []
  const resumed: Array<string> = []
  let refused = 0
  let temporary = 0
  for (const event of events) {
    if (event.e === "request") {
      const by = supersededBy(event.s, event.epoch, event.runner, event.t)
      if (by === undefined) continue
      const line = `model request for ${event.s} by ${late(event, event.s, event.epoch, event.t, by)}`
      if (midStep(event.runner, by.t1, event.t)) resumed.push(line)
      else violations.push(line)
    } else if (event.e === "write" && event.s !== null && event.epoch !== null) {
      const by = supersededBy(event.s, event.epoch, event.runner, event.t0)
      if (by === undefined) continue
      if (!event.ok) refused++
      else if (event.op !== "release" && event.result !== false && event.result !== 0) {
        violations.push(
          `store write ${event.op} (${String(event.result)}) for ${event.s} by ${
            late(event, event.s, event.epoch, event.t0, by)
          }`
        )
      }
    } else if (event.e === "fs" && event.ok) {
      const file = fileOf(event.to ?? event.path)
      if (file === undefined) continue
      const by = supersededBy(file.session, event.epoch, event.runner, event.t0)
      if (by === undefined) continue
      if (file.temporary) temporary++
      else {
        const line = `file ${event.op} of ${path.basename(event.to ?? event.path)} by ${
          late(event, file.session, event.epoch, event.t0, by)
        }`
        if (midStep(event.runner, by.t1, event.t0)) resumed.push(line)
        else violations.push(line)
      }
    }
  }
  return { violations, refused, temporary, takeovers, resumed }
}

/**
 * From a session's owner log (in the order written): every entry by an owner after a newer owner's first entry. The
 * store fences the log with the owner epoch, so an owner that lost the session can no longer write to it.
 */
export const ownerLogRegressions = (
  log: ReadonlyArray<{ readonly owner: string; readonly event: string; readonly at: number }>
): ReadonlyArray<string> => {
  const order = new Map<string, number>()
  const found: Array<string> = []
  let newest = -1
  for (const [i, entry] of log.entries()) {
    let rank = order.get(entry.owner)
    if (rank === undefined) {
      rank = order.size
      order.set(entry.owner, rank)
    }
    if (rank < newest) found.push(`entry ${i}: ${entry.event} by ${entry.owner} after a newer owner opened`)
    newest = Math.max(newest, rank)
  }
  return found
}

/** A session's saved conversation as observed: its message count, and its messages. */
export interface Observed {
  readonly count: number
  readonly messages: ReadonlyArray<string>
}

/** Why `next` is not `previous` grown (fewer messages, or one of the previous messages changed), if it is not. */
export const conversationShrank = (previous: Observed, next: Observed): string | undefined => {
  if (next.count < previous.count) return `the count went from ${previous.count} down to ${next.count}`
  for (let i = 0; i < previous.count; i++) {
    if (next.messages[i] !== previous.messages[i]) return `message ${i} changed`
  }
  return undefined
}

// ---- The files the runs edit --------------------------------------------------------------------------------------

/** What a test writes into each file its sessions edit, before any run. */
export const header = (file: string) => `# ${file}\nmarkers:\n`

/**
 * The marker lines of a file, after checking it is whole: its header, then marker lines (`- <prefix>NN-<n>-<n>`, the
 * prefix being the letter the test's session ids start with), each ending in "\n".
 */
export const markersOf = (text: string, file: string, prefix: string): ReadonlyArray<string> => {
  assert.isTrue(text.startsWith(header(file)), `${file} lost its header: a torn write?`)
  const rest = text.slice(header(file).length)
  assert.isTrue(rest === "" || rest.endsWith("\n"), `${file} does not end with a line break: a torn write?`)
  const lines = rest === "" ? [] : rest.slice(0, -1).split("\n")
  const line = new RegExp(`^- ${prefix}\\d\\d-\\d+-\\d+$`)
  for (const text of lines) assert.match(text, line, `${file} holds a broken line: ${text}`)
  return lines.map((text) => text.slice(2))
}

/** The marker an edit action adds to each of its files, read from its stored payload (the bytes it would write). */
export const markersOfPayload = (
  payload: unknown
): ReadonlyArray<{ readonly file: string; readonly marker: string }> =>
  (payload as { readonly files: ReadonlyArray<{ readonly inputPath: string; readonly after: string }> }).files.map(
    (file) => ({
      file: file.inputPath,
      marker: Buffer.from(file.after, "base64").toString("utf8").split("\n")[2]!.slice(2)
    })
  )
