import { assert, describe, it } from "@effect/vitest"
import { deepStrictEqual } from "@effect/vitest/utils"
import { Cause, Deferred, Effect, Either, Fiber, Option, Ref } from "effect"
import {
  ApplyFailed,
  decodeResolveParams,
  InvalidResolveParams,
  NoPendingAction,
  PendingActionNotPending,
  Preview,
  resolve,
  ResolveConfig,
  type ResolveDetails,
  ResolveRuntime,
  ResolveTool,
  stage,
  SteeringBus,
  SteeringMessage,
  ToolChoice,
  ToolChoiceQueue,
  ToolError,
  ToolResult
} from "../../src/index.js"
import { extraTextMaxLength, nothingToDiscardText } from "../../src/tools/Resolve.js"
import { invalidInputs } from "./invalid-inputs.js"

type Spec = Parameters<typeof stage<unknown, never>>[0]

/** Stages a preview and serves its forced turn, as the turn driver would. */
const stageAndServe = (spec: Spec) =>
  Effect.gen(function*() {
    const queue = yield* ToolChoiceQueue
    const handle = yield* stage(spec)
    deepStrictEqual(yield* queue.nextToolChoice, Option.some(ToolChoice.forceTool("resolve")))
    return handle
  })

const detailsOf = (result: ToolResult.ToolResult) => result.details as ResolveDetails

const remindersPending = Effect.map(
  Effect.flatMap(SteeringBus, (bus) => bus.pending),
  (messages) => messages.filter((m) => m.customType === SteeringMessage.resolveReminderType).length
)

/** Everything a resolve call could change. */
const snapshot = (handle: Preview.Handle) =>
  Effect.gen(function*() {
    const queue = yield* ToolChoiceQueue
    const bus = yield* SteeringBus
    return {
      queued: yield* queue.inspect,
      inFlight: yield* queue.inFlight,
      steering: yield* bus.pending,
      status: yield* handle.status
    }
  })

const edit = { label: "Edit: 1 replacement in 1 file", sourceToolName: "edit" } as const

describe("resolve", () => {
  it.effect("applies the in-flight preview once", () =>
    Effect.gen(function*() {
      const queue = yield* ToolChoiceQueue
      let applied = 0
      const handle = yield* stage({
        ...edit,
        apply: () => Effect.sync(() => (applied++, ToolResult.text("done")))
      })
      deepStrictEqual(yield* queue.nextToolChoice, Option.some({ type: "tool" as const, name: "resolve" }))
      const result = yield* ResolveTool.execute({ action: "apply", reason: "ok" })
      assert.strictEqual(ToolResult.textOf(result), "done")
      assert.strictEqual(applied, 1)
      assert.strictEqual(yield* handle.status, "applied")
      const again = yield* Effect.flip(ResolveTool.execute({ action: "apply", reason: "again" }))
      assert.instanceOf(again, NoPendingAction)
      assert.match(again.message, /already applied/)
      assert.strictEqual(applied, 1)
      yield* queue.resolve
      deepStrictEqual(yield* queue.consumeLastServedLabel, Option.some("pending-action:edit"))
      deepStrictEqual(yield* queue.inspect, [])
    }).pipe(Effect.provide(ResolveRuntime.layer)))

  describe("lookup (§6.1)", () => {
    it.effect("nothing pending fails with NoPendingAction and the SPEC's message", () =>
      Effect.gen(function*() {
        const error = yield* Effect.flip(resolve({ action: "apply", reason: "r" }))
        assert.instanceOf(error, NoPendingAction)
        assert.strictEqual(error.message, "No pending action to resolve. Nothing to apply or discard.")
        const discard = yield* Effect.flip(ResolveTool.execute({ action: "discard", reason: "r" }))
        assert.instanceOf(discard, NoPendingAction)
      }).pipe(Effect.provide(ResolveRuntime.layer)))

    it.effect("a staged preview is resolvable at once, with no turn in between (the pending set is the truth)", () =>
      Effect.gen(function*() {
        const queue = yield* ToolChoiceQueue
        let applied = 0
        const handle = yield* stage({
          ...edit,
          apply: () => Effect.sync(() => (applied++, ToolResult.text("done")))
        })
        assert.strictEqual(ToolResult.textOf(yield* resolve({ action: "apply", reason: "r" })), "done")
        assert.strictEqual(applied, 1)
        assert.strictEqual(yield* handle.status, "applied")
        // Its forcing directive is satisfied: the queue cannot force resolve for nothing.
        deepStrictEqual(yield* queue.inspect, [])
        deepStrictEqual(yield* queue.nextToolChoice, Option.none())
      }).pipe(Effect.provide(ResolveRuntime.layer)))

    it.effect("discardWithoutPending \"succeed\" lets a discard with nothing pending succeed", () =>
      Effect.gen(function*() {
        const result = yield* ResolveTool.execute({ action: "discard", reason: "stale", extra: { k: 1 } })
        assert.strictEqual(ToolResult.textOf(result), "Nothing to discard; no pending action remains.")
        assert.strictEqual(nothingToDiscardText, "Nothing to discard; no pending action remains.")
        deepStrictEqual(result.details, { action: "discard", reason: "stale", extra: { k: 1 } })
        // An apply with nothing pending still fails.
        assert.instanceOf(yield* Effect.flip(ResolveTool.execute({ action: "apply", reason: "r" })), NoPendingAction)
      }).pipe(
        Effect.provide(ResolveRuntime.layer),
        Effect.provideService(ResolveConfig, { ...ResolveConfig.defaults, discardWithoutPending: "succeed" })
      ))

    it.effect("discardWithoutPending \"succeed\" does not bypass a real pending action", () =>
      Effect.gen(function*() {
        const handle = yield* stageAndServe({ ...edit, apply: () => Effect.succeed(ToolResult.text("done")) })
        const result = yield* ResolveTool.execute({ action: "discard", reason: "no" })
        assert.strictEqual(ToolResult.textOf(result), `Discarded: ${edit.label}. Reason: no`)
        assert.strictEqual(yield* handle.status, "discarded")
      }).pipe(
        Effect.provide(ResolveRuntime.layer),
        Effect.provide(ResolveConfig.layer({ discardWithoutPending: "succeed" }))
      ))
  })

  describe("apply (§6.3) and details (§6.5)", () => {
    it.effect("merges the call's parameters, the source and the callback's details", () =>
      Effect.gen(function*() {
        const seen = yield* Ref.make<Option.Option<[string, unknown]>>(Option.none())
        yield* stageAndServe({
          ...edit,
          apply: (reason, extra) =>
            Effect.as(Ref.set(seen, Option.some([reason, extra])), ToolResult.text("Applied.", { files: 1 }))
        })
        const result = yield* ResolveTool.execute({ action: "apply", reason: "Matches.", extra: { title: "t" } })
        deepStrictEqual(yield* Ref.get(seen), Option.some(["Matches.", { title: "t" }] as [string, unknown]))
        assert.strictEqual(ToolResult.textOf(result), "Applied.")
        deepStrictEqual(result.details, {
          action: "apply",
          reason: "Matches.",
          extra: { title: "t" },
          sourceToolName: "edit",
          label: edit.label,
          sourceResultDetails: { files: 1 }
        })
      }).pipe(Effect.provide(ResolveRuntime.layer)))

    it.effect("leaves out extra and sourceResultDetails when absent; apply sees extra as {}", () =>
      Effect.gen(function*() {
        const seen = yield* Ref.make<unknown>(undefined)
        yield* stageAndServe({
          ...edit,
          apply: (_reason, extra) => Effect.as(Ref.set(seen, extra), ToolResult.text("Applied."))
        })
        const result = yield* ResolveTool.execute({ action: "apply", reason: "ok" })
        deepStrictEqual(yield* Ref.get(seen), {})
        const details = detailsOf(result)
        deepStrictEqual(details, { action: "apply", reason: "ok", sourceToolName: "edit", label: edit.label })
        assert.isFalse("extra" in details)
        assert.isFalse("sourceResultDetails" in details)
      }).pipe(Effect.provide(ResolveRuntime.layer)))

    it.effect("keeps the callback's content and isError flag", () =>
      Effect.gen(function*() {
        yield* stageAndServe({
          ...edit,
          apply: () =>
            Effect.succeed({ content: [{ type: "text", text: "a" }, { type: "text", text: "b" }], isError: true })
        })
        const result = yield* ResolveTool.execute({ action: "apply", reason: "ok" })
        assert.strictEqual(ToolResult.textOf(result), "a\nb")
        assert.isTrue(result.isError)
      }).pipe(Effect.provide(ResolveRuntime.layer)))

    it.effect("a ToolError from apply passes through unchanged", () =>
      Effect.gen(function*() {
        const original = new ToolError({ message: "File changed on disk; re-run the edit." })
        const handle = yield* stageAndServe({ ...edit, apply: () => Effect.fail(original) })
        const error = yield* Effect.flip(ResolveTool.execute({ action: "apply", reason: "ok" }))
        // Effect may wrap a failure in a span-carrying proxy; the original instance is underneath, unwrapped.
        assert.instanceOf(error, ToolError)
        assert.strictEqual(Cause.originalError(error), original)
        assert.strictEqual(error.message, "File changed on disk; re-run the edit.")
        assert.strictEqual(yield* handle.status, "pending")
      }).pipe(Effect.provide(ResolveRuntime.layer)))

    it.effect("any other failure becomes ApplyFailed with label, source tool and the original cause", () =>
      Effect.gen(function*() {
        const original = new Error("database is locked")
        yield* stageAndServe({ ...edit, apply: () => Effect.fail(original) })
        const error = yield* Effect.flip(ResolveTool.execute({ action: "apply", reason: "ok" }))
        assert.instanceOf(error, ApplyFailed)
        if (!(error instanceof ApplyFailed)) return
        assert.strictEqual(error.message, "Apply failed: database is locked")
        assert.strictEqual(error.label, edit.label)
        assert.strictEqual(error.sourceToolName, "edit")
        assert.strictEqual(Cause.originalError(error.cause), original)
      }).pipe(Effect.provide(ResolveRuntime.layer)))

    it.effect("a defect in apply becomes ApplyFailed too", () =>
      Effect.gen(function*() {
        const original = new RangeError("disk full")
        const handle = yield* stageAndServe({ ...edit, apply: () => Effect.die(original) })
        const error = yield* Effect.flip(ResolveTool.execute({ action: "apply", reason: "ok" }))
        assert.instanceOf(error, ApplyFailed)
        if (!(error instanceof ApplyFailed)) return
        assert.strictEqual(error.message, "Apply failed: disk full")
        assert.strictEqual(Cause.originalError(error.cause), original)
        assert.strictEqual(yield* handle.status, "pending")
      }).pipe(Effect.provide(ResolveRuntime.layer)))

    it.effect("a thrown exception and a non-Error failure become readable ApplyFailed messages", () =>
      Effect.gen(function*() {
        const queue = yield* ToolChoiceQueue
        yield* stageAndServe({
          ...edit,
          apply: () => {
            throw new Error("thrown before any Effect")
          }
        })
        const thrown = yield* Effect.flip(ResolveTool.execute({ action: "apply", reason: "ok" }))
        assert.strictEqual(thrown.message, "Apply failed: thrown before any Effect")
        yield* queue.resolve
        yield* queue.clear
        yield* stageAndServe({ ...edit, apply: () => Effect.fail({ code: "EBUSY" }) })
        const plain = yield* Effect.flip(ResolveTool.execute({ action: "apply", reason: "ok" }))
        assert.instanceOf(plain, ApplyFailed)
        assert.strictEqual(plain.message, "Apply failed: {\"code\":\"EBUSY\"}")
      }).pipe(Effect.provide(ResolveRuntime.layer)))

    it.effect("a failed apply stays pending, steers the reminder again and is forced again next turn", () =>
      Effect.gen(function*() {
        const queue = yield* ToolChoiceQueue
        const bus = yield* SteeringBus
        const attempts = yield* Ref.make(0)
        const handle = yield* stage({
          ...edit,
          apply: () =>
            Effect.flatMap(
              Ref.getAndUpdate(attempts, (n) => n + 1),
              (n) => n === 0 ? Effect.fail(new Error("locked")) : Effect.succeed(ToolResult.text("applied"))
            )
        })
        assert.strictEqual(yield* remindersPending, 1)
        yield* bus.drain // the turn driver takes the first reminder before the request
        yield* queue.nextToolChoice
        assert.instanceOf(yield* Effect.flip(ResolveTool.execute({ action: "apply", reason: "go" })), ApplyFailed)
        assert.strictEqual(yield* handle.status, "pending")
        const reminders = yield* bus.pending
        assert.strictEqual(reminders.length, 1)
        deepStrictEqual(reminders[0]!.details, { toolName: "edit" })
        yield* queue.resolve // the turn ends: not invoked successfully, so requeued at the head
        deepStrictEqual(yield* queue.inspect, ["pending-action:edit"])
        deepStrictEqual(yield* queue.nextToolChoice, Option.some(ToolChoice.forceTool("resolve")))
        const info = Option.getOrThrow(yield* queue.inFlight)
        deepStrictEqual([info.id, info.requeues], [handle.id, 1])
        assert.strictEqual(
          ToolResult.textOf(yield* ResolveTool.execute({ action: "apply", reason: "retry" })),
          "applied"
        )
        assert.strictEqual(yield* handle.status, "applied")
        yield* queue.resolve
        deepStrictEqual(yield* queue.inspect, [])
        assert.strictEqual(yield* Ref.get(attempts), 2)
      }).pipe(Effect.provide(ResolveRuntime.layer)))

    it.effect("after a failed apply the model can discard in the same turn", () =>
      Effect.gen(function*() {
        const queue = yield* ToolChoiceQueue
        const handle = yield* stageAndServe({ ...edit, apply: () => Effect.fail(new Error("locked")) })
        yield* Effect.flip(ResolveTool.execute({ action: "apply", reason: "go" }))
        const result = yield* ResolveTool.execute({ action: "discard", reason: "give up" })
        assert.strictEqual(ToolResult.textOf(result), `Discarded: ${edit.label}. Reason: give up`)
        assert.strictEqual(yield* handle.status, "discarded")
        yield* queue.resolve
        deepStrictEqual(yield* queue.inspect, [])
      }).pipe(Effect.provide(ResolveRuntime.layer)))
  })

  describe("discard (§6.4)", () => {
    it.effect("without a reject callback returns the default text", () =>
      Effect.gen(function*() {
        let applied = 0
        const handle = yield* stageAndServe({
          ...edit,
          apply: () => Effect.sync(() => (applied++, ToolResult.text("x")))
        })
        const result = yield* ResolveTool.execute({ action: "discard", reason: "Too broad." })
        assert.strictEqual(ToolResult.textOf(result), "Discarded: Edit: 1 replacement in 1 file. Reason: Too broad.")
        deepStrictEqual(result.details, {
          action: "discard",
          reason: "Too broad.",
          sourceToolName: "edit",
          label: edit.label
        })
        assert.strictEqual(applied, 0)
        assert.strictEqual(yield* handle.status, "discarded")
      }).pipe(Effect.provide(ResolveRuntime.layer)))

    it.effect("a reject returning none gets the default text; some is returned with its details", () =>
      Effect.gen(function*() {
        const queue = yield* ToolChoiceQueue
        const calls = yield* Ref.make<ReadonlyArray<[string, unknown]>>([])
        yield* stageAndServe({
          ...edit,
          apply: () => Effect.succeed(ToolResult.text("x")),
          reject: (reason, extra) =>
            Effect.as(Ref.update(calls, (c) => [...c, [reason, extra] as [string, unknown]]), Option.none())
        })
        const none = yield* ResolveTool.execute({ action: "discard", reason: "no" })
        assert.strictEqual(ToolResult.textOf(none), `Discarded: ${edit.label}. Reason: no`)
        assert.isFalse("sourceResultDetails" in detailsOf(none))
        yield* queue.resolve
        yield* stageAndServe({
          label: "Plan: refactor",
          sourceToolName: "plan",
          apply: () => Effect.succeed(ToolResult.text("x")),
          reject: (reason, extra) =>
            Effect.as(
              Ref.update(calls, (c) => [...c, [reason, extra] as [string, unknown]]),
              Option.some(ToolResult.text("Plan rejected; revise it.", { revised: false }))
            )
        })
        const some = yield* ResolveTool.execute({ action: "discard", reason: "bad", extra: { title: "p" } })
        assert.strictEqual(ToolResult.textOf(some), "Plan rejected; revise it.")
        deepStrictEqual(some.details, {
          action: "discard",
          reason: "bad",
          extra: { title: "p" },
          sourceToolName: "plan",
          label: "Plan: refactor",
          sourceResultDetails: { revised: false }
        })
        deepStrictEqual(yield* Ref.get(calls), [["no", {}], ["bad", { title: "p" }]])
      }).pipe(Effect.provide(ResolveRuntime.layer)))

    it.effect("a failing reject propagates unwrapped and the action stays pending", () =>
      Effect.gen(function*() {
        const original = new ToolError({ message: "Cannot discard while the plan is being edited." })
        const handle = yield* stageAndServe({
          ...edit,
          apply: () => Effect.succeed(ToolResult.text("x")),
          reject: () => Effect.fail(original)
        })
        const error = yield* Effect.flip(ResolveTool.execute({ action: "discard", reason: "no" }))
        assert.instanceOf(error, ToolError)
        assert.strictEqual(Cause.originalError(error), original)
        assert.strictEqual(yield* handle.status, "pending")
      }).pipe(Effect.provide(ResolveRuntime.layer)))
  })

  describe("exactly once (§6.2)", () => {
    it.effect("100 concurrent resolves apply once", () =>
      Effect.gen(function*() {
        const applied = yield* Ref.make(0)
        const handle = yield* stageAndServe({
          ...edit,
          apply: () =>
            Effect.gen(function*() {
              yield* Effect.yieldNow()
              yield* Ref.update(applied, (n) => n + 1)
              yield* Effect.yieldNow()
              return ToolResult.text("applied")
            })
        })
        const results = yield* Effect.forEach(
          Array.from({ length: 100 }, (_, i) => i),
          (i) => Effect.either(ResolveTool.execute({ action: i % 2 === 0 ? "apply" : "discard", reason: `r${i}` })),
          { concurrency: "unbounded" }
        )
        const successes = results.filter(Either.isRight)
        const failures = results.filter(Either.isLeft)
        assert.strictEqual(successes.length, 1)
        assert.strictEqual(failures.length, 99)
        // While the winner runs, a loser is told the action is being resolved; after it, that nothing is pending.
        for (const failure of failures) {
          assert.isTrue(
            failure.left instanceof PendingActionNotPending || failure.left instanceof NoPendingAction,
            String(failure.left)
          )
        }
        // The first call (an apply) won the claim.
        assert.strictEqual(ToolResult.textOf(successes[0]!.right), "applied")
        assert.strictEqual(yield* Ref.get(applied), 1)
        assert.strictEqual(yield* handle.status, "applied")
      }).pipe(Effect.provide(ResolveRuntime.layer)))

    it.effect("a concurrent call while apply runs is told it is being resolved", () =>
      Effect.gen(function*() {
        const started = yield* Deferred.make<void>()
        const release = yield* Deferred.make<void>()
        yield* stageAndServe({
          ...edit,
          apply: () =>
            Effect.zipRight(
              Deferred.succeed(started, void 0),
              Effect.as(Deferred.await(release), ToolResult.text("applied"))
            )
        })
        const first = yield* Effect.fork(ResolveTool.execute({ action: "apply", reason: "one" }))
        yield* Deferred.await(started)
        const second = yield* Effect.flip(ResolveTool.execute({ action: "discard", reason: "two" }))
        assert.instanceOf(second, PendingActionNotPending)
        assert.strictEqual((second as PendingActionNotPending).status, "resolving")
        assert.match(second.message, /being resolved/)
        yield* Deferred.succeed(release, void 0)
        assert.strictEqual(ToolResult.textOf(yield* Fiber.join(first)), "applied")
      }).pipe(Effect.provide(ResolveRuntime.layer)))
  })

  describe("interruption (§6.6)", () => {
    it.effect("before commit: the action stays pending and apply can run again", () =>
      Effect.gen(function*() {
        const queue = yield* ToolChoiceQueue
        const started = yield* Deferred.make<void>()
        const writes = yield* Ref.make(0)
        const attempts = yield* Ref.make(0)
        const handle = yield* stageAndServe({
          ...edit,
          apply: () =>
            Effect.gen(function*() {
              const n = yield* Ref.getAndUpdate(attempts, (k) => k + 1)
              if (n === 0) {
                yield* Deferred.succeed(started, void 0)
                yield* Effect.never // slow work before the write
              }
              yield* Preview.commit(Ref.update(writes, (k) => k + 1))
              return ToolResult.text("written")
            })
        })
        const fiber = yield* Effect.fork(ResolveTool.execute({ action: "apply", reason: "go" }))
        yield* Deferred.await(started)
        yield* Fiber.interrupt(fiber)
        assert.strictEqual(yield* handle.status, "pending")
        assert.strictEqual(yield* Ref.get(writes), 0)
        // Still in flight: the model (or the host, after the abort) can apply in the same turn.
        assert.isTrue(yield* queue.hasInFlight)
        assert.strictEqual(
          ToolResult.textOf(yield* ResolveTool.execute({ action: "apply", reason: "again" })),
          "written"
        )
        assert.strictEqual(yield* Ref.get(writes), 1)
        assert.strictEqual(yield* handle.status, "applied")
      }).pipe(Effect.provide(ResolveRuntime.layer)))

    it.effect("before commit, then the turn ends: the preview is forced again next turn", () =>
      Effect.gen(function*() {
        const queue = yield* ToolChoiceQueue
        const started = yield* Deferred.make<void>()
        const handle = yield* stageAndServe({
          ...edit,
          apply: () => Effect.zipRight(Deferred.succeed(started, void 0), Effect.never)
        })
        const fiber = yield* Effect.fork(ResolveTool.execute({ action: "apply", reason: "go" }))
        yield* Deferred.await(started)
        yield* Fiber.interrupt(fiber)
        yield* queue.reject("aborted")
        deepStrictEqual(yield* queue.inspect, ["pending-action:edit"])
        deepStrictEqual(yield* queue.nextToolChoice, Option.some(ToolChoice.forceTool("resolve")))
        assert.strictEqual(Option.getOrThrow(yield* queue.inFlight).id, handle.id)
        assert.strictEqual(yield* handle.status, "pending")
      }).pipe(Effect.provide(ResolveRuntime.layer)))

    it.effect("after commit: the action is applied and never applied twice", () =>
      Effect.gen(function*() {
        const queue = yield* ToolChoiceQueue
        const committed = yield* Deferred.make<void>()
        const writes = yield* Ref.make(0)
        const handle = yield* stageAndServe({
          ...edit,
          apply: () =>
            Effect.gen(function*() {
              yield* Preview.commit(Ref.update(writes, (k) => k + 1))
              yield* Deferred.succeed(committed, void 0)
              yield* Effect.never // slow work after the write (formatting, reporting)
              return ToolResult.text("written")
            })
        })
        const fiber = yield* Effect.fork(ResolveTool.execute({ action: "apply", reason: "go" }))
        yield* Deferred.await(committed)
        yield* Fiber.interrupt(fiber)
        assert.strictEqual(yield* handle.status, "applied")
        const again = yield* Effect.flip(ResolveTool.execute({ action: "apply", reason: "again" }))
        assert.instanceOf(again, NoPendingAction)
        yield* queue.reject("aborted")
        // Not requeued: nothing is pending any more.
        deepStrictEqual(yield* queue.inspect, [])
        assert.isTrue(Option.isNone(yield* queue.nextToolChoice))
        assert.strictEqual(yield* Ref.get(writes), 1)
      }).pipe(Effect.provide(ResolveRuntime.layer)))

    it.effect("commit itself is not interrupted halfway", () =>
      Effect.gen(function*() {
        const inside = yield* Deferred.make<void>()
        const release = yield* Deferred.make<void>()
        const writes = yield* Ref.make<ReadonlyArray<string>>([])
        const handle = yield* stageAndServe({
          ...edit,
          apply: () =>
            Effect.as(
              Preview.commit(Effect.gen(function*() {
                yield* Ref.update(writes, (w) => [...w, "first half"])
                yield* Deferred.succeed(inside, void 0)
                yield* Deferred.await(release)
                yield* Ref.update(writes, (w) => [...w, "second half"])
              })),
              ToolResult.text("written")
            )
        })
        const fiber = yield* Effect.fork(ResolveTool.execute({ action: "apply", reason: "go" }))
        yield* Deferred.await(inside)
        const interrupting = yield* Effect.fork(Fiber.interrupt(fiber))
        yield* Deferred.succeed(release, void 0)
        yield* Fiber.join(interrupting)
        deepStrictEqual(yield* Ref.get(writes), ["first half", "second half"])
        assert.strictEqual(yield* handle.status, "applied")
      }).pipe(Effect.provide(ResolveRuntime.layer)))
  })

  describe("invalid input (§6)", () => {
    it("the table has at least 12 cases", () => {
      assert.isAtLeast(invalidInputs.length, 12)
    })

    for (const { field, input, name, problem } of invalidInputs) {
      it.effect(`${name}: InvalidResolveParams naming ${field}, nothing changed`, () =>
        Effect.gen(function*() {
          const calls = yield* Ref.make(0)
          const handle = yield* stageAndServe({
            ...edit,
            apply: () => Effect.as(Ref.update(calls, (n) => n + 1), ToolResult.text("applied")),
            reject: () => Effect.as(Ref.update(calls, (n) => n + 1), Option.none())
          })
          const before = yield* snapshot(handle)
          const error = yield* Effect.flip(ResolveTool.execute(input))
          assert.instanceOf(error, InvalidResolveParams)
          if (!(error instanceof InvalidResolveParams)) return
          assert.strictEqual(error.field, field)
          if (problem !== undefined) assert.match(error.problem, problem)
          assert.include(error.message, `Invalid resolve parameters: ${field}: `)
          assert.include(error.message, "\"action\": \"apply\" | \"discard\"")
          assert.isBelow(error.message.length, 400)
          deepStrictEqual(yield* snapshot(handle), before)
          assert.strictEqual(yield* Ref.get(calls), 0)
          assert.isUndefined(({} as Record<string, unknown>)["polluted"])
          // The preview is still resolvable.
          assert.strictEqual(
            ToolResult.textOf(yield* ResolveTool.execute({ action: "apply", reason: "ok" })),
            "applied"
          )
        }).pipe(Effect.provide(ResolveRuntime.layer)))
    }

    it.effect("the typed resolve, called from JavaScript (as any): the same InvalidResolveParams as the model gets, nothing changed", () =>
      Effect.gen(function*() {
        const calls = yield* Ref.make(0)
        const handle = yield* stageAndServe({
          ...edit,
          apply: () => Effect.as(Ref.update(calls, (n) => n + 1), ToolResult.text("applied")),
          reject: () => Effect.as(Ref.update(calls, (n) => n + 1), Option.none())
        })
        const before = yield* snapshot(handle)
        // Once silently a discard: any action but "apply" discarded.
        const approve = yield* Effect.flip(resolve({ action: "approve", reason: "Looks good." } as any))
        assert.instanceOf(approve, InvalidResolveParams)
        assert.strictEqual(
          approve.message,
          (yield* Effect.flip(ResolveTool.execute({ action: "approve", reason: "Looks good." }))).message
        )
        assert.include(approve.message, "action: must be \"apply\" or \"discard\", got \"approve\"")
        assert.strictEqual(yield* handle.status, "pending")
        for (const { input } of [...invalidInputs, { input: { action: "approve" } }, { input: null }]) {
          const typed = yield* Effect.flip(resolve(input as any))
          const model = yield* Effect.flip(ResolveTool.execute(input))
          assert.instanceOf(typed, InvalidResolveParams)
          deepStrictEqual(typed, model)
        }
        deepStrictEqual(yield* snapshot(handle), before)
        assert.strictEqual(yield* Ref.get(calls), 0)
        // A valid typed call still resolves it.
        assert.strictEqual(ToolResult.textOf(yield* resolve({ action: "apply", reason: "ok" })), "applied")
        assert.strictEqual(yield* handle.status, "applied")
      }).pipe(Effect.provide(ResolveRuntime.layer)))

    it.effect("every message states the call in the wire form the model was sent (ResolveTool.parameters)", () =>
      Effect.gen(function*() {
        const hint = "Call resolve with { \"action\": \"apply\" | \"discard\", \"reason\": \"<one sentence>\", " +
          "\"extra\": null | \"<a JSON object as text>\", \"id\": null | \"<a pending action's id>\" }."
        // The hint names every parameter the schema requires, none as optional, and null where the schema allows it.
        const { properties, required } = ResolveTool.parameters as {
          readonly properties: Record<string, { readonly anyOf?: ReadonlyArray<{ readonly type: string }> }>
          readonly required: ReadonlyArray<string>
        }
        deepStrictEqual(required, Object.keys(properties))
        for (const name of required) {
          const nullable = properties[name]!.anyOf?.some((s) => s.type === "null") === true
          assert.include(hint, nullable ? `"${name}": null | "` : `"${name}": "`)
        }
        assert.notInclude(hint, "?")
        const messageOf = (input: unknown) =>
          Effect.map(Effect.flip(decodeResolveParams(input)), (error) => error.message)
        const wire = { action: "apply", reason: "ok", extra: null, id: null }
        deepStrictEqual(
          yield* Effect.all([
            messageOf({ ...wire, action: "maybe" }),
            messageOf({ ...wire, extra: 3 }),
            messageOf({ ...wire, extra: "[1]" }),
            messageOf({ ...wire, id: 5 }),
            messageOf({ ...wire, id: "" }),
            messageOf("apply")
          ]),
          [
            `Invalid resolve parameters: action: must be "apply" or "discard", got "maybe". ${hint}`,
            `Invalid resolve parameters: extra: must be a JSON object as text, such as "{\\"title\\": \\"my-plan\\"}", ` +
            `or null; got 3. ${hint}`,
            `Invalid resolve parameters: extra: must be a JSON object as text, such as "{\\"title\\": \\"my-plan\\"}", ` +
            `or null; got text holding an array. ${hint}`,
            `Invalid resolve parameters: id: must be the id of a pending action (a string), or null for the most ` +
            `recent one; got 5. ${hint}`,
            `Invalid resolve parameters: id: must not be empty: pass null to resolve the most recent pending ` +
            `action. ${hint}`,
            `Invalid resolve parameters: (root): must be a JSON object with "action", "reason", "extra" and "id". ${hint}`
          ]
        )
      }))

    it.effect("valid input decodes to exactly the three fields", () =>
      Effect.gen(function*() {
        deepStrictEqual(
          yield* decodeResolveParams({ action: "apply", reason: "ok", extra: { title: "t", list: [1, { a: null }] } }),
          { action: "apply", reason: "ok", extra: { title: "t", list: [1, { a: null }] } }
        )
        deepStrictEqual(yield* decodeResolveParams({ action: "discard", reason: "no" }), {
          action: "discard",
          reason: "no"
        })
      }))

    it.effect("the strict wire form: extra as JSON text is parsed, null or absent is none, an object is kept", () =>
      Effect.gen(function*() {
        deepStrictEqual(
          yield* decodeResolveParams({ action: "apply", reason: "ok", extra: " { \"title\": \"my-plan\" } " }),
          { action: "apply", reason: "ok", extra: { title: "my-plan" } }
        )
        deepStrictEqual(yield* decodeResolveParams({ action: "apply", reason: "ok", extra: null }), {
          action: "apply",
          reason: "ok"
        })
        deepStrictEqual(yield* decodeResolveParams({ action: "apply", reason: "ok", extra: "{}" }), {
          action: "apply",
          reason: "ok",
          extra: {}
        })
        deepStrictEqual(yield* decodeResolveParams({ action: "apply", reason: "ok", extra: { title: "t" } }), {
          action: "apply",
          reason: "ok",
          extra: { title: "t" }
        })
        // What a strict provider sends for a plan approval, end to end: the handler reads an object.
        const seen = yield* Ref.make<unknown>(undefined)
        yield* stageAndServe({
          ...edit,
          apply: (_reason, extra) => Effect.as(Ref.set(seen, extra), ToolResult.text("approved"))
        })
        const result = yield* ResolveTool.execute(
          JSON.parse("{\"action\":\"apply\",\"reason\":\"ok\",\"extra\":\"{\\\"title\\\":\\\"my-plan\\\"}\"}")
        )
        deepStrictEqual(yield* Ref.get(seen), { title: "my-plan" })
        deepStrictEqual(result.details, {
          action: "apply",
          reason: "ok",
          extra: { title: "my-plan" },
          sourceToolName: edit.sourceToolName,
          label: edit.label
        })
      }).pipe(Effect.provide(ResolveRuntime.layer)))

    it.effect("the wire form's extra text is refused with a typed error before it is parsed when too long", () =>
      Effect.gen(function*() {
        const long = `{"blob": "${"x".repeat(extraTextMaxLength)}"}`
        const error = yield* Effect.flip(decodeResolveParams({ action: "apply", reason: "ok", extra: long }))
        assert.strictEqual(error.field, "extra")
        assert.include(error.problem, `at most ${extraTextMaxLength}`)
        // The input is never modified.
        const input = { action: "apply", reason: "ok", extra: "{\"a\": 1}" }
        yield* decodeResolveParams(input)
        assert.strictEqual(input.extra, "{\"a\": 1}")
      }))
  })

  describe("sessions", () => {
    it.effect("a preview staged in one session is not pending in another", () =>
      Effect.gen(function*() {
        yield* stageAndServe({ ...edit, apply: () => Effect.succeed(ToolResult.text("x")) }).pipe(
          Effect.provide(ResolveRuntime.layer)
        )
        const error = yield* Effect.flip(ResolveTool.execute({ action: "apply", reason: "r" })).pipe(
          Effect.provide(ResolveRuntime.layer)
        )
        assert.instanceOf(error, NoPendingAction)
      }))
  })
})
