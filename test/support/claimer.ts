/**
 * A claimer process for the cross-process tests: `node --import tsx test/support/claimer.ts <sqlite|postgres>
 * <file|url>`. It opens the store (which migrates it), prints `{"ready":true,"owner":...}`, then for every line
 * `{"round":n,"ids":[...],"startAt":ms}` on stdin waits until `startAt` (epoch ms; the parent gives both claimers
 * the same), claims every id in order (8 at a time) and prints `{"round":n,"won":[...],"started":ms,"ended":ms}`:
 * the ids whose claim it won and when it claimed. It exits when stdin ends.
 */
import { Effect, ManagedRuntime, Option } from "effect"
import * as os from "node:os"
import * as readline from "node:readline"
import { PendingStore } from "../../src/services/PendingStore.js"

const [kind, target] = process.argv.slice(2)
if ((kind !== "sqlite" && kind !== "postgres") || target === undefined) {
  process.stderr.write("usage: claimer.ts <sqlite|postgres> <file|url>\n")
  process.exit(2)
}

const owner = `${os.hostname()}:${process.pid}:${Math.random().toString(36).slice(2, 10)}`
// Only the driver in use is loaded: starting a process is most of this test's time.
const runtime = ManagedRuntime.make(
  kind === "sqlite" ?
    (await import("../../src/stores/SqliteStore.js")).layer({ filename: target }) :
    (await import("../../src/stores/PostgresStore.js")).layer({ url: target })
)

const claimAll = (ids: ReadonlyArray<string>) =>
  Effect.flatMap(PendingStore, (store) =>
    Effect.forEach(ids, (id) => {
      const now = Date.now()
      return Effect.map(store.claim({ id, owner, leaseUntil: now + 60_000, now }), Option.isSome)
    }, { concurrency: 8 })).pipe(Effect.map((won) => ids.filter((_, i) => won[i])))

const main = async () => {
  await runtime.runPromise(PendingStore)
  process.stdout.write(JSON.stringify({ ready: true, owner }) + "\n")
  for await (const line of readline.createInterface({ input: process.stdin })) {
    if (line.trim() === "") continue
    const { ids, round, startAt } = JSON.parse(line) as { round: number; ids: Array<string>; startAt: number }
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, startAt - Date.now())))
    const started = Date.now()
    const won = await runtime.runPromise(claimAll(ids))
    process.stdout.write(JSON.stringify({ round, won, started, ended: Date.now() }) + "\n")
  }
  await runtime.dispose()
}

main().catch((error) => {
  process.stderr.write(`claimer failed: ${error instanceof Error ? error.stack : String(error)}\n`)
  process.exit(1)
})
