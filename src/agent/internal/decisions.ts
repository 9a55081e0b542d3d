/**
 * A reviewer's decisions, on the session's side (the approval inbox records them in the store; see
 * docs/inbox.md). Before each turn a durable session:
 *
 * 1. runs the decisions requested for its actions that only it can run (a closure it staged, a kind the inbox does
 *    not register), exactly as a model's `resolve` call would (the store's claim makes it once, whoever else
 *    tries), with the reviewer's reason and amendment, and completes each decision `done` or `failed`;
 * 2. tells the model, in the turn's request, of every preview it was shown that a reviewer settled meanwhile
 *    (whoever ran it: this session or the inbox): "A reviewer (ann) applied pa_…: reason", with what the reviewer
 *    changed. The action is no longer pending, so its forcing ends;
 * 3. passes on every reviewer's response not yet delivered (a message about an action that leaves it pending), once:
 *    the request that carries it holds its id, and the save after it marks it delivered.
 *
 * Both go to the model as hidden steering messages through the session's `SteeringBus`, like every other.
 *
 * @since 0.3.0
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Ref from "effect/Ref"
import type { Decision } from "../../domain/Decision.js"
import { isTerminal } from "../../domain/PendingRecord.js"
import type { PendingActionInfo } from "../../services/PendingActions.js"
import type { PendingStore } from "../../services/PendingStore.js"
import { SteeringBus } from "../../services/SteeringBus.js"
import { type Decisions, make as decisionsOn } from "../../tools/Decisions.js"
import type { Session } from "./session.js"
import { steerIdOf, steerIdsIn } from "./steerIds.js"

/** Requested decisions read per turn (more wait for the next turn). */
const batch = 20

/**
 * Steers the session's responses not yet delivered, each once: not one queued already (on the bus, or carried from
 * a failed request or the saved state), nor one the conversation holds (a save that could not mark it delivered:
 * marked now).
 */
const passOnResponses = (
  session: Session,
  store: PendingStore.Service,
  decisions: Decisions.Service,
  open: ReadonlySet<string>
) =>
  Effect.gen(function*() {
    const waiting = yield* store.undeliveredResponses({ session: session.id, limit: batch })
    if (waiting.length === 0) return
    const queued = new Set([...(yield* Ref.get(session.carry)), ...(yield* session.bus.pending)].map(steerIdOf))
    const fresh = waiting.filter((response) => !queued.has(response.id))
    if (fresh.length === 0) return
    const carried = steerIdsIn((yield* Ref.get(session.history)).content)
    const held = fresh.filter((response) => carried.has(response.id)).map((response) => response.id)
    if (held.length > 0) yield* store.markDelivered({ ids: held, now: yield* Clock.currentTimeMillis })
    for (const response of fresh) {
      if (carried.has(response.id)) continue
      yield* Effect.provideService(
        decisions.passOn(response, open.has(response.actionId)),
        SteeringBus,
        session.bus
      )
    }
  })

/**
 * Runs what a reviewer decided for this session's actions that it can run, then steers one message per shown preview
 * (`session.shown`) that a completed (`done`) decision settled, and one per reviewer's response not yet delivered,
 * for the next request. Returns the session's open actions as it read them after running the decisions (the turn
 * needs them, and reads them again only when this did not get that far). Never fails: a store that cannot be read is
 * logged, and the next turn tries again.
 */
export const pickUp = (session: Session): Effect.Effect<Option.Option<ReadonlyArray<PendingActionInfo>>> =>
  session.store === undefined ?
    Effect.succeedNone :
    Effect.gen(function*() {
      const store = session.store!
      const decisions = decisionsOn(store)
      const waiting = yield* store.requestedDecisions({ sessions: [session.id], limit: batch })
      const ran = new Map<string, Decision>()
      for (const { decision, record } of waiting) {
        if (isTerminal(record.status) || record.status === "resolving") continue
        // Exactly as a model's `resolve` call would, in this session; the store's claim makes it once.
        const done = yield* Effect.provide(decisions.run(decision, `session:${session.id}`), session.runtime)
        if (done._tag === "Done") ran.set(decision.actionId, done.decision)
      }
      // The previews the model saw that are settled now: a reviewer's decision is told once, whoever ran it.
      const shown = [...(yield* Ref.get(session.shown))]
      const openNow = yield* session.pending.listOpen
      const open = new Set(openNow.filter((i) => i.status === "pending").map((i) => i.id))
      const told: Array<Decision> = []
      for (const id of shown) {
        if (open.has(id)) continue
        const known = ran.get(id)
        if (known !== undefined) {
          told.push(known)
          ran.delete(id)
          continue
        }
        const recorded = yield* store.decisions(id)
        const done = recorded.filter((d) => d.state === "done").at(-1)
        if (done !== undefined) told.push(done)
      }
      told.push(...ran.values())
      for (const decision of told) yield* Effect.provideService(decisions.tell(decision), SteeringBus, session.bus)
      yield* passOnResponses(session, store, decisions, open)
      return Option.some(openNow)
    }).pipe(
      Effect.catchAllCause((cause) =>
        Effect.as(
          Effect.logWarning(
            "effect-resolve: could not read the reviewers' decisions; the next turn tries again",
            cause
          ),
          Option.none()
        )
      )
    )
