/**
 * A stand-in for a vitest run that uses Postgres, for test/stores/PostgresServer.test.ts (run with `node --import
 * tsx`): it makes the run directory as the global setup does, starts the server as the first test file that needs it
 * does, prints `{ runDir, dir, url, postmaster }` (postmaster: the server's pid) on one line, and waits to be killed.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { ensureServer, makeRunDir, type Server } from "./postgres.js"

delete process.env.EFFECT_RESOLVE_PG_URL // this process starts its own server
const runDir = makeRunDir()
const availability = await ensureServer(runDir)
if (availability._tag === "Unavailable") throw new Error(availability.reason)
const server = JSON.parse(fs.readFileSync(path.join(runDir, "server.json"), "utf8")) as Server
const postmaster = Number(fs.readFileSync(path.join(server.dir, "data", "postmaster.pid"), "utf8").split("\n")[0])
console.log(JSON.stringify({ runDir, dir: server.dir, url: server.url, postmaster }))
setInterval(() => {}, 60_000)
