/**
 * `npm start` (scripts/start.ts) does what the README's set-up says: it starts the approval inbox on a SQLite file
 * with a demo agent session, prints a one-time login link that works, and lists the demo session's previews; a
 * reviewer's decision reaches the session's model at once (it waits with `TurnDriver.awaitDecision`).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Scope } from "effect"
import { spawn, spawnSync } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { createServer } from "node:net"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { root } from "../../scripts/readme-examples.js"
import * as ProviderServer from "../support/ProviderServer.js"

/** Runs scripts/start.ts over `dir` until the inbox lists `atLeast` previews; returns what it printed and them. */
const startAndList = async (
  env: Record<string, string>,
  dir?: string,
  atLeast = 1,
  then?: (running: { readonly origin: string; readonly cookie: string; readonly out: () => string }) => Promise<void>
) => {
  const own = dir === undefined
  const data = dir ?? mkdtempSync(join(tmpdir(), "effect-resolve-start-"))
  const child = spawn(process.execPath, ["--import", "tsx", "scripts/start.ts", data], {
    cwd: root,
    env: { ...process.env, OPENAI_API_KEY: "", ANTHROPIC_API_KEY: "", PORT: "0", ...env, NO_COLOR: "1" },
    stdio: ["ignore", "pipe", "pipe"]
  })
  let out = ""
  try {
    child.stdout.on("data", (chunk) => (out += String(chunk)))
    child.stderr.on("data", (chunk) => (out += String(chunk)))
    const link = await new Promise<string>((resolve, reject) => {
      const timer = setInterval(() => {
        const match = /(http:\/\/127\.0\.0\.1:\d+\/\S+)/.exec(out)
        if (match !== null) {
          clearInterval(timer)
          resolve(match[1]!)
        }
        if (child.exitCode !== null) {
          clearInterval(timer)
          reject(new Error(`npm start exited with ${child.exitCode}:\n${out}`))
        }
      }, 100)
    })
    const login = await fetch(link, { redirect: "manual" })
    assert.strictEqual(login.status, 303, out)
    const cookie = login.headers.get("set-cookie") ?? ""
    assert.match(cookie, /HttpOnly/i)
    const origin = new URL(link).origin
    // The demo session stages its previews on its first turn: wait until the inbox lists them.
    let listed: ReadonlyArray<{ readonly id: string; readonly label: string }> = []
    for (let i = 0; i < 100 && listed.length < atLeast; i++) {
      const response = await fetch(`${origin}/api/actions`, { headers: { cookie: cookie.split(";")[0]! } })
      assert.strictEqual(response.status, 200)
      const body = await response.json() as {
        readonly items?: ReadonlyArray<{ readonly id: string; readonly label: string }>
      }
      listed = body.items ?? []
      if (listed.length < atLeast) await new Promise((resolve) => setTimeout(resolve, 200))
    }
    if (then !== undefined) await then({ origin, cookie: cookie.split(";")[0]!, out: () => out })
    return { out, labels: listed.map((item) => item.label), ids: listed.map((item) => item.id).sort() }
  } finally {
    child.kill("SIGTERM")
    await new Promise((resolve) => child.exitCode !== null ? resolve(undefined) : child.once("exit", resolve))
    if (own) rmSync(data, { recursive: true, force: true })
  }
}

describe("npm start", () => {
  it("prints a login link that logs in, and the inbox lists the demo session's previews", async () => {
    const { labels, out } = await startAndList({})
    assert.include(out, "The agent's model: the scripted model")
    assert.isAtLeast(labels.length, 1, out)
  }, 120_000)

  it("a reviewer's apply in the inbox: the waiting session's model is told at once, without a prompt", async () => {
    let told = ""
    const { out } = await startAndList({}, undefined, 2, async ({ cookie, origin, out }) => {
      const list = await fetch(`${origin}/api/actions`, { headers: { cookie } })
      const [first] = (await list.json() as { readonly items: ReadonlyArray<{ readonly id: string }> }).items
      const decided = await fetch(`${origin}/api/actions/${first!.id}/decision`, {
        method: "POST",
        headers: { cookie, origin, "content-type": "application/json" },
        body: JSON.stringify({ action: "apply", reason: "Ship it." })
      })
      assert.strictEqual(decided.status, 200, await decided.text())
      const wanted = `The agent's model was told: A reviewer (owner) applied ${first!.id}:`
      for (let i = 0; i < 100 && !out().includes(wanted); i++) await new Promise((r) => setTimeout(r, 100))
      told = out().split("\n").find((line) => line.startsWith(wanted)) ?? ""
    })
    assert.notStrictEqual(told, "", out)
    // The reviewer's reason, once (the edit's result quotes it).
    assert.strictEqual(told.split("Ship it.").length - 1, 1, told)
  }, 120_000)

  it(
    "a reviewer's response in the inbox: the model is told the message at once, and the preview still waits",
    async () => {
      let told = ""
      let status = ""
      const { out } = await startAndList({}, undefined, 2, async ({ cookie, origin, out }) => {
        const list = await fetch(`${origin}/api/actions`, { headers: { cookie } })
        const [first] = (await list.json() as { readonly items: ReadonlyArray<{ readonly id: string }> }).items
        const answered = await fetch(`${origin}/api/actions/${first!.id}/decision`, {
          method: "POST",
          headers: { cookie, origin, "content-type": "application/json" },
          body: JSON.stringify({ action: "respond", message: "Keep the greeting short." })
        })
        assert.strictEqual(answered.status, 200, await answered.text())
        const wanted = `The agent's model was told: A reviewer (owner) responded about ${first!.id}, which stays ` +
          "pending: Keep the greeting short."
        for (let i = 0; i < 100 && !out().includes(wanted); i++) await new Promise((r) => setTimeout(r, 100))
        told = out().split("\n").find((line) => line.startsWith(wanted)) ?? ""
        const detail = await fetch(`${origin}/api/actions/${first!.id}`, { headers: { cookie } })
        const body = await detail.json() as { readonly status: string }
        status = body.status
      })
      assert.notStrictEqual(told, "", out)
      assert.strictEqual(status, "pending")
    },
    120_000
  )

  it("a restart over the same directory resumes the session: the same previews, none staged again", async () => {
    const dir = mkdtempSync(join(tmpdir(), "effect-resolve-start-"))
    try {
      const first = await startAndList({}, dir, 2)
      assert.strictEqual(first.ids.length, 2, first.out)
      assert.include(first.out, `Database:  ${join(dir, "pending.db")}`)
      assert.include(first.out, "a restart resumes")
      const second = await startAndList({}, dir, 2)
      assert.deepStrictEqual(second.ids, first.ids, second.out)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  }, 180_000)

  it("a second npm start on a port in use says so and how to pick another port, and exits with 1", async () => {
    const dir = mkdtempSync(join(tmpdir(), "effect-resolve-start-"))
    const holder = createServer()
    await new Promise<void>((resolve) => holder.listen(0, "127.0.0.1", resolve))
    const port = (holder.address() as AddressInfo).port
    try {
      const run = spawnSync(process.execPath, ["--import", "tsx", "scripts/start.ts", dir], {
        cwd: root,
        env: { ...process.env, OPENAI_API_KEY: "", ANTHROPIC_API_KEY: "", PORT: String(port), NO_COLOR: "1" },
        encoding: "utf8",
        timeout: 120_000
      })
      const out = run.stdout + run.stderr
      assert.strictEqual(run.status, 1, out)
      assert.include(out, `The inbox cannot listen on 127.0.0.1:${port}: the address is in use (EADDRINUSE)`)
      assert.include(out, `run PORT=${port + 1} npm start`)
      assert.notInclude(out, "ServeError")
    } finally {
      holder.close()
      rmSync(dir, { recursive: true, force: true })
    }
  }, 120_000)

  it("with OPENAI_API_KEY, the session's model is the OpenAI client: its edit is listed in the inbox", async () => {
    const scope = Effect.runSync(Scope.make())
    try {
      const server = await Effect.runPromise(Scope.extend(
        ProviderServer.start((_, index) =>
          ProviderServer.openAiResponse(
            "gpt-4.1",
            index === 0 ?
              {
                calls: [{
                  name: "edit",
                  args: { files: [{ path: "README.md", edits: [{ oldText: "# Demo", newText: "# The demo" }] }] }
                }]
              } :
              { text: "The preview waits for a reviewer." }
          )
        ),
        scope
      ))
      const { labels, out } = await startAndList({ OPENAI_API_KEY: "sk-test", OPENAI_API_URL: server.url })
      assert.include(out, "The agent's model: OpenAI gpt-4.1")
      assert.deepStrictEqual(labels, ["Edit: 1 replacement in 1 file"], out)
      const first = server.received[0]!.body
      assert.strictEqual(first.model, "gpt-4.1")
      assert.includeMembers(first.tools.map((tool: { readonly name: string }) => tool.name), ["edit", "resolve"])
    } finally {
      await Effect.runPromise(Scope.close(scope, Exit.void))
    }
  }, 120_000)
})
