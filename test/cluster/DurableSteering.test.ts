/**
 * Steering and a person's decision notes are durable at once, on a cluster of real processes: two runner processes
 * (test/support/clusterRunner.ts) on the run's Postgres run sessions that stage and resolve edits; a client on this
 * process steers every session of one runner, and decides some of their pending actions, then SIGKILLs that runner
 * within 100 ms of the last answer. The other runner takes the sessions over; after their runs (and one more run, so
 * that every session has a next model request), each session's saved conversation holds every steer and every
 * decision note that was answered exactly once: none lost, none sent twice.
 *
 * `npm test`: one kill; `npm run test:long` (LONG=1): five rounds, each killing the runner that owns most sessions.
 */
import { Prompt } from "@effect/ai"
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Either, Exit, Layer, Schema, Scope } from "effect"
import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { SessionClient, SessionCluster } from "../../src/cluster.js"
import { PendingStore } from "../../src/index.js"
import { PostgresStore } from "../../src/postgres.js"
import { postgresForTests, postgresSuiteName } from "../support/pgTest.js"
import { freePort, freshSchema } from "../support/postgres.js"

const LONG = process.env.LONG !== undefined && process.env.LONG !== "" && process.env.LONG !== "0"
const ROUNDS = LONG ? 5 : 1
const SESSIONS = 8
const root = path.resolve(import.meta.dirname, "../..")
const pg = await postgresForTests()

const sharding = {
  shardsPerGroup: 60,
  shardLockRefreshInterval: "1 second",
  shardLockExpiration: "5 seconds",
  runnerHealthCheckInterval: "1 second",
  refreshAssignmentsInterval: "500 millis",
  entityMessagePollInterval: "500 millis",
  entityReplyPollInterval: "100 millis",
  entityTerminationTimeout: "5 seconds"
} as const

const sessionIds = Array.from({ length: SESSIONS }, (_, i) => `d${String(i).padStart(2, "0")}`)
const header = (file: string) => `# ${file}\nmarkers:\n`

interface Runner {
  readonly port: number
  readonly child: ChildProcess
  readonly exited: Promise<void>
}

const startRunner = (port: number, url: string, workspace: string, lines: Array<string>) =>
  new Promise<Runner>((resolve, reject) => {
    const child = spawn(process.execPath, [
      "--import",
      "tsx",
      "test/support/clusterRunner.ts",
      url,
      String(port),
      workspace,
      JSON.stringify(sharding)
    ], { cwd: root, stdio: ["ignore", "pipe", "pipe"] })
    let out = ""
    let err = ""
    let ready = false
    const exited = new Promise<void>((done) => child.once("exit", () => done()))
    child.stdout!.on("data", (chunk: Buffer) => {
      out += chunk.toString()
      let newline: number
      while ((newline = out.indexOf("\n")) >= 0) {
        const line = out.slice(0, newline)
        out = out.slice(newline + 1)
        lines.push(line)
        if (line === "ready" && !ready) {
          ready = true
          resolve({ port, child, exited })
        }
      }
    })
    child.stderr!.on("data", (chunk: Buffer) => (err = (err + chunk.toString()).slice(-20_000)))
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

const kill = async (runner: Runner) => {
  if (runner.child.exitCode === null && runner.child.signalCode === null) runner.child.kill("SIGKILL")
  await runner.exited
}

const pidOf = (instance: string) => Number(instance.split(":").at(-3))

const MessageJson = Schema.parseJson(Prompt.Message)

/** The texts of the user messages of a session's saved conversation. */
const savedUserTexts = (store: PendingStore.Service, session: string) =>
  Effect.gen(function*() {
    const saved = yield* store.loadConversation(session)
    if (saved._tag === "None") return []
    const count = (JSON.parse(saved.value.state) as { readonly messages?: number }).messages ?? 0
    return saved.value.messages.slice(0, count).flatMap((row) => {
      const message = Schema.decodeUnknownSync(MessageJson)(row)
      return message.role === "user" ?
        [message.content.flatMap((part) => part.type === "text" ? [part.text] : []).join("")] :
        []
    })
  })

describe.skipIf(pg._tag !== "Available")(postgresSuiteName("steering durable at once on runner processes", pg), () => {
  it.live(
    `steers and decision notes answered within 100 ms before a SIGKILL of their runner reach the new owner once ` +
      `(${ROUNDS} round${ROUNDS > 1 ? "s" : ""})`,
    () =>
      Effect.gen(function*() {
        const url = pg._tag === "Available" ? yield* freshSchema(pg.url) : ""
        const workspace = fs.mkdtempSync(path.join(os.tmpdir(), "effect-resolve-steer-"))
        for (const session of sessionIds) {
          for (const file of [`${session}-a.md`, `${session}-b.md`]) {
            fs.writeFileSync(path.join(workspace, file), header(file))
          }
        }
        const lines: Array<string> = []
        const ports = [yield* Effect.promise(freePort), yield* Effect.promise(freePort)]
        const runners: Array<Runner> = []
        const scope = yield* Scope.make()
        try {
          runners.push(yield* Effect.promise(() => startRunner(ports[0]!, url, workspace, lines)))
          runners.push(yield* Effect.promise(() => startRunner(ports[1]!, url, workspace, lines)))
          const context = yield* Layer.buildWithScope(
            SessionCluster.layerClient({ sharding }).pipe(
              Layer.provideMerge(PostgresStore.layerClient({ url, maxConnections: 4 }))
            ),
            scope
          )
          const client = Context.get(context, SessionClient)
          const store = Context.get(context, PendingStore)
          /** What must reach each session's model exactly once. */
          const expected = new Map<string, Array<string>>(sessionIds.map((s) => [s, []]))
          let steered = 0
          let noted = 0

          // A loaded machine may let the model resolve every pending action before the reviewer's decision lands: such
          // a round exercises steers only, so up to two more rounds run until a decision was answered too.
          for (let round = 1; round <= ROUNDS || (noted === 0 && round <= ROUNDS + 2); round++) {
            const from = lines.length
            const runs = yield* Effect.forEach(sessionIds, (session) =>
              Effect.fork(
                client.run(session, `Session ${session}: make 3 edits.`, { runId: `round-${round}-${session}` })
              ))
            // Most sessions are in their run's second edit, whose resolve the model answers 3 s late: pending now.
            const stagedTwice = () =>
              sessionIds.filter((s) => lines.slice(from).filter((line) => line.startsWith(`staged ${s} `)).length >= 2)
            yield* Effect.gen(function*() {
              while (stagedTwice().length < SESSIONS / 2) yield* Effect.sleep("50 millis")
            }).pipe(Effect.timeoutFail({ duration: "2 minutes", onTimeout: () => new Error("the runs hung") }))

            // The victim: the runner that owns most sessions now (a session no runner opened yet has no owner).
            const owners = (yield* Effect.forEach(sessionIds, (session) =>
              Effect.map(store.sessionLog(session), (log) => {
                const last = log.at(-1)
                return last === undefined ? [] : [{ session, pid: pidOf(last.owner) }]
              }))).flat()
            const byPid = new Map<number, Array<string>>()
            for (const { pid, session } of owners) {
              byPid.set(pid, [...(byPid.get(pid) ?? []), session])
            }
            const [victimPid, victimSessions] = [...byPid].sort(([, a], [, b]) => b.length - a.length)[0]!
            const victimIndex = runners.findIndex((r) =>
              r.child.pid === victimPid
            )
            assert.isAtLeast(victimIndex, 0, "the owner of the sessions is one of the runners")

            // Steer every session of the victim, twice each, and decide the actions it holds pending; then SIGKILL.
            const pendingActions = yield* Effect.forEach(victimSessions, (session) =>
              Effect.map(
                Effect.either(client.list(session)),
                (page) =>
                  Either.isRight(page) ?
                    page.right.items.filter((a) => a.status === "pending").map((action) => ({ session, action })) :
                    []
              )).pipe(Effect.map((all) => all.flat()))
            const steers = victimSessions.flatMap((session) =>
              [1, 2].map((n) => ({ session, text: `Round ${round}: steer ${n} of ${session}.` }))
            )
            const sent = Date.now()
            yield* Effect.all([
              Effect.forEach(steers, ({ session, text }) =>
                Effect.map(client.steer(session, text), () => {
                  expected.get(session)!.push(text)
                  steered++
                }), { concurrency: "unbounded", discard: true }),
              Effect.forEach(pendingActions, ({ action, session }) =>
                Effect.map(
                  Effect.either(
                    client.decide(session, { id: action.id, decision: "apply", reason: "Reviewed.", by: "rita" })
                  ),
                  (reply) => {
                    // The model resolved it first (otherwise, or the same way: settled before): no decision, no note.
                    if (Either.isLeft(reply) || reply.right.settledBefore) return
                    // What the model reads of it begins so (the result of the edit follows).
                    expected.get(session)!.push(`A reviewer (rita) applied ${action.id}:`)
                    noted++
                  }
                ), { concurrency: "unbounded", discard: true })
            ], { concurrency: "unbounded" })
            const answered = Date.now()
            runners[victimIndex]!.child.kill("SIGKILL")
            const killedAfter = Date.now() - answered
            yield* Effect.promise(() => kill(runners[victimIndex]!))
            assert.isBelow(killedAfter, 100, "the runner was killed within 100 ms of the last answer")
            console.log(
              `round ${round}: ${steers.length} steers and ${pendingActions.length} decisions to ` +
                `${victimSessions.length} sessions answered in ${answered - sent} ms; killed ${killedAfter} ms later`
            )

            // The other runner takes the sessions over; every run finishes. A restarted runner rejoins.
            const exits = yield* Effect.forEach(runs, (fiber) => fiber.await).pipe(
              Effect.timeoutFail({ duration: "3 minutes", onTimeout: () => new Error("the runs did not finish") })
            )
            assert.deepStrictEqual(exits.filter(Exit.isFailure).map(String), [], "every run finishes")
            runners[victimIndex] = yield* Effect.promise(() => startRunner(ports[victimIndex]!, url, workspace, lines))
          }
          // One more run per session: every steer has a next model request to go with.
          yield* Effect.forEach(sessionIds, (session) =>
            client.run(session, `Session ${session}: make 3 edits.`, { runId: `last-${session}` }), {
            concurrency: "unbounded",
            discard: true
          }).pipe(Effect.timeoutFail({
            duration: "3 minutes",
            onTimeout: () =>
              new Error("the last runs hung")
          }))

          assert.isAbove(steered, 0)
          assert.isAbove(noted, 0, "no decision was answered")
          const problems: Array<string> = []
          for (const session of sessionIds) {
            const texts = yield* savedUserTexts(store, session)
            for (const text of expected.get(session)!) {
              // A steer exactly; a decision note by its beginning (which ends in a colon).
              const times = texts.filter((t) =>
                t === text || (text.endsWith(":") && t.startsWith(text))
              ).length
              if (times !== 1) problems.push(`${session}: ${JSON.stringify(text.slice(0, 80))} ${times} times`)
            }
          }
          console.log(`${steered} steers and ${noted} decision notes checked`)
          assert.deepStrictEqual(problems, [], "every steer and note reaches the model exactly once")
        } finally {
          yield* Scope.close(scope, Exit.void)
          yield* Effect.promise(() => Promise.all(runners.map(kill)))
          fs.rmSync(workspace, { recursive: true, force: true })
        }
      }),
    LONG ? 1_800_000 : 300_000
  )
})
