/**
 * Options objects checked at run time, through each public layer that takes them: a JavaScript caller's misspelt
 * key or bad value is a typed `InvalidOptions` naming the key, what it allows and what it got; nothing is built.
 */
import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Layer } from "effect"
import { Stream } from "effect"
import { TurnDriver } from "../../src/ai.js"
import { Inbox } from "../../src/inbox/Inbox.js"
import * as InboxClient from "../../src/inbox/InboxClient.js"
import { InboxServer } from "../../src/inbox/InboxServer.js"
import { InvalidOptions, PendingStore, ResolveConfig, ResolveRuntime } from "../../src/index.js"
import { makeMemory } from "../../src/services/PendingStore.js"

const store = Layer.sync(PendingStore, makeMemory)

/** Builds `layer` and answers the `InvalidOptions` it fails with. */
const refusal = (layer: Layer.Layer<any, unknown, any>) =>
  Effect.flip(Effect.scoped(Layer.build(layer))).pipe(
    Effect.map((error) => {
      assert.instanceOf(error, InvalidOptions, String(error))
      return error as InvalidOptions
    })
  )

describe("InvalidOptions", () => {
  it.effect("ResolveConfig.layer: a misspelt key is named, with the option meant and the options there are", () =>
    Effect.gen(function*() {
      const error = yield* refusal(ResolveConfig.layer({ enforcment: "soft" } as any))
      assert.strictEqual(error.of, "ResolveConfig.layer")
      assert.strictEqual(error.key, "\"enforcment\"")
      assert.strictEqual(
        error.message,
        "Invalid options for ResolveConfig.layer: \"enforcment\" is not an option (did you mean \"enforcement\"?); " +
          "the options are discardWithoutPending, enforcement, maxErrorRequeues, maxForcedTurns, maxTurns, " +
          "modelCapabilities."
      )
    }))

  it.effect("ResolveConfig.layer: a bad value is named with what is allowed and what was given", () =>
    Effect.gen(function*() {
      const cases: ReadonlyArray<readonly [unknown, string]> = [
        [{ maxForcedTurns: -3 }, "maxForcedTurns must be a whole number, 0 or more; got -3"],
        [{ maxTurns: 0 }, "maxTurns must be a whole number, 1 or more; got 0"],
        [{ maxErrorRequeues: 1.5 }, "maxErrorRequeues must be a whole number, 0 or more; got 1.5"],
        [{ enforcement: "hard" }, "enforcement must be \"force\" or \"soft\"; got \"hard\""],
        [{ discardWithoutPending: true }, "discardWithoutPending must be \"fail\" or \"succeed\"; got true"],
        [
          { modelCapabilities: { supportsNamedToolChoice: true } },
          "modelCapabilities must be { supportsNamedToolChoice, supportsRequiredToolChoice, supportsNoneToolChoice }, " +
          "each true or false; got an object"
        ],
        [null, "the options must be an object; got null"]
      ]
      for (const [options, text] of cases) {
        const error = yield* refusal(ResolveConfig.layer(options as any))
        assert.strictEqual(error.message, `Invalid options for ResolveConfig.layer: ${text}.`)
      }
      // Valid options still build, and undefined keeps a default.
      const config = yield* Effect.provide(
        ResolveConfig,
        ResolveConfig.layer({ maxForcedTurns: 0, enforcement: undefined } as any)
      )
      assert.strictEqual(config.maxForcedTurns, 0)
      assert.strictEqual(config.enforcement, "force")
    }))

  it.effect("TurnDriver.layer and layerWithoutDependencies", () =>
    Effect.gen(function*() {
      const misspelt = yield* refusal(TurnDriver.layer({ sytem: "You help." } as any))
      assert.include(misspelt.message, "Invalid options for TurnDriver.layer: \"sytem\" is not an option")
      assert.include(misspelt.message, "(did you mean \"system\"?)")
      const empty = yield* refusal(TurnDriver.layer({ sessionId: "" }))
      assert.strictEqual(
        empty.message,
        "Invalid options for TurnDriver.layer: sessionId must be a non-empty string; got \"\"."
      )
      const without = yield* refusal(
        TurnDriver.layerWithoutDependencies({ sessionId: "s" } as any).pipe(Layer.provide(ResolveRuntime.layer))
      )
      assert.strictEqual(without.key, "\"sessionId\"")
    }))

  it.effect("ResolveRuntime.layerDurable: the session is required; lease, retention and kinds are checked", () =>
    Effect.gen(function*() {
      const durable = (options: unknown) =>
        refusal(ResolveRuntime.layerDurable(options as any).pipe(Layer.provide(store)))
      assert.strictEqual(
        (yield* durable({})).message,
        "Invalid options for ResolveRuntime.layerDurable: session is required: a non-empty string."
      )
      assert.include((yield* durable({ session: "s", leese: "1 minute" })).message, "(did you mean \"lease\"?)")
      assert.include((yield* durable({ session: "s", lease: -5 })).message, "lease must be a duration")
      assert.include((yield* durable({ session: "s", lease: 0 })).message, "of at least 3 milliseconds")
      assert.include((yield* durable({ session: "s", lease: "soon" })).message, "got \"soon\"")
      assert.include(
        (yield* durable({ session: "s", retention: { keepLast: -1 } })).message,
        "retention must be \"keep-all\" or { keepLast?"
      )
      assert.include((yield* durable({ session: "s", retention: { keeplast: 5 } })).message, "retention must be")
      assert.include(
        (yield* durable({ session: "s", retainSettled: -1 })).message,
        "retainSettled must be a whole number"
      )
      assert.include((yield* durable({ session: "s", kinds: [{}] })).message, "kinds must be an array of action kinds")
      // Nothing was opened: the store holds no session.
      const ok = yield* Effect.exit(
        Effect.scoped(Layer.build(
          ResolveRuntime.layerDurable({ session: "s", lease: "1 minute" }).pipe(
            Layer.provide(store)
          )
        ))
      )
      assert.isTrue(Exit.isSuccess(ok))
    }))

  it.effect("Inbox.layer and InboxServer.layer", () =>
    Effect.gen(function*() {
      const inbox = (options: unknown) => Inbox.layer(options as any).pipe(Layer.provide(store))
      assert.include(
        (yield* refusal(inbox({ pollIntervall: "1 second" }))).message,
        "Invalid options for Inbox.layer: \"pollIntervall\" is not an option (did you mean \"pollInterval\"?)"
      )
      assert.include((yield* refusal(inbox({ sweepInterval: "often" }))).message, "sweepInterval must be a duration")
      assert.include((yield* refusal(inbox({ kinds: "note" }))).message, "kinds must be an array of action kinds")
      const server = (options: unknown) => InboxServer.layer(options as any).pipe(Layer.provide(inbox({})))
      assert.strictEqual(
        (yield* refusal(server({ port: 70_000 }))).message,
        "Invalid options for InboxServer.layer: port must be a whole number from 0 to 65535; got 70000."
      )
      assert.include((yield* refusal(server({ maxBodyBytes: -1 }))).message, "maxBodyBytes must be a whole number")
      assert.include((yield* refusal(server({ secure: true }))).message, "(did you mean \"secureCookie\"?)")
      assert.include(
        (yield* refusal(server({ auth: { token: [] } }))).message,
        "auth must be { tokens?: an array of tokens"
      )
    }))

  it.effect("InboxClient.make and events", () =>
    Effect.gen(function*() {
      const make = (options: unknown) =>
        Effect.flip(InboxClient.make(options as any)).pipe(Effect.provide(FetchHttpClient.layer))
      const noUrl = yield* make({ baseUrl: "127.0.0.1:8080", token: "t".repeat(20) })
      assert.instanceOf(noUrl, InvalidOptions)
      assert.include(noUrl.message, "Invalid options for InboxClient.make: baseUrl must be the inbox's address")
      const noToken = yield* make({ baseUrl: "http://127.0.0.1:8080" })
      assert.strictEqual(
        noToken.message,
        "Invalid options for InboxClient.make: token is required: a bearer token: a non-empty string, or a Redacted one."
      )
      const misspelt = yield* make({ baseURL: "http://127.0.0.1:8080", token: "t" })
      assert.include(misspelt.message, "\"baseURL\" is not an option (did you mean \"baseUrl\"?)")
      const events = yield* Effect.flip(
        Stream.runDrain(InboxClient.events({ baseUrl: "http://127.0.0.1:1", token: "t", sessions: "s1" } as any))
      ).pipe(Effect.provide(FetchHttpClient.layer))
      assert.instanceOf(events, InvalidOptions)
      assert.include(events.message, "sessions must be an array of session names")
    }))
})
