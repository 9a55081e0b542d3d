/**
 * The Postgres server of the bench: `EFFECT_RESOLVE_PG_URL` when set; else, when Debian's binaries exist, a server
 * started in a temp directory with Postgres's default (durable) settings; else the reason there is none.
 *
 * `bench/index.ts` starts one for all its sections (each works in a fresh schema, `freshSchema`), so a run pays for
 * one `initdb` and start, not one per section; a section given none (a file run alone) starts its own
 * (`withPostgres`).
 */
import { type Availability, findBinaries, type Server, startServer, stopServer } from "../test/support/postgres.js"

/** A server to measure on, or why there is none; `stop` stops it if it was started here (else does nothing). */
export interface BenchPostgres {
  readonly postgres: Availability
  readonly stop: () => Promise<void>
}

/** Finds or starts the server (see the module comment). */
export const startPostgres = async (): Promise<BenchPostgres> => {
  const nothing = () => Promise.resolve()
  const fromEnv = process.env.EFFECT_RESOLVE_PG_URL
  if (fromEnv !== undefined && fromEnv !== "") return { postgres: { _tag: "Available", url: fromEnv }, stop: nothing }
  if (findBinaries() === undefined) {
    return {
      postgres: { _tag: "Unavailable", reason: "no EFFECT_RESOLVE_PG_URL and no Postgres binaries (initdb, pg_ctl)" },
      stop: nothing
    }
  }
  let server: Server
  try {
    server = await startServer({ durable: true })
  } catch (error) {
    return {
      postgres: { _tag: "Unavailable", reason: `could not start a server: ${String(error).split("\n")[0]}` },
      stop: nothing
    }
  }
  return { postgres: { _tag: "Available", url: server.url }, stop: () => stopServer(server) }
}

/** Runs `use` on `given` when there is one, else on a server found or started for it alone (stopped after). */
export const withPostgres = async <A>(
  given: Availability | undefined,
  use: (postgres: Availability) => Promise<A>
): Promise<A> => {
  if (given !== undefined) return use(given)
  const own = await startPostgres()
  try {
    return await use(own.postgres)
  } finally {
    await own.stop()
  }
}
