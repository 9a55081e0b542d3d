/**
 * Ties a directory of test/support/postgres.ts (a run directory, or a server's own directory) and the throw-away
 * Postgres server its `server.json` names to the life of the process it serves, so that a run killed with Ctrl-C, a
 * timeout or SIGKILL leaves no server and no directory behind. Plain JavaScript, run by `node` alone in a detached
 * process of its own (a Ctrl-C sent to the run's process group does not reach it).
 *
 *     node test/support/pgWatchdog.mjs watch <dir> <owner pid>
 *         Writes <dir>/watch.json (the owner and this watchdog), then every 250 ms: when <dir> is gone (a normal
 *         stop), exits; when the owner is gone, stops the server <dir>/server.json names (`{ dir, bin }`: pg_ctl
 *         stop -m immediate on its data), removes the server's directory and <dir>, and exits.
 *     node test/support/pgWatchdog.mjs sweep
 *         For each effect-resolve-pg-* directory of the temp directory whose watch.json names an owner and a watchdog
 *         that are both gone (the watchdog was killed too), does the same; the global setup runs it first.
 *
 * A process is named by `{ pid, start }`, `start` being its start time from /proc (null where there is no /proc),
 * so that a pid the system reused is not taken for the owner.
 */
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

/** The state and start time of a process, from /proc (Linux); undefined when it does not exist or elsewhere. */
const stat = (pid) => {
  try {
    // The fields after "(comm) ": state is field 3 of the line, starttime field 22.
    const fields = fs.readFileSync(`/proc/${pid}/stat`, "utf8").split(") ").at(-1).split(" ")
    return { state: fields[0], start: fields[19] }
  } catch {
    return undefined
  }
}

/** The identity `{ pid, start }` of a running process. */
const identity = (pid) => ({ pid, start: stat(pid)?.start ?? null })

/** Whether the process `id` names still runs (not a zombie, not another process that took its pid). */
const alive = (id) => {
  try {
    process.kill(id.pid, 0)
  } catch (error) {
    if (error.code !== "EPERM") return false
  }
  if (id.start === null) return true
  const now = stat(id.pid)
  return now !== undefined && now.state !== "Z" && now.start === id.start
}

const isRoot = () => typeof process.getuid === "function" && process.getuid() === 0

/** Stops the server `dir`/server.json names, if any (a stopped one is fine), and removes its directory and `dir`. */
const cleanUp = (dir) => {
  let server
  try {
    server = JSON.parse(fs.readFileSync(path.join(dir, "server.json"), "utf8"))
  } catch {
    server = undefined
  }
  if (server !== undefined) {
    const data = path.join(server.dir, "data")
    const pgCtl = [path.join(server.bin, "pg_ctl"), "-D", data, "-m", "immediate", "-w", "stop"]
    try {
      if (fs.existsSync(path.join(data, "postmaster.pid"))) {
        if (isRoot()) execFileSync("runuser", ["-u", "postgres", "--", ...pgCtl], { stdio: "ignore" })
        else execFileSync(pgCtl[0], pgCtl.slice(1), { stdio: "ignore" })
      }
    } catch {
      // Already stopped: the directories go anyway.
    }
    fs.rmSync(server.dir, { recursive: true, force: true })
  }
  fs.rmSync(dir, { recursive: true, force: true })
}

const watch = (dir, ownerPid) => {
  const owner = identity(ownerPid)
  try {
    fs.writeFileSync(path.join(dir, "watch.json"), JSON.stringify({ owner, watchdog: identity(process.pid) }))
  } catch {
    return // <dir> is gone already
  }
  const timer = setInterval(() => {
    if (!fs.existsSync(dir)) {
      clearInterval(timer)
    } else if (!alive(owner)) {
      clearInterval(timer)
      cleanUp(dir)
    }
  }, 250)
}

const sweep = () => {
  const tmp = os.tmpdir()
  for (const name of fs.readdirSync(tmp)) {
    if (!name.startsWith("effect-resolve-pg-")) continue
    const dir = path.join(tmp, name)
    let watched
    try {
      watched = JSON.parse(fs.readFileSync(path.join(dir, "watch.json"), "utf8"))
    } catch {
      continue // not watched (made by an older version, or being set up right now)
    }
    if (!alive(watched.owner) && !alive(watched.watchdog)) cleanUp(dir)
  }
}

if (process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const [mode, dir, owner] = process.argv.slice(2)
  if (mode === "watch" && dir !== undefined && Number.isInteger(Number(owner))) watch(dir, Number(owner))
  else if (mode === "sweep") sweep()
  else throw new Error("usage: node pgWatchdog.mjs watch <dir> <owner pid> | sweep")
}
