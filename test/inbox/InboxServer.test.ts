/**
 * The approval inbox's HTTP API against a real server on 127.0.0.1 (port 0), over a shared in-memory store that a
 * durable session of this process stages into: every route, every typed error, tokens and scopes (a missing, wrong
 * or read-only token changes nothing), the Host and Origin checks, the body cap, login links and cookies, the event
 * stream, and the typed client. Paging over 10 000 actions on SQLite and Postgres is in InboxPaging.test.ts.
 */
import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import { afterEach, assert, beforeEach, describe, it } from "@effect/vitest"
import { Cause, type Context, Effect, Exit, Layer, Option, Scope, Stream } from "effect"
import * as fs from "node:fs"
import * as http from "node:http"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import * as InboxClient from "../../src/inbox/InboxClient.js"
import {
  PendingActions,
  PendingStore,
  PendingStoreError,
  ResolveRuntime,
  stageKind,
  ToolResult
} from "../../src/index.js"
import { stage as stageClosureAction } from "../../src/index.js"
import { makeMemory } from "../../src/services/PendingStore.js"
import {
  type Answer,
  bearer,
  get,
  noteKind,
  post,
  request,
  type Running,
  startInbox,
  tokens
} from "../support/inbox.js"

let dir: string
let log: string
let Note: ReturnType<typeof noteKind>
let memory: PendingStore.Service
let running: Running
let scope: Scope.CloseableScope
let session: (name: string) => Promise<Context.Context<ResolveRuntime.Services | PendingStore>>

beforeEach(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "effect-resolve-inbox-"))
  log = path.join(dir, "notes.log")
  fs.writeFileSync(log, "")
  Note = noteKind(log)
  memory = makeMemory()
  const store = Layer.succeed(PendingStore, memory)
  running = await startInbox({ store, kinds: [Note] })
  scope = Effect.runSync(Scope.make())
  const sessions = new Map<string, Context.Context<ResolveRuntime.Services | PendingStore>>()
  // An agent session of this process (another runtime instance than the inbox's): it stages; it stays open.
  session = async (name) => {
    if (!sessions.has(name)) {
      sessions.set(
        name,
        await Effect.runPromise(
          Layer.buildWithScope(
            ResolveRuntime.layerDurable({ session: name, kinds: [Note] }).pipe(Layer.provideMerge(store)),
            scope
          )
        )
      )
    }
    return sessions.get(name)!
  }
})

afterEach(async () => {
  await running.close()
  await Effect.runPromise(Scope.close(scope, Exit.void))
  fs.rmSync(dir, { recursive: true, force: true })
})

const stage = async (
  sessionName: string,
  text: string,
  extra: { readonly preview?: string; readonly expiresIn?: number } = {}
) => {
  const context = await session(sessionName)
  const handle = await Effect.runPromise(Effect.provide(
    stageKind(Note, { text }, {
      label: `Note: ${text}`,
      sourceToolName: "note",
      preview: extra.preview ?? `+ ${text}`,
      ...(extra.expiresIn === undefined ? {} : { expiresIn: extra.expiresIn })
    }),
    context
  ))
  return handle.id
}

const stageClosure = async (sessionName: string, text: string) => {
  const context = await session(sessionName)
  const handle = await Effect.runPromise(Effect.provide(
    stageClosureAction({
      label: `Closure: ${text}`,
      sourceToolName: "edit",
      apply: () => Effect.sync(() => (fs.appendFileSync(log, `closure ${text}\n`), ToolResult.text(`did ${text}`)))
    }),
    context
  ))
  return handle.id
}

const notes = () => fs.readFileSync(log, "utf8")
const statusOf = async (id: string) => Option.getOrThrow(await Effect.runPromise(memory.get(id))).status
const decisionsOf = (id: string) => Effect.runPromise(memory.decisions(id))

/** A typed error answer: its status, tag, a message, and the structured fields given (as JSON). */
const expectError = (answer: Answer, status: number, tag: string, fields: Record<string, unknown> = {}) => {
  assert.strictEqual(answer.status, status, answer.text)
  assert.strictEqual(answer.json?._tag, tag, answer.text)
  for (const [key, value] of Object.entries(fields)) assert.deepStrictEqual(answer.json?.[key], value, answer.text)
  assert.isString(answer.json?.message)
  assert.notInclude(answer.text, "    at ", "no stack trace")
}

describe("authentication comes first", () => {
  it("no token, a wrong token: 401 on every API route, whether or not the id exists; nothing changes", async () => {
    const id = await stage("s1", "a")
    const routes: ReadonlyArray<[string, string, string | undefined]> = [
      ["GET", "/api/actions", undefined],
      ["GET", `/api/actions/${id}`, undefined],
      ["GET", "/api/actions/pa_unknown", undefined],
      ["POST", `/api/actions/${id}/decision`, JSON.stringify({ action: "apply", reason: "x" })],
      ["POST", "/api/actions/pa_unknown/decision", "not even json"],
      ["POST", "/api/decisions", JSON.stringify({ decisions: [{ id, action: "discard", reason: "x" }] })],
      ["GET", "/api/events", undefined],
      ["GET", "/api/me", undefined],
      ["POST", "/api/logout", undefined],
      ["GET", "/api/nothing-here", undefined]
    ]
    const bodies = new Set<string>()
    for (const [method, route, body] of routes) {
      for (const headers of [{}, bearer("wrong-token-0123456789"), { cookie: "effect_resolve_inbox=forged" }]) {
        const answer = await request(running, method, route, {
          headers: { ...headers, ...(body === undefined ? {} : { "content-type": "application/json" }) },
          ...(body === undefined ? {} : { body })
        })
        expectError(answer, 401, "InboxUnauthorized")
        bodies.add(answer.text)
      }
    }
    // One answer for all: nothing tells a known id from an unknown one.
    assert.strictEqual(bodies.size, 1)
    // A large body is refused as unauthenticated, not read.
    expectError(
      await request(running, "POST", `/api/actions/${id}/decision`, {
        headers: { "content-type": "application/json" },
        body: "x".repeat(5 * 1024 * 1024)
      }),
      401,
      "InboxUnauthorized"
    )
    assert.strictEqual(await statusOf(id), "pending")
    assert.deepStrictEqual(await decisionsOf(id), [])
    assert.strictEqual(notes(), "")
  })

  it("the page, its files and the OpenAPI document need no token; they carry the security headers", async () => {
    const page = await request(running, "GET", "/")
    assert.strictEqual(page.status, 200)
    assert.include(page.headers["content-type"], "text/html")
    // No inline script: every <script> has a src, and the policy allows only this origin's files.
    assert.deepStrictEqual(page.text.match(/<script[^>]*>/g), ["<script type=\"module\" src=\"/inbox.js\">"])
    const csp = page.headers["content-security-policy"] as string
    assert.include(csp, "script-src 'self'")
    assert.include(csp, "default-src 'none'")
    assert.notInclude(csp, "unsafe-inline")
    assert.strictEqual(page.headers["x-content-type-options"], "nosniff")
    assert.strictEqual(page.headers["referrer-policy"], "no-referrer")
    assert.strictEqual(page.headers["x-frame-options"], "DENY")
    const script = await request(running, "GET", "/inbox.js")
    // The script and every module it imports: served from this origin, none writing markup.
    const imported = [...script.text.matchAll(/^import .* from "\.\/([a-z]+\.js)"$/gm)].map((m) => m[1])
    assert.deepStrictEqual(imported.sort(), ["common.js", "editor.js", "filters.js", "format.js"])
    for (
      const [path, module] of [
        ["/inbox.js", script],
        ...await Promise.all(
          imported.map(async (name) => [`/${name}`, await request(running, "GET", `/${name}`)] as const)
        )
      ] as const
    ) {
      assert.strictEqual(module.status, 200, path)
      assert.include(module.headers["content-type"], "text/javascript", path)
      assert.notInclude(module.text, "innerHTML", path)
      assert.notInclude(module.text, "insertAdjacentHTML", path)
    }
    assert.strictEqual((await request(running, "GET", "/inbox.css")).status, 200)
    const again = await request(running, "GET", "/inbox.js", {
      headers: { "if-none-match": script.headers.etag as string }
    })
    assert.strictEqual(again.status, 304)
    const spec = await request(running, "GET", "/openapi.json")
    assert.strictEqual(spec.status, 200)
    assert.deepStrictEqual(Object.keys(spec.json.paths).sort(), [
      "/api/actions",
      "/api/actions/{id}",
      "/api/actions/{id}/decision",
      "/api/decisions",
      "/api/events",
      "/api/logout",
      "/api/me",
      "/login"
    ])
    assert.deepStrictEqual(Object.keys(spec.json.components.securitySchemes).sort(), ["bearer", "cookie"])
    assert.strictEqual(spec.json.paths["/api/actions/{id}/decision"].post.responses["409"] !== undefined, true)
    expectError(await request(running, "GET", "/no/such/page?x=1"), 404, "RouteNotFound", {
      method: "GET",
      path: "/no/such/page"
    })
  })
})

describe("the Host and Origin checks", () => {
  it("a Host the inbox does not answer to gets 421, even with a valid token; localhost names work", async () => {
    for (const host of ["evil.example", "evil.example:80", `127.0.0.1:${running.port + 1}`, "", "127.0.0.1"]) {
      expectError(
        await request(running, "GET", "/api/actions", { headers: { ...bearer(tokens.owner), host } }),
        421,
        "HostNotAllowed",
        { host }
      )
      expectError(await request(running, "GET", "/", { headers: { host } }), 421, "HostNotAllowed", { host })
    }
    for (const host of [`localhost:${running.port}`, `LOCALHOST:${running.port}`, `[::1]:${running.port}`]) {
      assert.strictEqual(
        (await request(running, "GET", "/api/me", { headers: { ...bearer(tokens.owner), host } })).status,
        200
      )
    }
  })

  it("allowedHosts adds names the inbox answers to", async () => {
    const other = await startInbox({
      store: Layer.succeed(PendingStore, memory),
      server: { allowedHosts: ["inbox.example.com"] }
    })
    try {
      const answer = await request(other, "GET", "/api/me", {
        headers: { ...bearer(tokens.owner), host: "inbox.example.com" }
      })
      assert.strictEqual(answer.status, 200)
      expectError(
        await request(other, "GET", "/api/me", { headers: { ...bearer(tokens.owner), host: "evil.example" } }),
        421,
        "HostNotAllowed"
      )
    } finally {
      await other.close()
    }
  })

  it("a cross-origin POST is refused and changes nothing; the inbox's own origin is accepted", async () => {
    const id = await stage("s1", "a")
    const body = JSON.stringify({ action: "apply", reason: "Cross-site." })
    const refusals: ReadonlyArray<Record<string, string>> = [
      { origin: "https://evil.example" },
      { origin: "null" },
      { origin: `http://127.0.0.1:${running.port + 1}` },
      { origin: `http://127.0.0.1:${running.port}`, "sec-fetch-site": "cross-site" },
      { "sec-fetch-site": "same-site" }
    ]
    for (const headers of refusals) {
      expectError(
        await request(running, "POST", `/api/actions/${id}/decision`, {
          headers: { ...bearer(tokens.owner, true), ...headers },
          body
        }),
        403,
        "CrossOriginRefused",
        { origin: headers.origin ?? null }
      )
    }
    // A cookie request must say its origin (a browser always does).
    const cookie = await login()
    expectError(
      await request(running, "POST", `/api/actions/${id}/decision`, {
        headers: { cookie, "content-type": "application/json" },
        body
      }),
      403,
      "CrossOriginRefused"
    )
    assert.strictEqual(await statusOf(id), "pending")
    assert.deepStrictEqual(await decisionsOf(id), [])
    const same = await request(running, "POST", `/api/actions/${id}/decision`, {
      headers: {
        cookie,
        "content-type": "application/json",
        origin: `http://127.0.0.1:${running.port}`,
        "sec-fetch-site": "same-origin"
      },
      body: JSON.stringify({ action: "apply", reason: "Same origin." })
    })
    assert.strictEqual(same.status, 200, same.text)
    assert.strictEqual(same.json.outcome, "applied")
    assert.strictEqual(notes(), "a\n")
  })
})

/** Logs in with a fresh login link; returns the cookie header to send. */
const login = async () => {
  const link = new URL(await Effect.runPromise(running.server.loginLink("ann")))
  const answer = await request(running, "GET", `${link.pathname}${link.search}`)
  assert.strictEqual(answer.status, 303)
  const setCookie = (answer.headers["set-cookie"] ?? [])[0]!
  return setCookie.split(";")[0]!
}

describe("start", () => {
  it("a second inbox on a port in use fails with InboxAddressInUse, naming the address and how to pick another", async () => {
    const failure = await startInbox({ store: Layer.succeed(PendingStore, memory), server: { port: running.port } })
      .then(async (second) => {
        await second.close()
        return undefined
      }, (error: unknown) => error)
    assert.isDefined(failure, "the second inbox started on a port in use")
    const text = `${(failure as Error).name}: ${(failure as Error).message}`
    assert.include(text, "InboxAddressInUse")
    assert.include(text, `The inbox cannot listen on 127.0.0.1:${running.port}: the address is in use (EADDRINUSE)`)
    assert.include(text, "InboxServer.layer's `port` option")
    // The first inbox still answers.
    assert.strictEqual((await request(running, "GET", "/api/me", { headers: bearer(tokens.owner) })).status, 200)
  })
})

describe("login links and cookies", () => {
  it("a login link works once and sets an HttpOnly, SameSite=Strict cookie that authenticates; logout ends it", async () => {
    const link = new URL(await Effect.runPromise(running.server.loginLink()))
    assert.strictEqual(link.origin, running.url)
    const first = await request(running, "GET", `${link.pathname}${link.search}`)
    assert.strictEqual(first.status, 303)
    assert.strictEqual(first.headers.location, "/")
    const [setCookie] = first.headers["set-cookie"] ?? []
    assert.match(setCookie!, /^effect_resolve_inbox=[A-Za-z0-9_-]{43};/)
    assert.include(setCookie!, "HttpOnly")
    assert.include(setCookie!, "SameSite=Strict")
    assert.include(setCookie!, "Path=/")
    const cookie = setCookie!.split(";")[0]!
    const me = await request(running, "GET", "/api/me", { headers: { cookie } })
    assert.deepStrictEqual(me.json, { name: "ann", permission: "decide", sessions: null })
    // Used once: the second time it is refused.
    expectError(await request(running, "GET", `${link.pathname}${link.search}`), 401, "LoginLinkInvalid")
    expectError(await request(running, "GET", "/login?code=made-up"), 401, "LoginLinkInvalid")
    // A person (a browser asks for HTML) reads a page that says how to get a new link, not the JSON error.
    const page = await request(running, "GET", `${link.pathname}${link.search}`, {
      headers: { accept: "text/html,application/xhtml+xml,*/*;q=0.8" }
    })
    assert.strictEqual(page.status, 401)
    assert.match(String(page.headers["content-type"]), /^text\/html/)
    assert.include(page.text, "This login link cannot be used")
    assert.include(page.text, "npm start</code> prints a fresh link")
    assert.notInclude(page.text, "LoginLinkInvalid")
    assert.include(String(page.headers["content-security-policy"]), "default-src 'none'")
    assert.isUndefined(page.headers["set-cookie"])
    const out = await request(running, "POST", "/api/logout", {
      headers: { cookie, origin: running.url }
    })
    assert.strictEqual(out.status, 204)
    assert.include((out.headers["set-cookie"] ?? [])[0], "Max-Age=0")
    expectError(await request(running, "GET", "/api/me", { headers: { cookie } }), 401, "InboxUnauthorized")
  })

  it("a login link names a token; an unknown name is refused", async () => {
    const link = new URL(await Effect.runPromise(running.server.loginLink("rita")))
    const answer = await request(running, "GET", `${link.pathname}${link.search}`)
    const cookie = (answer.headers["set-cookie"] ?? [])[0]!.split(";")[0]!
    assert.deepStrictEqual((await request(running, "GET", "/api/me", { headers: { cookie } })).json, {
      name: "rita",
      permission: "read",
      sessions: null
    })
    const exit = await Effect.runPromiseExit(running.server.loginLink("nobody"))
    assert.isTrue(Exit.isFailure(exit))
  })
})

describe("listing and reading", () => {
  it("lists the pending actions of every session, most recent first, with counts; filters and pages", async () => {
    const a = await stage("s1", "a")
    const b = await stage("s2", "b")
    const c = await stage("s1", "c")
    const list = await get(running, "/api/actions", tokens.owner)
    assert.strictEqual(list.status, 200)
    assert.deepStrictEqual(list.json.items.map((item: any) => item.id), [c, b, a])
    assert.deepStrictEqual(list.json.counts, {
      pending: 3,
      requested: 0,
      snoozed: 0,
      resolving: 0,
      orphaned: 0,
      conflict: 0
    })
    const first = list.json.items[0]
    assert.deepStrictEqual(
      [first.session, first.kind, first.label, first.status, first.runsHere, first.amendable, first.snoozedUntil],
      ["s1", "note", "Note: c", "pending", true, true, null]
    )
    assert.deepStrictEqual(
      (await get(running, "/api/actions?session=s2", tokens.owner)).json.items.map((i: any) => i.id),
      [b]
    )
    assert.deepStrictEqual(
      (await get(running, "/api/actions?session=s1&session=s2&limit=2", tokens.owner)).json.items.map((i: any) => i.id),
      [c, b]
    )
    const one = await get(running, "/api/actions?limit=1", tokens.owner)
    const next = await get(running, `/api/actions?limit=1&cursor=${encodeURIComponent(one.json.next)}`, tokens.owner)
    assert.deepStrictEqual(next.json.items.map((i: any) => i.id), [b])
    assert.deepStrictEqual((await get(running, "/api/actions?kind=other", tokens.owner)).json.items, [])
    assert.deepStrictEqual((await get(running, "/api/actions?status=applied", tokens.owner)).json.items, [])
  })

  it("bad query parameters are typed errors", async () => {
    await stage("s1", "a")
    expectError(await get(running, "/api/actions?cursor=not-a-cursor", tokens.owner), 400, "InvalidQuery")
    expectError(await get(running, "/api/actions?limit=0", tokens.owner), 400, "HttpApiDecodeError")
    expectError(await get(running, "/api/actions?limit=201", tokens.owner), 400, "HttpApiDecodeError")
    expectError(await get(running, "/api/actions?status=unreadable", tokens.owner), 400, "HttpApiDecodeError")
    expectError(await get(running, "/api/actions?snoozed=maybe", tokens.owner), 400, "HttpApiDecodeError")
  })

  it("one action: its preview whole, its diff, history and decisions; an unknown id is 404", async () => {
    const preview = "Nothing is written yet.\n\n--- a/src/x.ts\n+++ b/src/x.ts\n@@ -1,2 +1,2 @@\n keep\n-old\n+new\n"
    const id = await stage("s1", "a", { preview })
    const detail = await get(running, `/api/actions/${id}`, tokens.owner)
    assert.strictEqual(detail.status, 200)
    assert.strictEqual(detail.json.preview, preview)
    assert.deepStrictEqual(detail.json.diff, {
      files: [{
        oldPath: "src/x.ts",
        newPath: "src/x.ts",
        hunks: [{
          header: "@@ -1,2 +1,2 @@",
          lines: [{ op: "context", text: "keep" }, { op: "remove", text: "old" }, { op: "add", text: "new" }]
        }]
      }],
      truncated: false
    })
    assert.deepStrictEqual(detail.json.history.map((e: any) => [e.from, e.to]), [[null, "pending"]])
    assert.deepStrictEqual(detail.json.decisions, [])
    assert.deepStrictEqual(detail.json.amendmentSchema.required, ["text"])
    expectError(await get(running, "/api/actions/pa_nope", tokens.owner), 404, "ActionNotFound")
    // A preview with no diff has none.
    const plain = await stage("s1", "b", { preview: "just text" })
    assert.strictEqual((await get(running, `/api/actions/${plain}`, tokens.owner)).json.diff, null)
  })

  it("a token scoped to session s1 sees only s1: the other session's actions are not found", async () => {
    const mine = await stage("s1", "a")
    const theirs = await stage("s2", "b")
    const list = await get(running, "/api/actions", tokens.scoped)
    assert.deepStrictEqual(list.json.items.map((i: any) => i.id), [mine])
    assert.strictEqual(list.json.counts.pending, 1)
    assert.deepStrictEqual((await get(running, "/api/actions?session=s2", tokens.scoped)).json.items, [])
    expectError(await get(running, `/api/actions/${theirs}`, tokens.scoped), 404, "ActionNotFound")
    expectError(
      await post(running, `/api/actions/${theirs}/decision`, tokens.scoped, { action: "discard", reason: "Not mine." }),
      404,
      "ActionNotFound"
    )
    assert.strictEqual(await statusOf(theirs), "pending")
    assert.deepStrictEqual((await get(running, "/api/me", tokens.scoped)).json, {
      name: "sam",
      permission: "decide",
      sessions: ["s1"]
    })
  })
})

describe("deciding", () => {
  it("apply: recorded, run here exactly once (the kind's apply wrote the note), done; a second decision is refused", async () => {
    const id = await stage("s1", "a")
    const answer = await post(running, `/api/actions/${id}/decision`, tokens.owner, {
      action: "apply",
      reason: "Looks right."
    })
    assert.strictEqual(answer.status, 200, answer.text)
    assert.strictEqual(answer.json.outcome, "applied")
    assert.strictEqual(answer.json.message, "Noted a (Looks right.)")
    assert.strictEqual(answer.json.action.status, "applied")
    assert.deepStrictEqual(
      [
        answer.json.decision.reviewer,
        answer.json.decision.action,
        answer.json.decision.reason,
        answer.json.decision.state
      ],
      ["ann", "apply", "Looks right.", "done"]
    )
    assert.strictEqual(notes(), "a\n")
    assert.strictEqual(await statusOf(id), "applied")
    const again = await post(running, `/api/actions/${id}/decision`, tokens.owner, {
      action: "discard",
      reason: "Too late."
    })
    expectError(again, 409, "ActionNotDecidable")
    assert.strictEqual(again.json.status, "applied")
    assert.strictEqual((await decisionsOf(id)).length, 1)
    // The session that staged it sees it applied.
    const seen = await Effect.runPromise(
      Effect.provide(Effect.flatMap(PendingActions, (p) => p.listOpen), await session("s1"))
    )
    assert.deepStrictEqual(seen, [])
  })

  it("two reviewers deciding the same action at once: one decision is recorded and run once", async () => {
    const id = await stage("s1", "a")
    const answers = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        post(running, `/api/actions/${id}/decision`, tokens.owner, {
          action: i % 2 === 0 ? "apply" : "discard",
          reason: `r${i}`
        }))
    )
    const ok = answers.filter((a) => a.status === 200)
    assert.strictEqual(ok.length, 1, answers.map((a) => a.text).join("\n"))
    for (const answer of answers.filter((a) => a.status !== 200)) {
      assert.include(["DecisionAlreadyRequested", "ActionNotDecidable"], answer.json._tag)
      assert.strictEqual(answer.status, 409)
    }
    assert.strictEqual((await decisionsOf(id)).length, 1)
    assert.include(["a\n", ""], notes())
  })

  it("discard: the kind's reject runs, nothing is written", async () => {
    const id = await stage("s1", "a")
    const answer = await post(running, `/api/actions/${id}/decision`, tokens.owner, {
      action: "discard",
      reason: "Not needed."
    })
    assert.strictEqual(answer.json.outcome, "discarded")
    assert.strictEqual(answer.json.message, "Discarded: Note: a. Reason: Not needed.")
    assert.strictEqual(await statusOf(id), "discarded")
    assert.strictEqual(notes(), "")
  })

  it("a read-only token cannot decide: 403, no decision recorded, nothing applied (single and batch)", async () => {
    const id = await stage("s1", "a")
    expectError(
      await post(running, `/api/actions/${id}/decision`, tokens.reader, { action: "apply", reason: "x" }),
      403,
      "InboxForbidden",
      { permission: "decide" }
    )
    expectError(
      await post(running, `/api/actions/pa_unknown/decision`, tokens.reader, { action: "apply", reason: "x" }),
      403,
      "InboxForbidden"
    )
    expectError(
      await post(running, `/api/actions/${id}/decision`, tokens.reader, { action: "snooze", until: Date.now() + 1000 }),
      403,
      "InboxForbidden"
    )
    expectError(
      await post(running, "/api/decisions", tokens.reader, { decisions: [{ id, action: "apply", reason: "x" }] }),
      403,
      "InboxForbidden"
    )
    expectError(
      await post(running, `/api/actions/${id}/decision`, tokens.reader, { action: "respond", message: "Hi." }),
      403,
      "InboxForbidden"
    )
    assert.deepStrictEqual(await Effect.runPromise(running.store.responses(id)), [])
    assert.strictEqual(await statusOf(id), "pending")
    assert.deepStrictEqual(await decisionsOf(id), [])
    assert.strictEqual((await get(running, "/api/actions?snoozed=only", tokens.owner)).json.items.length, 0)
    assert.strictEqual(notes(), "")
    // It can still read.
    assert.strictEqual((await get(running, `/api/actions/${id}`, tokens.reader)).status, 200)
  })

  it("bad decision input is a typed error and changes nothing", async () => {
    const id = await stage("s1", "a")
    const bad: ReadonlyArray<[unknown, number, string]> = [
      [{ action: "apply" }, 400, "HttpApiDecodeError"],
      [{ action: "apply", reason: "   " }, 400, "HttpApiDecodeError"],
      [{ action: "apply", reason: "x".repeat(4001) }, 400, "HttpApiDecodeError"],
      [{ action: "launch", reason: "x" }, 400, "HttpApiDecodeError"],
      [{ action: "snooze", until: -5 }, 400, "HttpApiDecodeError"],
      [{ action: "respond" }, 400, "HttpApiDecodeError"],
      [{ action: "respond", message: " \n " }, 400, "HttpApiDecodeError"],
      [{ action: "respond", message: "x".repeat(4001) }, 400, "HttpApiDecodeError"],
      [{ action: "respond", message: "\uD800 lone" }, 400, "HttpApiDecodeError"],
      [[], 400, "HttpApiDecodeError"],
      [{ action: "apply", reason: "x", amendment: { text: 42 } }, 422, "AmendmentRejected"],
      [{ action: "apply", reason: "x", amendment: { text: "y".repeat(1001) } }, 422, "AmendmentRejected"]
    ]
    for (const [body, status, tag] of bad) {
      expectError(await post(running, `/api/actions/${id}/decision`, tokens.owner, body), status, tag)
    }
    expectError(
      await request(running, "POST", `/api/actions/${id}/decision`, {
        headers: bearer(tokens.owner, true),
        body: "{not json"
      }),
      400,
      "MalformedRequest",
      { problem: "json" }
    )
    expectError(
      await request(running, "POST", `/api/actions/${id}/decision`, {
        headers: { ...bearer(tokens.owner), "content-type": "text/plain" },
        body: "apply"
      }),
      400,
      "MalformedRequest",
      { problem: "contentType" }
    )
    expectError(
      await request(running, "POST", `/api/actions/${id}/decision`, {
        headers: { ...bearer(tokens.owner, true), "transfer-encoding": "chunked" },
        body: JSON.stringify({ action: "apply", reason: "x" })
      }),
      400,
      "MalformedRequest",
      { problem: "length" }
    )
    const big = JSON.stringify({ action: "apply", reason: "x", amendment: { text: "z".repeat(4 * 1024 * 1024) } })
    const tooLarge = await request(running, "POST", `/api/actions/${id}/decision`, {
      headers: bearer(tokens.owner, true),
      body: big
    })
    expectError(tooLarge, 413, "PayloadTooLarge")
    assert.strictEqual(tooLarge.json.limit, 4 * 1024 * 1024)
    assert.strictEqual(await statusOf(id), "pending")
    assert.deepStrictEqual(await decisionsOf(id), [])
    assert.strictEqual(notes(), "")
  })

  it("edit before apply: the amended text is what apply writes; a kind without an amendment refuses one", async () => {
    const id = await stage("s1", "a")
    const answer = await post(running, `/api/actions/${id}/decision`, tokens.owner, {
      action: "apply",
      reason: "With a fix.",
      amendment: { text: "a, amended" }
    })
    assert.strictEqual(answer.json.outcome, "applied", answer.text)
    assert.strictEqual(notes(), "a, amended\n")
    assert.deepStrictEqual(answer.json.decision.amendment, { text: "a, amended" })
    // A closure (no registered kind) takes no amendment.
    const closure = await stageClosure("s1", "c")
    expectError(
      await post(running, `/api/actions/${closure}/decision`, tokens.owner, {
        action: "apply",
        reason: "x",
        amendment: {}
      }),
      422,
      "AmendmentRejected"
    )
    assert.deepStrictEqual(await decisionsOf(closure), [])
  })

  it("an action only its live stager can run: the decision is recorded for that process, once", async () => {
    const closure = await stageClosure("s1", "c")
    const answer = await post(running, `/api/actions/${closure}/decision`, tokens.owner, {
      action: "apply",
      reason: "Go."
    })
    assert.strictEqual(answer.status, 200, answer.text)
    assert.strictEqual(answer.json.outcome, "requested")
    assert.include(answer.json.message, "Only the process that staged it can run it")
    assert.strictEqual(answer.json.decision.state, "requested")
    assert.strictEqual(answer.json.action.requested.reviewer, "ann")
    assert.strictEqual(await statusOf(closure), "pending")
    assert.strictEqual(notes(), "")
    const list = await get(running, "/api/actions", tokens.owner)
    assert.deepStrictEqual(list.json.counts.requested, 1)
    const again = await post(running, `/api/actions/${closure}/decision`, tokens.owner, {
      action: "discard",
      reason: "No."
    })
    expectError(again, 409, "DecisionAlreadyRequested")
    assert.strictEqual(again.json.reviewer, "ann")
    // What the session's own process reads, to run it (its next turn runs it: test/inbox/SessionPickup.test.ts).
    const waiting = await Effect.runPromise(memory.requestedDecisions({ sessions: ["s1"], limit: 10 }))
    assert.deepStrictEqual(waiting.map((w) => [w.decision.actionId, w.decision.action, w.decision.reason]), [[
      closure,
      "apply",
      "Go."
    ]])
  })

  it("an apply that fails: the decision fails with the message, the action is pending again and can be decided again", async () => {
    fs.rmSync(dir, { recursive: true, force: true }) // the note log's directory is gone: appending fails
    const id = await stage("s1", "a")
    const answer = await post(running, `/api/actions/${id}/decision`, tokens.owner, { action: "apply", reason: "Go." })
    assert.strictEqual(answer.json.outcome, "failed", answer.text)
    assert.include(answer.json.message, "Apply failed")
    assert.strictEqual(answer.json.decision.state, "failed")
    assert.strictEqual(await statusOf(id), "pending")
    fs.mkdirSync(dir, { recursive: true })
    fs.writeFileSync(log, "")
    const retry = await post(running, `/api/actions/${id}/decision`, tokens.owner, {
      action: "apply",
      reason: "Again."
    })
    assert.strictEqual(retry.json.outcome, "applied", retry.text)
    assert.deepStrictEqual((await decisionsOf(id)).map((d) => d.state), ["failed", "done"])
  })

  it("an expired action cannot be decided", async () => {
    const id = await stage("s1", "a", { expiresIn: 1 })
    await new Promise((r) => setTimeout(r, 20))
    const answer = await post(running, `/api/actions/${id}/decision`, tokens.owner, { action: "apply", reason: "Go." })
    expectError(answer, 409, "ActionNotDecidable")
    assert.include(answer.json.message, "expired")
    assert.deepStrictEqual(await decisionsOf(id), [])
  })

  it("not now: hidden from the default list until its time, still pending for the model; back with until null", async () => {
    const id = await stage("s1", "a")
    const other = await stage("s1", "b")
    const until = Date.now() + 60 * 60 * 1000
    const answer = await post(running, `/api/actions/${id}/decision`, tokens.owner, { action: "snooze", until })
    assert.strictEqual(answer.json.outcome, "snoozed")
    assert.strictEqual(answer.json.action.snoozedUntil, until)
    assert.strictEqual(answer.json.decision, null)
    assert.deepStrictEqual((await get(running, "/api/actions", tokens.owner)).json.items.map((i: any) => i.id), [other])
    assert.deepStrictEqual(
      (await get(running, "/api/actions?snoozed=only", tokens.owner)).json.items.map((i: any) => i.id),
      [id]
    )
    assert.strictEqual((await get(running, "/api/actions", tokens.owner)).json.counts.snoozed, 1)
    // For the session it is still pending: it forces resolve as before.
    const open = await Effect.runPromise(
      Effect.provide(Effect.flatMap(PendingActions, (p) => p.listOpen), await session("s1"))
    )
    assert.deepStrictEqual(open.map((a) => [a.id, a.status]), [[other, "pending"], [id, "pending"]])
    const back = await post(running, `/api/actions/${id}/decision`, tokens.owner, { action: "snooze", until: null })
    assert.strictEqual(back.json.outcome, "unsnoozed")
    assert.deepStrictEqual((await get(running, "/api/actions", tokens.owner)).json.items.map((i: any) => i.id), [
      other,
      id
    ])
  })

  it("a batch: each decision answered on its own, in order", async () => {
    const a = await stage("s1", "a")
    const b = await stage("s1", "b")
    const answer = await post(running, "/api/decisions", tokens.owner, {
      decisions: [
        { id: a, action: "apply", reason: "One." },
        { id: "pa_unknown", action: "discard", reason: "Two." },
        { id: a, action: "discard", reason: "Three." },
        { id: b, action: "snooze", until: Date.now() + 60_000 }
      ]
    })
    assert.strictEqual(answer.status, 200, answer.text)
    assert.deepStrictEqual(
      answer.json.results.map((r: any) => [r.id, r.result?.outcome ?? null, r.error?._tag ?? null]),
      [[a, "applied", null], ["pa_unknown", null, "ActionNotFound"], [a, null, "ActionNotDecidable"], [
        b,
        "snoozed",
        null
      ]]
    )
    assert.strictEqual(notes(), "a\n")
    expectError(await post(running, "/api/decisions", tokens.owner, { decisions: [] }), 400, "HttpApiDecodeError")
    expectError(
      await post(running, "/api/decisions", tokens.owner, {
        decisions: Array.from({ length: 101 }, () => ({ id: a, action: "discard", reason: "x" }))
      }),
      400,
      "HttpApiDecodeError"
    )
  })

  it("respond: recorded beside a decision, the action stays pending; a settled action refuses it; batches too", async () => {
    const a = await stage("s1", "a")
    const b = await stage("s1", "b")
    const first = await post(running, `/api/actions/${a}/decision`, tokens.owner, {
      action: "respond",
      message: "Say it louder."
    })
    assert.strictEqual(first.status, 200, first.text)
    assert.deepStrictEqual([first.json.outcome, first.json.action.status, first.json.decision], [
      "responded",
      "pending",
      null
    ])
    const detail = (await get(running, `/api/actions/${a}`, tokens.owner)).json
    assert.deepStrictEqual(
      detail.responses.map((r: any) => [r.reviewer, r.message, r.session, r.deliveredAt]),
      [["ann", "Say it louder.", "s1", null]]
    )
    assert.deepStrictEqual(detail.decisions, [])
    assert.strictEqual(notes(), "", "nothing ran")
    // A batch mixes responses and decisions; a response to a settled action is refused and recorded nowhere.
    const batch = await post(running, "/api/decisions", tokens.owner, {
      decisions: [
        { id: b, action: "respond", message: "One more thing." },
        { id: a, action: "apply", reason: "Fine as it is." },
        { id: a, action: "respond", message: "Too late." }
      ]
    })
    assert.strictEqual(batch.status, 200, batch.text)
    assert.deepStrictEqual(
      batch.json.results.map((r: any) => [r.id, r.result?.outcome ?? null, r.error?._tag ?? null]),
      [[b, "responded", null], [a, "applied", null], [a, null, "ActionNotDecidable"]]
    )
    assert.deepStrictEqual((await Effect.runPromise(running.store.responses(a))).map((r) => r.message), [
      "Say it louder."
    ])
    expectError(
      await post(running, `/api/actions/pa_unknown/decision`, tokens.owner, { action: "respond", message: "Hi." }),
      404,
      "ActionNotFound"
    )
  })

  it("a failing store is a typed 503; an unexpected failure a 500 InternalError; never a stack trace", async () => {
    const id = await stage("s1", "a")
    const broken: PendingStore.Service = {
      ...memory,
      listActions: () =>
        Effect.fail(
          new PendingStoreError({
            operation: "listActions",
            detail: "the database failed (disk I/O error)",
            cause: new Error("io")
          })
        ),
      getActions: () => Effect.die(new Error("secret internals"))
    }
    const failing = await startInbox({ store: Layer.succeed(PendingStore, broken) })
    try {
      const list = await get(failing, "/api/actions", tokens.owner)
      expectError(list, 503, "StoreUnavailable", { operation: "listActions" })
      assert.include(list.json.message, "disk I/O error")
      const detail = await get(failing, `/api/actions/${id}`, tokens.owner)
      expectError(detail, 500, "InternalError")
      assert.notInclude(detail.text, "secret internals")
    } finally {
      await failing.close()
    }
  })
})

describe("bad input never reaches a 500", () => {
  /** `levels` arrays, one inside the other, as JSON text (built as text: the value is never made in this process). */
  const nestedJson = (levels: number) => "[".repeat(levels) + "]".repeat(levels)
  const snoozedIds = async () =>
    (await get(running, "/api/actions?snoozed=only", tokens.owner)).json.items.map((i: any) => i.id)

  it("a body nested 50 000 levels deep in amendment, reason or until: a typed 400 naming where; nothing recorded", async () => {
    const id = await stage("s1", "a")
    const deep = nestedJson(50_000)
    const bodies = [
      `{"action":"apply","reason":"x","amendment":${deep}}`,
      `{"action":"apply","reason":"x","amendment":{"text":${deep}}}`,
      `{"action":"apply","reason":${deep}}`,
      `{"action":"discard","reason":${deep}}`,
      `{"action":"snooze","until":${deep}}`
    ]
    for (const body of bodies) {
      const answer = await request(running, "POST", `/api/actions/${id}/decision`, {
        headers: bearer(tokens.owner, true),
        body
      })
      expectError(answer, 400, "MalformedRequest", { problem: "depth" })
      assert.include(answer.json.message, "more than 64 levels deep")
      assert.include(answer.json.message, JSON.parse(body).action === "snooze" ? "\"until." : "")
    }
    // In a batch too.
    const batch = await request(running, "POST", "/api/decisions", {
      headers: bearer(tokens.owner, true),
      body: `{"decisions":[{"id":"${id}","action":"apply","reason":"x","amendment":${deep}}]}`
    })
    expectError(batch, 400, "MalformedRequest")
    assert.include(batch.json.message, "decisions.0.amendment")
    assert.strictEqual(await statusOf(id), "pending")
    assert.deepStrictEqual(await decisionsOf(id), [])
    assert.deepStrictEqual(await snoozedIds(), [])
    assert.strictEqual(notes(), "")
    // A body at the limit is decoded as usual (a typed decode error here, not a refusal for its depth).
    const atLimit = await request(running, "POST", `/api/actions/${id}/decision`, {
      headers: bearer(tokens.owner, true),
      body: `{"action":"apply","reason":"x","amendment":{"text":${nestedJson(62)}}}`
    })
    expectError(atLimit, 422, "AmendmentRejected")
    // What still applies works.
    const fine = await post(running, `/api/actions/${id}/decision`, tokens.owner, { action: "apply", reason: "Go." })
    assert.strictEqual(fine.json.outcome, "applied", fine.text)
  })

  it("Inbox.decide from code: a deep or ill-typed request is a typed InvalidDecision; nothing recorded", async () => {
    const id = await stage("s1", "a")
    let deep: unknown = 1
    for (let i = 0; i < 50_000; i++) deep = [deep]
    const reviewer = { name: "ann", permission: "decide" as const, sessions: Option.none() }
    const refused = [
      [{ action: "apply", reason: "x", amendment: deep }, "amendment"],
      [{ action: "apply", reason: deep }, "reason"],
      [{ action: "snooze", until: deep }, "until"],
      [{ action: "snooze", until: 8.64e15 + 1 }, "until"],
      [{ action: "snooze", until: 1e300 }, "until"],
      [{ action: "approve", reason: "x" }, "action"],
      [{ action: "apply", reason: "" }, "reason"]
    ] as const
    for (const [request, field] of refused) {
      const exit = await Effect.runPromiseExit(running.inbox.decide(reviewer, id, request as any))
      assert.isTrue(Exit.isFailure(exit), JSON.stringify(field))
      const error = Exit.isFailure(exit) ? Cause.failureOption(exit.cause) : Option.none()
      assert.strictEqual(Option.getOrThrow(error)._tag, "InvalidDecision", String(exit))
      assert.strictEqual((Option.getOrThrow(error) as any).field.split(".")[0], field)
    }
    for (const batch of [{ decisions: "x" }, { decisions: [] }, { decisions: [null] }, null]) {
      const exit = await Effect.runPromiseExit(running.inbox.decideBatch(reviewer, batch as any))
      const error = Exit.isFailure(exit) ? Cause.failureOption(exit.cause) : Option.none()
      assert.strictEqual(Option.getOrThrow(error)._tag, "InvalidDecision", String(exit))
    }
    const batch = await Effect.runPromise(
      running.inbox.decideBatch(reviewer, { decisions: [{ id, action: "snooze", until: 8.64e15 + 1 }] } as any)
    )
    assert.strictEqual(batch.results[0]!.error.pipe(Option.map((e) => e._tag), Option.getOrNull), "InvalidDecision")
    assert.strictEqual(await statusOf(id), "pending")
    assert.deepStrictEqual(await decisionsOf(id), [])
    assert.deepStrictEqual(await snoozedIds(), [])
  })

  it("snooze until past the largest Date (8.64e15 + 1 ms, year 300 000): a typed 400, nothing recorded", async () => {
    const id = await stage("s1", "a")
    for (const until of [8.64e15 + 1, 9_000_000_000_000_000, 300_000 * 365.25 * 86_400_000]) {
      const answer = await post(running, `/api/actions/${id}/decision`, tokens.owner, { action: "snooze", until })
      expectError(answer, 400, "HttpApiDecodeError")
      assert.deepStrictEqual(await snoozedIds(), [])
    }
    const batch = await post(running, "/api/decisions", tokens.owner, {
      decisions: [{ id, action: "snooze", until: 8.64e15 + 1 }]
    })
    expectError(batch, 400, "HttpApiDecodeError")
    assert.include(batch.text, "must be a time a Date holds")
    assert.deepStrictEqual(await snoozedIds(), [])
    // The largest Date itself is a time one may snooze until.
    const last = await post(running, `/api/actions/${id}/decision`, tokens.owner, { action: "snooze", until: 8.64e15 })
    assert.strictEqual(last.json.outcome, "snoozed", last.text)
    assert.include(last.json.message, "+275760-09-13T00:00:00.000Z")
    assert.deepStrictEqual(await snoozedIds(), [id])
    assert.strictEqual(await statusOf(id), "pending")
  })
})

describe("the event stream", () => {
  /** Reads server-sent events until `until` says stop; returns them as [event, data]. */
  const readEvents = (token: string, until: (events: ReadonlyArray<[string, any]>) => boolean, query = "") =>
    new Promise<ReadonlyArray<[string, any]>>((resolve, reject) => {
      const controller = new AbortController()
      const events: Array<[string, any]> = []
      const timer = setTimeout(() => {
        controller.abort()
        reject(new Error(`timed out; got ${JSON.stringify(events)}`))
      }, 10_000)
      fetch(`${running.url}/api/events${query}`, { headers: bearer(token), signal: controller.signal }).then(
        async (response) => {
          assert.strictEqual(response.headers.get("content-type"), "text/event-stream")
          const reader = response.body!.getReader()
          let buffer = ""
          for (;;) {
            const { done, value } = await reader.read()
            if (done) break
            buffer += new TextDecoder().decode(value)
            let end: number
            while ((end = buffer.indexOf("\n\n")) !== -1) {
              const block = buffer.slice(0, end)
              buffer = buffer.slice(end + 2)
              const event = /^event: (.*)$/m.exec(block)?.[1]
              const data = /^data: (.*)$/m.exec(block)?.[1]
              if (event !== undefined && data !== undefined) events.push([event, JSON.parse(data)])
            }
            if (until(events)) {
              clearTimeout(timer)
              controller.abort()
              resolve(events)
              return
            }
          }
        }
      ).catch((error) => {
        if (!controller.signal.aborted) reject(error)
      })
    })

  it("ready with the counts, then every change from any session in scope, with the new summary and counts", async () => {
    await stage("s1", "a")
    const stream = readEvents(
      tokens.owner,
      (events) => events.some(([e, d]) => e === "changed" && d.actions.some((a: any) => a.status === "applied"))
    )
    await new Promise((r) => setTimeout(r, 200))
    const b = await stage("s2", "b")
    await new Promise((r) => setTimeout(r, 200))
    await post(running, `/api/actions/${b}/decision`, tokens.owner, { action: "apply", reason: "Go." })
    const events = await stream
    assert.deepStrictEqual(events[0], ["ready", {
      counts: { pending: 1, requested: 0, snoozed: 0, resolving: 0, orphaned: 0, conflict: 0 }
    }])
    const changed = events.filter(([e]) => e === "changed").map(([, d]) => d)
    const staged = changed.find((d) => d.actions.some((a: any) => a.id === b && a.status === "pending"))
    assert.isDefined(staged)
    assert.strictEqual(staged.counts.pending, 2)
    const applied = changed.at(-1)
    assert.deepStrictEqual(applied.actions.filter((a: any) => a.id === b).map((a: any) => a.status), ["applied"])
    assert.strictEqual(applied.counts.pending, 1)
  })

  it("a scoped token hears only its sessions", async () => {
    const stream = readEvents(tokens.scoped, (events) => events.some(([e]) => e === "changed"))
    await new Promise((r) => setTimeout(r, 200))
    await stage("s2", "other")
    await new Promise((r) => setTimeout(r, 300))
    const mine = await stage("s1", "mine")
    const events = await stream
    const ids = events.filter(([e]) => e === "changed").flatMap(([, d]) => d.actions.map((a: any) => a.id))
    assert.deepStrictEqual(ids, [mine])
  })

  it("closing the inbox ends every open event stream and cuts a stalled request: an open page or a slow client never holds it", async () => {
    const ended = new Promise<string>((resolve, reject) => {
      const req = http.request({
        host: "127.0.0.1",
        port: running.port,
        path: "/api/events",
        headers: { host: running.host, ...bearer(tokens.owner) }
      }, (res) => {
        let body = ""
        res.on("data", (chunk) => (body += String(chunk)))
        res.on("end", () => resolve(body))
        res.on("error", reject)
      })
      req.on("error", reject)
      req.end()
    })
    // Give the stream time to open (its ready event is checked below, once it has ended).
    await new Promise((r) => setTimeout(r, 300))
    // And a request whose body never finishes (it says 100 bytes and sends 10): cut after the grace period.
    const stalled = net.connect(running.port, "127.0.0.1")
    stalled.on("error", () => {})
    const cut = new Promise<void>((resolve) => stalled.once("close", () => resolve()))
    stalled.write(
      `POST /api/decisions HTTP/1.1\r\nHost: ${running.host}\r\nAuthorization: Bearer ${tokens.owner}\r\n` +
        "Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"decisio"
    )
    await new Promise((r) => setTimeout(r, 300))
    const closed = running.close().then(() => "closed" as const)
    const late = new Promise<"still open">((r) => setTimeout(() => r("still open"), 10_000).unref())
    assert.strictEqual(await Promise.race([closed, late]), "closed")
    assert.include(await ended, "event: ready")
    await cut
  })
})

describe("the typed client", () => {
  it("lists, reads and decides with the API's own types; a typed error can be caught by its tag", async () => {
    const id = await stage("s1", "a")
    const program = Effect.gen(function*() {
      const client = yield* InboxClient.make({ baseUrl: running.url, token: tokens.owner })
      const page = yield* client.actions.list({ urlParams: {} })
      assert.deepStrictEqual(page.items.map((item) => item.id), [id])
      assert.isTrue(Option.isNone(page.next))
      const detail = yield* client.actions.get({ path: { id } })
      assert.strictEqual(detail.preview, "+ a")
      const missing = yield* client.actions.get({ path: { id: "pa_nope" } }).pipe(
        Effect.catchTag("ActionNotFound", (error) => Effect.succeed(error.id))
      )
      assert.strictEqual(missing, "pa_nope")
      const result = yield* client.actions.decide({ path: { id }, payload: { action: "apply", reason: "Typed." } })
      assert.strictEqual(result.outcome, "applied")
      assert.strictEqual(Option.getOrThrow(result.decision).reviewer, "ann")
      const me = yield* client.session.me()
      assert.strictEqual(me.name, "ann")
      const reader = yield* InboxClient.make({ baseUrl: running.url, token: tokens.reader })
      const refused = yield* Effect.flip(
        reader.actions.decide({ path: { id }, payload: { action: "discard", reason: "x" } })
      )
      assert.strictEqual(refused._tag, "InboxForbidden")
      const stranger = yield* InboxClient.make({ baseUrl: running.url, token: "wrong-token-0123456789" })
      assert.strictEqual((yield* Effect.flip(stranger.session.me()))._tag, "InboxUnauthorized")
    })
    await Effect.runPromise(program.pipe(Effect.provide(FetchHttpClient.layer)))
    assert.strictEqual(notes(), "a\n")
  })

  it("follows the event stream as a Stream of decoded events", async () => {
    const events = Effect.runPromise(
      InboxClient.events({ baseUrl: running.url, token: tokens.owner }).pipe(
        Stream.take(2),
        Stream.runCollect,
        Effect.provide(FetchHttpClient.layer),
        Effect.timeout("10 seconds")
      )
    )
    await new Promise((r) => setTimeout(r, 300))
    const id = await stage("s1", "a")
    const [ready, changed] = [...await events]
    assert.strictEqual(ready!._tag, "ready")
    assert.strictEqual(changed!._tag, "changed")
    if (changed!._tag === "changed") assert.deepStrictEqual(changed!.event.actions.map((a) => a.id), [id])
  })
})
