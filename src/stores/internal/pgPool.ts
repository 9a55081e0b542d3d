/**
 * The Postgres pool the store runs on: `pg`'s pool, whose connections run a statement they ran before as a named
 * prepared statement. `@effect/sql-pg` sends every statement unnamed, so Postgres parses and plans it again on each
 * call; for the store's statements (a fenced write's `EXISTS`, a settle's `WITH`) that is more of a statement's time
 * than its execution. Prepared, a connection parses a statement once and Postgres reuses its plan.
 *
 * - Only a statement with parameters, run with a callback (how `@effect/sql-pg` runs one), is prepared, and only
 *   once it runs a second time on the connection: a text seen once (a list of ids of one length) costs nothing more.
 * - A connection prepares at most `maxPrepared` statements, and remembers at most `maxSeen` texts: a program that
 *   builds many different texts runs the rest unnamed, as before.
 * - A statement whose result's columns changed since it was prepared (another process altered a table it reads with
 *   `SELECT *`) runs again unnamed at once, and unnamed from then on.
 *
 * @internal
 */
import * as PgClient from "@effect/sql-pg/PgClient"
import { SqlError } from "@effect/sql/SqlError"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import type * as Scope from "effect/Scope"
import * as Pg from "pg"

/** How many statements one connection prepares at most. */
const maxPrepared = 256
/** How many statement texts one connection remembers at most (prepared or seen once). */
const maxSeen = 4096

/** A text's state on a connection: its prepared statement's name, seen once, or never to be prepared. */
type Seen = string | "once" | "never"

interface Statements {
  readonly seen: Map<string, Seen>
  prepared: number
}

type Callback = (error: (Error & { readonly code?: unknown }) | null | undefined, result: unknown) => void
type Query = (this: Pg.Client, config: unknown, values?: unknown, callback?: unknown) => unknown

const baseQuery = Pg.Client.prototype.query as unknown as Query
const statementsOf = new WeakMap<Pg.Client, Statements>()

/** Postgres's "cached plan must not change result type" (and other unsupported features). */
const featureNotSupported = "0A000"
/** "current transaction is aborted": what running again says when the refused statement was in a transaction. */
const transactionAborted = "25P02"

/** The name to run `text` under on `client` (preparing it now if it ran before), or `undefined` to run it unnamed. */
const nameFor = (client: Pg.Client, text: string): string | undefined => {
  let statements = statementsOf.get(client)
  if (statements === undefined) {
    statements = { seen: new Map(), prepared: 0 }
    statementsOf.set(client, statements)
  }
  const seen = statements.seen.get(text)
  if (seen === undefined) {
    if (statements.seen.size < maxSeen) statements.seen.set(text, "once")
    return undefined
  }
  if (seen === "never") return undefined
  if (seen !== "once") return seen
  if (statements.prepared >= maxPrepared) return undefined
  statements.prepared++
  const name = `effect_resolve_${statements.prepared}`
  statements.seen.set(text, name)
  return name
}

/**
 * `pg`'s client, with the statements it runs again prepared (see the module comment). Used as the pool's `Client`;
 * `pg` creates one per connection.
 */
class PreparingClient extends Pg.Client {}

Object.defineProperty(PreparingClient.prototype, "query", {
  configurable: true,
  writable: true,
  value: function(this: Pg.Client, config: unknown, values?: unknown, callback?: unknown): unknown {
    if (
      typeof config !== "string" || !Array.isArray(values) || values.length === 0 || typeof callback !== "function"
    ) {
      return baseQuery.call(this, config, values, callback)
    }
    const name = nameFor(this, config)
    if (name === undefined) return baseQuery.call(this, config, values, callback)
    const done = callback as Callback
    return baseQuery.call(this, { name, text: config, values }, (error: Parameters<Callback>[0], result: unknown) => {
      if (error?.code !== featureNotSupported) return done(error, result)
      // The prepared plan no longer fits the tables: never prepared again here, and run again unnamed at once (in
      // a transaction that fails too; the first error is the one that tells why).
      statementsOf.get(this)?.seen.set(config, "never")
      return baseQuery.call(
        this,
        config,
        values,
        (again: Parameters<Callback>[0], result: unknown) =>
          done(again?.code === transactionAborted ? error : again, result)
      )
    })
  }
})

/** The pool's options, as `@effect/sql-pg`'s `PgClient.make` reads them from its config. */
const poolConfig = (options: PgClient.PgClientConfig): Pg.PoolConfig => ({
  Client: PreparingClient,
  connectionString: options.url === undefined ? undefined : Redacted.value(options.url),
  user: options.username,
  host: options.host,
  database: options.database,
  password: options.password === undefined ? undefined : Redacted.value(options.password),
  ssl: options.ssl,
  port: options.port,
  ...(options.stream === undefined ? {} : { stream: options.stream }),
  connectionTimeoutMillis: options.connectTimeout === undefined ? undefined : Duration.toMillis(options.connectTimeout),
  idleTimeoutMillis: options.idleTimeout === undefined ? undefined : Duration.toMillis(options.idleTimeout),
  max: options.maxConnections,
  min: options.minConnections,
  maxLifetimeSeconds: options.connectionTTL === undefined ? undefined : Duration.toSeconds(options.connectionTTL),
  application_name: options.applicationName ?? "@effect/sql-pg",
  types: options.types
})

/**
 * The pool of `PreparingClient`s for `options`, connected (one `SELECT 1`, within `connectTimeout`, 5 seconds by
 * default) and ended with the scope, as `PgClient.make` does with its own.
 */
const acquirePool = (options: PgClient.PgClientConfig): Effect.Effect<Pg.Pool, SqlError, Scope.Scope> =>
  Effect.gen(function*() {
    const pool = new Pg.Pool(poolConfig(options))
    pool.on("error", () => {})
    yield* Effect.acquireRelease(
      Effect.tryPromise({
        try: () => pool.query("SELECT 1"),
        catch: (cause) => new SqlError({ cause, message: "PgClient: Failed to connect" })
      }),
      () => Effect.promise(() => pool.end()).pipe(Effect.interruptible, Effect.timeoutOption(1000))
    ).pipe(Effect.timeoutFail({
      duration: options.connectTimeout ?? Duration.seconds(5),
      onTimeout: () =>
        new SqlError({ cause: new Error("Connection timed out"), message: "PgClient: Connection timed out" })
    }))
    return pool
  })

/** The `PgClient` layer on `acquirePool(options)`, with the client options `PgClient.layer` takes. */
export const layer = (options: PgClient.PgClientConfig) =>
  PgClient.layerFromPool({
    acquire: acquirePool(options),
    ...(options.applicationName === undefined ? {} : { applicationName: options.applicationName }),
    ...(options.spanAttributes === undefined ? {} : { spanAttributes: options.spanAttributes }),
    ...(options.transformResultNames === undefined ? {} : { transformResultNames: options.transformResultNames }),
    ...(options.transformQueryNames === undefined ? {} : { transformQueryNames: options.transformQueryNames }),
    ...(options.transformJson === undefined ? {} : { transformJson: options.transformJson }),
    ...(options.types === undefined ? {} : { types: options.types })
  })
