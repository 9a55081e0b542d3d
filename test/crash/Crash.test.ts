/**
 * Crash test: a real `node` process stages edits of real files and resolves them on a durable store (a SQLite file,
 * then Postgres), and is killed with SIGKILL at random moments, then restarted on the same store. After every kill
 * the session is opened again (which recovers what the dead process left `resolving`) and checked:
 *
 * - nothing staged is lost: every action the process reported staging is in the store, pending, applied or
 *   discarded (never in conflict);
 * - each action is applied at most once: its marker line appears at most once in each file, and in every file of
 *   the action exactly when the action is applied (all or none);
 * - every file is wholly old or wholly new: it parses as a header followed by marker lines, never a torn write.
 *
 * `npm test` runs a handful of kills per store; `npm run test:long` (LONG=1) at least 200 per store.
 */
import { NodeContext } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Layer, Scope } from "effect"
import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { FileEditPreview } from "../../src/edit.js"
import { PendingActions, PendingStore, ResolveRuntime } from "../../src/index.js"
import { PostgresStore } from "../../src/postgres.js"
import { SqliteStore } from "../../src/sqlite.js"
import { postgresForTests, postgresSuiteName } from "../support/pgTest.js"
import { freshSchema } from "../support/postgres.js"

const LONG = process.env.LONG !== undefined && process.env.LONG !== "" && process.env.LONG !== "0"
const kills = LONG ? 200 : 4
const files = ["a.md", "b.md", "c.md"]
const root = path.resolve(import.meta.dirname, "../..")
const pg = await postgresForTests()

interface Staged {
  readonly marker: string
  readonly files: ReadonlyArray<string>
}

/** Runs the child until it has been up for `lifetime` ms after `ready` (or it ends); returns what it printed. */
const runAndKill = (args: ReadonlyArray<string>, lifetime: number) =>
  new Promise<{ readonly lines: ReadonlyArray<string>; readonly killed: boolean }>((resolve, reject) => {
    const child: ChildProcess = spawn(process.execPath, ["--import", "tsx", "test/support/crashChild.ts", ...args], {
      cwd: root,
      stdio: ["ignore", "pipe", "pipe"]
    })
    let out = ""
    let err = ""
    let timer: NodeJS.Timeout | undefined
    child.stdout!.on("data", (chunk: Buffer) => {
      out += chunk.toString()
      if (timer === undefined && out.includes("ready\n")) timer = setTimeout(() => child.kill("SIGKILL"), lifetime)
    })
    child.stderr!.on("data", (chunk: Buffer) => (err += chunk.toString()))
    child.on("error", reject)
    child.on("exit", (code, signal) => {
      if (timer !== undefined) clearTimeout(timer)
      if (signal !== "SIGKILL") reject(new Error(`the child ended on its own (${code}): ${err}${out.slice(-2000)}`))
      else resolve({ lines: out.split("\n").filter((line) => line !== ""), killed: true })
    })
    setTimeout(() => child.kill("SIGKILL"), 60_000) // never hang the suite
  })

const markersOf = (text: string, file: string): ReadonlyArray<string> => {
  const [header, heading, ...rest] = text.split("\n")
  assert.strictEqual(`${header}\n${heading}`, `# ${file}\nmarkers:`, `${file} lost its header: a torn write?`)
  assert.strictEqual(rest.at(-1), "", `${file} does not end with a line break: a torn write?`)
  const lines = rest.slice(0, -1)
  for (const line of lines) assert.match(line, /^- m\d+-\d+$/, `${file} holds a broken line: ${JSON.stringify(line)}`)
  return lines.map((line) => line.slice(2))
}

/** Opens the session (recovering what a dead process left), and checks the store against the files. */
const check = (store: Layer.Layer<any, unknown>, workspace: string, staged: ReadonlyMap<string, Staged>) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    const context = yield* Layer.buildWithScope(
      ResolveRuntime.durable({ session: "crash", store, kinds: [FileEditPreview.kind] }).pipe(
        Layer.provideMerge(Layer.mergeAll(FileEditPreview.layer({ root: workspace }), NodeContext.layer))
      ),
      scope
    )
    const actions = yield* Effect.flatMap(PendingActions, (p) => p.list).pipe(Effect.provide(context))
    // What a failure message shows of an action: its journal.
    const journals = new Map<string, string>()
    for (const action of actions) {
      if (action.status !== "conflict") continue
      const events = yield* Effect.flatMap(PendingStore, (s) => s.history(action.id)).pipe(Effect.provide(context))
      journals.set(action.id, events.map((e) => `${e.from}→${e.to}(${e.owner ?? "-"})`).join(" "))
    }
    yield* Scope.close(scope, Exit.void)
    const byId = new Map(actions.map((action) => [action.id, action]))
    const markers = new Map(files.map((file) => {
      const found = markersOf(fs.readFileSync(path.join(workspace, file), "utf8"), file)
      assert.strictEqual(new Set(found).size, found.length, `a marker appears twice in ${file}: applied twice`)
      return [file, new Set(found)] as const
    }))
    for (const [id, { files: touched, marker }] of staged) {
      const action = byId.get(id)
      assert.isDefined(action, `staged ${id} is not in the store: lost`)
      assert.include(
        ["pending", "applied", "discarded"],
        action!.status,
        `${id} is ${action!.status}: ${journals.get(id)}; ${JSON.stringify(action!.outcome)}; files: ${
          touched.map((file) => `${file}: ${[...markers.get(file)!].join(" ")}`).join("; ")
        }; marker ${marker}`
      )
      const present = touched.filter((file) => markers.get(file)!.has(marker))
      if (action!.status === "applied") assert.deepStrictEqual(present, touched, `${id} is applied but not written`)
      else assert.deepStrictEqual(present, [], `${id} is ${action!.status} but written to ${present.join(", ")}`)
    }
    return actions.filter((action) => action.status === "applied").length
  })

const crashRun = (
  name: string,
  target: () => Promise<{
    readonly args: ReadonlyArray<string>
    readonly store: Layer.Layer<any, unknown>
    readonly cleanup: () => void
  }>
) =>
  it.live(
    `${name}: ${kills} SIGKILLs at random moments; after each restart nothing is lost or applied twice`,
    () =>
      Effect.gen(function*() {
        const workspace = fs.mkdtempSync(path.join(os.tmpdir(), "effect-resolve-crash-"))
        const { args, cleanup, store } = yield* Effect.promise(target)
        try {
          for (const file of files) fs.writeFileSync(path.join(workspace, file), `# ${file}\nmarkers:\n`)
          const staged = new Map<string, Staged>()
          let applied = 0
          for (let k = 0; k < kills; k++) {
            const lifetime = 20 + Math.floor(Math.random() * 400)
            const { lines } = yield* Effect.promise(() => runAndKill([...args, workspace, String(k + 1)], lifetime))
            for (const line of lines) {
              const [what, id, marker, touched] = line.split(" ")
              if (what === "staged") staged.set(id!, { marker: marker!, files: touched!.split(",") })
              if (what === "error") assert.fail(line)
            }
            applied = yield* check(store, workspace, staged)
          }
          // The runs did something: previews were staged and applied across the kills.
          assert.isAbove(staged.size, 0)
          assert.isAbove(applied, 0)
        } finally {
          fs.rmSync(workspace, { recursive: true, force: true })
          cleanup()
        }
      }),
    LONG ? 3_600_000 : 300_000
  )

describe("crash test", () => {
  crashRun("SQLite file", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "effect-resolve-crash-db-"))
    const filename = path.join(dir, "pending.db")
    return {
      args: ["sqlite", filename],
      store: SqliteStore.layer({ filename }),
      cleanup: () => fs.rmSync(dir, { recursive: true, force: true })
    }
  })
})

describe.skipIf(pg._tag !== "Available")(postgresSuiteName("crash test (Postgres)", pg), () => {
  crashRun("Postgres", async () => {
    const url = pg._tag === "Available" ? await Effect.runPromise(freshSchema(pg.url)) : ""
    return { args: ["postgres", url], store: PostgresStore.layer({ url }), cleanup: () => {} }
  })
})
