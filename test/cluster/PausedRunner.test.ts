/**
 * A paused runner writes nothing once another runner owns its sessions (fencing, issue 26 §1–2), on real processes:
 * two runner processes (test/support/clusterRunner.ts) on the run's Postgres run sessions back to back, each run
 * staging and resolving edits of real files through the scripted model. Each round SIGSTOPs the runner that owns
 * most sessions, waits until the other runner took them over (a newer owner epoch in `effect_resolve_owners`), or
 * gives up after a while (counted apart), then SIGCONTs it: it wakes in the middle of what it was doing. Three
 * scenarios, each on its own pair of runners:
 *
 * - (a) its Postgres connections are terminated as it is paused (`pg_terminate_backend` of the backends named by
 *   its application name): it wakes to a pool of dead connections;
 * - (b) advisory locks disabled (`shardLockDisableAdvisory: true`: shard locks are rows that expire), its connections
 *   open;
 * - (c) the defaults (`SessionCluster.failoverDefaults`, no lock option given), its connections open.
 *
 * At the end, from the runners' event logs (every acquisition, model request, store write and file change, with
 * its owner epoch and the host's monotonic clock), the store and the files:
 *
 * - no runner did anything for a session once a newer owner had acquired it: no model request, no store write that
 *   was not refused (no save), no change to the session's files (its temporary files, never renamed, are counted;
 *   so is a request or rename the runner was frozen in the middle of, after its last check: no store can fence it);
 * - from the store alone: no owner wrote to a session's owner log after a newer owner opened it;
 * - every session's saved conversation only grew (sampled every 300 ms: no message lost or changed);
 * - every run finished ("Done."); nothing is lost (every staged action is in the store, applied or discarded) or
 *   doubled (each marker once in its files, exactly when its action is applied); no lock or temporary file is left;
 * - most rounds caused a takeover.
 *
 * `npm test`: 7 rounds per scenario (21 pauses); `npm run test:long` (LONG=1): 34 per scenario (102).
 * `PAUSE_TEST_ROUNDS=<n>` sets the rounds per scenario; `CLUSTER_TEST_VERBOSE=1` prints each round.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Exit, Fiber, Layer, Option, Ref, Scope } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { SessionClient, SessionCluster } from "../../src/cluster.js"
import { PendingStore } from "../../src/index.js"
import { PostgresStore } from "../../src/postgres.js"
import {
  afterTakeover,
  type Attributed,
  conversationShrank,
  fileOf,
  header,
  hrNow,
  markersOf,
  markersOfPayload,
  type Observed,
  ownerLogRegressions,
  readEvents,
  type Runner,
  startRunner,
  stopRunner,
  terminateConnections
} from "../support/clusterHarness.js"
import { postgresForTests, postgresSuiteName } from "../support/pgTest.js"
import { freePort, freshSchema } from "../support/postgres.js"

const LONG = process.env.LONG !== undefined && process.env.LONG !== "" && process.env.LONG !== "0"
const ROUNDS = Number(process.env.PAUSE_TEST_ROUNDS ?? (LONG ? 34 : 7))
const SESSIONS = 8
const pg = await postgresForTests()

/** Failure detection in about two seconds: a paused runner's shards move on soon. */
const base = {
  shardsPerGroup: 30,
  shardLockRefreshInterval: "500 millis",
  shardLockExpiration: "2 seconds",
  runnerHealthCheckInterval: "1 second",
  refreshAssignmentsInterval: "250 millis",
  entityMessagePollInterval: "250 millis",
  entityReplyPollInterval: "100 millis",
  entityTerminationTimeout: "3 seconds"
} as const
/** The lease of each session's runtime instance: a paused owner's sessions open elsewhere once it lapsed. */
const LEASE = "2 seconds"

interface Scenario {
  readonly name: string
  readonly sharding: Record<string, unknown>
  /** Terminate the paused runner's Postgres connections. */
  readonly terminate: boolean
}

const scenarios: ReadonlyArray<Scenario> = [
  { name: "(a) its connections terminated", sharding: base, terminate: true },
  {
    name: "(b) advisory locks disabled, its connections open",
    sharding: { ...base, shardLockDisableAdvisory: true },
    terminate: false
  },
  { name: "(c) the defaults, its connections open", sharding: base, terminate: false }
]

const say = (line: string) => {
  if (process.env.CLUSTER_TEST_VERBOSE === "1") console.log(line)
}

const random = (lo: number, hi: number) => lo + Math.floor(Math.random() * (hi - lo))
const pidOf = (instance: string) => Number(instance.split(":").at(-3))

const sessionIds = Array.from({ length: SESSIONS }, (_, i) => `p${String(i).padStart(2, "0")}`)
const filesOfSession = (session: string) => [`${session}-a.md`, `${session}-b.md`]
/** A session's saved conversation now: its message count (the saved state's) and those messages. */
const observe = (store: PendingStore.Service, session: string) =>
  Effect.map(store.loadConversation(session), (saved): Observed => {
    if (Option.isNone(saved)) return { count: 0, messages: [] }
    const count = (JSON.parse(saved.value.state) as { readonly messages?: number }).messages ?? 0
    return { count, messages: saved.value.messages.slice(0, count) }
  })

// ---- The checks themselves ----------------------------------------------------------------------------------------

describe("paused-runner checks", () => {
  const acquire = (runner: number, s: string, epoch: number, t1: number): Attributed => ({
    e: "acquire",
    s,
    epoch,
    owner: `h:${runner}:0:x`,
    t0: t1 - 1,
    t1,
    runner
  })
  const write = (runner: number, epoch: number, t0: number, ok: boolean, op = "saveConversation"): Attributed => ({
    e: "write",
    op,
    s: "p00",
    epoch,
    t0,
    t1: t0 + 1,
    ok,
    result: null,
    reason: ok ? null : "fenced",
    runner
  })

  it("afterTakeover finds a request, a write and a file change of an older owner after the newer one acquired", () => {
    const events: Array<Attributed> = [
      acquire(1, "p00", 1, 10),
      { e: "request", s: "p00", epoch: 1, t: 20, runner: 1 },
      write(1, 1, 30, true),
      acquire(2, "p00", 2, 40),
      // Started before the acquire returned: not after it.
      write(1, 1, 39, true),
      // Refused: counted, not a violation.
      write(1, 1, 50, false),
      {
        e: "fs",
        op: "writeFile",
        path: "/w/.p00-a.md.0a1b.edit-tmp",
        to: null,
        epoch: 1,
        t0: 51,
        t1: 52,
        ok: true,
        runner: 1
      },
      { e: "request", s: "p00", epoch: 2, t: 60, runner: 2 }
    ]
    assert.deepStrictEqual(afterTakeover(events), {
      violations: [],
      refused: 1,
      temporary: 1,
      takeovers: 1,
      resumed: []
    })
    const late = afterTakeover([
      ...events,
      { e: "request", s: "p00", epoch: 1, t: 61, runner: 1 },
      write(1, 1, 62, true, "logSession"),
      {
        e: "fs",
        op: "rename",
        path: "/w/.p00-a.md.0a1b.edit-tmp",
        to: "/w/p00-a.md",
        epoch: 1,
        t0: 63,
        t1: 64,
        ok: true,
        runner: 1
      },
      { e: "fs", op: "writeFile", path: "/w/p00-b.md", to: null, epoch: null, t0: 65, t1: 66, ok: true, runner: 1 }
    ])
    assert.strictEqual(late.violations.length, 4, late.violations.join("\n"))
    assert.match(late.violations[0]!, /^model request for p00 by runner 1 \(epoch 1\) 21\.0 ms after runner 2/)
    assert.match(late.violations[1]!, /^store write logSession/)
    assert.match(late.violations[2]!, /^file rename of p00-a\.md/)
    assert.match(late.violations[3]!, /^file writeFile of p00-b\.md by runner 1 \(epoch \?\)/)
    // Logged before the runner handled its SIGCONT: under way when it was stopped, counted apart.
    const woken = afterTakeover([
      ...late.violations.length > 0 ? events : [],
      ...[
        { e: "request", s: "p00", epoch: 1, t: 61, runner: 1 },
        { e: "woke", t: 62, runner: 1 },
        { e: "request", s: "p00", epoch: 1, t: 63, runner: 1 }
      ] satisfies Array<Attributed>
    ])
    assert.strictEqual(woken.resumed.length, 1)
    assert.match(woken.violations[0]!, /^model request for p00 by runner 1 \(epoch 1\) 23\.0 ms after/)
  })

  it("fileOf tells a session's files and temporary files from other files", () => {
    assert.deepStrictEqual(fileOf("/w/p03-b.md"), { session: "p03", temporary: false })
    assert.deepStrictEqual(fileOf("/w/.p03-a.md.00ff.edit-tmp"), { session: "p03", temporary: true })
    assert.isUndefined(fileOf("/w/.p03-a.md.edit-lock"))
  })

  it("ownerLogRegressions finds an owner writing after a newer owner opened", () => {
    const entry = (owner: string, event: string) => ({ owner, event, at: 0 })
    assert.deepStrictEqual(ownerLogRegressions([entry("a", "open"), entry("a", "close"), entry("b", "open")]), [])
    assert.deepStrictEqual(
      ownerLogRegressions([entry("a", "open"), entry("b", "open"), entry("a", "save")]),
      ["entry 2: save by a after a newer owner opened"]
    )
  })

  it("conversationShrank tells a grown conversation from one that lost or changed a message", () => {
    const seen = { count: 2, messages: ["m1", "m2"] }
    assert.isUndefined(conversationShrank(seen, { count: 3, messages: ["m1", "m2", "m3"] }))
    assert.strictEqual(conversationShrank(seen, { count: 1, messages: ["m1"] }), "the count went from 2 down to 1")
    assert.strictEqual(conversationShrank(seen, { count: 2, messages: ["m1", "x"] }), "message 1 changed")
  })
})

// ---- The scenarios ------------------------------------------------------------------------------------------------

/** One pause: its victim, the sessions it owned, those another runner acquired while it was paused. */
interface Round {
  readonly victim: number
  readonly owned: number
  readonly takenOver: number
  readonly pausedMs: number
  readonly terminated: number
}

const runScenario = (scenario: Scenario) =>
  Effect.gen(function*() {
    const started = Date.now()
    const url = pg._tag === "Available" ? yield* freshSchema(pg.url) : ""
    const workspace = fs.mkdtempSync(path.join(os.tmpdir(), "effect-resolve-paused-"))
    const logs = fs.mkdtempSync(path.join(os.tmpdir(), "effect-resolve-paused-events-"))
    for (const session of sessionIds) {
      for (const file of filesOfSession(session)) fs.writeFileSync(path.join(workspace, file), header(file))
    }
    const lines: Array<string> = []
    const runners: Array<Runner> = []
    const scope = yield* Scope.make()
    try {
      const start = (name: string) =>
        Effect.flatMap(Effect.promise(freePort), (port) =>
          Effect.promise(() =>
            startRunner({
              port,
              url,
              workspace,
              sharding: scenario.sharding,
              runner: { events: path.join(logs, `${name}.jsonl`), lease: LEASE, decideDelayMs: 300 },
              lines
            })
          ))
      // The first runner creates the tables; the other joins it.
      runners.push(yield* start("a"))
      runners.push(yield* start("b"))
      say(`${scenario.name}: runners ready after ${Date.now() - started} ms`)
      const context = yield* Layer.buildWithScope(
        SessionCluster.layerClient({ sharding: scenario.sharding }).pipe(
          Layer.provideMerge(PostgresStore.layerClient({ url, maxConnections: 4 }))
        ),
        scope
      )
      const client = Context.get(context, SessionClient)
      const store = Context.get(context, PendingStore)
      const sql = Context.get(context, SqlClient.SqlClient)

      // The work: every session runs back to back until told to stop.
      const stop = yield* Ref.make(false)
      const failures: Array<string> = []
      const completed = new Map<string, number>(sessionIds.map((s) => [s, 0]))
      // The run each session is in now, and since when: what a run that never ends was doing is reported.
      const running = new Map<string, { readonly run: number; readonly since: number }>()
      const workers = yield* Effect.forEach(sessionIds, (session) =>
        Effect.fork(Effect.gen(function*() {
          for (let n = 1; !(yield* Ref.get(stop)); n++) {
            running.set(session, { run: n, since: Date.now() })
            const exit = yield* Effect.exit(
              client.run(session, `Session ${session}: make 3 edits.`, { runId: `run-${n}-${session}` })
            )
            running.delete(session)
            if (Exit.isFailure(exit)) failures.push(`${session} run ${n}: ${exit.cause}`)
            else if (exit.value.text !== "Done.") failures.push(`${session} run ${n} answered ${exit.value.text}`)
            else completed.set(session, completed.get(session)! + 1)
          }
        })))

      // Every 300 ms, each session's saved conversation: it only grows.
      const shrank: Array<string> = []
      const seen = new Map<string, Observed>()
      let observations = 0
      const look = Effect.forEach(sessionIds, (session) =>
        Effect.map(observe(store, session), (now) => {
          const before = seen.get(session)
          const problem = before === undefined ? undefined : conversationShrank(before, now)
          if (problem !== undefined) shrank.push(`${session}: ${problem}`)
          seen.set(session, now)
          observations++
        }), { discard: true })
      const sampler = yield* Effect.fork(Effect.forever(Effect.zipRight(look, Effect.sleep("300 millis"))))

      const owners = Effect.forEach(sessionIds, (session) =>
        Effect.map(store.owner(session), (owner) => ({ session, owner: Option.getOrUndefined(owner) })))
      // The runs are under way on both runners before the first pause.
      yield* Effect.gen(function*() {
        while (
          (yield* owners).filter(({ owner }) =>
            owner !== undefined
          ).length < SESSIONS
        ) {
          yield* Effect.sleep("100 millis")
        }
      }).pipe(Effect.timeoutFail({ duration: "1 minute", onTimeout: () => new Error("the sessions never opened") }))

      say(`${scenario.name}: every session open after ${Date.now() - started} ms`)
      const rounds: Array<Round> = []
      for (let round = 1; round <= ROUNDS; round++) {
        // The victim: the runner that owns most sessions now.
        const before = yield* owners
        const counts = runners.map((runner) =>
          before.filter(({ owner }) => owner !== undefined && pidOf(owner.owner) === runner.pid).length
        )
        const victim = runners[counts[0]! >= counts[1]! ? 0 : 1]!
        const owned = before.filter(({ owner }) => owner !== undefined && pidOf(owner.owner) === victim.pid)
        const paused = Date.now()
        const pausedAt = hrNow()
        victim.child.kill("SIGSTOP")
        const terminated = scenario.terminate ? yield* terminateConnections(sql, victim.pid) : 0
        // Until the other runner acquired every session the victim owned (or most, or none: given up after 17 s).
        // Every pause ends within 18 s: past two thirds of the file locks' `staleAfter` (30 s, refreshed every 10 s) a
        // lock held by the frozen runner may be taken over, and a rename it was frozen right before would land after
        // another process ran the action otherwise (docs/cluster.md, "What no store can fence").
        let takenOver = 0
        let firstAt: number | undefined
        for (;;) {
          yield* Effect.sleep("100 millis")
          const now = new Map((yield* owners).map(({ owner, session }) => [session, owner]))
          takenOver = owned.filter(({ owner, session }) => {
            const next = now.get(session)
            return next !== undefined && next.epoch > owner!.epoch && pidOf(next.owner) !== victim.pid
          }).length
          if (takenOver > 0) firstAt ??= Date.now()
          if (takenOver === owned.length && takenOver > 0) break
          if (firstAt !== undefined && Date.now() - firstAt > 2_000) break
          if (Date.now() - paused > 17_000) break
        }
        // The new owner works a moment; then the victim wakes in the middle of what it was doing.
        yield* Effect.sleep(Math.max(0, Math.min(random(200, 800), 18_000 - (Date.now() - paused))))
        victim.child.kill("SIGCONT")
        rounds.push({ victim: victim.pid, owned: owned.length, takenOver, pausedMs: Date.now() - paused, terminated })
        say(
          `${scenario.name} round ${round}: paused runner ${victim.pid} (${owned.length} sessions` +
            `${scenario.terminate ? `, ${terminated} connections terminated` : ""}) for ${Date.now() - paused} ms ` +
            `(from ${pausedAt.toFixed(0)}); ${takenOver} taken over`
        )
        // It finds out it lost them and rejoins the cluster before the next pause.
        yield* Effect.sleep(random(1_000, 2_000))
      }

      yield* Ref.set(stop, true)
      const finished = yield* Effect.forEach(workers, Fiber.join, { discard: true }).pipe(
        Effect.timeout("3 minutes"),
        Effect.option
      )
      if (Option.isNone(finished)) {
        // What each run still under way is waiting for: its session's owner, its open actions, what the runners
        // printed of it.
        const report = yield* Effect.forEach([...running], ([session, { run, since }]) =>
          Effect.gen(function*() {
            const owner = Option.getOrUndefined(yield* Effect.orElseSucceed(store.owner(session), () => Option.none()))
            const open = yield* Effect.orElseSucceed(store.listOpen(session), () => [])
            const printed = lines.filter((line) => line.includes(session)).slice(-8)
            return `${session} run ${run} (for ${Date.now() - since} ms): owner ` +
              `${owner === undefined ? "none" : `${owner.owner} epoch ${owner.epoch}`}; open ` +
              `${JSON.stringify(open.map((r) => [r.id, r.status, r.owner, r.leaseUntil]))}; printed:\n  ` +
              printed.join("\n  ")
          }))
        return yield* Effect.fail(
          new Error(
            `the runs did not finish within 3 minutes of the last round:\n${report.join("\n")}\n` +
              `last lines:\n  ${lines.slice(-15).join("\n  ")}`
          )
        )
      }
      say(`${scenario.name}: runs done after ${Date.now() - started} ms`)
      yield* Fiber.interrupt(sampler)
      yield* look

      // Every run finished.
      assert.deepStrictEqual(failures, [], "every run finishes")
      for (const [session, runs] of completed) assert.isAbove(runs, 0, `${session} finished no run`)

      // Nothing was done for a session once a newer owner acquired it; from the store alone too.
      const events = runners.flatMap(readEvents)
      const after = afterTakeover(events)
      assert.deepStrictEqual(after.violations, [], "a runner acted for a session after another owner acquired it")
      for (const session of sessionIds) {
        assert.deepStrictEqual(
          ownerLogRegressions(yield* store.sessionLog(session)),
          [],
          `session ${session}: an owner wrote to the owner log after a newer owner opened the session`
        )
      }
      // Saved conversations only grew.
      assert.deepStrictEqual(shrank, [], "a saved conversation lost or changed a message")

      // Nothing lost, nothing applied twice, files whole, no lock or temporary file left.
      const inFiles = new Map<string, ReadonlySet<string>>()
      for (const session of sessionIds) {
        for (const file of filesOfSession(session)) {
          const found = markersOf(fs.readFileSync(path.join(workspace, file), "utf8"), file, "p")
          assert.strictEqual(new Set(found).size, found.length, `a marker appears twice in ${file}: applied twice`)
          inFiles.set(file, new Set(found))
        }
      }
      assert.deepStrictEqual(
        fs.readdirSync(workspace).filter((name) => !sessionIds.some((s) => filesOfSession(s).includes(name))),
        [],
        "a lock or temporary file was left in the workspace"
      )
      const statuses = new Map<string, string>()
      for (const session of sessionIds) {
        for (const action of yield* store.list(session)) {
          statuses.set(action.id, action.status)
          assert.include(["applied", "discarded"], action.status, `${action.id} of ${session} is ${action.status}`)
          for (const { file, marker } of markersOfPayload(action.payload)) {
            assert.strictEqual(
              inFiles.get(file)!.has(marker),
              action.status === "applied",
              `${action.id} is ${action.status}; its marker ${marker} in ${file}: ${inFiles.get(file)!.has(marker)}`
            )
          }
        }
      }
      const staged = events.flatMap((event) => event.e === "staged" ? [event] : [])
      assert.isAbove(staged.length, 0)
      for (const { id, s } of staged) assert.isTrue(statuses.has(id), `${id} of ${s} was lost`)

      // The pauses did cause takeovers, in most rounds.
      const withTakeover = rounds.filter((r) => r.takenOver > 0).length
      const summary = `${scenario.name}: ${rounds.length} pauses, ${withTakeover} with a takeover ` +
        `(${rounds.reduce((n, r) => n + r.takenOver, 0)} sessions taken over from a paused runner; ` +
        `${after.takeovers} acquisitions from another runner in all), ${rounds.length - withTakeover} without; ` +
        `after the takeovers the woken runners tried ${after.refused} store writes (all refused), wrote ` +
        `${after.temporary} temporary files (removed), and finished ${after.resumed.length} steps they were frozen ` +
        `in (${after.resumed.join("; ") || "none"}); ` +
        `${[...completed.values()].reduce((a, b) => a + b, 0)} runs, ${statuses.size} actions, ` +
        `${observations} conversation observations` +
        (scenario.terminate ? `, ${rounds.reduce((n, r) => n + r.terminated, 0)} connections terminated` : "") +
        `; ${((Date.now() - started) / 1000).toFixed(1)} s`
      console.log(summary)
      assert.isAbove(withTakeover, rounds.length / 2, `most pauses must cause a takeover: ${summary}`)
      if (scenario.terminate) assert.isTrue(rounds.every((r) => r.terminated > 0), "connections were terminated")
    } finally {
      yield* Scope.close(scope, Exit.void)
      yield* Effect.promise(() => Promise.all(runners.map(stopRunner)))
      fs.rmSync(workspace, { recursive: true, force: true })
      if (process.env.CLUSTER_TEST_KEEP_EVENTS === undefined) fs.rmSync(logs, { recursive: true, force: true })
      else console.log(`events of ${scenario.name} kept in ${logs}`)
    }
  })

describe.skipIf(pg._tag !== "Available")(postgresSuiteName("a paused runner on real processes", pg), () => {
  for (const scenario of scenarios) {
    it.live(
      `SIGSTOP of the owner past its lease, ${scenario.name}, ${ROUNDS} rounds: after the takeover it makes no ` +
        "model request, no save, no file change; nothing lost or doubled, conversations only grow, every run finishes",
      () => runScenario(scenario),
      LONG ? 3_600_000 : 420_000
    )
  }
})
