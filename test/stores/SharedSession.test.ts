/**
 * A durable session shared by several real processes (test/support/sessionWorker.ts) on one SQLite file, then on
 * one Postgres schema: opening a session never orphans a live process's actions; a stager that is provably gone (its
 * pid is dead, or its lease lapsed without renewal) leaves actions that are orphaned for a process that cannot run
 * them and runnable for one that registers their kind; a paused stager takes its action back when it runs again;
 * a long apply is never recovered while its owner renews its lease.
 */
import { describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { deepStrictEqual, strictEqual } from "node:assert/strict"
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import * as readline from "node:readline"
import { afterAll } from "vitest"
import { postgresForTests, postgresSuiteName } from "../support/pgTest.js"
import { freshSchema } from "../support/postgres.js"
import { tempDir } from "./subjects.js"

const pg = await postgresForTests()
const tmp = tempDir()
afterAll(() => tmp.cleanup())

const root = path.resolve(import.meta.dirname, "../..")

interface Worker {
  readonly child: ChildProcessWithoutNullStreams
  readonly pid: number
  /** Sends a command and waits for its answer. */
  readonly ask: (command: Record<string, unknown>) => Promise<any>
  readonly exited: Promise<void>
}

interface Target {
  readonly store: "sqlite" | "postgres"
  readonly target: string
  readonly log: string
}

let tags = 0

const start = async (
  where: Target,
  options: { readonly session?: string; readonly kinds?: ReadonlyArray<string>; readonly leaseMs?: number } = {}
): Promise<Worker> => {
  const child = spawn(process.execPath, [
    "--import",
    "tsx",
    "test/support/sessionWorker.ts",
    where.store,
    where.target,
    options.session ?? "shared",
    options.kinds === undefined || options.kinds.length === 0 ? "-" : options.kinds.join(","),
    String(options.leaseMs ?? 60_000),
    where.log
  ], { cwd: root })
  let stderr = ""
  child.stderr.on("data", (chunk) => (stderr += String(chunk)))
  const waiting = new Map<number | undefined, (message: any) => void>()
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()))
  const failed = exited.then(() => {
    throw new Error(`worker exited: ${stderr}`)
  })
  failed.catch(() => {})
  readline.createInterface({ input: child.stdout }).on("line", (line) => {
    // The worker's answers are JSON lines; anything else is its log (a lease that lapsed while it was paused).
    if (!line.startsWith("{")) return
    const message = JSON.parse(line)
    const resolve = waiting.get(message.tag)
    waiting.delete(message.tag)
    resolve?.(message)
  })
  const ready = new Promise<any>((resolve) => waiting.set(undefined, resolve))
  const { pid } = await Promise.race([ready, failed])
  return {
    child,
    pid,
    exited,
    ask: (command) => {
      const tag = ++tags
      const answer = new Promise<any>((resolve) => waiting.set(tag, resolve))
      child.stdin.write(JSON.stringify({ ...command, tag }) + "\n")
      return Promise.race([answer, failed])
    }
  }
}

const stop = async (worker: Worker) => {
  if (worker.child.exitCode === null && worker.child.signalCode === null) {
    worker.child.kill("SIGKILL")
    await worker.exited
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

const logLines = (where: Target) =>
  fs.existsSync(where.log) ? fs.readFileSync(where.log, "utf8").trim().split("\n") : []

/** A list answer as `id → [status, runnable]`. */
const statuses = (answer: { readonly actions: ReadonlyArray<[string, string, boolean]> }) =>
  new Map(answer.actions.map(([id, status, runnable]) => [id, [status, runnable]]))

const suite = (makeTarget: () => Promise<Target>) => {
  const test = (title: string, body: (where: Target, workers: Array<Worker>) => Promise<void>) =>
    it.live(title, () =>
      Effect.promise(async () => {
        const where = await makeTarget()
        const workers: Array<Worker> = []
        try {
          await body(where, workers)
        } finally {
          for (const worker of workers) {
            worker.child.kill("SIGCONT")
            await stop(worker)
          }
        }
      }), { timeout: 60_000 })

  test("a second process opening the session never orphans the live stager's actions", async (where, workers) => {
    const a = await start(where, { kinds: ["note"] })
    workers.push(a)
    const closure = (await a.ask({ op: "closure", text: "c1" })).id
    const note = (await a.ask({ op: "kind", kind: "note", text: "n1" })).id
    // B registers no kind: it can run neither, and must leave both alone while A lives.
    const b = await start(where)
    workers.push(b)
    deepStrictEqual(
      statuses(await b.ask({ op: "list" })),
      new Map([[note, ["pending", false]], [closure, [
        "pending",
        false
      ]]])
    )
    deepStrictEqual(await b.ask({ op: "resolve", id: closure, action: "apply" }), {
      tag: tags,
      error: "PendingActionElsewhere"
    })
    deepStrictEqual((await b.ask({ op: "resolve", id: note, action: "discard" })).error, "PendingActionElsewhere")
    await b.ask({ op: "close" })
    // A later process that opens and closes at once changes nothing either.
    const c = await start(where)
    workers.push(c)
    await c.ask({ op: "close" })
    strictEqual((await a.ask({ op: "resolve", id: closure, action: "apply" })).text, "closure c1")
    strictEqual((await a.ask({ op: "resolve", id: note, action: "apply" })).text, "noted n1")
    deepStrictEqual(logLines(where), [`c1 ${a.pid}`, `n1 ${a.pid}`])
  })

  test(
    "a dead stager's actions: orphaned where they cannot run, runnable where their kind is registered",
    async (where, workers) => {
      const a = await start(where, { kinds: ["note"] })
      workers.push(a)
      const closure = (await a.ask({ op: "closure", text: "c2" })).id
      const note = (await a.ask({ op: "kind", kind: "note", text: "n2" })).id
      await stop(a)
      const b = await start(where)
      workers.push(b)
      deepStrictEqual(
        statuses(await b.ask({ op: "list" })),
        new Map([[note, ["orphaned", false]], [closure, [
          "orphaned",
          false
        ]]])
      )
      await b.ask({ op: "close" })
      // Orphaned is not for ever: a process that registers the kind takes the note back; the closure's code is gone.
      const c = await start(where, { kinds: ["note"] })
      workers.push(c)
      deepStrictEqual(
        statuses(await c.ask({ op: "list" })),
        new Map([[note, ["pending", true]], [closure, [
          "orphaned",
          false
        ]]])
      )
      strictEqual((await c.ask({ op: "resolve", id: note, action: "apply" })).text, "noted n2")
      deepStrictEqual(await c.ask({ op: "resolve", id: closure, action: "apply" }), {
        tag: tags,
        error: "PendingActionNotPending",
        status: "orphaned"
      })
      strictEqual((await c.ask({ op: "resolve", id: closure, action: "discard" })).text.startsWith("Discarded"), true)
      deepStrictEqual(logLines(where), [`n2 ${c.pid}`])
    }
  )

  test(
    "a stager whose lease lapsed looks gone; once it runs again it takes its action back",
    async (where, workers) => {
      const a = await start(where, { leaseMs: 600 })
      workers.push(a)
      const closure = (await a.ask({ op: "closure", text: "c3" })).id
      // Paused: its pid lives, but it renews nothing. Past its lease it is gone for the others.
      a.child.kill("SIGSTOP")
      await sleep(1_500)
      const b = await start(where)
      workers.push(b)
      deepStrictEqual(statuses(await b.ask({ op: "list" })), new Map([[closure, ["orphaned", false]]]))
      await b.ask({ op: "close" })
      a.child.kill("SIGCONT")
      strictEqual((await a.ask({ op: "resolve", id: closure, action: "apply" })).text, "closure c3")
      deepStrictEqual(statuses(await a.ask({ op: "list" })), new Map([[closure, ["applied", false]]]))
      deepStrictEqual(logLines(where), [`c3 ${a.pid}`])
    }
  )

  test(
    "an apply that runs past its lease is not recovered while its owner renews the lease",
    async (where, workers) => {
      const a = await start(where, { kinds: ["slow"], leaseMs: 1_500 })
      workers.push(a)
      const gate = `${where.log}.gate`
      const id = (await a.ask({ op: "kind", kind: "slow", text: "s4", gate })).id
      const applying = a.ask({ op: "resolve", id, action: "apply" })
      // Well past the claim's first lease (1.5 s): only renewals keep it (every 0.5 s, with room for a loaded machine).
      await sleep(3_500)
      // B registers the kind and could recover the action: it must see it resolving and leave it.
      const b = await start(where, { kinds: ["slow"], leaseMs: 1_500 })
      workers.push(b)
      deepStrictEqual(statuses(await b.ask({ op: "list" })), new Map([[id, ["resolving", true]]]))
      fs.writeFileSync(gate, "")
      strictEqual((await applying).text, "slow s4")
      deepStrictEqual(statuses(await b.ask({ op: "list" })), new Map([[id, ["applied", false]]]))
      deepStrictEqual(logLines(where), [`s4 ${a.pid}`])
    }
  )
}

let files = 0

describe("a session shared by processes: SQLite", () => {
  suite(async () => {
    const n = ++files
    return {
      store: "sqlite",
      target: path.join(tmp.dir, `shared-${n}.db`),
      log: path.join(tmp.dir, `shared-${n}.log`)
    }
  })
})

describe.skipIf(pg._tag === "Unavailable")(postgresSuiteName("a session shared by processes: Postgres", pg), () => {
  suite(async () => {
    const n = ++files
    const url = await Effect.runPromise(Effect.orDie(freshSchema(pg._tag === "Available" ? pg.url : "")))
    return { store: "postgres", target: url, log: path.join(tmp.dir, `shared-${n}.log`) }
  })
})
