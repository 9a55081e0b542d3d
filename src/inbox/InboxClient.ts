/**
 * A typed client of the approval inbox for other Effect programs: `HttpApiClient` derived from `InboxApi`, so every
 * call's input, result and typed errors are the server's own schemas; and the event stream as a `Stream`.
 *
 * @example
 * ```ts
 * import { FetchHttpClient } from "@effect/platform"
 * import { Effect } from "effect"
 * import { InboxClient } from "effect-resolve/inbox"
 *
 * const program = Effect.gen(function*() {
 *   const inbox = yield* InboxClient.make({ baseUrl: "http://127.0.0.1:7777", token: process.env.INBOX_TOKEN ?? "" })
 *   const page = yield* inbox.actions.list({ urlParams: {} })
 *   for (const action of page.items) console.log(action.id, action.label)
 * }).pipe(Effect.provide(FetchHttpClient.layer))
 * ```
 *
 * @since 0.3.0
 */
import * as HttpApiClient from "@effect/platform/HttpApiClient"
import * as HttpClient from "@effect/platform/HttpClient"
import type { HttpClientError } from "@effect/platform/HttpClientError"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as Effect from "effect/Effect"
import type { ParseError } from "effect/ParseResult"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import { checkOptions, type InvalidOptions, type OptionsSpec } from "../domain/InvalidOptions.js"
import { ChangedEvent, Counts, InboxApi } from "./InboxApi.js"

/**
 * Where the inbox is and the bearer token to use.
 *
 * @since 0.3.0
 * @category models
 */
export interface Options {
  readonly baseUrl: string
  readonly token: Redacted.Redacted<string> | string
}

const isHttpUrl = (text: string): boolean => {
  try {
    const url = new URL(text)
    return url.protocol === "http:" || url.protocol === "https:"
  } catch {
    return false
  }
}

const optionsSpec: OptionsSpec = {
  baseUrl: {
    schema: Schema.String.pipe(Schema.filter(isHttpUrl)),
    expected: "the inbox's address, an http(s) URL such as \"http://127.0.0.1:8080\"",
    required: true
  },
  token: {
    schema: Schema.Union(Schema.String.pipe(Schema.minLength(1)), Schema.declare(Redacted.isRedacted)),
    expected: "a bearer token: a non-empty string, or a Redacted one",
    required: true
  }
}

const eventsSpec: OptionsSpec = {
  ...optionsSpec,
  sessions: { schema: Schema.Array(Schema.String), expected: "an array of session names (strings)" }
}

const authorized = (options: Options) =>
  HttpClient.mapRequest(
    HttpClientRequest.bearerToken(Redacted.isRedacted(options.token) ? Redacted.value(options.token) : options.token)
  )

/**
 * The typed client: `client.actions.list`, `.get`, `.decide`, `.decideBatch`; `client.session.me`, `.logout`.
 * Needs an `HttpClient` (`FetchHttpClient.layer`, or `NodeHttpClient.layerUndici`). The options are checked at run
 * time (`InvalidOptions`: a misspelt key, a `baseUrl` that is not an http(s) URL, an empty token).
 *
 * @since 0.3.0
 * @category constructors
 */
export const make = (options: Options) =>
  Effect.zipRight(
    checkOptions("InboxClient.make", optionsSpec, options),
    Effect.suspend(() =>
      HttpApiClient.make(InboxApi, { baseUrl: options.baseUrl, transformClient: authorized(options) })
    )
  )

/**
 * One server-sent event of `GET /api/events`: `ready` with the counts, or `changed`.
 *
 * @since 0.3.0
 * @category models
 */
export type InboxEvent =
  | { readonly _tag: "ready"; readonly counts: Counts }
  | { readonly _tag: "changed"; readonly event: ChangedEvent }

const Ready = Schema.parseJson(Schema.Struct({ counts: Counts }))
const Changed = Schema.parseJson(ChangedEvent)

/** Splits server-sent event text into `[event, data]` pairs (comments and `retry:` lines are skipped). */
const parseEvents = (text: string): ReadonlyArray<readonly [string, string]> =>
  text.split("\n\n").flatMap((block) => {
    let event = "message"
    const data: Array<string> = []
    for (const line of block.split("\n")) {
      if (line.startsWith("event: ")) event = line.slice(7)
      else if (line.startsWith("data: ")) data.push(line.slice(6))
    }
    return data.length === 0 ? [] : [[event, data.join("\n")] as const]
  })

/**
 * The inbox's event stream, decoded: `ready` first, then `changed` whenever something in the token's sessions (of
 * `sessions`, when given) changes. It ends when the server ends it; retry with `Stream.retry` to follow for good.
 *
 * @since 0.3.0
 * @category constructors
 */
export const events = (
  options: Options & { readonly sessions?: ReadonlyArray<string> | undefined }
): Stream.Stream<InboxEvent, HttpClientError | ParseError | InvalidOptions, HttpClient.HttpClient> =>
  Stream.unwrapScoped(Effect.gen(function*() {
    yield* checkOptions("InboxClient.events", eventsSpec, options)
    const client = HttpClient.filterStatusOk(authorized(options)(yield* HttpClient.HttpClient))
    const url = new URL("/api/events", options.baseUrl)
    for (const session of options.sessions ?? []) url.searchParams.append("session", session)
    const response = yield* client.get(url, { headers: { accept: "text/event-stream" } })
    let buffer = ""
    return response.stream.pipe(
      Stream.decodeText(),
      Stream.mapConcat((chunk) => {
        buffer += chunk
        const end = buffer.lastIndexOf("\n\n")
        if (end === -1) return []
        const complete = buffer.slice(0, end)
        buffer = buffer.slice(end + 2)
        return parseEvents(complete)
      }),
      Stream.mapEffect(([event, data]): Effect.Effect<ReadonlyArray<InboxEvent>, ParseError> =>
        event === "ready" ?
          Effect.map(Schema.decode(Ready)(data), ({ counts }) => [{ _tag: "ready", counts }]) :
          event === "changed" ?
          Effect.map(Schema.decode(Changed)(data), (decoded) => [{ _tag: "changed", event: decoded }]) :
          Effect.succeed([])
      ),
      Stream.flattenIterables
    )
  }))
