/**
 * Model-based test of the ToolChoiceQueue (SPEC §2): random command sequences run against the real queue and the
 * reference model in `QueueModel.ts`; every observable (returned values, ids, `inspect`, `hasInFlight`,
 * `inFlight`, the callbacks that ran and in what order, the errors reported) must agree after every command.
 *
 * Quick budget by default; `LONG=1` (`npm run test:long`) runs at least 20 000 sequences.
 */
// node's strict deepStrictEqual: chai's treats Option.none() as equal to Option.some(x).
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, FastCheck as fc, Layer, Logger, Option, Runtime } from "effect"
import { deepStrictEqual } from "node:assert/strict"
import {
  type Invoker,
  type PushOptions,
  type RejectDecision,
  type RejectReason,
  ToolChoice,
  ToolChoiceQueue,
  ToolError,
  ToolResult
} from "../../src/index.js"
import { yieldToEventLoop } from "../support/eventLoop.js"
import { type ModelHooks, QueueModel } from "./QueueModel.js"

const LONG = process.env.LONG !== undefined && process.env.LONG !== "" && process.env.LONG !== "0"
const numRuns = LONG ? 20_000 : 300
const batches = LONG ? 10 : 1

type ResolvedPolicy = "none" | "ok" | "fail" | "die" | "push"
type RejectedPolicy = "none" | "requeue" | "drop" | "fail" | "die" | "throw"

const reasons: ReadonlyArray<RejectReason> = ["aborted", "error", "cleared", "removed", "unavailable", "not_invoked"]

/** Counts the errors the queue reports through the logger. */
const sink = { errors: 0 }
const runtime = Effect.runSync(
  Effect.scoped(Layer.toRuntime(Logger.replace(
    Logger.defaultLogger,
    Logger.make(({ logLevel }) => {
      if (logLevel._tag === "Error") sink.errors++
    })
  )))
)
const runExit = Runtime.runSyncExit(runtime)
const run = <A, E>(effect: Effect.Effect<A, E>): A => {
  const exit = runExit(effect)
  if (Exit.isFailure(exit)) throw new Error(`unexpected failure: ${String(exit.cause)}`)
  return exit.value
}

interface Model {
  readonly m: QueueModel
  readonly events: Array<string>
  errors: number
  readonly tags: Map<string, string>
  stored: number | undefined | null
  pushes: number
  /** The directive id of each served value, by serial. */
  readonly servedIds: Map<number, string>
}

interface Real {
  readonly queue: ToolChoiceQueue.Service
  readonly events: Array<string>
  invokeOk: boolean
  stored: Option.Option<Invoker> | null
}

const choiceArb: fc.Arbitrary<ToolChoice.ToolChoice> = fc.oneof(
  fc.constantFrom<ToolChoice.ToolChoice>("auto", "none", "required"),
  fc.constantFrom("x", "y", "resolve").map(ToolChoice.forceTool)
)
const labelArb = fc.option(fc.constantFrom("a", "b", "c", "anonymous"), { nil: undefined })

const modelHooks = (
  model: Model,
  tag: string,
  resolved: ResolvedPolicy,
  rejected: RejectedPolicy,
  invoker: boolean
) => {
  const hooks: ModelHooks = {
    invoker,
    ...(resolved === "none" ? {} : {
      onResolved: (m: QueueModel) => {
        model.events.push(`resolved:${tag}`)
        if (resolved === "fail" || resolved === "die") model.errors++
        if (resolved === "push") m.push(["auto"], { label: "from-callback" }, { invoker: false })
      }
    }),
    ...(rejected === "none" ? {} : {
      onRejected: (reason: RejectReason): RejectDecision | undefined => {
        model.events.push(`rejected:${tag}:${reason}`)
        if (rejected === "requeue" || rejected === "drop") return rejected
        model.errors++
        return undefined
      }
    })
  }
  return hooks
}

const realOptions = (
  real: Real,
  tag: string,
  resolved: ResolvedPolicy,
  rejected: RejectedPolicy,
  invoker: boolean
): PushOptions => ({
  ...(resolved === "none" ? {} : {
    onResolved: Effect.suspend((): Effect.Effect<void> => {
      real.events.push(`resolved:${tag}`)
      switch (resolved) {
        case "ok":
          return Effect.void
        case "fail":
          return Effect.fail("onResolved failed") as unknown as Effect.Effect<void>
        case "die":
          return Effect.die("onResolved died")
        case "push":
          return Effect.asVoid(real.queue.pushOnce("auto", { label: "from-callback" }))
      }
    })
  }),
  ...(rejected === "none" ? {} : {
    onRejected: (reason: RejectReason): Effect.Effect<RejectDecision> => {
      real.events.push(`rejected:${tag}:${reason}`)
      switch (rejected) {
        case "requeue":
        case "drop":
          return Effect.succeed(rejected)
        case "fail":
          return Effect.fail("onRejected failed") as unknown as Effect.Effect<RejectDecision>
        case "die":
          return Effect.die("onRejected died")
        case "throw":
          throw new Error("onRejected threw")
      }
    }
  }),
  ...(invoker ?
    {
      onInvoked: () =>
        Effect.suspend(() => {
          real.events.push(`invoked:${tag}`)
          return real.invokeOk ? Effect.succeed(ToolResult.text("ok")) : Effect.fail(new ToolError({ message: "no" }))
        })
    } :
    {})
})

/** Every observable of the real queue equals the model's. */
const compare = (model: Model, real: Real) => {
  const { m } = model
  deepStrictEqual(run(real.queue.inspect), m.inspect())
  assert.strictEqual(run(real.queue.hasInFlight), m.inFlight !== undefined)
  const info = run(real.queue.inFlight)
  if (m.inFlight === undefined) {
    assert.isTrue(Option.isNone(info))
  } else {
    deepStrictEqual(
      Option.getOrUndefined(info),
      {
        id: m.inFlight.directive.id,
        label: m.inFlight.directive.label,
        choice: m.inFlight.choice,
        requeues: m.inFlight.directive.requeues,
        invoked: m.inFlight.invoked
      }
    )
  }
  assert.strictEqual(Option.isSome(run(real.queue.peekInFlightInvoker)), m.peekInvoker() !== undefined)
  deepStrictEqual(real.events, model.events)
  assert.strictEqual(sink.errors, model.errors)
}

type Cmd = fc.Command<Model, Real>

class PushCmd implements Cmd {
  constructor(
    readonly kind: "push" | "pushOnce" | "pushSequence",
    readonly choices: ReadonlyArray<ToolChoice.ToolChoice>,
    readonly label: string | undefined,
    readonly now: boolean,
    readonly resolved: ResolvedPolicy,
    readonly rejected: RejectedPolicy,
    readonly invoker: boolean
  ) {}
  check = () => true
  run(model: Model, real: Real) {
    const tag = `t${++model.pushes}`
    const options = { ...(this.label === undefined ? {} : { label: this.label }), now: this.now }
    const choices = this.kind === "pushOnce" ? this.choices.slice(0, 1) : this.choices
    const expected = this.kind === "pushOnce" && choices.length === 0 ?
      undefined :
      model.m.push(choices, options, modelHooks(model, tag, this.resolved, this.rejected, this.invoker))
    const opts = { ...options, ...realOptions(real, tag, this.resolved, this.rejected, this.invoker) }
    if (this.kind === "pushOnce" && choices.length === 0) return
    const exit = runExit(
      this.kind === "pushOnce" ?
        real.queue.pushOnce(choices[0]!, opts) :
        this.kind === "push" ?
        real.queue.push(new Set(choices).size === choices.length ? new Set(choices) : choices.values(), opts) :
        real.queue.pushSequence(choices, opts)
    )
    if (expected === undefined) {
      assert.isTrue(Exit.isFailure(exit), "an empty directive must fail")
    } else {
      deepStrictEqual(exit, Exit.succeed(expected))
      model.tags.set(expected, tag)
    }
    compare(model, real)
  }
  toString = () =>
    `${this.kind}(${JSON.stringify(this.choices)}, ${
      JSON.stringify({ label: this.label, now: this.now })
    }, ${this.resolved}, ${this.rejected}, invoker=${this.invoker})`
}

class NextCmd implements Cmd {
  check = () => true
  run(model: Model, real: Real) {
    const expected = model.m.next()
    if (model.m.inFlight !== undefined) model.servedIds.set(model.m.inFlight.serial, model.m.inFlight.directive.id)
    deepStrictEqual(run(real.queue.nextToolChoice), Option.fromNullable(expected))
    compare(model, real)
  }
  toString = () => "nextToolChoice"
}

class ResolveCmd implements Cmd {
  check = () => true
  run(model: Model, real: Real) {
    model.m.resolve()
    run(real.queue.resolve)
    compare(model, real)
  }
  toString = () => "resolve"
}

class RejectCmd implements Cmd {
  constructor(readonly reason: RejectReason) {}
  check = () => true
  run(model: Model, real: Real) {
    model.m.reject(this.reason)
    run(real.queue.reject(this.reason))
    compare(model, real)
  }
  toString = () => `reject(${this.reason})`
}

class RemoveCmd implements Cmd {
  constructor(readonly label: string) {}
  check = () => true
  run(model: Model, real: Real) {
    const expected = model.m.removeByLabel(this.label)
    assert.strictEqual(run(real.queue.removeByLabel(this.label)), expected)
    compare(model, real)
  }
  toString = () => `removeByLabel(${this.label})`
}

class ClearCmd implements Cmd {
  check = () => true
  run(model: Model, real: Real) {
    model.m.clear()
    run(real.queue.clear)
    compare(model, real)
  }
  toString = () => "clear"
}

class ConsumeLabelCmd implements Cmd {
  check = () => true
  run(model: Model, real: Real) {
    const expected = model.m.consumeLastServedLabel()
    deepStrictEqual(run(real.queue.consumeLastServedLabel), Option.fromNullable(expected))
    compare(model, real)
  }
  toString = () => "consumeLastServedLabel"
}

/** Invokes the in-flight invoker (peeked now, or the one stored by an earlier `PeekCmd`). */
class InvokeCmd implements Cmd {
  constructor(readonly ok: boolean, readonly stored: boolean) {}
  check = (model: Readonly<Model>) => !this.stored || model.stored !== null
  run(model: Model, real: Real) {
    const serial = this.stored ? model.stored! : model.m.peekInvoker()
    const invoker = this.stored ? real.stored! : run(real.queue.peekInFlightInvoker)
    assert.strictEqual(Option.isSome(invoker), serial !== undefined)
    if (Option.isSome(invoker) && serial !== undefined) {
      // The handler's tag: the directive that was in flight when it was peeked.
      const tag = model.tags.get(model.servedIds.get(serial)!)!
      model.events.push(`invoked:${tag}`)
      if (this.ok) model.m.markInvoked(serial)
      real.invokeOk = this.ok
      const exit = runExit(invoker.value({ action: "apply", reason: "model test" }))
      assert.strictEqual(Exit.isSuccess(exit), this.ok)
    }
    compare(model, real)
  }
  toString = () => `invoke(ok=${this.ok}, stored=${this.stored})`
}

class PeekCmd implements Cmd {
  check = () => true
  run(model: Model, real: Real) {
    model.stored = model.m.peekInvoker()
    real.stored = run(real.queue.peekInFlightInvoker)
    compare(model, real)
  }
  toString = () => "peekInFlightInvoker (stored)"
}

const commands = [
  fc.record({
    kind: fc.constantFrom("push" as const, "pushOnce" as const, "pushSequence" as const),
    choices: fc.array(choiceArb, { minLength: 0, maxLength: 3 }),
    label: labelArb,
    now: fc.boolean(),
    resolved: fc.constantFrom<ResolvedPolicy>("none", "ok", "fail", "die", "push"),
    rejected: fc.constantFrom<RejectedPolicy>("none", "requeue", "requeue", "drop", "fail", "die", "throw"),
    invoker: fc.boolean()
  }).map((p) => new PushCmd(p.kind, p.choices, p.label, p.now, p.resolved, p.rejected, p.invoker)),
  fc.constant(new NextCmd()),
  fc.constant(new NextCmd()),
  fc.constant(new ResolveCmd()),
  fc.constantFrom(...reasons).map((reason) => new RejectCmd(reason)),
  fc.constantFrom("a", "b", "c", "anonymous", "from-callback").map((label) => new RemoveCmd(label)),
  fc.constant(new ClearCmd()),
  fc.constant(new ConsumeLabelCmd()),
  fc.tuple(fc.boolean(), fc.boolean()).map(([ok, stored]) => new InvokeCmd(ok, stored)),
  fc.constant(new PeekCmd())
]

const setup = () => {
  sink.errors = 0
  const model: Model = {
    m: new QueueModel(),
    events: [],
    errors: 0,
    tags: new Map(),
    stored: null,
    pushes: 0,
    servedIds: new Map()
  }
  const real: Real = {
    queue: run(Effect.provide(ToolChoiceQueue, ToolChoiceQueue.layer)),
    events: [],
    invokeOk: true,
    stored: null
  }
  return { model, real }
}

/** Runs one fixed sequence (the regressions below are shrunk counter-examples written out). */
const replay = (cmds: ReadonlyArray<Cmd>) => {
  const { model, real } = setup()
  for (const cmd of cmds) {
    if (cmd.check(model)) cmd.run(model, real)
  }
  return { model, real }
}

describe("ToolChoiceQueue against the reference model", () => {
  // The long budget runs in batches, and every sequence ends with a turn of the event loop: a test that computes
  // for minutes without one starves vitest's worker RPC, which then reports a timeout although every sequence passed.
  for (let batch = 0; batch < batches; batch++) {
    it(
      `agrees on every observable over ${numRuns / batches} random sequences${
        batches > 1 ? ` (batch ${batch + 1} of ${batches})` : ""
      }`,
      async () => {
        await fc.assert(
          fc.asyncProperty(fc.commands(commands, { maxCommands: 50, size: "max" }), async (cmds) => {
            fc.modelRun(setup, cmds)
            await yieldToEventLoop() // let vitest's worker answer its RPC (test/support/eventLoop.ts)
          }),
          { numRuns: numRuns / batches }
        )
      },
      LONG ? 600_000 : 30_000
    )
  }

  it("requeues the lost value at the head with the same id and label, and counts the requeue", () => {
    const { real } = replay([
      new PushCmd("pushSequence", ["auto", "required"], "a", false, "none", "requeue", false),
      new PushCmd("pushOnce", ["none"], "b", false, "none", "none", false),
      new NextCmd(),
      new RejectCmd("unavailable")
    ])
    deepStrictEqual(run(real.queue.inspect), ["a", "a", "b"])
    deepStrictEqual(run(real.queue.nextToolChoice), Option.some<ToolChoice.ToolChoice>("auto"))
    const info = Option.getOrThrow(run(real.queue.inFlight))
    deepStrictEqual([info.id, info.label, info.requeues], ["directive-1", "a", 1])
    run(real.queue.resolve)
    // The rest of the sequence is not duplicated.
    deepStrictEqual(run(real.queue.nextToolChoice), Option.some<ToolChoice.ToolChoice>("required"))
    deepStrictEqual(run(real.queue.inspect), ["b"])
  })

  it("does not pile up exhausted one-shot `now` directives", () => {
    const { real } = replay([])
    for (let i = 0; i < 1_000; i++) {
      run(real.queue.pushOnce(ToolChoice.forceTool("resolve"), { now: true, label: "p" }))
      run(real.queue.nextToolChoice)
      run(real.queue.resolve)
    }
    deepStrictEqual(run(real.queue.inspect), [])
    assert.isFalse(run(real.queue.hasInFlight))
  })

  it("a stale invoker peeked in an earlier turn does not mark the current turn invoked", () => {
    const { model, real } = replay([
      new PushCmd("pushOnce", ["auto"], "a", false, "none", "drop", true),
      new PushCmd("pushOnce", ["auto"], "b", false, "none", "drop", true),
      new NextCmd(),
      new PeekCmd(),
      new NextCmd(),
      new InvokeCmd(true, true),
      new ResolveCmd()
    ])
    deepStrictEqual(model.events, ["rejected:t1:error", "invoked:t1", "rejected:t2:not_invoked"])
    deepStrictEqual(real.events, model.events)
  })

  it("callbacks that fail, die or throw are reported and leave the queue consistent", () => {
    const { model, real } = replay([
      new PushCmd("pushOnce", ["auto"], "a", false, "fail", "none", false),
      new PushCmd("pushOnce", ["auto"], "b", false, "none", "throw", false),
      new PushCmd("pushOnce", ["auto"], "c", false, "die", "die", false),
      new NextCmd(),
      new ResolveCmd(),
      new NextCmd(),
      new RejectCmd("aborted"),
      new NextCmd(),
      new ResolveCmd()
    ])
    assert.strictEqual(model.errors, 3)
    assert.strictEqual(sink.errors, 3)
    deepStrictEqual(run(real.queue.inspect), [])
    deepStrictEqual(run(real.queue.consumeLastServedLabel), Option.some("c"))
  })
})
