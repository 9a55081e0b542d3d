/**
 * A real approval inbox for the tests: `InboxServer` on 127.0.0.1, port 0, over a given store, with the kinds it
 * registers; and `request`, an HTTP client on `node:http` that sends exactly the headers it is given (a `Host` or
 * `Origin` of the test's choosing, which `fetch` would not send).
 */
import { Effect, Exit, Layer, Option, Redacted, Schema, Scope } from "effect"
import * as fs from "node:fs"
import * as http from "node:http"
import { Inbox } from "../../src/inbox/Inbox.js"
import type { Token } from "../../src/inbox/InboxAuth.js"
import { InboxServer, type Options as ServerOptions } from "../../src/inbox/InboxServer.js"
import { ActionKind, PendingStore, ToolResult } from "../../src/index.js"

/** Tokens every inbox test uses: one that decides, one that only reads, one that sees only session `s1`. */
export const tokens = {
  owner: "owner-secret-0123456789abcdef",
  reader: "reader-secret-0123456789abcdef",
  scoped: "scoped-secret-0123456789abcdef"
} as const

export const testTokens: ReadonlyArray<Token> = [
  { name: "ann", secret: Redacted.make(tokens.owner), permission: "decide" },
  { name: "rita", secret: Redacted.make(tokens.reader), permission: "read" },
  { name: "sam", secret: Redacted.make(tokens.scoped), permission: "decide", sessions: ["s1"] }
]

/**
 * A durable kind for the tests: applying appends `<text>` (or the reviewer's amended text) to `log`; its amendment
 * is `{ text }`.
 */
export const noteContract = ActionKind.contract({
  name: "note",
  payload: Schema.Struct({ text: Schema.String }),
  amendment: Schema.Struct({ text: Schema.String.pipe(Schema.maxLength(1000)) })
})

export const noteKind = (log: string) =>
  ActionKind.implement(noteContract, {
    apply: ({ text }, call) =>
      Effect.sync(() => {
        const written = Option.getOrElse(Option.map(call.amendment, (amended) => amended.text), () => text)
        fs.appendFileSync(log, `${written}\n`)
        return ToolResult.text(`Noted ${written} (${call.reason})`)
      })
  })

export interface Running {
  readonly url: string
  readonly port: number
  /** `127.0.0.1:<port>`: the Host header the inbox answers to. */
  readonly host: string
  readonly store: PendingStore.Service
  readonly inbox: Inbox.Service
  readonly server: InboxServer.Service
  readonly close: () => Promise<void>
}

/** Starts an inbox; `close` stops it (and its sessions). */
export const startInbox = async (options: {
  readonly store: Layer.Layer<PendingStore, unknown>
  readonly kinds?: ReadonlyArray<ActionKind.AnyContract>
  readonly server?: ServerOptions
  /** What the kinds need (a workspace and file system for the edit kind). */
  readonly requirements?: Layer.Layer<any, unknown>
}): Promise<Running> => {
  const scope = Effect.runSync(Scope.make())
  const inbox = Inbox.layer({ kinds: options.kinds ?? [], pollInterval: "50 millis", sweepInterval: "200 millis" })
  const layer = InboxServer.layer({ auth: { tokens: testTokens }, ...options.server }).pipe(
    Layer.provideMerge(options.requirements === undefined ? inbox : Layer.provide(inbox, options.requirements)),
    Layer.provideMerge(options.store)
  )
  const context = await Effect.runPromise(
    Layer.buildWithScope(layer as Layer.Layer<InboxServer | Inbox | PendingStore>, scope)
  )
  const server = Effect.runSync(Effect.provide(InboxServer, context))
  return {
    url: server.url,
    port: server.port,
    host: `127.0.0.1:${server.port}`,
    store: Effect.runSync(Effect.provide(PendingStore, context)),
    inbox: Effect.runSync(Effect.provide(Inbox, context)),
    server,
    close: () => Effect.runPromise(Scope.close(scope, Exit.void))
  }
}

export interface Answer {
  readonly status: number
  readonly headers: http.IncomingHttpHeaders
  readonly text: string
  /** The body as JSON (`undefined` when it is not JSON). */
  readonly json: any
}

/**
 * One HTTP request with exactly these headers (a `Host` of 127.0.0.1:<port> and the body's `Content-Length` unless
 * given; `transfer-encoding: chunked` sends the body chunked).
 */
export const request = (
  running: { readonly port: number },
  method: string,
  path: string,
  options: { readonly headers?: Record<string, string>; readonly body?: string | Buffer } = {}
): Promise<Answer> =>
  new Promise((resolve, reject) => {
    const req = http.request({
      host: "127.0.0.1",
      port: running.port,
      method,
      path,
      headers: {
        host: `127.0.0.1:${running.port}`,
        ...(options.body === undefined || options.headers?.["transfer-encoding"] !== undefined ?
          {} :
          { "content-length": String(Buffer.byteLength(options.body)) }),
        ...options.headers
      },
      setHost: false
    }, (res) => {
      const chunks: Array<Buffer> = []
      res.on("data", (chunk: Buffer) => chunks.push(chunk))
      res.on("end", () => {
        const text = Buffer.concat(chunks).toString("utf8")
        let json: unknown
        try {
          json = JSON.parse(text)
        } catch {
          json = undefined
        }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json })
      })
      res.on("error", reject)
    })
    req.on("error", reject)
    if (options.body !== undefined) req.write(options.body)
    req.end()
  })

/** The headers of a bearer-authenticated request (and a JSON body). */
export const bearer = (token: string, json = false): Record<string, string> => ({
  authorization: `Bearer ${token}`,
  ...(json ? { "content-type": "application/json" } : {})
})

/** Posts JSON with a bearer token. */
export const post = (running: { readonly port: number }, path: string, token: string, body: unknown) =>
  request(running, "POST", path, { headers: bearer(token, true), body: JSON.stringify(body) })

/** Gets with a bearer token. */
export const get = (running: { readonly port: number }, path: string, token: string) =>
  request(running, "GET", path, { headers: bearer(token) })
