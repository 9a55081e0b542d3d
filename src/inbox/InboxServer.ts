/**
 * The approval inbox's HTTP server: `InboxApi` served with `HttpApiBuilder` on `@effect/platform-node`'s HTTP
 * server, the page at `/`, and the OpenAPI document at `/openapi.json`.
 *
 * Every request passes these checks, in this order, before it reaches a handler:
 * 1. `Host` is one the inbox answers to (by default `127.0.0.1:<port>`, `localhost:<port>`, `[::1]:<port>`; more
 *    with `allowedHosts`): a DNS-rebinding page gets `HostNotAllowed` (421).
 * 2. Under `/api/`: a valid bearer token or login cookie, else `InboxUnauthorized` (401), whatever the route, id or
 *    body.
 * 3. A state-changing request (not GET, HEAD or OPTIONS): an `Origin` (and `Sec-Fetch-Site`) of the inbox's own
 *    origin, and a cookie request must carry an `Origin`; else `CrossOriginRefused` (403).
 * 4. Its body: at most `maxBodyBytes` by its `Content-Length` (`PayloadTooLarge`, 413, before any of it is read; a
 *    chunked body, whose size is unknown until read, is refused), JSON (`MalformedRequest`, 400), nested at most
 *    `bodyMaxDepth` (64) levels deep (`MalformedRequest`, 400, checked without recursion before anything decodes it).
 *
 * Every response carries a Content-Security-Policy without inline script (`default-src 'none'; script-src 'self';
 * ...`), `X-Content-Type-Options: nosniff`, `Referrer-Policy: no-referrer`, `X-Frame-Options: DENY` and
 * `Cache-Control: no-store`. Every error is typed JSON (`{ _tag, message, ... }`); a failure the inbox did not expect
 * is logged and answered `InternalError` (500), never with a stack trace. The server listens on 127.0.0.1 unless told
 * otherwise.
 *
 * @example
 * ```ts
 * import { Effect, Layer } from "effect"
 * import { Inbox, InboxServer } from "effect-resolve/inbox"
 * import { SqliteStore } from "effect-resolve/sqlite"
 *
 * const ServerLive = InboxServer.layer({ port: 0 }).pipe(
 *   Layer.provide(Inbox.layer({ kinds: [] })),
 *   Layer.provide(SqliteStore.layer({ filename: "agent.db" }))
 * )
 * const program = Effect.gen(function*() {
 *   const server = yield* InboxServer
 *   console.log(`Open ${yield* server.loginLink()}`) // one-time; prints once
 *   return yield* Effect.never
 * }).pipe(Effect.provide(ServerLive))
 * ```
 *
 * @since 0.3.0
 */
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import type * as HttpApp from "@effect/platform/HttpApp"
import * as IncomingMessage from "@effect/platform/HttpIncomingMessage"
import * as HttpServer from "@effect/platform/HttpServer"
import type { ServeError } from "@effect/platform/HttpServerError"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as FiberHandle from "effect/FiberHandle"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import { createServer, type Server as NodeServer } from "node:http"
import {
  boolean,
  checkOptions,
  duration,
  type InvalidOptions,
  type OptionsSpec,
  text,
  wholeNumber
} from "../domain/InvalidOptions.js"
import { addressInUse } from "../internal/addressInUse.js"
import { capText } from "../internal/render.js"
import { tooDeepPath } from "../internal/untrusted.js"
import { Inbox } from "./Inbox.js"
import {
  Authentication,
  bodyMaxDepth,
  ChangedEvent,
  cookieName,
  Counts,
  CrossOriginRefused,
  HostNotAllowed,
  InboxAddressInUse,
  InboxApi,
  InboxUnauthorized,
  InternalError,
  MalformedRequest,
  PayloadTooLarge,
  Reviewer,
  type ReviewerInfo,
  RouteNotFound
} from "./InboxApi.js"
import { InboxAuth, type InvalidInboxConfig, make as makeAuth, type Options as AuthOptions } from "./InboxAuth.js"
import * as Page from "./internal/page.js"

/**
 * @since 0.3.0
 * @category models
 */
export interface Options {
  /** The port (default 0: any free port; the service says which). */
  readonly port?: number | undefined
  /** The address to listen on (default `127.0.0.1`: this machine only). */
  readonly host?: string | undefined
  /**
   * More `Host` values to answer to (`inbox.example.com`, `10.0.0.5:8080`), for an inbox behind a proxy or on
   * another address. The loopback names with the port are always allowed.
   */
  readonly allowedHosts?: ReadonlyArray<string> | undefined
  /** The largest request body, in bytes (default 4 MiB: an amendment can carry a file). */
  readonly maxBodyBytes?: number | undefined
  /** Mark the login cookie `Secure` (set it when the inbox is reached over HTTPS, through a proxy). */
  readonly secureCookie?: boolean | undefined
  /** Who may use it (see `InboxAuth`): without tokens, one is generated at start. */
  readonly auth?: AuthOptions | undefined
  /** How often the event stream sends a keep-alive comment (default 15 seconds). */
  readonly heartbeat?: Duration.DurationInput | undefined
  /**
   * When the server's scope closes, how long a request still in flight may take to finish before its connection is
   * cut (default 2 seconds). Event streams end at once.
   */
  readonly shutdownTimeout?: Duration.DurationInput | undefined
}

const optionsSpec: OptionsSpec = {
  port: wholeNumber(0, 65_535),
  host: text,
  allowedHosts: { schema: Schema.Array(Schema.String), expected: "an array of host names (strings)" },
  maxBodyBytes: wholeNumber(1),
  secureCookie: boolean,
  auth: {
    schema: Schema.Struct({
      tokens: Schema.optional(Schema.UndefinedOr(Schema.Array(Schema.Unknown))),
      loginTtl: Schema.optional(Schema.UndefinedOr(duration.schema)),
      sessionTtl: Schema.optional(Schema.UndefinedOr(duration.schema))
    }),
    expected: "{ tokens?: an array of tokens; loginTtl?: a duration; sessionTtl?: a duration }"
  },
  heartbeat: duration,
  shutdownTimeout: duration
}

/**
 * @since 0.3.0
 * @category tags
 */
export declare namespace InboxServer {
  /**
   * @since 0.3.0
   * @category models
   */
  export interface Service {
    /** Where it listens: `http://127.0.0.1:<port>`. */
    readonly url: string
    readonly port: number
    /** A fresh one-time login link for the token `name` (default: the generated one, or the first that decides). */
    readonly loginLink: (name?: string) => Effect.Effect<string, InvalidInboxConfig>
    /** The token generated at start when none was configured (print its login link once, not the secret). */
    readonly generatedToken: Option.Option<{ readonly name: string; readonly secret: Redacted.Redacted<string> }>
  }
}

/**
 * The running server.
 *
 * @since 0.3.0
 * @category tags
 */
export class InboxServer extends Context.Tag("effect-resolve/inbox/InboxServer")<
  InboxServer,
  InboxServer.Service
>() {
  /**
   * Serves the inbox in context until the layer's scope closes. The options are checked first (`InvalidOptions`
   * names a misspelt key or a bad value, such as a port outside 0–65535).
   *
   * @since 0.3.0
   * @category layers
   */
  static readonly layer = (
    options: Options = {}
  ): Layer.Layer<InboxServer, ServeError | InboxAddressInUse | InvalidInboxConfig | InvalidOptions | Error, Inbox> =>
    Layer.scoped(InboxServer, make(options))
}

// -----------------------------------------------------------------------------------------------------------------
// the checks every request passes
// -----------------------------------------------------------------------------------------------------------------

const contentSecurityPolicy = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'"
].join("; ")

const securityHeaders = {
  "content-security-policy": contentSecurityPolicy,
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
  "cross-origin-opener-policy": "same-origin",
  "cross-origin-resource-policy": "same-origin"
}

type TransportError =
  | HostNotAllowed
  | CrossOriginRefused
  | PayloadTooLarge
  | MalformedRequest
  | RouteNotFound
  | InternalError
  | InboxUnauthorized

const statusOf: Record<TransportError["_tag"], number> = {
  HostNotAllowed: 421,
  CrossOriginRefused: 403,
  PayloadTooLarge: 413,
  MalformedRequest: 400,
  RouteNotFound: 404,
  InternalError: 500,
  InboxUnauthorized: 401
}

const TransportErrorSchema = Schema.Union(
  HostNotAllowed,
  CrossOriginRefused,
  PayloadTooLarge,
  MalformedRequest,
  RouteNotFound,
  InternalError,
  InboxUnauthorized
)
const encodeTransportError = Schema.encodeSync(TransportErrorSchema)

/** A typed error as the JSON response the API's own errors are: encoded by its Schema (an `Option` as null). */
const errorResponse = (error: TransportError) =>
  HttpServerResponse.unsafeJson(encodeTransportError(error), { status: statusOf[error._tag] })

const safeMethods = new Set(["GET", "HEAD", "OPTIONS"])

const unauthorized = () =>
  new InboxUnauthorized({
    message: "Authenticate: send \"Authorization: Bearer <token>\", or open a login link the inbox printed " +
      "(GET /login?code=...) to get a cookie."
  })

const bearerOf = (request: HttpServerRequest.HttpServerRequest): string | undefined => {
  const header = request.headers.authorization
  return header !== undefined && /^bearer /i.test(header) ? header.slice(7).trim() : undefined
}

/**
 * The checks of the module's overview, around the whole app (router, API, page), with the security headers on every
 * response and every unexpected failure answered as typed JSON.
 */
const guard = (
  auth: InboxAuth.Service,
  options: { readonly allowedHosts: ReadonlyArray<string>; readonly maxBodyBytes: number }
) =>
<E, R>(app: HttpApp.Default<E, R>): HttpApp.Default<never, R | HttpServer.HttpServer> =>
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const server = yield* HttpServer.HttpServer
    const port = server.address._tag === "TcpAddress" ? server.address.port : 0
    const hosts = new Set([
      `127.0.0.1:${port}`,
      `localhost:${port}`,
      `[::1]:${port}`,
      ...options.allowedHosts.map((host) => host.toLowerCase())
    ])
    // A refusal before the body is read closes the connection after it: the unread body is never drained, and the
    // socket does not stay busy (a closing server would wait for it).
    const hasBody = request.headers["content-length"] !== undefined ||
      request.headers["transfer-encoding"] !== undefined
    const refuseUnread = (error: TransportError) => {
      const response = errorResponse(error)
      return hasBody ? HttpServerResponse.setHeader(response, "connection", "close") : response
    }
    const host = (request.headers.host ?? "").toLowerCase()
    if (!hosts.has(host)) {
      return refuseUnread(
        new HostNotAllowed({
          host: capText(host, 200),
          message: `This inbox does not answer to the host ${JSON.stringify(host.slice(0, 200))}. Use the address it ` +
            "printed, or add the host to allowedHosts."
        })
      )
    }
    const url = new URL(request.url, "http://x")
    if (url.pathname.startsWith("/api/")) {
      const bearer = bearerOf(request)
      const cookie = request.cookies[cookieName]
      const known = yield* Effect.orElse(
        bearer === undefined ? Effect.fail(undefined) : auth.bearer(Redacted.make(bearer)),
        () => cookie === undefined ? Effect.fail(undefined) : auth.cookie(Redacted.make(cookie))
      ).pipe(Effect.option)
      if (Option.isNone(known)) return refuseUnread(unauthorized())
    }
    if (!safeMethods.has(request.method)) {
      const origin = request.headers.origin
      const site = request.headers["sec-fetch-site"]
      const origins = new Set([...hosts].map((h) => `http://${h}`).concat([...hosts].map((h) => `https://${h}`)))
      const refused = (why: string) =>
        refuseUnread(
          new CrossOriginRefused({
            origin: Option.map(Option.fromNullable(origin), (o) => capText(o, 200)),
            message: `${why}; nothing was changed.`
          })
        )
      if (origin !== undefined && !origins.has(origin.toLowerCase())) {
        return refused(`A request from the origin ${JSON.stringify(origin.slice(0, 200))} may not change anything here`)
      }
      if (site !== undefined && site !== "same-origin" && site !== "none") {
        return refused(`A ${site} request may not change anything here`)
      }
      if (origin === undefined && request.cookies[cookieName] !== undefined && bearerOf(request) === undefined) {
        return refused("A browser request that changes something must say its origin")
      }
      const length = Number(request.headers["content-length"] ?? Number.NaN)
      const tooLarge = () =>
        refuseUnread(
          new PayloadTooLarge({
            limit: options.maxBodyBytes,
            message: `The request body is larger than ${options.maxBodyBytes} bytes; nothing was changed.`
          })
        )
      // Refused before a byte of the body is read (the connection closes after the answer). A body
      // without a length (chunked) is refused too: its size is only known once read.
      if (length > options.maxBodyBytes) return tooLarge()
      if (request.headers["transfer-encoding"] !== undefined) {
        return refuseUnread(
          new MalformedRequest({
            problem: "length",
            message: "Send the request body with a Content-Length header (not chunked)."
          })
        )
      }
      const type = request.headers["content-type"] ?? ""
      if (length > 0 && !type.includes("application/json")) {
        return refuseUnread(
          new MalformedRequest({
            problem: "contentType",
            message: "Send the request body as JSON (Content-Type: application/json)."
          })
        )
      }
      // Read once (its length is known and within the cap); the handler reads the same text again (it is kept).
      const text = yield* Effect.either(
        IncomingMessage.withMaxBodySize(request.text, Option.some(options.maxBodyBytes))
      )
      if (text._tag === "Left") {
        return errorResponse(
          new MalformedRequest({ problem: "unreadable", message: "The request body could not be read; send it again." })
        )
      }
      if (text.right !== "") {
        let body: unknown
        try {
          body = JSON.parse(text.right)
        } catch {
          return errorResponse(
            new MalformedRequest({ problem: "json", message: "The request body is not valid JSON." })
          )
        }
        // Refused before anything decodes it: Schema's decoding and its error messages walk a value recursively,
        // and a body nested thousands of levels deep would overflow the stack (a 500) instead of a typed answer.
        const deep = tooDeepPath(body, bodyMaxDepth)
        if (deep !== undefined) {
          return errorResponse(
            new MalformedRequest({
              problem: "depth",
              message: `The request body nests objects or arrays more than ${bodyMaxDepth} levels deep (at ${
                JSON.stringify(capText(deep.slice(0, 6).join("."), 200))
              }); nothing was changed. Send a flatter body.`
            })
          )
        }
      }
    }
    return yield* app
  }).pipe(
    Effect.catchAllCause((cause) => {
      const failure = Cause.failureOption(cause)
      if (Option.isSome(failure) && (failure.value as { _tag?: unknown })._tag === "RouteNotFound") {
        return Effect.map(HttpServerRequest.HttpServerRequest, (request) =>
          errorResponse(
            new RouteNotFound({
              method: request.method,
              path: capText(new URL(request.url, "http://x").pathname, 200),
              message: "No such route. The API is described at /openapi.json."
            })
          ))
      }
      if (Cause.isInterruptedOnly(cause)) return Effect.interrupt
      return Effect.as(
        Effect.logError("effect-resolve inbox: a request failed unexpectedly", cause),
        errorResponse(new InternalError({ message: "The inbox failed unexpectedly; its log has the details." }))
      )
    }),
    Effect.map(HttpServerResponse.setHeaders(securityHeaders)),
    Effect.map((response) =>
      response.headers["cache-control"] === undefined ?
        HttpServerResponse.setHeader(response, "cache-control", "no-store") :
        response
    )
  )

// -----------------------------------------------------------------------------------------------------------------
// handlers
// -----------------------------------------------------------------------------------------------------------------

const encodeChanged = Schema.encodeSync(ChangedEvent)
const encodeCounts = Schema.encodeSync(Counts)

/** One server-sent event (the data is JSON: it never holds a line break). */
const sse = (event: string, data: unknown) => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`

const handlers = (
  inbox: Inbox.Service,
  auth: InboxAuth.Service,
  options: Options,
  closing: Deferred.Deferred<void>
) => {
  const withReviewer = <A, E, R>(f: (reviewer: ReviewerInfo) => Effect.Effect<A, E, R>) => Effect.flatMap(Reviewer, f)
  const heartbeat = options.heartbeat ?? Duration.seconds(15)

  const actions = HttpApiBuilder.group(InboxApi, "actions", (group) =>
    group
      .handle("list", ({ urlParams }) => withReviewer((reviewer) => inbox.list(reviewer, urlParams)))
      .handle("get", ({ path }) => withReviewer((reviewer) => inbox.get(reviewer, path.id)))
      .handle("decide", ({ path, payload }) => withReviewer((reviewer) => inbox.decide(reviewer, path.id, payload)))
      .handle("decideBatch", ({ payload }) => withReviewer((reviewer) => inbox.decideBatch(reviewer, payload))))

  const events = HttpApiBuilder.group(
    InboxApi,
    "events",
    (group) =>
      group.handle("events", ({ urlParams }) =>
        withReviewer((reviewer) => {
          // Subscribed before the first counts are read, so nothing that changes in between is missed.
          const body = Stream.unwrapScoped(Effect.gen(function*() {
            const changes = yield* inbox.subscribe(reviewer, urlParams.session)
            const counts = yield* inbox.counts(reviewer)
            return Stream.make(`retry: 2000\n${sse("ready", { counts: encodeCounts(counts) })}`).pipe(
              Stream.concat(
                Stream.merge(
                  Stream.map(changes, (event) => sse("changed", encodeChanged(event))),
                  Stream.as(Stream.fromSchedule(Schedule.spaced(heartbeat)), ": keep-alive\n\n"),
                  { haltStrategy: "left" }
                )
              )
            )
          })).pipe(
            Stream.catchAll((error) => Stream.make(sse("error", { _tag: error._tag, message: error.message }))),
            // A live stream never ends on its own: it ends when the server closes, or the close would wait for it.
            Stream.interruptWhen(Deferred.await(closing)),
            Stream.encodeText
          )
          return Effect.succeed(HttpServerResponse.stream(body, {
            contentType: "text/event-stream",
            // `connection: close`: once the stream ends its socket closes too, rather than idling in keep-alive
            // (a closing server would wait for it).
            headers: { "cache-control": "no-store", "x-accel-buffering": "no", connection: "close" }
          }))
        }))
  )

  const cookieOptions = (maxAge: Duration.DurationInput) => ({
    httpOnly: true,
    sameSite: "strict" as const,
    path: "/",
    secure: options.secureCookie === true,
    maxAge
  })

  const session = HttpApiBuilder.group(InboxApi, "session", (group) =>
    group
      .handle("me", () =>
        withReviewer((reviewer) =>
          Effect.succeed({ name: reviewer.name, permission: reviewer.permission, sessions: reviewer.sessions })
        ))
      .handle("logout", () =>
        Effect.gen(function*() {
          const request = yield* HttpServerRequest.HttpServerRequest
          const cookie = request.cookies[cookieName]
          if (cookie !== undefined) {
            yield* auth.logout(Redacted.make(cookie))
          }
          return HttpServerResponse.unsafeSetCookie(
            HttpServerResponse.empty({ status: 204 }),
            cookieName,
            "",
            cookieOptions(Duration.zero)
          )
        })))

  const login = HttpApiBuilder.group(
    InboxApi,
    "login",
    (group) =>
      group.handle(
        "login",
        ({ request, urlParams }) =>
          Effect.map(auth.redeem(urlParams.code), ({ cookie }) =>
            HttpServerResponse.unsafeSetCookie(
              HttpServerResponse.empty({ status: 303, headers: { location: "/" } }),
              cookieName,
              Redacted.value(cookie),
              cookieOptions(Duration.seconds(auth.sessionSeconds))
            )).pipe(
              // A person who opened a used or expired link reads a page that says how to get a new one; a program
              // (no `text/html` in Accept) gets the typed error.
              Effect.catchTag("LoginLinkInvalid", (error) =>
                (request.headers.accept ?? "").includes("text/html") ?
                  Effect.succeed(
                    HttpServerResponse.text(loginLinkInvalidPage, {
                      status: 401,
                      contentType: "text/html; charset=utf-8"
                    })
                  ) :
                  Effect.fail(error))
            )
      )
  )

  const authentication = Layer.succeed(
    Authentication,
    Authentication.of({ bearer: auth.bearer, cookie: auth.cookie })
  )

  return Layer.mergeAll(actions, events, session, login).pipe(Layer.provide(authentication))
}

/** The page a browser gets for a used, expired or unknown login link (no script: the CSP allows none inline). */
const loginLinkInvalidPage = `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>Login link not valid - effect-resolve inbox</title>
<meta name="viewport" content="width=device-width, initial-scale=1"><link rel="stylesheet" href="/inbox.css"></head>
<body><main class="notice">
<h1>This login link cannot be used</h1>
<p>Each login link works once, for a short time. This one was already used, has expired, or was never issued.</p>
<p>To get a new one, ask the process that serves the inbox: <code>npm start</code> prints a fresh link each time it
starts, and a program calls <code>InboxServer.loginLink()</code>. If you already logged in on this browser,
<a href="/">open the inbox</a>.</p>
</main></body>
</html>
`

/**
 * The page's files, at `/`, `/inbox.js` and the modules it imports, `/inbox.css`, `/favicon.svg` (no authentication:
 * the page asks for it).
 */
const pageRoutes = (assets: Page.Assets) =>
  HttpApiBuilder.Router.use((router) =>
    Effect.forEach(assets, ([path, asset]) =>
      router.get(
        path as `/${string}`,
        Effect.map(HttpServerRequest.HttpServerRequest, (request) =>
          request.headers["if-none-match"] === asset.etag ?
            HttpServerResponse.empty({ status: 304, headers: { etag: asset.etag, "cache-control": "no-cache" } }) :
            HttpServerResponse.uint8Array(asset.body, {
              contentType: asset.contentType,
              headers: { etag: asset.etag, "cache-control": "no-cache" }
            }))
      ), { discard: true })
  )

/**
 * Starts the server in the current scope (what `layer` provides).
 *
 * @since 0.3.0
 * @category constructors
 */
export const make = (
  options: Options = {}
): Effect.Effect<
  InboxServer.Service,
  ServeError | InboxAddressInUse | InvalidInboxConfig | InvalidOptions | Error,
  Inbox | Scope.Scope
> =>
  Effect.gen(function*() {
    yield* checkOptions("InboxServer.layer", optionsSpec, options)
    const inbox = yield* Inbox
    const auth = yield* makeAuth(options.auth)
    const assets = yield* Page.load
    const host = options.host ?? "127.0.0.1"
    const maxBodyBytes = options.maxBodyBytes ?? 4 * 1024 * 1024
    const closing = yield* Deferred.make<void>()
    const api = HttpApiBuilder.api(InboxApi).pipe(Layer.provide(handlers(inbox, auth, options, closing)))
    // `HttpApiBuilder.serve`, with the checks around the app itself (a serve middleware runs after the response is
    // sent, too late to refuse a request or to add headers to every response).
    const check = guard(auth, { allowedHosts: options.allowedHosts ?? [], maxBodyBytes })
    const served = Layer.unwrapEffect(Effect.map(HttpApiBuilder.httpApp, (app) => HttpServer.serve(check(app)))).pipe(
      Layer.provide([HttpApiBuilder.Router.Live, HttpApiBuilder.Middleware.layer]),
      Layer.provide(pageRoutes(assets)),
      Layer.provide(HttpApiBuilder.middlewareOpenApi({ path: "/openapi.json" })),
      Layer.provide(api),
      Layer.provideMerge(NodeHttpServer.layer(() => (node = createServer()), { port: options.port ?? 0, host }))
    )
    let node: NodeServer | undefined
    // Made before the server: its finalizer runs after the server's close, and stops the cut-off timer.
    const cutOff = yield* FiberHandle.make<void>()
    const context = yield* Layer.build(served).pipe(
      Effect.mapError((error) => {
        const inUse = addressInUse(error)
        return inUse === undefined ? error : new InboxAddressInUse({ address: inUse })
      })
    )
    // Runs before the server's own finalizer (added with it): the event streams end, so the close does not wait on an
    // open page, and a connection still busy after the grace period is cut (a client that never finishes a request
    // cannot hold the close).
    yield* Effect.addFinalizer(() =>
      Deferred.succeed(closing, undefined).pipe(
        Effect.zipRight(FiberHandle.run(
          cutOff,
          Effect.sleep(options.shutdownTimeout ?? Duration.seconds(2)).pipe(
            Effect.zipRight(Effect.sync(() => node?.closeAllConnections()))
          )
        ))
      )
    )
    const address = Context.get(context, HttpServer.HttpServer).address
    const port = address._tag === "TcpAddress" ? address.port : 0
    const shown = host.includes(":") ? `[${host}]` : host === "0.0.0.0" ? "127.0.0.1" : host
    const url = `http://${shown}:${port}`
    return InboxServer.of({
      url,
      port,
      loginLink: (name) => Effect.map(auth.loginCode(name), (code) => `${url}/login?code=${code}`),
      generatedToken: auth.generated
    })
  })

/**
 * The auth service of a running server is internal; `InboxAuth` is exported for apps that check tokens themselves.
 *
 * @since 0.3.0
 * @category tags
 */
export { InboxAuth }
