/**
 * Who may use the approval inbox. The inbox writes files, so it is a door: every API request carries a bearer
 * token, or the cookie a one-time login link set.
 *
 * - Tokens have a name (recorded as the decision's reviewer), a permission (`read`, or `decide`, which includes
 *   read) and the sessions they see (every session by default). Without configured tokens, one is generated at
 *   start (`owner`, decide, every session), for the app to print once.
 * - A presented token is compared in constant time: its SHA-256 against every configured token's, with
 *   `timingSafeEqual`, without stopping at a match.
 * - A login link's code is used once, within 10 minutes; it starts a cookie session (12 hours) whose value is a
 *   fresh 256-bit secret, kept only as its SHA-256.
 *
 * @example
 * ```ts
 * import { Effect, Redacted } from "effect"
 * import { InboxAuth } from "effect-resolve/inbox"
 *
 * const AuthLive = InboxAuth.layer({
 *   tokens: [
 *     { name: "ann", secret: Redacted.make(process.env.ANN_TOKEN ?? ""), permission: "decide" },
 *     { name: "dashboard", secret: Redacted.make(process.env.DASH_TOKEN ?? ""), permission: "read", sessions: ["ci"] }
 *   ]
 * })
 * ```
 *
 * @since 0.3.0
 */
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import { createHash, randomBytes, timingSafeEqual } from "node:crypto"
import { InboxUnauthorized, LoginLinkInvalid, type Permission, type ReviewerInfo } from "./InboxApi.js"

/**
 * A token: its name (who decided), its secret (at least 16 characters), what it may do, and which sessions it sees
 * (`"all"`, the default, or at most 100 session names).
 *
 * @since 0.3.0
 * @category models
 */
export interface Token {
  readonly name: string
  readonly secret: Redacted.Redacted<string> | string
  readonly permission: Permission
  readonly sessions?: ReadonlyArray<string> | "all" | undefined
}

/**
 * @since 0.3.0
 * @category models
 */
export interface Options {
  /** The tokens; none: one is generated (`owner`, decide, every session). */
  readonly tokens?: ReadonlyArray<Token> | undefined
  /** How long a login link works (default 10 minutes). */
  readonly loginTtl?: Duration.DurationInput | undefined
  /** How long a login cookie works (default 12 hours). */
  readonly sessionTtl?: Duration.DurationInput | undefined
}

/**
 * The inbox's tokens are configured wrongly (a short secret, a name used twice, ...); the inbox did not start.
 *
 * @since 0.3.0
 * @category errors
 */
export class InvalidInboxConfig extends Schema.TaggedError<InvalidInboxConfig>(
  "effect-resolve/inbox/InvalidInboxConfig"
)("InvalidInboxConfig", { message: Schema.String }) {}

/**
 * @since 0.3.0
 * @category tags
 */
export declare namespace InboxAuth {
  /**
   * @since 0.3.0
   * @category models
   */
  export interface Service {
    /** The token generated at start when none was configured: print its login link (or secret) once. */
    readonly generated: Option.Option<{ readonly name: string; readonly secret: Redacted.Redacted<string> }>
    /** The reviewer a bearer token belongs to (constant-time comparison); `InboxUnauthorized` otherwise. */
    readonly bearer: (secret: Redacted.Redacted<string>) => Effect.Effect<ReviewerInfo, InboxUnauthorized>
    /** The reviewer of a login cookie that is current; `InboxUnauthorized` otherwise. */
    readonly cookie: (value: Redacted.Redacted<string>) => Effect.Effect<ReviewerInfo, InboxUnauthorized>
    /**
     * A fresh one-time login code for the token `name` (default: the generated token, else the first token that may
     * decide, else the first): put it in a link, `/login?code=<code>`.
     */
    readonly loginCode: (name?: string) => Effect.Effect<string, InvalidInboxConfig>
    /** Uses a login code (once): a new cookie session's value and its reviewer; `LoginLinkInvalid` otherwise. */
    readonly redeem: (
      code: string
    ) => Effect.Effect<
      { readonly cookie: Redacted.Redacted<string>; readonly reviewer: ReviewerInfo },
      LoginLinkInvalid
    >
    /** Ends a cookie session (nothing happens for an unknown one). */
    readonly logout: (value: Redacted.Redacted<string>) => Effect.Effect<void>
    /** How long a cookie session lasts, in seconds (the cookie's `Max-Age`). */
    readonly sessionSeconds: number
  }
}

/**
 * The InboxAuth service.
 *
 * @since 0.3.0
 * @category tags
 */
export class InboxAuth extends Context.Tag("effect-resolve/inbox/InboxAuth")<InboxAuth, InboxAuth.Service>() {}

const digest = (text: string): Buffer => createHash("sha256").update(text, "utf8").digest()

/** A 256-bit secret, base64url. */
const secret = (): string => randomBytes(32).toString("base64url")

/** The most login codes and cookie sessions kept at once (the oldest go first). */
const maxOutstanding = 10_000

const unauthorized = () =>
  new InboxUnauthorized({
    message: "Authenticate: send \"Authorization: Bearer <token>\", or open a login link the inbox printed " +
      "(GET /login?code=...) to get a cookie."
  })

/**
 * Builds the service (what `layer` provides).
 *
 * @since 0.3.0
 * @category constructors
 */
export const make = (options: Options = {}): Effect.Effect<InboxAuth.Service, InvalidInboxConfig> =>
  Effect.gen(function*() {
    const invalid = (message: string) => new InvalidInboxConfig({ message: `${message}; the inbox did not start.` })
    const generated = options.tokens === undefined || options.tokens.length === 0 ?
      Option.some({ name: "owner", secret: Redacted.make(secret()) }) :
      Option.none()
    const tokens: ReadonlyArray<Token> = Option.match(generated, {
      onNone: () => options.tokens!,
      onSome: ({ name, secret }) => [{ name, secret, permission: "decide" }]
    })
    const names = new Set<string>()
    const entries: Array<{ readonly digest: Buffer; readonly reviewer: ReviewerInfo }> = []
    for (const token of tokens) {
      if (typeof token.name !== "string" || token.name.trim() === "" || token.name.length > 200) {
        return yield* invalid("every token needs a name of 1 to 200 characters")
      }
      if (names.has(token.name)) return yield* invalid(`two tokens are named ${JSON.stringify(token.name)}`)
      names.add(token.name)
      const value = Redacted.isRedacted(token.secret) ? Redacted.value(token.secret) : token.secret
      if (typeof value !== "string" || value.length < 16) {
        return yield* invalid(`the secret of token ${JSON.stringify(token.name)} must have at least 16 characters`)
      }
      if (token.permission !== "read" && token.permission !== "decide") {
        return yield* invalid(`token ${JSON.stringify(token.name)}: permission must be "read" or "decide"`)
      }
      const sessions = token.sessions === undefined || token.sessions === "all" ? undefined : token.sessions
      if (
        sessions !== undefined &&
        (!Array.isArray(sessions) || sessions.length === 0 || sessions.length > 100 ||
          !sessions.every((s) => typeof s === "string"))
      ) {
        return yield* invalid(`token ${JSON.stringify(token.name)}: sessions must be "all" or 1 to 100 session names`)
      }
      entries.push({
        digest: digest(value),
        reviewer: {
          name: token.name,
          permission: token.permission,
          sessions: sessions === undefined ? Option.none() : Option.some([...new Set(sessions)])
        }
      })
    }
    const byName = new Map(entries.map((entry) => [entry.reviewer.name, entry.reviewer]))
    const loginTtl = Duration.toMillis(options.loginTtl ?? Duration.minutes(10))
    const sessionTtl = Duration.toMillis(options.sessionTtl ?? Duration.hours(12))
    /** Login codes and cookie sessions, by the hex SHA-256 of their secret: token name and expiry. */
    const codes = new Map<string, { readonly name: string; readonly until: number }>()
    const sessions = new Map<string, { readonly name: string; readonly until: number }>()
    const remember = (map: typeof codes, key: string, value: { readonly name: string; readonly until: number }) => {
      if (map.size >= maxOutstanding) map.delete(map.keys().next().value!)
      map.set(key, value)
    }

    // Every token is compared, whatever matched: the time taken does not depend on which one did.
    const bearer = (presented: Redacted.Redacted<string>) =>
      Effect.suspend(() => {
        const value = Redacted.value(presented)
        if (typeof value !== "string" || value === "") return Effect.fail(unauthorized())
        const found = digest(value)
        let match: ReviewerInfo | undefined
        for (const entry of entries) {
          if (timingSafeEqual(entry.digest, found) && match === undefined) match = entry.reviewer
        }
        return match === undefined ? Effect.fail(unauthorized()) : Effect.succeed(match)
      })

    const cookie = (value: Redacted.Redacted<string>) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => {
        const text = Redacted.value(value)
        if (typeof text !== "string" || text === "") return Effect.fail(unauthorized())
        const key = digest(text).toString("hex")
        const session = sessions.get(key)
        if (session === undefined || session.until <= now) {
          sessions.delete(key)
          return Effect.fail(unauthorized())
        }
        const reviewer = byName.get(session.name)
        return reviewer === undefined ? Effect.fail(unauthorized()) : Effect.succeed(reviewer)
      })

    const defaultName = Option.match(generated, {
      onSome: ({ name }) => name,
      onNone: () => (entries.find((e) => e.reviewer.permission === "decide") ?? entries[0]!).reviewer.name
    })

    const loginCode = (name: string = defaultName) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => {
        if (!byName.has(name)) return Effect.fail(invalid(`no token is named ${JSON.stringify(name)}`))
        const code = secret()
        remember(codes, digest(code).toString("hex"), { name, until: now + loginTtl })
        return Effect.succeed(code)
      })

    const redeem = (code: string) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => {
        const key = digest(String(code)).toString("hex")
        const found = codes.get(key)
        codes.delete(key)
        const reviewer = found === undefined || found.until <= now ? undefined : byName.get(found.name)
        if (reviewer === undefined) {
          return Effect.fail(
            new LoginLinkInvalid({
              message: "This login link was already used, expired, or was never issued. Ask the inbox for a new " +
                "one (it prints one at start)."
            })
          )
        }
        const value = secret()
        remember(sessions, digest(value).toString("hex"), { name: reviewer.name, until: now + sessionTtl })
        return Effect.succeed({ cookie: Redacted.make(value), reviewer })
      })

    return InboxAuth.of({
      generated,
      bearer,
      cookie,
      loginCode,
      redeem,
      logout: (value) => Effect.sync(() => void sessions.delete(digest(String(Redacted.value(value))).toString("hex"))),
      sessionSeconds: Math.max(1, Math.floor(sessionTtl / 1000))
    })
  })

/**
 * The service, from `options`.
 *
 * @since 0.3.0
 * @category layers
 */
export const layer = (options: Options = {}): Layer.Layer<InboxAuth, InvalidInboxConfig> =>
  Layer.effect(InboxAuth, make(options))
