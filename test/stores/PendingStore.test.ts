/**
 * The PendingStore conformance suite (`./conformance.ts`), run against the memory store, SQLite (a temp file) and
 * Postgres (a real server; see test/support/postgres.ts): every part of the store, each test on a fresh, empty store.
 */
import { afterAll } from "vitest"
import { postgresForTests, postgresSuiteName } from "../support/pgTest.js"
import { conformance } from "./conformance.js"
import { subjects, tempDir } from "./subjects.js"

const pg = await postgresForTests()
const tmp = tempDir()
afterAll(() => tmp.cleanup())

for (const subject of subjects(tmp.dir, pg)) {
  conformance({
    name: subject.name === "postgres" ? postgresSuiteName("postgres", pg) : subject.name,
    layer: subject.layer,
    skipReason: subject.skipReason
  })
}
