/**
 * Claims across processes: two real `node` processes (test/support/claimer.ts, the library's TS sources through
 * tsx) share one SQLite file, then one Postgres database, and claim the same ids at the same moment, round after
 * round. Every id must be won by exactly one of them, the stored record must name that winner, and its journal
 * must hold exactly one claim. Both processes open (and migrate) the fresh database at about the same time, and
 * start each round at the same wall-clock moment; in even rounds they claim in the same order (head to head), in
 * odd rounds each in its own shuffled order.
 */
import { describe, it } from "@effect/vitest"
import { Effect, Layer, ManagedRuntime } from "effect"
import { deepStrictEqual, strictEqual } from "node:assert/strict"
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process"
import * as path from "node:path"
import * as readline from "node:readline"
import { afterAll } from "vitest"
import { PendingStore } from "../../src/services/PendingStore.js"
import * as PostgresStore from "../../src/stores/PostgresStore.js"
import * as SqliteStore from "../../src/stores/SqliteStore.js"
import { postgresForTests, postgresSuiteName } from "../support/pgTest.js"
import { freshSchema } from "../support/postgres.js"
import { tempDir } from "./subjects.js"

const pg = await postgresForTests()
const tmp = tempDir()
afterAll(() => tmp.cleanup())

const rounds = 5
const perRound = 100
const root = path.resolve(import.meta.dirname, "../..")

/** A claimer child: its lines come back in order through `next`. */
interface Claimer {
  readonly child: ChildProcessWithoutNullStreams
  readonly next: () => Promise<any>
  readonly send: (message: unknown) => void
}

const startClaimer = (kind: "sqlite" | "postgres", target: string): Claimer => {
  const child = spawn(process.execPath, ["--import", "tsx", "test/support/claimer.ts", kind, target], { cwd: root })
  let stderr = ""
  child.stderr.on("data", (chunk) => (stderr += String(chunk)))
  const lines: Array<string> = []
  const waiting: Array<(line: string) => void> = []
  readline.createInterface({ input: child.stdout }).on("line", (line) => {
    const resolve = waiting.shift()
    if (resolve !== undefined) resolve(line)
    else lines.push(line)
  })
  const exited = new Promise<never>((_, reject) =>
    child.once("exit", (code) => reject(new Error(`claimer exited with ${code}: ${stderr}`)))
  )
  exited.catch(() => {})
  return {
    child,
    next: () =>
      Promise.race([
        new Promise<string>((resolve) => {
          const line = lines.shift()
          if (line !== undefined) resolve(line)
          else waiting.push(resolve)
        }),
        exited
      ]).then((line) => JSON.parse(line)),
    send: (message) => child.stdin.write(JSON.stringify(message) + "\n")
  }
}

const shuffle = <A>(items: ReadonlyArray<A>): Array<A> => {
  const out = [...items]
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1))
    const swap = out[i]!
    out[i] = out[j]!
    out[j] = swap
  }
  return out
}

const record = (id: string, now: number) => ({
  id,
  session: "cross",
  kind: "edit",
  label: `Edit ${id}`,
  sourceToolName: "edit",
  stager: null,
  preview: id,
  payload: null,
  status: "pending" as const,
  attempts: 0,
  owner: null,
  leaseUntil: null,
  createdAt: now,
  updatedAt: now,
  expiresAt: null,
  outcome: null
})

const race = (kind: "sqlite" | "postgres", target: string, layer: Layer.Layer<PendingStore, unknown>) =>
  Effect.promise(async () => {
    const claimers = [startClaimer(kind, target), startClaimer(kind, target)]
    const runtime = ManagedRuntime.make(layer)
    try {
      const ready = await Promise.all(claimers.map((c) => c.next()))
      const owners: Array<string> = ready.map((r) => r.owner)
      strictEqual(new Set(owners).size, 2)
      const store = await runtime.runPromise(PendingStore)
      let overlapping = 0
      let split = 0
      for (let round = 0; round < rounds; round++) {
        const ids = Array.from({ length: perRound }, (_, i) => `r${round}-${i}`)
        const now = Date.now()
        await runtime.runPromise(Effect.forEach(ids, (id) => store.insert(record(id, now)), { discard: true }))
        // Even rounds: both claim in the same order (head-to-head on every id). Odd rounds: each in its own
        // shuffled order (both are sure to win some).
        const startAt = Date.now() + 150
        for (const c of claimers) c.send({ round, ids: round % 2 === 0 ? ids : shuffle(ids), startAt })
        const results = await Promise.all(claimers.map((c) => c.next()))
        const won: Array<Array<string>> = results.map((r) => r.won)
        // Exactly once: nobody won an id twice, no id was won by both, and every id was won.
        deepStrictEqual([...won[0]!, ...won[1]!].sort(), [...ids].sort(), `round ${round}`)
        // Both were claiming at the same time (a loser's claims failed because the other got there first).
        if (results[0].started <= results[1].ended && results[1].started <= results[0].ended) overlapping++
        if (won[0]!.length > 0 && won[1]!.length > 0) split++
        const winner = new Map(won.flatMap((list, k) => list.map((id) => [id, owners[k]] as const)))
        const stored = (await runtime.runPromise(store.list("cross"))).filter((r) => r.id.startsWith(`r${round}-`))
        deepStrictEqual(
          stored.map((r) => [r.id, r.status, r.owner, r.attempts]).sort(),
          ids.map((id) => [id, "resolving", winner.get(id), 1]).sort(),
          `round ${round}`
        )
        const journals = await runtime.runPromise(Effect.forEach(ids, (id) => store.history(id), { concurrency: 8 }))
        deepStrictEqual(journals.map((events) => events.filter((e) => e.to === "resolving").length), ids.map(() => 1))
      }
      // The race was real: the processes claimed at the same time, and both won ids in some round.
      strictEqual(overlapping > 0, true, "the two processes never claimed at the same time")
      strictEqual(split > 0, true, "one process won every id of every round")
    } finally {
      for (const c of claimers) c.child.stdin.end()
      await Promise.all(
        claimers.map((c) =>
          new Promise((resolve) => c.child.exitCode !== null ? resolve(0) : c.child.once("exit", resolve))
        )
      )
      await runtime.dispose()
    }
  })

describe("claims across processes", () => {
  it.live("two processes on one SQLite file: each id is claimed exactly once", () => {
    const file = path.join(tmp.dir, "shared.db")
    return race("sqlite", file, SqliteStore.layer({ filename: file }))
  }, { timeout: 180_000 })
})

describe.skipIf(pg._tag === "Unavailable")(postgresSuiteName("claims across processes: postgres", pg), () => {
  it.live("two processes on one Postgres database: each id is claimed exactly once", () =>
    Effect.flatMap(
      Effect.orDie(freshSchema(pg._tag === "Available" ? pg.url : "")),
      (url) => race("postgres", url, PostgresStore.layer({ url }))
    ), { timeout: 180_000 })
})
