/**
 * What the durable pending-set tests share: stores that keep their data from one layer build to the next (memory
 * shared across "restarts", a SQLite file, a Postgres schema), a session opened on one of them in a scope of its own
 * (closing the scope is the process "dying" for the next open), and the "note" kind, which writes to `Notes`.
 */
import { describe } from "@effect/vitest"
import { Context, Effect, Exit, Layer, Ref, Schema, Scope } from "effect"
import { spawnSync } from "node:child_process"
import * as path from "node:path"
import { ActionKind, PendingStore, ResolveRuntime, ResolveTool, ToolResult } from "../../../src/index.js"
import type { Retention } from "../../../src/services/PendingActions.js"
import { makeMemory } from "../../../src/services/PendingStore.js"
import * as PostgresStore from "../../../src/stores/PostgresStore.js"
import * as SqliteStore from "../../../src/stores/SqliteStore.js"
import { postgresSuiteName } from "../../support/pgTest.js"
import { type Availability, freshSchema } from "../../support/postgres.js"

/** Where the "note" kind writes: a service the kind needs, provided to the durable layer. */
export class Notes extends Context.Tag("test/Notes")<Notes, Ref.Ref<ReadonlyArray<string>>>() {}

export const Note = ActionKind.make({
  name: "note",
  payload: Schema.Struct({ text: Schema.String }),
  apply: ({ text }, call) =>
    Effect.flatMap(
      Notes,
      (notes) =>
        Effect.as(
          Ref.update(notes, (all) => [...all, `${text} (${call.reason}, attempt ${call.attempt})`]),
          ToolResult.text(`noted ${text}`)
        )
    ),
  recover: () => Effect.succeed<ActionKind.Recovery>("applied")
})

/** A store that keeps its data from one layer build to the next (a "restart"). */
export interface Reopenable {
  readonly name: string
  readonly skip: string | undefined
  readonly make: () => Effect.Effect<Layer.Layer<PendingStore, unknown>>
}

let files = 0

/** The stores; SQLite files go in `dir`. */
export const reopenable = (pg: Availability, dir: string): ReadonlyArray<Reopenable> => [
  {
    name: "memory",
    skip: undefined,
    make: () => Effect.sync(() => Layer.succeed(PendingStore, makeMemory()))
  },
  {
    name: "sqlite",
    skip: undefined,
    make: () =>
      Effect.sync(() => {
        const filename = path.join(dir, `durable-${++files}.db`)
        return SqliteStore.layer({ filename })
      })
  },
  {
    name: "postgres",
    skip: pg._tag === "Available" ? undefined : pg.reason,
    make: () =>
      pg._tag === "Available" ?
        Effect.map(Effect.orDie(freshSchema(pg.url)), (url) => PostgresStore.layer({ url })) :
        Effect.die("no postgres")
  }
]

/** One suite per store, named `<title>: <store>` (a Postgres suite says why it is skipped). */
export const describeEachStore = (
  title: string,
  pg: Availability,
  dir: string,
  body: (subject: Reopenable) => void
): void => {
  for (const subject of reopenable(pg, dir)) {
    describe.skipIf(subject.skip !== undefined)(
      subject.name === "postgres" ? postgresSuiteName(`${title}: postgres`, pg) : `${title}: ${subject.name}`,
      () => body(subject)
    )
  }
}

/** Opens `session` on `store` in `scope` (closing the scope is the process "dying" for the next open). */
export const open = (
  store: Layer.Layer<PendingStore, unknown>,
  session: string,
  notes: Ref.Ref<ReadonlyArray<string>>,
  retention?: Retention | "keep-all"
) =>
  Effect.flatMap(Scope.make(), (scope) =>
    Effect.map(
      Layer.buildWithScope(
        ResolveRuntime.durable({ session, store, kinds: [Note], ...(retention === undefined ? {} : { retention }) })
          .pipe(Layer.provide(Layer.succeed(Notes, notes))),
        scope
      ),
      (context) => ({
        run: <A, E>(effect: Effect.Effect<A, E, ResolveRuntime.Services | PendingStore | Notes>) =>
          effect.pipe(Effect.provide(context), Effect.provideService(Notes, notes)),
        close: Scope.close(scope, Exit.void)
      })
    ))

export const apply = (id: string | null) => ResolveTool.execute({ action: "apply", reason: "ok", extra: null, id })

/** A pid that is certainly not running: a child that has exited. */
export const deadPid = (): number => {
  const child = spawnSync(process.execPath, ["-e", ""])
  return child.pid!
}
