/**
 * Model-based test of the pending-action life cycle (SPEC §5, §6) across stacked previews: stage, serve, resolve
 * (apply that succeeds, fails, fails with a ToolError, dies, commits then fails, is interrupted before or after its
 * commit; discard with and without a reject callback, or a failing one), end the turn, reject it, clear, remove,
 * and a standing handler. The reference is `QueueModel` with the pending-action rules on top.
 *
 * Invariant, checked after every command and at the end of every sequence: each staged action ends exactly once as
 * applied, discarded or cleared (a terminal status never changes), and `apply` committed at most once — exactly
 * once when the action is applied.
 *
 * Quick budget by default; `LONG=1` (`npm run test:long`) runs at least 20 000 sequences.
 */
// node's strict deepStrictEqual: chai's treats Option.none() as equal to Option.some(x).
import { assert, describe, it } from "@effect/vitest"
import { Cause, Deferred, Effect, Exit, FastCheck as fc, Fiber, Layer, Logger, ManagedRuntime, Option } from "effect"
import { deepStrictEqual } from "node:assert/strict"
import {
  Preview,
  type RejectReason,
  ResolveRuntime,
  ResolveTool,
  stage,
  StandingResolveHandler,
  SteeringBus,
  ToolChoiceQueue,
  ToolError,
  ToolResult
} from "../../src/index.js"
import { yieldToEventLoop } from "../support/eventLoop.js"
import { QueueModel } from "./QueueModel.js"

type PendingActionHandle = Preview.Handle
type PendingStatus = Preview.PendingStatus

const LONG = process.env.LONG !== undefined && process.env.LONG !== "" && process.env.LONG !== "0"
const numRuns = LONG ? 20_000 : 300
const batches = LONG ? 10 : 1

type ApplyOutcome = "ok" | "fail" | "toolError" | "die" | "commitThenFail" | "interrupt" | "interruptAfterCommit"
type RejectPolicy = "none" | "default" | "custom" | "fail"
type Expected = { readonly _tag: "Success"; readonly text: string } | {
  readonly _tag: "NoPendingAction" | "ToolError" | "ApplyFailed" | "Interrupt"
}

const terminal = (status: PendingStatus) => status === "applied" || status === "discarded" || status === "cleared"
const sources = ["edit", "ast_edit", "write"] as const

interface ModelAction {
  readonly label: string
  readonly source: string
  readonly reject: RejectPolicy
  status: PendingStatus
  applied: number
}

interface Model {
  readonly m: QueueModel
  readonly actions: Array<ModelAction>
  /** The action behind each directive id. */
  readonly byId: Map<string, number>
  reminders: number
  standing: boolean
}

interface Real {
  readonly rt: ManagedRuntime.ManagedRuntime<ResolveRuntime.Services, never>
  readonly handles: Array<PendingActionHandle>
  readonly applied: Array<number>
  outcome: ApplyOutcome
  started: Deferred.Deferred<void>
}

const quiet = Logger.replace(Logger.defaultLogger, Logger.none)

const rejectHook = (action: ModelAction) => (reason: RejectReason): "requeue" | "drop" => {
  if (reason === "cleared" || reason === "removed") {
    if (action.status === "pending") action.status = "cleared"
    return "drop"
  }
  return action.status === "pending" ? "requeue" : "drop"
}

/** The model's prediction for a `resolve` call, applied to the model: the most recent pending action. */
const modelResolve = (model: Model, action: "apply" | "discard", outcome: ApplyOutcome, reason: string): Expected => {
  const a = [...model.actions].reverse().find((candidate) => candidate.status === "pending")
  if (a === undefined) {
    return model.standing ? { _tag: "Success", text: `standing ${action}` } : { _tag: "NoPendingAction" }
  }
  if (action === "discard") {
    if (a.reject === "fail") {
      model.reminders++
      return { _tag: "ToolError" }
    }
    a.status = "discarded"
    return {
      _tag: "Success",
      text: a.reject === "custom" ? "kept the file" : `Discarded: ${a.label}. Reason: ${reason}`
    }
  }
  switch (outcome) {
    case "ok":
      a.status = "applied"
      a.applied++
      return { _tag: "Success", text: `applied ${a.label}` }
    case "fail":
    case "die":
      model.reminders++
      return { _tag: "ApplyFailed" }
    case "toolError":
      model.reminders++
      return { _tag: "ToolError" }
    case "commitThenFail":
      a.status = "applied"
      a.applied++
      return { _tag: "ApplyFailed" }
    case "interrupt":
      return { _tag: "Interrupt" }
    case "interruptAfterCommit":
      a.status = "applied"
      a.applied++
      return { _tag: "Interrupt" }
  }
}

const realApply = (real: Real, index: number) => (): Effect.Effect<ToolResult.ToolResult, unknown> => {
  const write = Preview.commit(Effect.sync(() => {
    real.applied[index]!++
  }))
  const label = real.handles[index]!.label
  switch (real.outcome) {
    case "ok":
      return Effect.as(write, ToolResult.text(`applied ${label}`, { index }))
    case "fail":
      return Effect.fail(new Error("disk full"))
    case "toolError":
      return Effect.fail(new ToolError({ message: "the file changed since the preview" }))
    case "die":
      return Effect.die("apply died")
    case "commitThenFail":
      return Effect.zipRight(write, Effect.fail(new Error("fsync failed")))
    case "interrupt":
      return Effect.zipRight(Deferred.succeed(real.started, void 0), Effect.never)
    case "interruptAfterCommit":
      return Effect.zipRight(Effect.zipRight(write, Deferred.succeed(real.started, void 0)), Effect.never)
  }
}

const check = async (model: Model, real: Real) => {
  const snapshot = await real.rt.runPromise(Effect.gen(function*() {
    const queue = yield* ToolChoiceQueue
    const bus = yield* SteeringBus
    return {
      statuses: yield* Effect.forEach(real.handles, (h) => h.status),
      inspect: yield* queue.inspect,
      inFlight: Option.map(yield* queue.inFlight, (f) => [f.id, f.invoked] as const),
      reminders: (yield* bus.pending).length
    }
  }))
  deepStrictEqual(snapshot.statuses, model.actions.map((a) => a.status))
  deepStrictEqual(snapshot.inspect, model.m.inspect())
  deepStrictEqual(
    Option.getOrUndefined(snapshot.inFlight),
    model.m.inFlight === undefined ? undefined : [model.m.inFlight.directive.id, model.m.inFlight.invoked]
  )
  assert.strictEqual(snapshot.reminders, model.reminders)
  model.actions.forEach((a, i) => {
    assert.strictEqual(real.applied[i], a.applied, `apply of action ${i} committed ${real.applied[i]} times`)
    assert.isAtMost(a.applied, 1)
    assert.strictEqual(a.applied === 1, a.status === "applied")
  })
}

/** Runs a command against both sides, checking that no terminal status ever changes. */
const step = async (model: Model, real: Real, body: () => Promise<void>) => {
  const before = model.actions.map((a) => a.status)
  await body()
  model.actions.forEach((a, i) => {
    if (before[i] !== undefined && terminal(before[i])) {
      assert.strictEqual(a.status, before[i], `action ${i} ended twice`)
    }
  })
  await check(model, real)
}

type Cmd = fc.AsyncCommand<Model, Real>

class StageCmd implements Cmd {
  constructor(readonly source: string, readonly reject: RejectPolicy) {}
  check = () => true
  run = (model: Model, real: Real) =>
    step(model, real, async () => {
      const index = model.actions.length
      const label = `Edit ${index}: 1 replacement in 1 file`
      const action: ModelAction = { label, source: this.source, reject: this.reject, status: "pending", applied: 0 }
      model.actions.push(action)
      model.reminders++
      real.applied.push(0)
      const policy = this.reject
      const handle = await real.rt.runPromise(stage({
        label,
        sourceToolName: this.source,
        apply: realApply(real, index),
        ...(policy === "none" ? {} : {
          reject: () =>
            policy === "fail" ?
              Effect.fail(new ToolError({ message: "could not restore the preview" })) :
              Effect.succeed(policy === "custom" ? Option.some(ToolResult.text("kept the file")) : Option.none())
        })
      }))
      real.handles.push(handle)
      // The forcing directive carries the action's id, and is wanted while the action is pending.
      model.m.push(["auto"], { label: `pending-action:${this.source}`, now: true, id: handle.id }, {
        invoker: false,
        active: () => action.status === "pending",
        onRejected: rejectHook(action)
      })
      model.byId.set(handle.id, index)
    })
  toString = () => `stage(${this.source}, reject=${this.reject})`
}

class NextCmd implements Cmd {
  check = () => true
  run = (model: Model, real: Real) =>
    step(model, real, async () => {
      const expected = model.m.next()
      const served = await real.rt.runPromise(Effect.flatMap(ToolChoiceQueue, (q) => q.nextToolChoice))
      assert.strictEqual(Option.isSome(served), expected !== undefined)
    })
  toString = () => "nextToolChoice"
}

class ResolveCmd implements Cmd {
  constructor(readonly action: "apply" | "discard", readonly outcome: ApplyOutcome) {}
  check = () => true
  run = (model: Model, real: Real) =>
    step(model, real, async () => {
      const reason = `because ${this.action}`
      const expected = modelResolve(model, this.action, this.outcome, reason)
      real.outcome = this.outcome
      real.started = Deferred.unsafeMake(real.rt.runSync(Effect.fiberId))
      const interrupting = expected._tag === "Interrupt"
      const started = real.started
      const action = this.action
      const exit = await real.rt.runPromise(Effect.gen(function*() {
        const fiber = yield* Effect.fork(ResolveTool.execute({ action, reason }))
        if (interrupting) {
          // Wait until apply runs (or the call ends early, which the assertion below reports), then interrupt.
          yield* Effect.raceFirst(Deferred.await(started), Effect.asVoid(Fiber.await(fiber)))
          yield* Fiber.interrupt(fiber)
        }
        return yield* Fiber.await(fiber)
      }))
      if (expected._tag === "Interrupt") {
        assert.isTrue(Exit.isInterrupted(exit), `expected an interruption, got ${String(exit)}`)
      } else if ("text" in expected) {
        assert.isTrue(Exit.isSuccess(exit), `expected success, got ${String(exit)}`)
        if (Exit.isSuccess(exit)) assert.strictEqual(ToolResult.textOf(exit.value), expected.text)
      } else {
        const error = Exit.isFailure(exit) ? Option.getOrUndefined(Cause.failureOption(exit.cause)) : undefined
        assert.strictEqual((error as { _tag?: string } | undefined)?._tag, expected._tag, String(exit))
      }
    })
  toString = () => `resolve(${this.action}, ${this.outcome})`
}

/** A whole forced turn: serve, call resolve, end the turn. */
class TurnCmd implements Cmd {
  constructor(readonly call: ResolveCmd) {}
  check = () => true
  run = async (model: Model, real: Real) => {
    await new NextCmd().run(model, real)
    await this.call.run(model, real)
    await new EndTurnCmd().run(model, real)
  }
  toString = () => `turn(${this.call.action}, ${this.call.outcome})`
}

class EndTurnCmd implements Cmd {
  check = () => true
  run = (model: Model, real: Real) =>
    step(model, real, async () => {
      model.m.resolve()
      await real.rt.runPromise(Effect.flatMap(ToolChoiceQueue, (q) => q.resolve))
    })
  toString = () => "queue.resolve (turn ends)"
}

class RejectCmd implements Cmd {
  constructor(readonly reason: RejectReason) {}
  check = () => true
  run = (model: Model, real: Real) =>
    step(model, real, async () => {
      model.m.reject(this.reason)
      await real.rt.runPromise(Effect.flatMap(ToolChoiceQueue, (q) => q.reject(this.reason)))
    })
  toString = () => `reject(${this.reason})`
}

class ClearCmd implements Cmd {
  check = () => true
  run = (model: Model, real: Real) =>
    step(model, real, async () => {
      model.m.clear()
      await real.rt.runPromise(Effect.flatMap(ToolChoiceQueue, (q) => q.clear))
    })
  toString = () => "clear"
}

class RemoveCmd implements Cmd {
  constructor(readonly source: string) {}
  check = () => true
  run = (model: Model, real: Real) =>
    step(model, real, async () => {
      const expected = model.m.removeByLabel(`pending-action:${this.source}`)
      const removed = await real.rt.runPromise(
        Effect.flatMap(ToolChoiceQueue, (q) => q.removeByLabel(`pending-action:${this.source}`))
      )
      assert.strictEqual(removed, expected)
    })
  toString = () => `removeByLabel(pending-action:${this.source})`
}

class StandingCmd implements Cmd {
  constructor(readonly install: boolean) {}
  check = () => true
  run = (model: Model, real: Real) =>
    step(model, real, async () => {
      model.standing = this.install
      await real.rt.runPromise(Effect.flatMap(StandingResolveHandler, (s) =>
        this.install ?
          s.set((call) => Effect.succeed(ToolResult.text(`standing ${call.action}`))) :
          s.clear))
    })
  toString = () => this.install ? "standing.set" : "standing.clear"
}

const resolveArb = fc.tuple(
  fc.constantFrom("apply" as const, "discard" as const),
  fc.constantFrom<ApplyOutcome>(
    "ok",
    "ok",
    "fail",
    "toolError",
    "die",
    "commitThenFail",
    "interrupt",
    "interruptAfterCommit"
  )
).map(([action, outcome]) => new ResolveCmd(action, outcome))

const stageArb = fc.tuple(
  fc.constantFrom(...sources),
  fc.constantFrom<RejectPolicy>("none", "default", "custom", "fail")
)
  .map(([source, reject]) => new StageCmd(source, reject))

const commands = [
  stageArb,
  stageArb,
  resolveArb.map((call) => new TurnCmd(call)),
  resolveArb.map((call) => new TurnCmd(call)),
  fc.constant(new NextCmd()),
  fc.constant(new NextCmd()),
  fc.tuple(
    fc.constantFrom("apply" as const, "discard" as const),
    fc.constantFrom<ApplyOutcome>(
      "ok",
      "ok",
      "fail",
      "toolError",
      "die",
      "commitThenFail",
      "interrupt",
      "interruptAfterCommit"
    )
  ).map(([action, outcome]) => new ResolveCmd(action, outcome)),
  fc.constant(new EndTurnCmd()),
  fc.constantFrom<RejectReason>("aborted", "error", "cleared", "removed", "unavailable", "not_invoked")
    .map((reason) => new RejectCmd(reason)),
  fc.constant(new ClearCmd()),
  fc.constantFrom(...sources).map((source) => new RemoveCmd(source)),
  fc.boolean().map((install) => new StandingCmd(install))
]

const setup = () => {
  const model: Model = { m: new QueueModel(), actions: [], byId: new Map(), reminders: 0, standing: false }
  const rt = ManagedRuntime.make(Layer.merge(ResolveRuntime.layer, quiet))
  const real: Real = {
    rt,
    handles: [],
    applied: [],
    outcome: "ok",
    started: Deferred.unsafeMake(rt.runSync(Effect.fiberId))
  }
  return { model, real }
}

/** After the sequence, clearing the queue ends every action still pending: all end exactly once. */
const finish = async (model: Model, real: Real) => {
  await step(model, real, async () => {
    model.m.clear()
    await real.rt.runPromise(Effect.flatMap(ToolChoiceQueue, (q) => q.clear))
  })
  for (const a of model.actions) assert.isTrue(terminal(a.status), `an action is still ${a.status} after clear`)
}

const runSequence = async (cmds: Iterable<Cmd>) => {
  const { model, real } = setup()
  try {
    for (const cmd of cmds) if (cmd.check(model)) await cmd.run(model, real)
    await finish(model, real)
  } finally {
    await real.rt.dispose()
  }
  return model
}

describe("pending actions against the reference model", () => {
  // The long budget runs in batches, and every sequence ends with a turn of the event loop: a run that only awaits
  // promises would starve vitest's worker RPC, which then reports a timeout even though every sequence passed.
  for (let batch = 0; batch < batches; batch++) {
    it(
      `every staged action ends exactly once, over ${numRuns / batches} random sequences${
        batches > 1 ? ` (batch ${batch + 1} of ${batches})` : ""
      }`,
      async () => {
        await fc.assert(
          fc.asyncProperty(fc.commands(commands, { maxCommands: 40, size: "max" }), async (cmds) => {
            await runSequence(cmds)
            await yieldToEventLoop() // let vitest's worker answer its RPC (test/support/eventLoop.ts)
          }),
          { numRuns: numRuns / batches }
        )
      },
      LONG ? 600_000 : 30_000
    )
  }

  it("stacked previews resolve most-recent-first, one forced turn each", async () => {
    const model = await runSequence([
      new StageCmd("edit", "none"),
      new StageCmd("write", "default"),
      new NextCmd(),
      new ResolveCmd("apply", "ok"),
      new EndTurnCmd(),
      new NextCmd(),
      new ResolveCmd("discard", "ok"),
      new EndTurnCmd()
    ])
    deepStrictEqual(model.actions.map((a) => a.status), ["discarded", "applied"])
  })

  it("a failed apply keeps the action pending and the next forced turn applies it once", async () => {
    const model = await runSequence([
      new StageCmd("edit", "none"),
      new NextCmd(),
      new ResolveCmd("apply", "fail"),
      new ResolveCmd("apply", "ok"),
      new EndTurnCmd(),
      new NextCmd(),
      new ResolveCmd("apply", "ok"),
      new ResolveCmd("apply", "ok"),
      new EndTurnCmd()
    ])
    deepStrictEqual(model.actions.map((a) => [a.status, a.applied]), [["applied", 1]])
  })

  it("an apply interrupted after its commit counts as applied; before it, the action stays pending", async () => {
    const model = await runSequence([
      new StageCmd("edit", "none"),
      new StageCmd("write", "none"),
      new NextCmd(),
      new ResolveCmd("apply", "interrupt"),
      new EndTurnCmd(),
      new NextCmd(),
      new ResolveCmd("apply", "interruptAfterCommit"),
      new EndTurnCmd(),
      new NextCmd()
    ])
    deepStrictEqual(model.actions.map((a) => a.status), ["cleared", "applied"])
  })
})
