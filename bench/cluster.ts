/**
 * The cluster rows of `npm run bench` (`clusterFigures`; alone: `npm run build && tsx bench/cluster.ts`): what
 * running sessions on `@effect/cluster` costs, on the published build (`dist/`) and a real Postgres, in one run:
 *
 * - a person's decision (`decide` → claimed, applied, settled, answered) on a pending action of a durable kind whose
 *   apply does nothing, three ways: today's durable session with no cluster (`ResolveTool.execute` by id in the
 *   process that holds the session), `SingleRunner` (one process: the client and the session in it, messages
 *   through the cluster's SQL storage), and a cluster of two runner processes with the client on a third node;
 *   each as the latency of one decision at a time (median) and as decisions per second with 16 in flight over 8
 *   sessions. Target: the cluster costs at most 1.5× the plain durable session per decision.
 * - failover: the time from a runner's SIGKILL to its sessions answering again (every session it held gets a `get`
 *   at once), against the cluster's configured failure-detection times.
 *
 * Postgres: the server `bench/index.ts` passes (the run's); alone, `EFFECT_RESOLVE_PG_URL` when set, else a server
 * started for these rows with Postgres's default (durable) settings. `BENCH_QUICK=1`: a short smoke run, without the
 * failover (its row says it was skipped: it waits out the detection, about 5 s, and a runner's start), the runners
 * started while the first two measurements run. `BENCH_SAMPLES=1` prints the samples.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { type ChildProcess, spawn } from "node:child_process"
import * as path from "node:path"
import { performance } from "node:perf_hooks"
import { pathToFileURL } from "node:url"
import { ScriptedModel } from "../dist/ai.js"
import { SessionAgent, SessionClient, SessionCluster } from "../dist/cluster.js"
import { PendingStore, ResolveRuntime, ResolveTool, stageKind } from "../dist/index.js"
import { PostgresStore } from "../dist/postgres.js"
import { type Availability, freePort, freshSchema } from "../test/support/postgres.js"
import { Note } from "./clusterNote.js"
import { median, printTable, ratio, type Row } from "./harness.js"
import { withPostgres } from "./postgres.js"

const quick = process.env.BENCH_QUICK !== undefined && process.env.BENCH_QUICK !== ""
const showSamples = process.env.BENCH_SAMPLES === "1"
const SESSIONS = 8
const IN_FLIGHT = 16
const sequential = quick ? 8 : 40
const concurrent = quick ? 32 : 320
const failovers = quick ? 0 : 3
const root = path.resolve(import.meta.dirname, "..")

/** The cluster's configuration in this bench: failure detection in seconds (the defaults take about 35 s). */
const sharding = {
  shardsPerGroup: 60,
  shardLockRefreshInterval: "1 second",
  shardLockExpiration: "5 seconds",
  runnerHealthCheckInterval: "1 second",
  refreshAssignmentsInterval: "500 millis",
  entityMessagePollInterval: "500 millis"
} as const

const sessionIds = Array.from({ length: SESSIONS }, (_, i) => `bench-${i}`)

/** Stages `count` notes in each session from a durable session of this process that then closes (its stager gone). */
const stage = (url: string, count: number) =>
  Effect.forEach(sessionIds, (session) =>
    Effect.scoped(Effect.gen(function*() {
      const context = yield* Layer.build(
        ResolveRuntime.layerDurable({ session, kinds: [Note] }).pipe(Layer.provideMerge(PostgresStore.layer({ url })))
      )
      const ids: Array<string> = []
      for (let n = 0; n < count; n++) {
        const handle = yield* stageKind(Note, { n }, { label: `Note ${n}`, sourceToolName: "note" }).pipe(
          Effect.provide(context)
        )
        ids.push(handle.id)
      }
      return [session, ids] as const
    })), { concurrency: 4 }).pipe(Effect.map((entries) => new Map(entries)))

/** The ids in decision order: round robin over the sessions. */
const roundRobin = (staged: ReadonlyMap<string, ReadonlyArray<string>>) => {
  const queues = [...staged].map(([session, ids]) => ids.map((id) => ({ session, id })))
  const out: Array<{ readonly session: string; readonly id: string }> = []
  for (let i = 0; queues.some((q) => i < q.length); i++) for (const q of queues) if (i < q.length) out.push(q[i]!)
  return out
}

interface Figures {
  /** Median milliseconds per decision, one at a time. */
  readonly latency: number
  /** Decisions per second, IN_FLIGHT at a time. */
  readonly perSecond: number
}

/** Times `decide` over the staged actions: first one at a time, then IN_FLIGHT at a time. */
const measure = <E, R>(
  name: string,
  staged: ReadonlyMap<string, ReadonlyArray<string>>,
  decide: (session: string, id: string) => Effect.Effect<unknown, E, R>
) =>
  Effect.gen(function*() {
    const order = roundRobin(staged)
    const one = order.slice(0, sequential)
    const many = order.slice(sequential, sequential + concurrent)
    const samples: Array<number> = []
    for (const { id, session } of one) {
      const t0 = performance.now()
      yield* decide(session, id)
      samples.push(performance.now() - t0)
    }
    const t0 = performance.now()
    yield* Effect.forEach(many, ({ id, session }) => decide(session, id), { concurrency: IN_FLIGHT, discard: true })
    const elapsed = performance.now() - t0
    if (showSamples) console.log(`${name}: ${samples.map((s) => s.toFixed(1)).join(" ")} ms`)
    return { latency: median(samples), perSecond: (many.length * 1000) / elapsed } satisfies Figures
  })

const apply = (id: string) => ({ action: "apply" as const, reason: "Bench.", extra: null, id })

/** Today's durable session, no cluster: each session open in this process, decided by id. */
const plainDurable = (url: string) =>
  Effect.gen(function*() {
    const staged = yield* stage(url, sequential + concurrent)
    const contexts = new Map<string, Context.Context<never>>()
    for (const session of sessionIds) {
      const built = yield* Layer.build(
        ResolveRuntime.layerDurable({ session, kinds: [Note] }).pipe(Layer.provideMerge(PostgresStore.layer({ url })))
      )
      contexts.set(session, built as Context.Context<never>)
    }
    return yield* measure(
      "plain durable",
      staged,
      (session, id) =>
        Effect.provide(ResolveTool.execute(apply(id)), contexts.get(session)!) as Effect.Effect<unknown, unknown>
    )
  }).pipe(Effect.scoped)

const agent = SessionAgent.layer({ kinds: [Note] }).pipe(Layer.provide(ScriptedModel.layer(["Nothing to do."])))

const decideThrough = (client: SessionClient.Service) => (session: string, id: string) =>
  client.decide(session, { id, decision: "apply", reason: "Bench.", by: "bench" })

/** Sessions open in the sessions' own entities, before timing: the first message of a session opens it. */
const warm = (client: SessionClient.Service) =>
  Effect.forEach(sessionIds, (session) => client.get(session, "pa_none"), { concurrency: "unbounded", discard: true })

/** SingleRunner: one process, the cluster's SQL message storage, the client in the same process. */
const single = (url: string) =>
  Effect.gen(function*() {
    const staged = yield* stage(url, sequential + concurrent)
    const context = yield* Layer.build(
      SessionCluster.layerSingle({ sharding }).pipe(
        Layer.provide(agent),
        Layer.provideMerge(PostgresStore.layerClient({ url }))
      )
    )
    const client = Context.get(context, SessionClient)
    yield* warm(client)
    return yield* measure("SingleRunner", staged, decideThrough(client))
  }).pipe(Effect.scoped)

// ---- The cluster: runner processes -------------------------------------------------------------------------------

interface Runner {
  readonly port: number
  readonly child: ChildProcess
  readonly exited: Promise<void>
}

const startRunner = (url: string, port: number) =>
  new Promise<Runner>((resolve, reject) => {
    const child = spawn(process.execPath, [
      "--import",
      "tsx",
      "bench/clusterRunner.ts",
      url,
      String(port),
      JSON.stringify(sharding)
    ], { cwd: root, stdio: ["ignore", "pipe", "inherit"] })
    const exited = new Promise<void>((done) => child.once("exit", () => done()))
    let out = ""
    child.stdout!.on("data", (chunk: Buffer) => {
      out += chunk.toString()
      if (out.includes("ready\n")) resolve({ port, child, exited })
    })
    child.once("exit", (code) => reject(new Error(`runner ${port} exited (${code}) before it was ready: ${out}`)))
  })

const kill = async (runner: Runner) => {
  if (runner.child.exitCode === null && runner.child.signalCode === null) runner.child.kill("SIGKILL")
  await runner.exited
}

const pidOf = (instance: string) => Number(instance.split(":").at(-3))

/**
 * Starts the two runners on `url`, one after the other: the first creates the cluster's tables (two at once race on
 * them: "relation cluster_migrations already exists"). Kills the first if the second fails.
 */
const startRunners = async (url: string): Promise<ReadonlyArray<Runner>> => {
  const first = await startRunner(url, await freePort())
  try {
    return [first, await startRunner(url, await freePort())]
  } catch (error) {
    await kill(first)
    throw error
  }
}

/**
 * Two runner processes (`starting`, else started here) and a client-only node (this process); then SIGKILLs a
 * runner and times the failover.
 */
const cluster = (url: string, starting?: Promise<ReadonlyArray<Runner>>) =>
  Effect.gen(function*() {
    const runners: Array<Runner> = []
    yield* Effect.addFinalizer(() => Effect.promise(() => Promise.all(runners.map(kill))))
    const staged = yield* stage(url, sequential + concurrent)
    runners.push(...yield* Effect.promise(() => starting ?? startRunners(url)))
    const context = yield* Layer.build(
      SessionCluster.layerClient({ sharding }).pipe(Layer.provideMerge(PostgresStore.layerClient({ url })))
    )
    const client = Context.get(context, SessionClient)
    const store = Context.get(context, PendingStore)
    yield* Effect.sleep(quick ? "1 second" : "3 seconds") // the runners' shards settle
    yield* warm(client)
    const figures = yield* measure("cluster", staged, decideThrough(client))

    // Failover: the sessions of the runner killed answer again.
    const downtimes: Array<number> = []
    for (let i = 0; i < failovers; i++) {
      const victim = runners[i % 2]!
      const pid = victim.child.pid!
      const held: Array<string> = []
      for (const session of sessionIds) {
        const [last] = yield* store.sessionLog(session, { last: 1 })
        if (last !== undefined && last.event !== "close" && pidOf(last.owner) === pid) held.push(session)
      }
      if (held.length === 0) continue
      const t0 = performance.now()
      yield* Effect.promise(() => kill(victim))
      yield* Effect.forEach(held, (session) => client.get(session, "pa_none"), { concurrency: "unbounded" })
      downtimes.push(performance.now() - t0)
      if (showSamples) console.log(`failover ${i + 1}: ${held.length} sessions, ${downtimes.at(-1)!.toFixed(0)} ms`)
      runners[i % 2] = yield* Effect.promise(() => startRunner(url, victim.port))
      yield* Effect.sleep("3 seconds")
      yield* warm(client)
    }
    return { ...figures, failover: downtimes.length === 0 ? Number.NaN : median(downtimes), failovers: downtimes }
  }).pipe(Effect.scoped)

// ---- The rows ----------------------------------------------------------------------------------------------------

/**
 * The cluster's rows, and the targets missed; `skipped` when no Postgres is reachable. `postgres`: the server
 * (default: `EFFECT_RESOLVE_PG_URL`, else one started for these rows).
 */
export const clusterFigures = (postgres?: Availability): Promise<{
  readonly rows: ReadonlyArray<Row>
  readonly missed: ReadonlyArray<string>
}> =>
  withPostgres(postgres, async (postgres) => {
    if (postgres._tag === "Unavailable") return { rows: [skippedRow(postgres.reason)], missed: [] }
    const schema = () => Effect.runPromise(freshSchema(postgres.url) as Effect.Effect<string>)
    const [plainUrl, singleUrl, clusterUrl] = [await schema(), await schema(), await schema()]
    // A smoke run starts the runners first, so that their start-up overlaps the first two measurements (a full run
    // starts them after those, on a quiet machine).
    const early = quick ? startRunners(clusterUrl) : undefined
    early?.catch(() => undefined) // (not unhandled meanwhile: `cluster` awaits it, and fails with its error)
    const measured = async () => ({
      plain: await Effect.runPromise(plainDurable(plainUrl)),
      one: await Effect.runPromise(single(singleUrl)),
      two: await Effect.runPromise(cluster(clusterUrl, early))
    })
    const { one, plain, two } = await measured().catch(async (error: unknown) => {
      await early?.then((runners) => Promise.all(runners.map(kill)), () => undefined) // if `cluster` did not
      throw error
    })
    const ms = (value: number) => `${value.toFixed(2)} ms`
    const perSecond = (value: number) => `${value.toFixed(0)}/s`
    const verdict = (ok: boolean) => quick ? "not judged (smoke run)" : ok ? "ok" : "MISSED"
    const within = two.latency <= 1.5 * plain.latency
    const rows: Array<Row> = [
      {
        name: "decide, durable",
        figure: `a person's decision (claim, no-op apply, settle) on today's durable session on Postgres, no ` +
          `cluster, by id in the process that holds the session; one at a time (median of ${sequential})`,
        value: ms(plain.latency),
        floor: "—",
        plain: "—",
        vsFloor: "—",
        vsPlain: "—",
        target: `for information: ${perSecond(plain.perSecond)} with ${IN_FLIGHT} in flight over ${SESSIONS} sessions`
      },
      {
        name: "decide, SingleRunner",
        figure: "the same decision as a `decide` message through SingleRunner (one process holds the client and " +
          "the sessions, the cluster's runner storage on the same Postgres)",
        value: ms(one.latency),
        floor: `${ms(plain.latency)} (the durable session's decision, row above)`,
        plain: "—",
        vsFloor: ratio(one.latency, plain.latency),
        vsPlain: "—",
        target: `for information: ${perSecond(one.perSecond)} with ${IN_FLIGHT} in flight`
      },
      {
        name: "decide, 2 runners",
        figure: "the same decision as a `decide` message from a client-only node (the bench process) to a cluster " +
          "of two runner processes (sockets, Postgres storage)",
        value: ms(two.latency),
        floor: `${ms(plain.latency)} (the durable session's decision)`,
        plain: "—",
        vsFloor: ratio(two.latency, plain.latency),
        vsPlain: "—",
        target: `≤ 1.5× floor: ${verdict(within)}; ${perSecond(two.perSecond)} with ${IN_FLIGHT} in flight ` +
          `(${ratio(plain.perSecond, two.perSecond)} the durable session's time per decision)`
      },
      quick ?
        {
          name: "SIGKILL → running",
          figure: "from a runner's SIGKILL until every session it held answers a `get` from the other runner: " +
            "skipped in a smoke run (it waits out the failure detection, lock expiry 5 s)",
          value: "—",
          floor: "—",
          plain: "—",
          vsFloor: "—",
          vsPlain: "—",
          target: "—"
        } :
        {
          name: "SIGKILL → running",
          figure: "from a runner's SIGKILL until every session it held answers a `get` from the other runner (median " +
            `of ${two.failovers.length}: ${two.failovers.map((d) => `${(d / 1000).toFixed(1)} s`).join(", ")}); ` +
            "configured detection: lock expiry 5 s, health check every 1 s (then failed pings), reassignment " +
            "every 0.5 s",
          value: `${(two.failover / 1000).toFixed(1)} s`,
          floor: "—",
          plain: "—",
          vsFloor: "—",
          vsPlain: "—",
          target: "for information"
        }
    ]
    return { rows, missed: quick || within ? [] : ["decide through the cluster"] }
  })

const skippedRow = (reason: string): Row => ({
  name: "cluster",
  figure: `the cluster rows: skipped (${reason})`,
  value: "—",
  floor: "—",
  plain: "—",
  vsFloor: "—",
  vsPlain: "—",
  target: "—"
})

// Alone: `npm run build && tsx bench/cluster.ts`.
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  clusterFigures().then(({ rows }) => {
    printTable(rows)
    process.exit(0)
  }, (error) => {
    console.error(error)
    process.exit(1)
  })
}
