/**
 * `npm start` (scripts/start.ts) does what the README's set-up says: it starts the approval inbox on a SQLite file
 * with a demo agent session, prints a one-time login link that works, and lists the demo session's previews.
 */
import { assert, describe, it } from "@effect/vitest"
import { spawn } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { root } from "../../scripts/readme-examples.js"

describe("npm start", () => {
  it("prints a login link that logs in, and the inbox lists the demo session's previews", async () => {
    const dir = mkdtempSync(join(tmpdir(), "effect-resolve-start-"))
    const child = spawn(process.execPath, ["--import", "tsx", "scripts/start.ts", dir], {
      cwd: root,
      env: { ...process.env, PORT: "0", NO_COLOR: "1" },
      stdio: ["ignore", "pipe", "pipe"]
    })
    try {
      let out = ""
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
      let listed: ReadonlyArray<unknown> = []
      for (let i = 0; i < 100 && listed.length === 0; i++) {
        const response = await fetch(`${origin}/api/actions`, { headers: { cookie: cookie.split(";")[0]! } })
        assert.strictEqual(response.status, 200)
        const body = await response.json() as { readonly items?: ReadonlyArray<unknown> }
        listed = body.items ?? []
        if (listed.length === 0) await new Promise((resolve) => setTimeout(resolve, 200))
      }
      assert.isAtLeast(listed.length, 1, out)
    } finally {
      child.kill("SIGTERM")
      rmSync(dir, { recursive: true, force: true })
    }
  }, 120_000)
})
