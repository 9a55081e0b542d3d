/**
 * Every example of the README and docs/ runs as printed: each marked block equals its file under examples/, and the
 * output block under it equals what the file prints (scripts/readme-examples.ts; `npm run readme` rewrites the
 * blocks). The files import the package by name, as a user's code would; tsconfig.json maps the name to src/ (tsx
 * follows the mapping), so they run from the sources with no build (test/layout/Package.test.ts checks the build as
 * a consumer installs it). `examples/real-provider.ts` needs a provider: it runs here against a local emulator of
 * each API.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { execFile } from "node:child_process"
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { promisify } from "node:util"
import { blocks, documents, root, runExample } from "../../scripts/readme-examples.js"
import { postgresForTests } from "../support/pgTest.js"
import { freshSchema } from "../support/postgres.js"
import * as ProviderServer from "../support/ProviderServer.js"

const marked = documents().flatMap((document) =>
  blocks(readFileSync(join(root, document), "utf8")).map((block) => ({ document, ...block }))
)

describe("README and docs/ examples", () => {
  it("the README and docs/ show examples, each a file, each once", () => {
    assert.isAtLeast(marked.length, 8)
    assert.isAtLeast(marked.filter((block) => block.document === "README.md").length, 2)
    assert.strictEqual(new Set(marked.map((block) => block.file)).size, marked.length)
  })

  it("every example is shown, or run by a test below", () => {
    const shown = new Set(marked.map((block) => block.file))
    const own = readFileSync(new URL(import.meta.url), "utf8")
    const missing = readdirSync(join(root, "examples"))
      .filter((name) => name.endsWith(".ts"))
      .map((name) => `examples/${name}`)
      .filter((file) => !shown.has(file) && !own.includes(`"${file}"`))
    assert.deepStrictEqual(missing, [])
  })

  for (const block of marked) {
    it(`${block.file}: ${block.document} shows the file as it is`, () => {
      assert.strictEqual(block.code, readFileSync(join(root, block.file), "utf8"), "run `npm run readme`")
    })
    if (block.output !== undefined) {
      it(`${block.file}: runs and prints what ${block.document} shows`, async () => {
        assert.strictEqual(await runExample(block.file), block.output, "run `npm run readme`")
      }, 120_000)
    }
  }
})

describe("the tour (npm run demo) and its parts", () => {
  const titles = ["1. The core", "2. The producers", "3. The agent loop"]
  const count = (text: string, line: string) => text.split("\n").filter((l) => l === line).length

  it("the demo shows each part's title once, no absolute temp path, no \"(s)\"", async () => {
    const out = await runExample("examples/demo.ts")
    for (const title of titles) assert.strictEqual(count(out, title), 1, title)
    assert.notInclude(out, tmpdir())
    assert.notInclude(out, "(s)")
  }, 120_000)

  const parts = [
    ["examples/core.ts", titles[0]!, "-- 5. Nothing is pending now"],
    [
      "examples/producers.ts",
      titles[1]!,
      "Plan approved: greeting-overhaul. Plan mode is over; implement the plan in PLAN.md."
    ],
    ["examples/agent.ts", titles[2]!, "   same files written either way: yes"]
  ] as const
  for (const [file, title, line] of parts) {
    it(`${file} run alone prints its part`, async () => {
      const out = await runExample(file)
      assert.strictEqual(count(out, title), 1)
      assert.include(out, line)
    }, 120_000)
  }
})

describe("examples/parallel.ts", () => {
  it("three edits in one response, three resolves in the next: two requests for the change, three files", async () => {
    assert.strictEqual(
      await runExample("examples/parallel.ts"),
      "request 1: tool_choice \"auto\"; calls edit, edit, edit\n" +
        "request 2: tool_choice {\"tool\":\"resolve\"}; calls resolve, resolve, resolve\n" +
        "request 3: tool_choice \"auto\"; answer \"Set a, b and c to 2.\"\n" +
        "model requests: 3 (the change took 2)\n" +
        "a.ts: export const a = 2\nb.ts: export const b = 2\nc.ts: export const c = 2\n"
    )
  }, 120_000)
})

describe("examples/durable-resume.ts, run as separate processes", () => {
  it(
    "stages and exits; the next run applies the pending action; the one after finds nothing and cleans up",
    async () => {
      const parent = mkdtempSync(join(tmpdir(), "effect-resolve-durable-resume-"))
      const dir = join(parent, "session")
      const run = async () => {
        const { stdout } = await promisify(execFile)(
          process.execPath,
          ["--import", "tsx", "examples/durable-resume.ts", dir],
          { cwd: root, timeout: 120_000 }
        )
        return stdout.replaceAll(dir, "<dir>")
      }
      try {
        assert.strictEqual(
          await run(),
          "Staged \"Note: ship v0.2\" in <dir>/pending.db; it is pending.\n" +
            "This process exits without resolving it. Run this file again: the next process finds it pending.\n"
        )
        assert.strictEqual(
          await run(),
          "Found \"Note: ship v0.2\" pending, staged by an earlier process; preview \"+ - ship v0.2\"\n" +
            "Appended \"- ship v0.2\" to NOTES.md (Resumed.).\n" +
            "NOTES.md now: \"- ship v0.2\\n\"\n" +
            "Run this file once more: nothing is pending then, and it cleans up.\n"
        )
        assert.strictEqual(
          await run(),
          "Nothing is pending: \"Note: ship v0.2\" is applied.\n" +
            "Removed the session's files; the next run starts over.\n"
        )
        assert.isFalse(existsSync(dir))
      } finally {
        rmSync(parent, { recursive: true, force: true })
      }
    },
    120_000
  )
})

describe("examples/cluster.ts: two runner processes and a client", () => {
  const run = (env: Record<string, string | undefined>) =>
    promisify(execFile)(process.execPath, ["--import", "tsx", "examples/cluster.ts"], {
      cwd: root,
      env: { ...process.env, ...env },
      timeout: 170_000
    })

  it("without EFFECT_RESOLVE_PG_URL it says what it needs and runs nothing", async () => {
    const { stdout } = await run({ EFFECT_RESOLVE_PG_URL: "" })
    assert.strictEqual(
      stdout,
      "This example needs a Postgres server: set EFFECT_RESOLVE_PG_URL=postgres://user@host:port/db and run\n" +
        "it again. Nothing was run.\n"
    )
  }, 60_000)

  it(
    "on the test run's Postgres: runner A dies mid-run, every session finishes on B, each note written once",
    async () => {
      const pg = await postgresForTests()
      if (pg._tag === "Unavailable") return
      const { stdout } = await run({ EFFECT_RESOLVE_PG_URL: await Effect.runPromise(freshSchema(pg.url)) })
      const doc = readFileSync(join(root, "docs/cluster.md"), "utf8")
      const shown = /```text\n(Runner A was killed[\s\S]*?)```/.exec(doc)?.[1]
      assert.strictEqual(stdout, shown, "docs/cluster.md shows what the example prints")
    },
    180_000
  )
})

const runReal = (provider: "openai" | "anthropic", url: string) =>
  promisify(execFile)(process.execPath, ["--import", "tsx", "examples/real-provider.ts", provider], {
    cwd: root,
    env: {
      ...process.env,
      OPENAI_API_KEY: "sk-test",
      ANTHROPIC_API_KEY: "sk-ant-test",
      OPENAI_API_URL: url,
      ANTHROPIC_API_URL: url
    },
    timeout: 120_000
  })

describe("examples/real-provider.ts against a local emulator of each API", () => {
  const script = (format: (reply: ProviderServer.Reply) => ProviderServer.Answer) => (_: unknown, index: number) =>
    format(
      index === 0 ?
        { calls: [{ name: "edit", args: { file: "greet.ts", content: "export const greet = () => 'hi'" } }] } :
        index === 1 ?
        { calls: [{ name: "resolve", args: { action: "apply", reason: "As asked.", extra: null, id: null } }] } :
        { text: "Created greet.ts." }
    )

  it.live("OpenAI: the preview is staged, forced, applied", () =>
    Effect.gen(function*() {
      const server = yield* ProviderServer.start(script((reply) => ProviderServer.openAiResponse("gpt-4.1", reply)))
      const { stdout } = yield* Effect.promise(() => runReal("openai", server.url))
      assert.strictEqual(stdout, "Created greet.ts.\ngreet.ts: export const greet = () => 'hi'\n")
      assert.deepStrictEqual(server.received.map((request) => request.body.tool_choice), [
        "auto",
        { type: "function", name: "resolve" },
        "auto"
      ])
    }).pipe(Effect.scoped), 120_000)

  it.live(
    "Anthropic with extended thinking: the soft path (a reminder, never a forced tool_choice)",
    () =>
      Effect.gen(function*() {
        const server = yield* ProviderServer.start(
          script((reply) => ProviderServer.anthropicMessage("claude-sonnet-4-5", reply))
        )
        const { stdout } = yield* Effect.promise(() => runReal("anthropic", server.url))
        assert.strictEqual(stdout, "Created greet.ts.\ngreet.ts: export const greet = () => 'hi'\n")
        for (const request of server.received) assert.deepStrictEqual(request.body.tool_choice, { type: "auto" })
      }).pipe(Effect.scoped),
    120_000
  )
})
