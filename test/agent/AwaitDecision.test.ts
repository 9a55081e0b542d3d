/**
 * `TurnDriver.awaitDecision`, an idle owner waiting for a reviewer (issue 28 §1): in memory, woken by a decision made
 * in the same process; on Postgres, by a decision recorded through another pool (another process's store: its
 * `NOTIFY` reaches this one's `LISTEN`). The inbox's side, on a SQLite file, is in test/inbox/SessionPickup.test.ts.
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Exit, Fiber, Layer, Option, Scope } from "effect"
import * as ScriptedModel from "../../src/agent/ScriptedModel.js"
import { TurnDriver } from "../../src/agent/TurnDriver.js"
import { Decision, DecisionRequests, PendingActions, resolve, ResolveRuntime } from "../../src/index.js"
import { PostgresStore } from "../../src/postgres.js"
import { Handlers, Tools } from "../support/noteTool.js"
import { postgresForTests, postgresSuiteName } from "../support/pgTest.js"
import { freshSchema } from "../support/postgres.js"

const pg = await postgresForTests()

const script: ScriptedModel.Script = [ScriptedModel.toolCall("note", { text: "one" }), "Thanks."]
const stageOne = Effect.flatMap(
  TurnDriver,
  (driver) => Effect.either(driver.run("Take a note", { maxTurns: 1, toolkit: Tools }))
)
const awaitDecision = Effect.flatMap(TurnDriver, (driver) => driver.awaitDecision)
const openId = Effect.map(
  Effect.flatMap(PendingActions, (pending) => pending.listOpen),
  (open) => open[0]!.id
)

describe("awaitDecision", () => {
  it.live("in memory: returns [] with nothing waiting, then the id a reviewer in this process decided", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* awaitDecision, [])
      yield* stageOne
      const id = yield* openId
      const waiting = yield* Effect.fork(awaitDecision)
      yield* Effect.sleep("100 millis")
      assert.isTrue(Option.isNone(yield* Fiber.poll(waiting)), "nobody decided yet")
      yield* resolve({ action: "discard", reason: "Not now.", id })
      assert.deepStrictEqual(yield* Fiber.join(waiting), [id])
    }).pipe(
      Effect.provide(
        Layer.mergeAll(Handlers, ScriptedModel.layer(script)).pipe(Layer.provideMerge(TurnDriver.layer()))
      )
    ))
})

describe.skipIf(pg._tag !== "Available")(postgresSuiteName("awaitDecision on Postgres", pg), () => {
  it.live(
    "a decision recorded through another pool wakes the owner; its next run runs it and tells the model",
    () =>
      Effect.gen(function*() {
        const url = yield* freshSchema(pg._tag === "Available" ? pg.url : "")
        const scope = yield* Scope.make()
        // The owner's process: a durable session on its own pool.
        const owner = yield* Layer.buildWithScope(
          Layer.mergeAll(TurnDriver.layerWithoutDependencies({}), Handlers, ScriptedModel.layer(script)).pipe(
            Layer.provideMerge(ResolveRuntime.layerDurable({ session: "await-1" })),
            Layer.provideMerge(PostgresStore.layer({ url, maxConnections: 3 }))
          ),
          scope
        )
        // The reviewer's process: another pool on the same database.
        const reviewer = yield* Layer.buildWithScope(PostgresStore.layer({ url, maxConnections: 2 }), scope)
        yield* Effect.provide(stageOne, owner)
        const id = yield* Effect.provide(openId, owner)
        const waiting = yield* Effect.fork(Effect.provide(awaitDecision, owner))
        yield* Effect.sleep("300 millis")
        assert.isTrue(Option.isNone(yield* Fiber.poll(waiting)), "nobody decided yet")
        const recorded = yield* Context.get(reviewer, DecisionRequests).recordDecision({
          id: yield* Decision.makeId,
          actionId: id,
          reviewer: "ann",
          action: "apply",
          reason: "Go ahead.",
          amendment: null,
          now: Date.now()
        })
        assert.strictEqual(recorded._tag, "Recorded")
        assert.deepStrictEqual(yield* Fiber.join(waiting), [id])
        // The owner runs the closure it staged, and the model hears of it.
        const run = yield* Effect.provide(
          Effect.flatMap(TurnDriver, (driver) => driver.run("Continue.", { toolkit: Tools })),
          owner
        )
        assert.strictEqual(run.text, "Thanks.")
        const next = (yield* Effect.provide(ScriptedModel.requests, owner)).at(-1)!
        assert.deepStrictEqual(next.userTexts.filter((t) => t.startsWith("A reviewer")), [
          `A reviewer (ann) applied ${id}: Go ahead. Result: Noted one. Do not resolve ${id} again.`
        ])
        yield* Scope.close(scope, Exit.void)
      }),
    30_000
  )
})
