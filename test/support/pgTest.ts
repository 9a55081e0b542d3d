/**
 * The Postgres server for a test file (see `test/support/postgres.ts`): `await postgresForTests()` at the top of
 * the file. Unavailable: the file's Postgres suites skip, named with the reason and a warning printed; unless
 * `EFFECT_RESOLVE_REQUIRE_PG=1`, which makes it throw, failing the file.
 */
import { inject } from "vitest"
import { type Availability, ensureServer, requirePostgres } from "./postgres.js"

let availability: Promise<Availability> | undefined

export const postgresForTests = async (): Promise<Availability> => {
  availability ??= ensureServer(inject("pgRunDir"))
  const result = await availability
  if (result._tag === "Unavailable") {
    if (requirePostgres()) {
      throw new Error(`EFFECT_RESOLVE_REQUIRE_PG=1 but no Postgres server: ${result.reason}`)
    }
    console.warn(
      `Postgres tests SKIPPED: ${result.reason}. Set EFFECT_RESOLVE_PG_URL, or install Debian's postgresql ` +
        "package (initdb, pg_ctl); CI runs .ci/run, which requires them."
    )
  }
  return result
}

/** A suite name that says whether and why it is skipped. */
export const postgresSuiteName = (name: string, availability: Availability): string =>
  availability._tag === "Available" ? name : `${name} (SKIPPED: ${availability.reason})`
