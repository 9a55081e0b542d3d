/**
 * The stores every store test runs against: memory, SQLite (a fresh file per build) and Postgres (a fresh schema
 * per build, when a server is available). Each `layer()` call is a new, empty store.
 */
import { Effect, Layer } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { PendingStore } from "../../src/services/PendingStore.js"
import * as PostgresStore from "../../src/stores/PostgresStore.js"
import * as SqliteStore from "../../src/stores/SqliteStore.js"
import type { Availability } from "../support/postgres.js"
import { freshSchema } from "../support/postgres.js"

export interface Subject {
  readonly name: "memory" | "sqlite" | "postgres"
  /** A fresh, empty store. */
  readonly layer: () => Layer.Layer<PendingStore | PendingStore.Parts, unknown>
  /** Whether it runs (Postgres needs a server); else why not. */
  readonly skipReason: string | undefined
}

/** A temp directory for a test file's SQLite files, removed by `cleanup`. */
export const tempDir = (): { readonly dir: string; readonly cleanup: () => void } => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "effect-resolve-store-"))
  return { dir, cleanup: () => fs.rmSync(dir, { recursive: true, force: true }) }
}

let files = 0

/** The three stores; SQLite files go in `dir`. */
export const subjects = (dir: string, pg: Availability): ReadonlyArray<Subject> => [
  { name: "memory", layer: () => PendingStore.layerMemory, skipReason: undefined },
  {
    name: "sqlite",
    layer: () => SqliteStore.layer({ filename: path.join(dir, `store-${++files}.db`) }),
    skipReason: undefined
  },
  pg._tag === "Available" ?
    {
      name: "postgres",
      layer: () => Layer.unwrapEffect(Effect.map(freshSchema(pg.url), (url) => PostgresStore.layer({ url }))),
      skipReason: undefined
    } :
    { name: "postgres", layer: () => PendingStore.layerMemory, skipReason: pg.reason }
]
