/**
 * A real Postgres server for the tests and the bench.
 *
 * - `EFFECT_RESOLVE_PG_URL` set (CI: `.ci/run` starts a server and sets it): that server is used.
 * - Else, when Debian's binaries exist (`initdb`, `pg_ctl` in `EFFECT_RESOLVE_PG_BIN`, or else in
 *   `/usr/lib/postgresql/<version>/bin` or on the PATH),
 *   the first test file that needs Postgres starts one for the whole vitest run (a temp directory, a free loopback
 *   port; as root, run as the unprivileged `postgres` user), and `test/support/globalSetup.ts` stops it at the end.
 *   It is started lazily, so single-file runs that do not touch Postgres pay nothing.
 * - Else the Postgres tests skip with the reason, unless `EFFECT_RESOLVE_REQUIRE_PG=1`: then a missing server
 *   fails the run (CI must never pass by skipping them).
 *
 * Each test works in a fresh schema (`freshSchema`), so tests and files running in parallel never see each
 * other's tables.
 *
 * A server started here lives only as long as the process it serves (the vitest run, or the bench): a watchdog
 * (`test/support/pgWatchdog.mjs`, a detached process) stops it and removes its directory once that process is
 * gone, so a run killed with Ctrl-C, a timeout or SIGKILL leaves nothing running; the global setup first sweeps up
 * what a run whose watchdog was killed too left behind.
 */
import * as Reactivity from "@effect/experimental/Reactivity"
import * as PgClient from "@effect/sql-pg/PgClient"
import { Effect, Redacted } from "effect"
import { execFile, execFileSync, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import { promisify } from "node:util"

const run = promisify(execFile)

/** `EFFECT_RESOLVE_REQUIRE_PG=1`: a missing Postgres server is a failure, not a skip. */
export const requirePostgres = (): boolean => process.env.EFFECT_RESOLVE_REQUIRE_PG === "1"

/**
 * The directory holding `initdb` and `pg_ctl`: `EFFECT_RESOLVE_PG_BIN` when set (only that one), else Debian's
 * newest `/usr/lib/postgresql/<v>/bin`, else the PATH.
 */
export const findBinaries = (): string | undefined => {
  const has = (dir: string) => fs.existsSync(path.join(dir, "initdb")) && fs.existsSync(path.join(dir, "pg_ctl"))
  const chosen = process.env.EFFECT_RESOLVE_PG_BIN
  if (chosen !== undefined && chosen !== "") return has(chosen) ? chosen : undefined
  const root = "/usr/lib/postgresql"
  if (fs.existsSync(root)) {
    const versions = fs.readdirSync(root).filter((v) => /^\d+(\.\d+)?$/.test(v)).sort((a, b) => Number(b) - Number(a))
    for (const v of versions) {
      const dir = path.join(root, v, "bin")
      if (has(dir)) return dir
    }
  }
  for (const dir of (process.env.PATH ?? "").split(path.delimiter)) {
    if (dir !== "" && has(dir)) return dir
  }
  return undefined
}

/** A free TCP port on 127.0.0.1 (bound once, then released). */
export const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = net.createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      server.close(() => typeof address === "object" && address !== null ? resolve(address.port) : reject())
    })
  })

const watchdog = path.join(import.meta.dirname, "pgWatchdog.mjs")

/**
 * Starts the watchdog of `dir`: once `owner` (a pid) is gone, it stops the server `dir`/server.json names, if any,
 * and removes that server's directory and `dir`; it exits when `dir` is removed the normal way.
 */
export const watchDirectory = (dir: string, owner: number): void => {
  spawn(process.execPath, [watchdog, "watch", dir, String(owner)], { detached: true, stdio: "ignore" }).unref()
}

/** Stops the servers and removes the directories of dead runs whose watchdog is gone too. */
export const sweepLeftovers = (): void => {
  execFileSync(process.execPath, [watchdog, "sweep"], { stdio: "ignore", timeout: 60_000 })
}

/** A running server: its URL (database `postgres`, user `postgres`, no password) and where it lives. */
export interface Server {
  readonly url: string
  readonly dir: string
  readonly bin: string
}

const isRoot = () => typeof process.getuid === "function" && process.getuid() === 0

/** Runs a Postgres binary, as the `postgres` user when we are root (Postgres refuses to run as root). */
const runAs = (bin: string, args: ReadonlyArray<string>) =>
  isRoot() ? run("runuser", ["-u", "postgres", "--", bin, ...args]) : run(bin, [...args])

/**
 * `initdb` a temp directory and start a server on a free loopback port (trust authentication, loopback only, the
 * socket in the directory). `durable: false` turns fsync off (tests); the bench keeps Postgres's defaults. The
 * server lives as long as the process `owner` (default: this one): a watchdog stops it once that process is gone.
 */
export const startServer = async (
  options: { readonly durable: boolean; readonly owner?: number }
): Promise<Server> => {
  const bin = findBinaries()
  if (bin === undefined) throw new Error("no Postgres binaries (initdb, pg_ctl) found")
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "effect-resolve-pg-"))
  // Watched from the start: a run killed while the server starts leaves nothing either.
  fs.writeFileSync(path.join(dir, "server.json"), JSON.stringify({ dir, bin }))
  watchDirectory(dir, options.owner ?? process.pid)
  if (isRoot()) {
    const { stdout } = await run("id", ["-u", "postgres"])
    const { stdout: gid } = await run("id", ["-g", "postgres"])
    fs.chownSync(dir, Number(stdout.trim()), Number(gid.trim()))
  }
  const data = path.join(dir, "data")
  await runAs(path.join(bin, "initdb"), ["-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"])
  const port = await freePort()
  const settings = [`-p ${port}`, `-k ${dir}`, "-c listen_addresses=127.0.0.1"]
  if (!options.durable) settings.push("-c fsync=off", "-c synchronous_commit=off", "-c full_page_writes=off")
  await runAs(path.join(bin, "pg_ctl"), [
    "-D",
    data,
    "-o",
    settings.join(" "),
    "-l",
    path.join(dir, "log"),
    "-w",
    "start"
  ])
  return { url: `postgres://postgres@127.0.0.1:${port}/postgres`, dir, bin }
}

/** Stops a server `startServer` started and removes its directory. */
export const stopServer = async (server: Server): Promise<void> => {
  try {
    await runAs(path.join(server.bin, "pg_ctl"), ["-D", path.join(server.dir, "data"), "-m", "immediate", "stop"])
  } finally {
    fs.rmSync(server.dir, { recursive: true, force: true })
  }
}

/** What a test file gets: the server's URL, or why there is none. */
export type Availability =
  | { readonly _tag: "Available"; readonly url: string }
  | { readonly _tag: "Unavailable"; readonly reason: string }

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/**
 * Makes the run directory of a vitest run (the global setup calls it, in the run's main process): the lazily
 * started server's URL goes there, and a watchdog removes it (and stops that server) if this process dies.
 */
export const makeRunDir = (): string => {
  const runDir = fs.mkdtempSync(path.join(os.tmpdir(), "effect-resolve-pg-run-"))
  fs.writeFileSync(path.join(runDir, "owner"), String(process.pid))
  watchDirectory(runDir, process.pid)
  return runDir
}

/**
 * The Postgres server of this vitest run (see the module comment). `runDir` is the directory the global setup
 * made for the lazily started server; the first caller starts it, the others wait for its URL. The server lives as
 * long as the run's main process (the test files run in workers that come and go).
 */
export const ensureServer = async (runDir: string | undefined): Promise<Availability> => {
  const fromEnv = process.env.EFFECT_RESOLVE_PG_URL
  if (fromEnv !== undefined && fromEnv !== "") return { _tag: "Available", url: fromEnv }
  if (runDir === undefined || runDir === "") {
    return { _tag: "Unavailable", reason: "no EFFECT_RESOLVE_PG_URL and no run directory from the global setup" }
  }
  const serverFile = path.join(runDir, "server.json")
  const failedFile = path.join(runDir, "failed.json")
  let starter = false
  try {
    fs.mkdirSync(path.join(runDir, "lock"))
    starter = true
  } catch {
    // Another test file is starting it.
  }
  if (starter) {
    try {
      const owner = Number(fs.readFileSync(path.join(runDir, "owner"), "utf8"))
      const server = await startServer({ durable: false, owner })
      fs.writeFileSync(serverFile + ".tmp", JSON.stringify(server))
      fs.renameSync(serverFile + ".tmp", serverFile)
    } catch (error) {
      const reason = error instanceof Error ? error.message.split("\n")[0]! : String(error)
      fs.writeFileSync(failedFile, JSON.stringify({ reason }))
    }
  }
  const deadline = Date.now() + 120_000
  for (;;) {
    if (fs.existsSync(serverFile)) {
      return { _tag: "Available", url: (JSON.parse(fs.readFileSync(serverFile, "utf8")) as Server).url }
    }
    if (fs.existsSync(failedFile)) {
      const { reason } = JSON.parse(fs.readFileSync(failedFile, "utf8")) as { reason: string }
      return { _tag: "Unavailable", reason }
    }
    if (Date.now() > deadline) return { _tag: "Unavailable", reason: "timed out waiting for the server to start" }
    await sleep(100)
  }
}

/** Stops the lazily started server of a run directory, if one was started, and removes the directory. */
export const stopRunServer = async (runDir: string): Promise<void> => {
  const serverFile = path.join(runDir, "server.json")
  try {
    if (fs.existsSync(serverFile)) await stopServer(JSON.parse(fs.readFileSync(serverFile, "utf8")) as Server)
  } finally {
    fs.rmSync(runDir, { recursive: true, force: true })
  }
}

/** `url` with its `search_path` set to `schema` (a connection option every client of the URL applies). */
export const withSearchPath = (url: string, schema: string): string => {
  const u = new URL(url)
  u.searchParams.set("options", `-c search_path=${schema}`)
  return u.toString()
}

let schemas = 0

/** Creates an empty schema and returns a URL whose connections work in it. */
export const freshSchema = (url: string): Effect.Effect<string, unknown> =>
  Effect.gen(function*() {
    const schema = `t_${process.pid}_${Date.now().toString(36)}_${++schemas}`
    const sql = yield* PgClient.make({ url: Redacted.make(url), maxConnections: 1 })
    yield* sql.unsafe(`CREATE SCHEMA ${schema}`).raw
    return withSearchPath(url, schema)
  }).pipe(Effect.scoped, Effect.provide(Reactivity.layer))
