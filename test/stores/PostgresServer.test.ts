/**
 * The throw-away Postgres server of a test run lives only as long as the run (test/support/postgres.ts and
 * pgWatchdog.mjs): a run killed with SIGKILL leaves no server running and no directory behind, and the next run's
 * global setup sweeps up the leftovers of a run whose watchdog was killed too.
 */
import { assert, describe, it } from "@effect/vitest"
import { spawn, spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { findBinaries, requirePostgres, sweepLeftovers } from "../support/postgres.js"

const root = path.resolve(import.meta.dirname, "../..")

const running = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

const waitFor = async (what: string, ok: () => boolean, ms: number) => {
  const deadline = Date.now() + ms
  while (!ok()) {
    if (Date.now() > deadline) throw new Error(`not within ${ms} ms: ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

/** A pid no process has (a child that exited). */
const deadPid = () => spawnSync(process.execPath, ["-e", "0"]).pid!

const hasBinaries = findBinaries() !== undefined
if (!hasBinaries && requirePostgres()) throw new Error("EFFECT_RESOLVE_REQUIRE_PG=1 but no Postgres binaries")

describe("the test run's Postgres server", () => {
  it.skipIf(!hasBinaries)(
    "is stopped and its directories removed when the process that started it is killed",
    async () => {
      const child = spawn(process.execPath, ["--import", "tsx", "test/support/pgOwner.ts"], { cwd: root })
      let stderr = ""
      child.stderr.on("data", (chunk) => (stderr += chunk))
      const line = await new Promise<string>((resolve, reject) => {
        let out = ""
        child.stdout.on("data", (chunk) => {
          out += chunk
          if (out.includes("\n")) resolve(out.split("\n")[0]!)
        })
        child.once("exit", (code) => reject(new Error(`the owner exited (${code}): ${stderr}`)))
      })
      const server = JSON.parse(line) as { runDir: string; dir: string; url: string; postmaster: number }
      assert.isTrue(running(server.postmaster))
      assert.isTrue(fs.existsSync(server.dir))

      child.kill("SIGKILL")
      await waitFor("the server stopped", () => !running(server.postmaster), 10_000)
      await waitFor("its directory removed", () => !fs.existsSync(server.dir), 10_000)
      await waitFor("the run directory removed", () => !fs.existsSync(server.runDir), 10_000)
    },
    60_000
  )

  it("the sweep removes what a dead owner and its dead watchdog left, and nothing else", () => {
    const leftover = fs.mkdtempSync(path.join(os.tmpdir(), "effect-resolve-pg-run-"))
    const dead = { pid: deadPid(), start: null }
    fs.writeFileSync(path.join(leftover, "watch.json"), JSON.stringify({ owner: dead, watchdog: dead }))
    const live = fs.mkdtempSync(path.join(os.tmpdir(), "effect-resolve-pg-run-"))
    fs.writeFileSync(
      path.join(live, "watch.json"),
      JSON.stringify({ owner: { pid: process.pid, start: null }, watchdog: dead })
    )
    try {
      sweepLeftovers()
      assert.isFalse(fs.existsSync(leftover))
      assert.isTrue(fs.existsSync(live))
    } finally {
      fs.rmSync(leftover, { recursive: true, force: true })
      fs.rmSync(live, { recursive: true, force: true })
    }
  })
})
