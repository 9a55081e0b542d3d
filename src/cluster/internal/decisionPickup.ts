/**
 * A runner's pickup of reviewers' decisions: a decision recorded in the store (`SessionClient.decide`, an approval
 * inbox) runs at once on the runner where its session is open, not by an RPC to it. The runner listens to its store's
 * change signal (`LISTEN`/`NOTIFY` on Postgres), with a sweep for what no signal reaches; after each, one read of the
 * requested decisions of the sessions open here, and each found is handed to its session (which runs it fenced, as
 * its owner, exactly once through the store's claim). A session that opens looks at once: a decision recorded while
 * it was closed runs as soon as a message opened it.
 *
 * @internal
 */
import * as Arr from "effect/Array"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Queue from "effect/Queue"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import type { Decision } from "../../domain/Decision.js"
import { isTerminal } from "../../domain/PendingRecord.js"
import type { PendingStore } from "../../services/PendingStore.js"

/** A runner's pickup (see the module). */
export interface DecisionPickup {
  /**
   * Hands the runner's open `session` its requested decisions until the scope closes: `run` runs one to its end (it
   * is not handed the same decision again meanwhile). Registering looks at once.
   */
  readonly register: (
    session: string,
    run: (decision: Decision) => Effect.Effect<void>
  ) => Effect.Effect<void, never, Scope.Scope>
}

/** How often the pickup looks without a signal. */
export const sweepInterval = Duration.seconds(1)

/** Sessions per read of their requested decisions (the store's list limit). */
const sessionsPerRead = 100

/** Builds the runner's pickup on `store`, looking until the scope closes. */
export const make = (store: PendingStore.Service): Effect.Effect<DecisionPickup, never, Scope.Scope> =>
  Effect.gen(function*() {
    const sessions = new Map<string, (decision: Decision) => Effect.Effect<void>>()
    const running = new Set<string>()
    const wake = yield* Queue.sliding<void>(1)
    const poke = Queue.offer(wake, undefined)

    yield* Effect.forkScoped(Effect.forever(
      Stream.runForEach(store.changed, () => poke).pipe(
        Effect.catchAllCause((cause) =>
          Effect.logWarning("effect-resolve: a runner's decision signal ended; listening again in a second", cause)
        ),
        Effect.zipRight(Effect.sleep(sweepInterval))
      )
    ))

    const look = Effect.gen(function*() {
      for (const chunk of Arr.chunksOf([...sessions.keys()], sessionsPerRead)) {
        const found = yield* store.requestedDecisions({ sessions: chunk, limit: 100 })
        for (const { decision, record } of found) {
          if (isTerminal(record.status) || record.status === "resolving") continue
          const run = sessions.get(decision.session)
          if (run === undefined || running.has(decision.id)) continue
          running.add(decision.id)
          yield* Effect.forkDaemon(Effect.ensuring(run(decision), Effect.sync(() => running.delete(decision.id))))
        }
      }
    }).pipe(
      Effect.catchAllCause((cause) =>
        Effect.logWarning("effect-resolve: a runner could not read its sessions' decisions; it looks again", cause)
      )
    )

    yield* Effect.forkScoped(Effect.forever(
      Effect.zipRight(Effect.race(Queue.take(wake), Effect.sleep(sweepInterval)), look)
    ))

    return {
      register: (session, run) =>
        Effect.zipRight(
          Effect.acquireRelease(
            Effect.sync(() => sessions.set(session, run)),
            () =>
              Effect.sync(() => {
                if (sessions.get(session) === run) sessions.delete(session)
              })
          ),
          poke
        )
    }
  })
