/**
 * vitest global setup: prepares the Postgres server of the run (see `test/support/postgres.ts`). With
 * `EFFECT_RESOLVE_PG_URL` set, test files use that server. Otherwise it makes a run directory in which the first
 * test file that needs Postgres starts one (lazily: runs that never touch Postgres start nothing), and stops that
 * server when the run ends (a watchdog does it if the run is killed; leftovers of killed runs are swept first).
 * With `EFFECT_RESOLVE_REQUIRE_PG=1` and neither a URL nor Postgres binaries, the run fails here, before any test.
 */
import type { TestProject } from "vitest/node"
import { findBinaries, makeRunDir, requirePostgres, stopRunServer, sweepLeftovers } from "./postgres.js"

declare module "vitest" {
  export interface ProvidedContext {
    /** The directory in which the run's Postgres server is started lazily ("" with EFFECT_RESOLVE_PG_URL set). */
    readonly pgRunDir: string
  }
}

export default function setup(project: TestProject) {
  const url = process.env.EFFECT_RESOLVE_PG_URL
  if (url !== undefined && url !== "") {
    project.provide("pgRunDir", "")
    return
  }
  if (requirePostgres() && findBinaries() === undefined) {
    throw new Error(
      "EFFECT_RESOLVE_REQUIRE_PG=1 but EFFECT_RESOLVE_PG_URL is not set and no Postgres binaries (initdb, pg_ctl) " +
        "were found: install Debian's postgresql package or run .ci/run"
    )
  }
  sweepLeftovers()
  const runDir = makeRunDir()
  project.provide("pgRunDir", runDir)
  return () => stopRunServer(runDir)
}
