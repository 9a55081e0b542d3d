import { assert, describe, it } from "@effect/vitest"
import { deepStrictEqual } from "@effect/vitest/utils"
import { Chunk, Deferred, Duration, Effect, Fiber, Ref, Stream, TestClock } from "effect"
import { ResolveRuntime, SteeringBus, SteeringMessage } from "../../src/index.js"

describe("SteeringBus", () => {
  describe("steer (§3)", () => {
    it.effect("queues a hidden agent message stamped by the Clock", () =>
      Effect.gen(function*() {
        const bus = yield* SteeringBus
        yield* TestClock.setTime(1_000)
        const first = yield* bus.steer({ customType: "note", content: "Prefer small diffs." })
        deepStrictEqual(first, {
          customType: "note",
          content: "Prefer small diffs.",
          display: false,
          attribution: "agent",
          timestamp: 1_000
        })
        assert.isFalse("details" in first)
        yield* TestClock.adjust(Duration.seconds(5))
        const second = yield* bus.steer({ customType: "note", content: "later", details: { n: 1 }, display: true })
        assert.strictEqual(second.timestamp, 6_000)
        assert.isTrue(second.display)
        deepStrictEqual(second.details, { n: 1 })
        deepStrictEqual(yield* bus.pending, [first, second])
      }).pipe(Effect.provide(ResolveRuntime.layer)))

    it.effect("the resolve reminder has the SPEC's text, type and details", () =>
      Effect.gen(function*() {
        const bus = yield* SteeringBus
        const message = yield* bus.steer(SteeringMessage.resolveReminder("ast_edit"))
        assert.strictEqual(message.customType, "resolve-reminder")
        assert.strictEqual(
          message.content,
          "<system-reminder>\nThis is a preview. Call the `resolve` tool to apply or discard these changes.\n" +
            "</system-reminder>"
        )
        deepStrictEqual(message.details, { toolName: "ast_edit" })
        assert.isFalse(message.display)
      }).pipe(Effect.provide(ResolveRuntime.layer)))
  })

  describe("drain and pending", () => {
    it.effect("drain takes every message oldest first and leaves the bus empty", () =>
      Effect.gen(function*() {
        const bus = yield* SteeringBus
        deepStrictEqual(yield* bus.drain, [])
        for (const content of ["one", "two", "three"]) yield* bus.steer({ customType: "t", content })
        deepStrictEqual((yield* bus.pending).map((m) => m.content), ["one", "two", "three"])
        // pending does not take.
        assert.strictEqual((yield* bus.pending).length, 3)
        deepStrictEqual((yield* bus.drain).map((m) => m.content), ["one", "two", "three"])
        deepStrictEqual(yield* bus.pending, [])
        deepStrictEqual(yield* bus.drain, [])
        yield* bus.steer({ customType: "t", content: "four" })
        deepStrictEqual((yield* bus.drain).map((m) => m.content), ["four"])
      }).pipe(Effect.provide(ResolveRuntime.layer)))

    it.effect("concurrent steers are all drained once, in the order subscribers saw them", () =>
      Effect.gen(function*() {
        const bus = yield* SteeringBus
        const stream = yield* bus.subscribe
        const seen = yield* Effect.fork(Stream.runCollect(Stream.take(stream, 100)))
        yield* Effect.forEach(
          Array.from({ length: 100 }, (_, i) => i),
          (i) => Effect.zipRight(Effect.yieldNow(), bus.steer({ customType: "t", content: `m${i}` })),
          { concurrency: "unbounded" }
        )
        const drained = (yield* bus.drain).map((m) => m.content)
        assert.strictEqual(new Set(drained).size, 100)
        deepStrictEqual(Chunk.toReadonlyArray(yield* Fiber.join(seen)).map((m) => m.content), drained)
      }).pipe(Effect.provide(ResolveRuntime.layer), Effect.scoped))
  })

  describe("observers", () => {
    it.effect("subscribe sees every later message in order, even before it is read", () =>
      Effect.gen(function*() {
        const bus = yield* SteeringBus
        yield* bus.steer({ customType: "t", content: "before" })
        const stream = yield* bus.subscribe
        yield* bus.steer({ customType: "t", content: "a" })
        yield* bus.steer({ customType: "t", content: "b" })
        yield* bus.steer({ customType: "t", content: "c" })
        const got = yield* Stream.runCollect(Stream.take(stream, 3))
        deepStrictEqual(Chunk.toReadonlyArray(got).map((m) => m.content), ["a", "b", "c"])
        // Observing does not drain.
        assert.strictEqual((yield* bus.pending).length, 4)
      }).pipe(Effect.provide(ResolveRuntime.layer), Effect.scoped))

    it.effect("messages streams every message steered after it starts, in order", () =>
      Effect.gen(function*() {
        const bus = yield* SteeringBus
        const started = yield* Deferred.make<void>()
        const collected = yield* Ref.make<ReadonlyArray<string>>([])
        const consumer = yield* Effect.fork(
          bus.messages.pipe(
            Stream.tap((m) =>
              Effect.zipRight(Deferred.succeed(started, void 0), Ref.update(collected, (c) => [...c, m.content]))
            ),
            Stream.takeUntil((m) => m.content === "end"),
            Stream.runDrain
          )
        )
        // Probe until the stream has subscribed (no sleeps: the consumer signals its first message).
        while (!(yield* Deferred.isDone(started))) {
          yield* bus.steer({ customType: "probe", content: "probe" })
          yield* Effect.yieldNow()
        }
        for (const content of ["x", "y", "z", "end"]) yield* bus.steer({ customType: "t", content })
        yield* Fiber.join(consumer)
        const real = (yield* Ref.get(collected)).filter((c) => c !== "probe")
        deepStrictEqual(real, ["x", "y", "z", "end"])
      }).pipe(Effect.provide(ResolveRuntime.layer)))
  })

  describe("sessions", () => {
    it.effect("each layer build has its own bus", () =>
      Effect.gen(function*() {
        yield* Effect.flatMap(SteeringBus, (bus) => bus.steer({ customType: "t", content: "one" })).pipe(
          Effect.provide(ResolveRuntime.layer)
        )
        const other = yield* Effect.flatMap(SteeringBus, (bus) => bus.drain).pipe(
          Effect.provide(ResolveRuntime.layer)
        )
        deepStrictEqual(other, [])
      }))
  })
})
