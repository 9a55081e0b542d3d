/**
 * The inbox's change feed, through the public `Inbox` service on a shared in-memory store: while no subscription is
 * open it reads the feed only on its sweep, so an inbox with no page open costs its decisions no query there; a subscription that opens then hears the next decision from the store's signal, with the sweep an hour away.
 */
import { assert, describe, it } from "@effect/vitest"
import { Chunk, Context, Effect, Layer, Option, Schema, Stream } from "effect"
import { Inbox, type InboxApi } from "../../src/inbox.js"
import { ActionKind, PendingStore, ResolveRuntime, stageKind, ToolResult } from "../../src/index.js"

const Note = ActionKind.make({
  name: "note",
  payload: Schema.Struct({ text: Schema.String }),
  apply: ({ text }) => Effect.succeed(ToolResult.text(`Noted ${text}`))
})

const reviewer: InboxApi.ReviewerInfo = { name: "ann", permission: "decide", sessions: Option.none() }

describe("the inbox's change feed", () => {
  it.scopedLive("reads nothing per change while no one listens; a subscriber then hears the next decision at once", () =>
    Effect.gen(function*() {
      let feedReads = 0
      const memory = yield* Layer.build(PendingStore.layerMemory)
      const inner = Context.get(memory, PendingStore)
      const counted = PendingStore.of({
        ...inner,
        feed: (input) => Effect.zipRight(Effect.sync(() => feedReads++), inner.feed(input))
      })
      const store = PendingStore.layerParts.pipe(Layer.provideMerge(Layer.succeed(PendingStore, counted)))
      const session = yield* Layer.build(
        ResolveRuntime.layerDurable({ session: "agent", kinds: [Note] }).pipe(Layer.provide(store))
      )
      const inbox = Context.get(
        yield* Layer.build(Inbox.layer({ kinds: [Note], pollInterval: "1 hour" }).pipe(Layer.provide(store))),
        Inbox
      )
      const stageNote = (text: string) =>
        Effect.provide(
          Effect.map(stageKind(Note, { text }, { label: `Note ${text}`, sourceToolName: "note" }), (h) => h.id),
          session
        )
      const apply = (id: string) =>
        Effect.map(inbox.decide(reviewer, id, { action: "apply", reason: "ok" }), (result) => result.outcome)

      // No subscription: three actions staged and applied, and the feed read at most once (its first sweep).
      for (const text of ["a", "b", "c"]) assert.strictEqual(yield* apply(yield* stageNote(text)), "applied")
      yield* Effect.sleep("50 millis")
      assert.isAtMost(feedReads, 1, "no read of the feed per change")

      // A subscription: the next decision reaches it from the store's signal (the sweep is an hour away).
      const changes = yield* inbox.subscribe(reviewer)
      const id = yield* stageNote("d")
      const heard = yield* Stream.runCollect(
        Stream.takeUntil(changes, (event) => event.actions.some((a) => a.id === id && a.status === "applied"))
      ).pipe(Effect.fork)
      assert.strictEqual(yield* apply(id), "applied")
      const events = Chunk.toReadonlyArray(
        yield* Effect.timeoutFail(heard.await.pipe(Effect.flatten), {
          duration: "10 seconds",
          onTimeout: () => new Error("the subscriber never heard the decision")
        })
      )
      assert.isTrue(events.at(-1)!.actions.some((a) => a.id === id && a.status === "applied"))
      assert.isAbove(feedReads, 1, "read on the signal")
    }))
})
