/**
 * Issue 11 §1, SPEC §9: whatever a callback fails, dies or throws with — `fc.anything()` and the hostile values of
 * `test/support/hostile.ts` (null-prototype objects holding bigints, throwing getters, Proxies throwing on every
 * trap, revoked Proxies, symbols, cycles, megabyte strings, ...) — and wherever the `resolve` fiber is interrupted,
 * the call ends with a typed error (never a defect), the action is left `pending` (never `resolving`), and the next
 * resolve works as usual. The same values thrown by a custom tool's `execute` give a `ToolError`; `toFailure` and
 * the renderer turn them into text without throwing.
 *
 * Quick budget by default; `LONG=1` (`npm run test:long`) runs 10 times more.
 */
import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Exit, FastCheck as fc, Fiber, Option } from "effect"
import { AiResolveTool } from "../../src/ai.js"
import { CustomTools } from "../../src/custom.js"
import {
  ApplyFailed,
  ResolveRuntime,
  ResolveTool,
  stage,
  ToolChoiceQueue,
  ToolError,
  ToolResult
} from "../../src/index.js"
import { Renderer } from "../../src/render.js"
import { build, type Recipe, recipe } from "../support/hostile.js"
import { InterruptAt, withOpSupervision } from "../support/InterruptAt.js"

const LONG = process.env.LONG !== undefined && process.env.LONG !== "" && process.env.LONG !== "0"
const numRuns = LONG ? 2_000 : 200
const timeout = LONG ? 600_000 : 60_000

/** Lets the event loop run (vitest's worker RPC among others) between runs: a long budget must not starve it. */
const breathe = Effect.promise(() => new Promise<void>((resolve) => setImmediate(resolve)))

/** How a callback fails with the value. */
type Via = "fail" | "die" | "throw" | "syncThrow" | "afterYield" | "promiseReject" | "promiseThrow"
const effectVias = ["fail", "die", "throw", "syncThrow", "afterYield"] as const
const promiseVias = ["promiseReject", "promiseThrow"] as const

/** An Effect callback that fails with `value` the way `via` says. */
const failingEffect = (via: Via, value: unknown): Effect.Effect<never, unknown> => {
  switch (via) {
    case "fail":
      return Effect.fail(value)
    case "die":
      return Effect.die(value)
    case "syncThrow":
      return Effect.sync(() => {
        throw value
      })
    case "afterYield":
      return Effect.zipRight(Effect.yieldNow(), Effect.fail(value))
    default:
      throw value // "throw": the callback itself throws instead of returning an Effect
  }
}

/** A Promise callback that fails with `value` the way `via` says. */
const failingPromise = (via: Via, value: unknown): Promise<never> => {
  if (via === "promiseReject") return Promise.reject(value)
  throw value
}

const maxMessage = 2_200

/** The exit of a resolve whose callback failed: a typed error, or an interruption when one was requested. */
const assertTypedFailure = (exit: Exit.Exit<ToolResult.ToolResult, unknown>, interruptible: boolean) => {
  assert.isTrue(Exit.isFailure(exit), "a failing callback cannot succeed")
  if (Exit.isSuccess(exit)) return
  assert.isFalse(Cause.isDie(exit.cause), "no defect reaches the caller")
  if (Cause.isInterruptedOnly(exit.cause)) {
    assert.isTrue(interruptible, "interrupted only when the test interrupted it")
    return
  }
  const failure = Cause.failureOption(exit.cause)
  assert.isTrue(Option.isSome(failure))
  const error = Option.getOrThrow(failure)
  assert.isTrue(error instanceof ApplyFailed || error instanceof ToolError, "a typed error")
  const message = (error as ApplyFailed | ToolError).message
  assert.isString(message)
  assert.isAtMost(message.length, maxMessage)
  // effect itself can print the failure (loggers, `Effect.runPromise`'s rejection), and so can the model's and the
  // terminal's renderings.
  assert.isString(Cause.pretty(exit.cause))
  const failureText = AiResolveTool.toFailure(error)
  assert.isString(failureText.message)
  Renderer.renderResolve({ action: "apply", reason: "go" }, exit, { width: 80, color: false })
}

interface Case {
  readonly recipe: Recipe
  readonly action: "apply" | "discard"
  readonly source: "effect" | "promise"
  readonly via: Via
  readonly interruptAt: number | undefined
  /** For a Promise callback: `abortable` (interruption aborts it) or not (apply is the commit). */
  readonly abortable: boolean
}

/**
 * A Proxy whose `has` trap throws (or a revoked one) *thrown inside Effect code* (`Effect.sync(() => { throw p })`)
 * crashes effect 3.22's fiber run loop itself (its catch asks `isInterruptedException(p)`, an unguarded `in`): the
 * fiber never completes, whoever runs it. No library code runs in that fiber again, so that one combination is out of
 * reach and left out here; every other way of failing with such a Proxy is covered.
 */
const crashesEffectRunLoop = (c: Case) =>
  c.via === "syncThrow" && (c.recipe.kind === "trapProxy" || c.recipe.kind === "revokedProxy")

const cases: fc.Arbitrary<Case> = fc.oneof(
  fc.record({
    recipe,
    action: fc.constantFrom("apply" as const, "discard" as const),
    source: fc.constant("effect" as const),
    via: fc.constantFrom<Via>(...effectVias),
    interruptAt: fc.option(fc.integer({ min: 1, max: 120 }), { nil: undefined }),
    abortable: fc.constant(false)
  }),
  fc.record({
    recipe,
    action: fc.constantFrom("apply" as const, "discard" as const),
    source: fc.constant("promise" as const),
    via: fc.constantFrom<Via>(...promiseVias),
    interruptAt: fc.option(fc.integer({ min: 1, max: 120 }), { nil: undefined }),
    abortable: fc.boolean()
  })
).filter((c) => !crashesEffectRunLoop(c))

/** Stage an action whose callback fails once with the case's value, resolve it (maybe interrupted), then again. */
const runCase = (c: Case) =>
  Effect.gen(function*() {
    const queue = yield* ToolChoiceQueue
    const value = build(c.recipe)
    let failing = true
    const handle = c.source === "effect" ?
      yield* stage({
        label: "Hostile: 1 action",
        sourceToolName: "hostile",
        apply: () => failing ? failingEffect(c.via, value) : Effect.succeed(ToolResult.text("applied")),
        reject: () =>
          failing ? failingEffect(c.via, value) as Effect.Effect<never, ToolError> : Effect.succeed(Option.none())
      }) :
      yield* CustomTools.stage({
        label: "Hostile: 1 action",
        apply: () => failing ? failingPromise(c.via, value) : "applied",
        reject: () => failing ? failingPromise(c.via, value) : undefined,
        abortable: c.abortable
      })
    yield* queue.nextToolChoice
    const call = ResolveTool.execute({ action: c.action, reason: "go" })
    const exit = c.interruptAt === undefined ?
      yield* Effect.exit(call) :
      yield* Fiber.await(yield* Effect.fork(withOpSupervision(Effect.supervised(call, new InterruptAt(c.interruptAt)))))
    assertTypedFailure(exit, c.interruptAt !== undefined)
    assert.strictEqual(yield* handle.status, "pending", "never left resolving; nothing was committed")

    // The turn ends; the preview is served again and a second resolve works as usual.
    yield* queue.resolve
    failing = false
    yield* queue.nextToolChoice
    const second = yield* Effect.exit(ResolveTool.execute({ action: c.action, reason: "again" }))
    assert.isTrue(Exit.isSuccess(second), Exit.isFailure(second) ? Cause.pretty(second.cause) : "")
    assert.strictEqual(yield* handle.status, c.action === "apply" ? "applied" : "discarded")
  }).pipe(Effect.provide(ResolveRuntime.layer))

describe("hostile failure values (issue 11 §1)", () => {
  it.effect.prop(
    "a resolve call ends with a typed error or interruption, never leaves resolving, and the next one works",
    [cases],
    ([c]) => Effect.zipRight(breathe, runCase(c)),
    { timeout, fastCheck: { numRuns } }
  )

  it.effect.prop(
    "a custom tool's execute failing with any value gives a ToolError naming the tool",
    [recipe, fc.constantFrom<Via>(...promiseVias)],
    ([r, via]) =>
      Effect.gen(function*() {
        yield* breathe
        const [tool] = yield* CustomTools.registerCustomTools([{
          name: "hostile",
          description: "Fails with a hostile value.",
          parameters: { type: "object", properties: {}, additionalProperties: false },
          execute: () => failingPromise(via, build(r))
        }])
        const exit = yield* Effect.exit(tool!.execute({}))
        assert.isTrue(Exit.isFailure(exit) && !Cause.isDie(exit.cause))
        const error = Exit.isFailure(exit) ? Option.getOrUndefined(Cause.failureOption(exit.cause)) : undefined
        assert.instanceOf(error, ToolError)
        assert.isAtMost((error as ToolError).message.length, maxMessage)
      }).pipe(Effect.provide(ResolveRuntime.layer)),
    { timeout, fastCheck: { numRuns } }
  )

  it.prop(
    "toFailure and renderResolve turn any failure or defect into text",
    [recipe, fc.boolean(), fc.integer({ min: 1, max: 120 })],
    ([r, die, width]) => {
      const value = build(r)
      const failure = AiResolveTool.toFailure(value)
      assert.isString(failure.error)
      assert.isString(failure.message)
      assert.isAtMost(failure.message.length, maxMessage)
      const lines = Renderer.renderResolve(
        { action: "apply", reason: "go" },
        die ? Exit.die(value) : Exit.fail(value),
        { width, color: false }
      )
      for (const line of lines) assert.isAtMost(Renderer.stringWidth(line), width)
    },
    { timeout, fastCheck: { numRuns } }
  )
})
