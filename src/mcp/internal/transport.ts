/**
 * The transport side of the MCP server: `@effect/ai`'s `McpServer.run` over an RPC protocol that remembers what each
 * client declared when it initialized (`@effect/ai` 0.37 keeps no client capabilities, and its `elicit` cannot tell a
 * client without elicitation from a person who declined), and the HTTP guard of the Streamable HTTP transport: bound
 * to loopback, `Origin` and `Host` checked (DNS rebinding), a bearer token required.
 *
 * @internal
 */
import * as McpServer from "@effect/ai/McpServer"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as RpcServer from "@effect/rpc/RpcServer"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import { timingSafeEqual } from "node:crypto"

/**
 * What each connected client declared in `initialize`, by the RPC protocol's client id (one for stdio; a new one per
 * HTTP request, so none is known over HTTP: the Streamable HTTP transport of `@effect/ai` 0.37 answers each POST
 * with its responses only, and cannot carry a request from the server to the client).
 */
export class ClientCapabilities extends Context.Tag("effect-resolve/mcp/ClientCapabilities")<
  ClientCapabilities,
  ReadonlyMap<number, { readonly elicitation: boolean }>
>() {}

const declaresElicitation = (payload: unknown): boolean => {
  if (typeof payload !== "object" || payload === null) return false
  const capabilities = (payload as { readonly capabilities?: unknown }).capabilities
  return typeof capabilities === "object" && capabilities !== null &&
    typeof (capabilities as { readonly elicitation?: unknown }).elicitation === "object"
}

/**
 * `McpServer`'s server with `registration` (its tools and resources) registered first, then its `run` loop over the
 * protocol in context (`McpServer.layer` forks the loop before anything is registered: a client that connects at
 * once would find no tools). The protocol is wrapped so that each client's `initialize` is recorded in
 * `ClientCapabilities`.
 */
export const layerServer = <E, R>(
  info: { readonly name: string; readonly version: string },
  registration: Layer.Layer<never, E, R>
): Layer.Layer<never, E, Exclude<R, McpServer.McpServer | ClientCapabilities> | RpcServer.Protocol> => {
  const capabilities = new Map<number, { readonly elicitation: boolean }>()
  const recording = Layer.effect(
    RpcServer.Protocol,
    Effect.map(RpcServer.Protocol, (protocol) =>
      RpcServer.Protocol.of({
        ...protocol,
        run: (f) =>
          protocol.run((clientId, message) => {
            if (message._tag === "Request" && message.tag === "initialize") {
              capabilities.set(clientId, { elicitation: declaresElicitation(message.payload) })
            }
            return f(clientId, message)
          })
      }))
  )
  const run = Layer.scopedDiscard(Effect.forkScoped(McpServer.run(info))).pipe(Layer.provide(recording))
  const server = Layer.merge(
    McpServer.McpServer.layer as Layer.Layer<McpServer.McpServer>,
    Layer.succeed(ClientCapabilities, capabilities)
  )
  return Layer.provideMerge(run, registration).pipe(Layer.provide(server)) as any
}

const loopbackHosts = new Set(["127.0.0.1", "localhost", "[::1]"])

/** Whether an `Origin` (or `Host`) names this machine: a loopback name, any port. */
export const isLoopbackOrigin = (origin: string): boolean => {
  try {
    const url = new URL(origin)
    return (url.protocol === "http:" || url.protocol === "https:") && loopbackHosts.has(url.hostname)
  } catch {
    return false
  }
}

const sameSecret = (given: string, expected: string): boolean => {
  const a = Buffer.from(given)
  const b = Buffer.from(expected)
  return a.length === b.length && timingSafeEqual(a, b)
}

const refuse = (status: number, message: string, headers: Record<string, string> = {}) =>
  HttpServerResponse.unsafeJson({ jsonrpc: "2.0", id: null, error: { code: -32000, message } }, {
    status,
    headers
  })

/**
 * The checks every request to the MCP endpoint passes, in order: the `Host` is a loopback name (403), an `Origin`,
 * when sent, is a loopback origin (403: a web page of another site reached this port, DNS rebinding), the bearer
 * token is the server's (401), and only POST is served (405: no server-sent event stream).
 */
export const guard =
  (token: Redacted.Redacted<string>) => <E, R>(app: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>) =>
    Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      const host = request.headers.host
      if (host === undefined || !isLoopbackOrigin(`http://${host}`)) {
        return refuse(
          403,
          `Refused: the Host header ${JSON.stringify(host ?? "")} is not this machine's loopback ` +
            "address. Connect to http://127.0.0.1:<port>/mcp."
        )
      }
      const origin = request.headers.origin
      if (origin !== undefined && !isLoopbackOrigin(origin)) {
        return refuse(
          403,
          `Refused: requests from the origin ${JSON.stringify(origin)} are not accepted (only loopback origins are).`
        )
      }
      const authorization = request.headers.authorization
      const given = authorization !== undefined && /^bearer /i.test(authorization) ?
        authorization.slice(7).trim() :
        undefined
      if (given === undefined || !sameSecret(given, Redacted.value(token))) {
        return refuse(
          401,
          given === undefined ?
            "Unauthorized: send \"Authorization: Bearer <token>\" with the token the server printed at start." :
            "Unauthorized: the bearer token is not this server's. Use the token the server printed at start.",
          { "www-authenticate": "Bearer" }
        )
      }
      if (request.method !== "POST") {
        return refuse(405, "Method not allowed: this server answers POST only (no server-sent event stream).", {
          allow: "POST"
        })
      }
      return yield* app
    })
