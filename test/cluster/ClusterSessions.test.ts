/**
 * Sessions on a real cluster: three runner processes (test/support/clusterRunner.ts) on a real Postgres, 50
 * sessions, each run staging and resolving edits of real files through the scripted model, some actions decided by
 * a client on another node (this process). A supervisor SIGKILLs a runner at random moments, mid-turn, and restarts
 * it on the same address. After every round:
 *
 * - every session finished its run (the run's reply came back, though its runner may have died under it);
 * - nothing is lost: every action a runner reported staging is in the store, and every action ended applied or
 *   discarded (none pending, resolving, orphaned or in conflict); every decision the client was told succeeded is
 *   what the store holds;
 * - nothing is applied twice: each marker line appears at most once, and in every file of its action exactly when
 *   the action is applied; every file is wholly old or wholly new (a header, then marker lines);
 * - no session was ever run by two runners at once: from the store alone (the owner log of each session: who opened,
 *   saved and closed it, and when; and the journal's claims, each made by the claiming instance), the spans of the
 *   session's owners never overlap;
 * - a message sent to a session whose runner was just killed is delivered once the session runs elsewhere.
 *
 * `npm test` runs until 3 kills; `npm run test:long` (LONG=1) until at least 100.
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Either, Exit, Fiber, Layer, Ref, Scope } from "effect"
import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { SessionClient, SessionCluster } from "../../src/cluster.js"
import { PendingStore } from "../../src/index.js"
import { PostgresStore } from "../../src/postgres.js"
import { header, markersOf, markersOfPayload } from "../support/clusterHarness.js"
import { postgresForTests, postgresSuiteName } from "../support/pgTest.js"
import { freePort, freshSchema } from "../support/postgres.js"

const LONG = process.env.LONG !== undefined && process.env.LONG !== "" && process.env.LONG !== "0"
const killsWanted = Number(process.env.CLUSTER_TEST_KILLS ?? (LONG ? 100 : 3))
const killsPerRound = Math.min(killsWanted, LONG ? 12 : 3)
const maxRounds = LONG ? 40 : 3
const SESSIONS = Number(process.env.CLUSTER_TEST_SESSIONS ?? 50)
const root = path.resolve(import.meta.dirname, "../..")
const pg = await postgresForTests()

/** Failure detection in seconds, not the defaults' minute: a killed runner's shards move on soon. */
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

const sessionIds = Array.from({ length: SESSIONS }, (_, i) => `s${String(i).padStart(2, "0")}`)
const filesOfSession = (session: string) => [`${session}-a.md`, `${session}-b.md`]

// ---- Owner spans ------------------------------------------------------------------------------------------------

/** One thing an owner (a runtime instance) did to a session, at a time. */
export interface Touch {
  readonly owner: string
  readonly at: number
  readonly what: string
}

/** The span of each owner, first touch to last; and every pair of owners whose spans overlap. */
export const overlaps = (touches: ReadonlyArray<Touch>) => {
  const spans = new Map<string, { first: number; last: number }>()
  for (const { at, owner } of touches) {
    const span = spans.get(owner)
    if (span === undefined) spans.set(owner, { first: at, last: at })
    else spans.set(owner, { first: Math.min(span.first, at), last: Math.max(span.last, at) })
  }
  const ordered = [...spans].sort(([, a], [, b]) => a.first - b.first)
  const found: Array<string> = []
  for (let i = 1; i < ordered.length; i++) {
    const [owner, span] = ordered[i]!
    for (const [other, before] of ordered.slice(0, i)) {
      if (span.first < before.last) {
        found.push(`${other} [${before.first}, ${before.last}] and ${owner} [${span.first}, ${span.last}]`)
      }
    }
  }
  return { spans: ordered, found }
}

const pidOf = (instance: string) => Number(instance.split(":").at(-3))

// ---- Runner processes -------------------------------------------------------------------------------------------

interface Runner {
  readonly port: number
  child: ChildProcess
  exited: Promise<void>
}

const say = (line: string) => {
  if (process.env.CLUSTER_TEST_VERBOSE === "1") console.log(line)
}

const startRunner = (runner: { readonly port: number }, url: string, workspace: string, lines: Array<string>) =>
  new Promise<Runner>((resolve, reject) => {
    const child = spawn(process.execPath, [
      "--import",
      "tsx",
      "test/support/clusterRunner.ts",
      url,
      String(runner.port),
      workspace,
      JSON.stringify(sharding)
    ], { cwd: root, stdio: ["ignore", "pipe", "pipe"] })
    let out = ""
    let err = ""
    let ready = false
    const exited = new Promise<void>((done) => child.once("exit", () => done()))
    const log = process.env.CLUSTER_TEST_LOGS
    child.stdout!.on("data", (chunk: Buffer) => {
      if (log !== undefined) fs.appendFileSync(path.join(log, `runner-${runner.port}.log`), chunk)
      out += chunk.toString()
      let newline: number
      while ((newline = out.indexOf("\n")) >= 0) {
        const line = out.slice(0, newline)
        out = out.slice(newline + 1)
        lines.push(line)
        if (line === "ready" && !ready) {
          ready = true
          resolve({ port: runner.port, child, exited })
        }
      }
    })
    child.stderr!.on("data", (chunk: Buffer) => {
      err = (err + chunk.toString()).slice(-20_000)
      if (log !== undefined) fs.appendFileSync(path.join(log, `runner-${runner.port}.log`), chunk)
    })
    child.once("exit", (code, signal) => {
      if (!ready) reject(new Error(`runner on ${runner.port} exited before it was ready (${code ?? signal}): ${err}`))
    })
    setTimeout(() => {
      if (!ready) {
        child.kill("SIGKILL")
        reject(new Error(`runner on ${runner.port} not ready after 90 s: ${err}`))
      }
    }, 90_000)
  })

const kill = async (runner: Runner) => {
  if (runner.child.exitCode === null && runner.child.signalCode === null) runner.child.kill("SIGKILL")
  await runner.exited
}

const random = (lo: number, hi: number) => lo + Math.floor(Math.random() * (hi - lo))

// ---- The test ---------------------------------------------------------------------------------------------------

describe("owner spans", () => {
  it("the check finds two owners whose spans overlap, and none when one follows the other", () => {
    const touch = (owner: string, at: number) => ({ owner, at, what: "save" })
    assert.deepStrictEqual(overlaps([touch("a", 1), touch("a", 5), touch("b", 6), touch("b", 9)]).found, [])
    assert.deepStrictEqual(overlaps([touch("a", 1), touch("b", 6), touch("a", 7)]).found, ["a [1, 7] and b [6, 6]"])
    assert.lengthOf(overlaps([touch("a", 1), touch("a", 9), touch("b", 3), touch("c", 10)]).found, 1)
  })
})

describe.skipIf(pg._tag !== "Available")(postgresSuiteName("sessions on a cluster of real processes", pg), () => {
  it.live(
    `3 runners on Postgres, ${SESSIONS} sessions, SIGKILLs until ${killsWanted}: every run finishes, nothing lost or ` +
      "applied twice, never two owners at once",
    () =>
      Effect.gen(function*() {
        const url = pg._tag === "Available" ? yield* freshSchema(pg.url) : ""
        const workspace = fs.mkdtempSync(path.join(os.tmpdir(), "effect-resolve-cluster-"))
        for (const session of sessionIds) {
          for (const file of filesOfSession(session)) fs.writeFileSync(path.join(workspace, file), header(file))
        }
        const lines: Array<string> = []
        const ports = [
          yield* Effect.promise(freePort),
          yield* Effect.promise(freePort),
          yield* Effect.promise(freePort)
        ]
        const runners: Array<Runner> = []
        const up = [true, true, true]
        const scope = yield* Scope.make()
        try {
          // The first runner creates the tables; the others join it.
          runners.push(yield* Effect.promise(() => startRunner({ port: ports[0]! }, url, workspace, lines)))
          runners.push(
            ...(yield* Effect.promise(() =>
              Promise.all(ports.slice(1).map((port) => startRunner({ port }, url, workspace, lines)))
            ))
          )
          const context = yield* Layer.buildWithScope(
            SessionCluster.layerClient({ sharding }).pipe(
              Layer.provideMerge(PostgresStore.layerClient({ url, maxConnections: 4 }))
            ),
            scope
          )
          const client = Context.get(context, SessionClient)
          const store = Context.get(context, PendingStore)

          let kills = 0
          const probes: Array<
            { readonly session: string; readonly ms: number; readonly tag: string; readonly mid: boolean }
          > = []
          const probeFibers: Array<Fiber.RuntimeFiber<void, unknown>> = []
          const decisions: Array<{ readonly id: string; readonly status: string }> = []
          const refusals = new Map<string, number>()
          for (let round = 1; round <= maxRounds && (round === 1 || kills < killsWanted); round++) {
            const done = yield* Ref.make(false)
            const started = Date.now()
            const runs = yield* Effect.forEach(sessionIds, (session) =>
              Effect.fork(
                client.run(session, `Session ${session}: make 3 edits.`, { runId: `round-${round}-${session}` })
              ))

            // A person on another node decides some pending actions while the runs go on.
            const decideSome = (session: string) =>
              Effect.gen(function*() {
                const page = yield* Effect.either(client.list(session))
                if (Either.isLeft(page)) return
                for (const action of page.right.items.filter((a) => a.status === "pending")) {
                  const decision = random(0, 3) === 0 ? "discard" as const : "apply" as const
                  const reply = yield* Effect.either(
                    client.decide(session, { id: action.id, decision, reason: "Reviewed.", by: "client" })
                  )
                  if (Either.isRight(reply)) decisions.push({ id: action.id, status: reply.right.status })
                  else refusals.set(reply.left._tag, (refusals.get(reply.left._tag) ?? 0) + 1)
                }
              })
            const decider = yield* Effect.fork(Effect.gen(function*() {
              while (!(yield* Ref.get(done))) {
                yield* Effect.forEach(sessionIds, decideSome, { concurrency: 10, discard: true })
                yield* Effect.sleep("50 millis")
              }
            }))

            // The supervisor: SIGKILLs a live runner mid-turn (never the last one up), messages a session it ran,
            // and restarts it on the same address a moment later, in the background.
            const supervisor = yield* Effect.fork(Effect.gen(function*() {
              const restarts: Array<Fiber.RuntimeFiber<void>> = []
              for (let k = 0; k < killsPerRound && kills < killsWanted;) {
                yield* Effect.sleep(random(1_000, 3_000))
                if (yield* Ref.get(done)) break
                const live = runners.flatMap((runner, index) => up[index] ? [index] : [])
                if (live.length < 2) continue
                const index = live[random(0, live.length)]!
                const victim = runners[index]!
                const pid = victim.child.pid!
                up[index] = false
                yield* Effect.promise(() => kill(victim))
                kills++
                k++
                say(`round ${round}: killed runner ${index} (pid ${pid}) at ${Date.now() - started} ms`)
                // A message to a session the dead runner ran (mid-run if any, else the last it ran, else any):
                // delivered once the session runs elsewhere. Forked into the test's scope, not the supervisor's, so
                // that it outlives the supervisor; the round waits for it below.
                const lastOwners = yield* Effect.forEach(sessionIds, (session) =>
                  Effect.map(store.sessionLog(session), (log) => ({ session, last: log.at(-1) })))
                const byVictim = lastOwners.filter(({ last }) =>
                  last !== undefined && pidOf(last.owner) === pid
                )
                const open = byVictim.filter(({ last }) => last!.event !== "close")
                const candidates = open.length > 0 ? open : byVictim.length > 0 ? byVictim : lastOwners
                const { session } = candidates[random(0, candidates.length)]!
                const mid = open.length > 0
                const sent = Date.now()
                probeFibers.push(
                  yield* Effect.forkIn(
                    client.decide(session, { id: "pa_probe", decision: "apply", reason: "Probe.", by: "probe" }).pipe(
                      Effect.flip,
                      Effect.map((error) => {
                        probes.push({ session, ms: Date.now() - sent, tag: error._tag, mid })
                      })
                    ),
                    scope
                  )
                )
                restarts.push(
                  yield* Effect.fork(Effect.gen(function*() {
                    yield* Effect.sleep(random(0, 1_500))
                    const restarting = Date.now()
                    runners[index] = yield* Effect.promise(() =>
                      startRunner({ port: victim.port }, url, workspace, lines)
                    )
                    up[index] = true
                    say(`round ${round}: runner ${index} restarted in ${Date.now() - restarting} ms`)
                  }))
                )
              }
              yield* Fiber.joinAll(restarts)
            }))

            const exits = yield* Effect.forEach(runs, Fiber.await).pipe(
              Effect.timeoutFail({ duration: "4 minutes", onTimeout: () => new Error("the runs did not finish") })
            )
            const failed = exits.flatMap((exit, i) => Exit.isFailure(exit) ? [`${sessionIds[i]}: ${exit.cause}`] : [])
            assert.deepStrictEqual(failed, [], "every run finishes")
            const replies = exits.flatMap((exit) => Exit.isSuccess(exit) ? [exit.value] : [])
            yield* Ref.set(done, true)
            yield* Fiber.join(supervisor)
            yield* Fiber.join(decider)
            say(`round ${round}: ${replies.length} runs in ${Date.now() - started} ms, ${kills} kills so far`)

            // Every session finished its run.
            for (const reply of replies) assert.strictEqual(reply.text, "Done.")
            // The probes sent after each kill were all delivered (their action is unknown: a typed refusal).
            yield* Fiber.joinAll(probeFibers.splice(0)).pipe(
              Effect.timeoutFail({ duration: "1 minute", onTimeout: () => new Error("a probe was never delivered") })
            )
            for (const probe of probes) assert.strictEqual(probe.tag, "UnknownPendingAction", probe.session)

            // Nothing lost, nothing applied twice, files whole.
            const staged = new Map<string, string>()
            for (const line of lines) {
              const [what, session, id] = line.split(" ")
              if (what === "staged") staged.set(id!, session!)
              if (what === "error") assert.fail(line)
            }
            const inFiles = new Map<string, ReadonlySet<string>>()
            for (const session of sessionIds) {
              for (const file of filesOfSession(session)) {
                const found = markersOf(fs.readFileSync(path.join(workspace, file), "utf8"), file, "s")
                assert.strictEqual(
                  new Set(found).size,
                  found.length,
                  `a marker appears twice in ${file}: applied twice`
                )
                inFiles.set(file, new Set(found))
              }
            }
            const statuses = new Map<string, string>()
            let moved = 0
            for (const session of sessionIds) {
              const actions = yield* store.list(session)
              const touches: Array<Touch> = (yield* store.sessionLog(session)).map((entry) => ({
                owner: entry.owner,
                at: entry.at,
                what: entry.event
              }))
              for (const action of actions) {
                statuses.set(action.id, action.status)
                assert.include(
                  ["applied", "discarded"],
                  action.status,
                  `${action.id} of ${session} is ${action.status}`
                )
                for (const { file, marker } of markersOfPayload(action.payload)) {
                  assert.strictEqual(
                    inFiles.get(file)!.has(marker),
                    action.status === "applied",
                    `${action.id} is ${action.status}; its marker ${marker} in ${file}: ${
                      inFiles.get(file)!.has(marker)
                    }`
                  )
                }
                for (const event of yield* store.history(action.id)) {
                  if (event.to === "resolving" && event.owner !== null) {
                    touches.push({ owner: event.owner, at: event.at, what: `claim ${action.id}` })
                  }
                }
              }
              const { found, spans } = overlaps(touches)
              assert.deepStrictEqual(
                found,
                [],
                `session ${session} was run by two owners at once: ${
                  [...touches].sort((a, b) => a.at - b.at).map((t) => `${t.at} ${pidOf(t.owner)} ${t.what}`).join("; ")
                }`
              )
              if (new Set(spans.map(([owner]) => pidOf(owner))).size > 1) moved++
            }
            for (const [id, session] of staged) assert.isTrue(statuses.has(id), `${id} of ${session} was lost`)
            for (const decision of decisions) {
              assert.strictEqual(statuses.get(decision.id), decision.status, decision.id)
            }
            say(
              `round ${round}: ${statuses.size} actions, ${decisions.length} decided by the client, ${moved} sessions ` +
                `ran on more than one runner process; probes ${
                  probes.map((p) => `${p.ms} ms${p.mid ? " (mid-run)" : ""}`).join(", ")
                }; ` +
                `refusals ${JSON.stringify([...refusals])}`
            )
          }
          // The kills happened, and did something: sessions moved between runner processes, people decided.
          assert.isAtLeast(kills, killsWanted)
          assert.isAbove(decisions.length, 0)
          assert.isAbove(probes.length, 0)
        } finally {
          yield* Scope.close(scope, Exit.void)
          yield* Effect.promise(() => Promise.all(runners.map(kill)))
          fs.rmSync(workspace, { recursive: true, force: true })
        }
      }),
    LONG ? 3_600_000 : 240_000
  )
})
