/**
 * An inbox decision is completed with the settle of its action (issue 28: fewer commits per decision;
 * `settleDeciding`, one statement on Postgres, one transaction on SQLite), on every store: the action applied once and
 * its decision `done` with the apply's result; and when that write fails, the settle is written alone and the
 * decision completed after it, so the action is never left `resolving` and never applied twice.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Option, Schema } from "effect"
import { afterAll } from "vitest"
import { ActionKind, PendingStore, PendingStoreError, ResolveRuntime, stageKind, ToolResult } from "../../src/index.js"
import { subjects, tempDir } from "../stores/subjects.js"
import { post, startInbox, tokens } from "../support/inbox.js"
import { postgresForTests, postgresSuiteName } from "../support/pgTest.js"

const pg = await postgresForTests()
const tmp = tempDir()
afterAll(() => tmp.cleanup())

const setup = (layer: () => Layer.Layer<PendingStore, unknown>, failCompletions: number) =>
  Effect.gen(function*() {
    const applied: Array<string> = []
    const Note = ActionKind.make({
      name: "note",
      payload: Schema.Struct({ text: Schema.String }),
      apply: ({ text }) => Effect.sync(() => applied.push(text)).pipe(Effect.as(ToolResult.text(`Noted ${text}.`)))
    })
    const inner = yield* Effect.provide(PendingStore, yield* Layer.build(layer()))
    let failures = failCompletions
    const completions: Array<boolean> = []
    const store: PendingStore.Service = {
      ...inner,
      // The settle with the completion (one statement on Postgres, one transaction on SQLite): fails first
      // `failCompletions` times, changing nothing, as a dropped connection would.
      settleDeciding: (settle, decision) =>
        failures-- > 0 ?
          Effect.fail(new PendingStoreError({ operation: "settleDeciding", detail: "the database went away" })) :
          Effect.tap(inner.settleDeciding(settle, decision), (done) =>
            Effect.sync(() => completions.push(done.completed))),
      completeDecision: (input) =>
        Effect.tap(inner.completeDecision(input), (done) =>
          Effect.sync(() => completions.push(done)))
    }
    const storeLayer = Layer.succeed(PendingStore, store)
    const running = yield* Effect.acquireRelease(
      Effect.promise(() => startInbox({ store: storeLayer, kinds: [Note] })),
      (r) => Effect.promise(() => r.close())
    )
    const session = yield* Layer.build(
      ResolveRuntime.layerDurable({ session: "agent", kinds: [Note] }).pipe(Layer.provideMerge(storeLayer))
    )
    const handle = yield* Effect.provide(
      stageKind(Note, { text: "a" }, { label: "Note: a", sourceToolName: "note" }),
      session
    )
    return { applied, completions, inner, running, id: handle.id }
  })

for (const subject of subjects(tmp.dir, pg)) {
  const name = subject.name === "postgres" ? postgresSuiteName("postgres", pg) : subject.name
  describe.skipIf(subject.skipReason !== undefined)(`inbox decision and settle: ${name}`, () => {
    for (
      const [title, failCompletions, completions] of [
        ["applied once; the decision done with the apply's result, completed with the settle", 0, [true]],
        ["a completion that fails in the settle's transaction: settled alone, completed after, applied once", 1, [true]]
      ] as const
    ) {
      it.scoped(title, () =>
        Effect.gen(function*() {
          const setUp = yield* setup(subject.layer, failCompletions)
          const answer = yield* Effect.promise(() =>
            post(setUp.running, `/api/actions/${setUp.id}/decision`, tokens.owner, { action: "apply", reason: "Fine." })
          )
          assert.strictEqual(answer.status, 200, answer.text)
          assert.strictEqual(answer.json.outcome, "applied")
          assert.deepStrictEqual(setUp.applied, ["a"])
          // One completion that counted: in the settle's transaction (a second, after it, would add `false`), or
          // after the settle written alone.
          assert.deepStrictEqual(setUp.completions, [...completions])
          const record = Option.getOrThrow(yield* setUp.inner.get(setUp.id))
          const [decision] = yield* setUp.inner.decisions(setUp.id)
          assert.deepStrictEqual([record.status, decision?.state, decision?.outcome], ["applied", "done", "Noted a."])
          // The answer shows the decision as stored.
          assert.deepStrictEqual([answer.json.decision.state, answer.json.decision.outcome], ["done", "Noted a."])
        }))
    }
  })
}
