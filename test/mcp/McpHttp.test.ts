/**
 * The MCP server over Streamable HTTP (`effect-resolve mcp --http 0`) in a child process: the official client with
 * the bearer token; a hostile `Origin`, a foreign `Host`, a missing or wrong token refused before anything runs; two
 * clients resolving one action at once (one wins, the other gets a typed tool error, the file is written once); the
 * approval inbox served beside it (`--inbox`), named in results, where a person applies a preview (the file written
 * once, the model's late resolve refused); and one test on the test run's Postgres.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as http from "node:http"
import { postgresForTests, postgresSuiteName } from "../support/pgTest.js"
import { freshSchema } from "../support/postgres.js"
import {
  call,
  editArgs,
  httpClient,
  httpServer,
  idOf,
  pendingOf,
  resolveArgs,
  stdioClient,
  textOf,
  workspace
} from "./support.js"

const pg = await postgresForTests()
const timeout = { timeout: 60_000 }

const initialize = JSON.stringify({
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "probe", version: "1" } }
})

/** One raw POST (node:http, so that the `Host` header is ours to set): status and body. */
const post = (url: string, headers: Record<string, string>) =>
  Effect.promise(() =>
    new Promise<{ status: number; body: string }>((resolve, reject) => {
      const request = http.request(url, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers }
      }, (response) => {
        let body = ""
        response.on("data", (chunk) => body += String(chunk))
        response.on("end", () => resolve({ status: response.statusCode ?? 0, body }))
      })
      request.on("error", reject)
      request.end(initialize)
    })
  )

describe("the MCP server over Streamable HTTP", () => {
  it.live(
    "refuses a hostile Origin (403), a foreign Host (403), a missing or wrong token (401); serves the token",
    () =>
      Effect.scoped(Effect.gen(function*() {
        const ws = yield* workspace()
        const server = yield* httpServer(ws.root, ws.store)
        assert.match(server.url, /^http:\/\/127\.0\.0\.1:\d+\/mcp$/)
        const auth = { authorization: `Bearer ${server.token}` }

        const hostile = yield* post(server.url, { ...auth, origin: "https://evil.example" })
        assert.strictEqual(hostile.status, 403)
        assert.include(hostile.body, "evil.example")
        const rebound = yield* post(server.url, { ...auth, host: "attacker.example" })
        assert.strictEqual(rebound.status, 403)
        const missing = yield* post(server.url, {})
        assert.strictEqual(missing.status, 401)
        assert.include(missing.body, "Authorization: Bearer")
        const wrong = yield* post(server.url, { authorization: `Bearer ${server.token}x` })
        assert.strictEqual(wrong.status, 401)

        const local = yield* post(server.url, { ...auth, origin: "http://localhost:3000" })
        assert.strictEqual(local.status, 200, local.body)
        assert.include(local.body, "\"effect-resolve\"")
        const client = yield* httpClient(server.url, server.token)
        const { tools } = yield* Effect.promise(() => client.listTools())
        assert.deepStrictEqual(tools.map((t) => t.name), ["edit", "plan", "resolve", "pending"])
      })),
    timeout
  )

  it.live(
    "the token can come from EFFECT_RESOLVE_MCP_TOKEN; it is then not printed",
    () =>
      Effect.scoped(Effect.gen(function*() {
        const ws = yield* workspace()
        const token = "a-token-from-the-environment-0123456789"
        const server = yield* httpServer(ws.root, ws.store, [], { EFFECT_RESOLVE_MCP_TOKEN: token })
        assert.notInclude(server.stderr(), token)
        assert.strictEqual((yield* post(server.url, { authorization: `Bearer ${token}` })).status, 200)
      })),
    timeout
  )

  it.live(
    "two clients resolve one action at once: one applies it, the other gets a typed tool error",
    () =>
      Effect.scoped(Effect.gen(function*() {
        const ws = yield* workspace()
        const server = yield* httpServer(ws.root, ws.store)
        const first = yield* httpClient(server.url, server.token)
        const second = yield* httpClient(server.url, server.token)
        const id = idOf(yield* call(first, "edit", editArgs("a.ts", "hello", "hallo")))
        const [a, b] = yield* Effect.all([
          call(first, "resolve", resolveArgs("apply", "First client.", id)),
          call(second, "resolve", resolveArgs("apply", "Second client.", id))
        ], { concurrency: 2 })
        const results = [a, b]
        const won = results.filter((r) => r.isError !== true)
        const lost = results.filter((r) => r.isError === true)
        assert.lengthOf(won, 1, results.map(textOf).join(" | "))
        assert.lengthOf(lost, 1)
        assert.strictEqual((lost[0]!.structuredContent as { error: string }).error, "PendingActionNotPending")
        assert.include(textOf(lost[0]!), id)
        assert.strictEqual(ws.read("a.ts"), "export const greet = \"hallo\"\n")
        assert.deepStrictEqual(yield* pendingOf(second), [])
      })),
    timeout
  )

  it.live(
    "--inbox serves the approval inbox beside it, and a preview's result names its address",
    () =>
      Effect.scoped(Effect.gen(function*() {
        const ws = yield* workspace()
        const server = yield* httpServer(ws.root, ws.store, ["--inbox", "0"])
        const inbox = /approval inbox at (http:\/\/127\.0\.0\.1:\d+)/.exec(server.stderr())?.[1]
        assert.isDefined(inbox, server.stderr())
        assert.match(server.stderr(), /open http:\/\/127\.0\.0\.1:\d+\/login\?code=\S+ to log in/)
        const client = yield* httpClient(server.url, server.token)
        const preview = yield* call(client, "edit", editArgs("a.ts", "hello", "hey"))
        assert.include(textOf(preview), `A person can also decide it in the approval inbox: ${inbox}`)
        const page = yield* Effect.promise(() => fetch(`${inbox}/`))
        assert.notStrictEqual(page.status, 404)

        // A person logs in with the printed link and applies the preview in the inbox: the file is written once, the
        // action leaves the pending set the model lists, and the model's own resolve of it is a typed tool error.
        const link = /open (http:\/\/127\.0\.0\.1:\d+\/login\?code=\S+) to log in/.exec(server.stderr())![1]!
        const login = yield* Effect.promise(() => fetch(link, { redirect: "manual" }))
        assert.strictEqual(login.status, 303)
        const cookie = (login.headers.get("set-cookie") ?? "").split(";")[0]!
        const id = idOf(preview)
        const decided = yield* Effect.promise(() =>
          fetch(`${inbox}/api/actions/${encodeURIComponent(id)}/decision`, {
            method: "POST",
            headers: { cookie, origin: inbox!, "content-type": "application/json" },
            body: JSON.stringify({ action: "apply", reason: "Looks right to me." })
          })
        )
        const answer = yield* Effect.promise(() => decided.json() as Promise<{ outcome: string; message: string }>)
        assert.strictEqual(decided.status, 200, JSON.stringify(answer))
        assert.strictEqual(answer.outcome, "applied", answer.message)
        assert.strictEqual(ws.read("a.ts"), "export const greet = \"hey\"\n")
        assert.deepStrictEqual(yield* pendingOf(client), [])
        const late = yield* call(client, "resolve", resolveArgs("apply", "The model, too late.", id))
        assert.isTrue(late.isError === true, textOf(late))
        assert.strictEqual(ws.read("a.ts"), "export const greet = \"hey\"\n")
      })),
    timeout
  )
})

describe.skipIf(pg._tag === "Unavailable")(postgresSuiteName("the MCP server on Postgres", pg), () => {
  it.live(
    "--store postgres://...: a preview survives a restart and is resolved by id",
    () =>
      Effect.scoped(Effect.gen(function*() {
        const url = yield* Effect.orDie(freshSchema(pg._tag === "Available" ? pg.url : ""))
        const ws = yield* workspace()
        const id = yield* Effect.scoped(Effect.gen(function*() {
          const { client } = yield* stdioClient(ws.root, url)
          return idOf(yield* call(client, "edit", editArgs("a.ts", "hello", "salut")))
        }))
        const { client } = yield* stdioClient(ws.root, url)
        assert.deepStrictEqual((yield* pendingOf(client)).map((a) => a.id), [id])
        const applied = yield* call(client, "resolve", resolveArgs("apply", "Resolved after a restart.", id))
        assert.notStrictEqual(applied.isError, true, textOf(applied))
        assert.strictEqual(ws.read("a.ts"), "export const greet = \"salut\"\n")
      })),
    timeout
  )
})
