/**
 * What one session of the turn driver holds between its turns and its runs: the session's services (queue,
 * steering bus, pending set, and the store of a durable one), the conversation, the steering still to send, the
 * transcript and counts, and the forcing state. Every part of the driver reads and changes these; a durable session
 * saves and restores them (`sessionState.ts`).
 *
 * @internal
 */
import * as Prompt from "@effect/ai/Prompt"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Ref from "effect/Ref"
import type { SteeringMessage } from "../../domain/SteeringMessage.js"
import type * as ResolveRuntime from "../../layers/ResolveRuntime.js"
import { PendingActions } from "../../services/PendingActions.js"
import { PendingStore } from "../../services/PendingStore.js"
import { StandingResolveHandler } from "../../services/StandingResolveHandler.js"
import { SteeringBus } from "../../services/SteeringBus.js"
import { ToolChoiceQueue } from "../../services/ToolChoiceQueue.js"
import * as ResolveMetrics from "../ResolveMetrics.js"
import type { DurableSteering, SessionOptions, TurnRecord } from "../TurnDriver.js"
import type { ForcingMap } from "./forcingMap.js"
import type { PolicyContext } from "./forcingPolicy.js"
import { type RefusalContext, type Refused, refusedNothing } from "./refusals.js"
import type { ToolCallContext } from "./toolCalls.js"

/** One session's services and state. */
export interface Session extends PolicyContext, RefusalContext, ToolCallContext {
  /** The session id (the `session` attribute of its spans). */
  readonly id: string
  readonly queue: ToolChoiceQueue.Service
  readonly bus: SteeringBus.Service
  readonly pending: PendingActions.Service
  /** A durable session's store, where it saves itself after every turn; `undefined` for a session in memory. */
  readonly store: PendingStore.Service | undefined
  /** The conversation so far. */
  readonly history: Ref.Ref<Prompt.Prompt>
  /** Steering messages for the next request (a failed request's, a restored preview's), before the bus's. */
  readonly carry: Ref.Ref<ReadonlyArray<SteeringMessage>>
  /** Every turn of the session, oldest first. */
  readonly transcript: Ref.Ref<ReadonlyArray<TurnRecord>>
  /** The number of turns so far (a turn's index is 1-based). */
  readonly turnCount: Ref.Ref<number>
  /** The session's own counts (the process-wide metrics carry no session tag). */
  readonly counters: ResolveMetrics.Counters
  readonly forcing: Ref.Ref<ForcingMap>
  readonly refused: Ref.Ref<Refused>
  readonly lastChoice: Ref.Ref<Option.Option<string>>
  /** Durable: the pending actions whose preview the conversation holds, saved with it. */
  readonly shown: Ref.Ref<ReadonlySet<string>>
  /** Durable: the conversation's messages as the store holds them (a save writes from the first that differs). */
  readonly saved: Ref.Ref<{ readonly messages: ReadonlyArray<Prompt.Message>; readonly state: string | undefined }>
  /** One run at a time per session: a run owns the queue's in-flight slot for each of its turns. */
  readonly lock: Effect.Semaphore
  /** Durable: steering recorded outside the saves, queued again on restore and reported once saved. */
  readonly durableSteering: DurableSteering | undefined
}

let sessions = 0

/** A fresh session on the current ToolChoiceQueue, SteeringBus, StandingResolveHandler and PendingActions. */
export const makeSession = (
  options: SessionOptions
): Effect.Effect<Session, never, ResolveRuntime.Services> =>
  Effect.gen(function*() {
    const queue = yield* ToolChoiceQueue
    const bus = yield* SteeringBus
    const standing = yield* StandingResolveHandler
    const pending = yield* PendingActions
    const runtime = Context.make(ToolChoiceQueue, queue).pipe(
      Context.add(SteeringBus, bus),
      Context.add(StandingResolveHandler, standing),
      Context.add(PendingActions, pending)
    )
    return {
      // A durable session is named by its pending set; an in-memory one by the option, else a fresh name.
      id: pending.durable ?
        pending.session :
        options.sessionId ?? `session-${++sessions}-${Math.random().toString(36).slice(2, 8)}`,
      queue,
      bus,
      pending,
      runtime,
      // The store the pending set writes through (fenced, for an exclusive session), else the one in context.
      store: pending.durable ?
        Option.getOrUndefined(pending.store) ?? Option.getOrUndefined(yield* Effect.serviceOption(PendingStore)) :
        undefined,
      history: yield* Ref.make(
        options.system === undefined ? Prompt.empty : Prompt.make([{ role: "system", content: options.system }])
      ),
      carry: yield* Ref.make<ReadonlyArray<SteeringMessage>>([]),
      transcript: yield* Ref.make<ReadonlyArray<TurnRecord>>([]),
      turnCount: yield* Ref.make(0),
      counters: yield* ResolveMetrics.makeCounters,
      forcing: yield* Ref.make<ForcingMap>(new Map()),
      refused: yield* Ref.make<Refused>(refusedNothing),
      lastChoice: yield* Ref.make(Option.none<string>()),
      shown: yield* Ref.make<ReadonlySet<string>>(new Set()),
      saved: yield* Ref.make<{ readonly messages: ReadonlyArray<Prompt.Message>; readonly state: string | undefined }>(
        { messages: [], state: undefined }
      ),
      lock: yield* Effect.makeSemaphore(1),
      durableSteering: pending.durable ? options.steering : undefined
    }
  })
