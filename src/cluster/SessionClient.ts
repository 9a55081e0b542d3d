/**
 * Sends messages to sessions from any node of the cluster (a runner, or a client-only node such as an approval
 * inbox): run a prompt, steer, decide an action, list and get. The cluster routes each message to the runner that
 * owns the session now; a persisted message (`run`, `steer`, `decide`) to a session whose runner died waits in the
 * store and is delivered once the session runs elsewhere.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { SessionClient } from "effect-resolve/cluster"
 *
 * const program = Effect.gen(function*() {
 *   const sessions = yield* SessionClient
 *   const reply = yield* sessions.run("s-42", "Rename greet to hello")
 *   for (const action of reply.open) {
 *     yield* sessions.decide("s-42", { id: action.id, decision: "apply", reason: "Reviewed.", by: "alice" })
 *   }
 * })
 * ```
 *
 * @since 0.3.0
 */
import type { AlreadyProcessingMessage, MailboxFull, PersistenceError } from "@effect/cluster/ClusterError"
import type { Sharding } from "@effect/cluster/Sharding"
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import { randomUUID } from "node:crypto"
import type { PendingStoreError } from "../domain/Errors.js"
import {
  type ActionPage,
  type DecisionError,
  type DecisionKind,
  type DecisionReply,
  type RunError,
  type RunReply,
  Session,
  type SessionAction
} from "./SessionProtocol.js"

/**
 * A message could not be handed to the cluster (its storage failed, or the session's mailbox is full). A `run` or
 * `steer` may or may not have been stored: send it again with the same `runId` / `steerId`, and the cluster
 * processes it at most once; a `decide` is idempotent.
 *
 * @since 0.3.0
 * @category errors
 */
export class SessionUnreachable extends Schema.TaggedError<SessionUnreachable>("effect-resolve/SessionUnreachable")(
  "SessionUnreachable",
  {
    session: Schema.String,
    operation: Schema.String,
    reason: Schema.String,
    cause: Schema.Defect
  }
) {
  /**
   * @since 0.3.0
   */
  override get message(): string {
    return `Could not send ${this.operation} to session ${JSON.stringify(this.session)}: ${this.reason}. Retry ` +
      `(a run or a steer with the same runId or steerId): the cluster processes each at most once.`
  }
}

/**
 * A person's decision, as `SessionClient.decide` takes it.
 *
 * @since 0.3.0
 * @category models
 */
export interface Decision {
  /** The pending action's id. */
  readonly id: string
  readonly decision: DecisionKind
  /** One sentence saying why (the resolve reason). */
  readonly reason: string
  /** Who decided: told to the model with the decision. */
  readonly by: string
  /** For `amend`: what to apply instead (`call.amendment` for the action's kind, decoded; also `extra.amendment`). */
  readonly amendment?: string | undefined
}

/**
 * @since 0.3.0
 * @category tags
 */
export declare namespace SessionClient {
  /**
   * @since 0.3.0
   * @category models
   */
  export interface Service {
    /**
     * Runs `prompt` in the session (turns until the model stops and nothing is pending) and returns the last answer.
     * `runId` (default: a fresh one) is the run's identity: the same run sent again is processed at most once.
     */
    readonly run: (
      session: string,
      prompt: string,
      options?: { readonly runId?: string | undefined }
    ) => Effect.Effect<RunReply, RunError | SessionUnreachable>
    /**
     * Steers a user message into the session's next model request, once. Answers only once the message is recorded
     * in the cluster's store: if the session's runner dies before that request, the runner that takes the session
     * over sends it. `steerId` (default: a fresh one) is its identity: sent again, it is recorded and sent once.
     */
    readonly steer: (
      session: string,
      text: string,
      options?: { readonly steerId?: string | undefined }
    ) => Effect.Effect<void, PendingStoreError | SessionUnreachable>
    /**
     * A person's decision on one pending action of the session, applied exactly once. Not persisted: it is sent
     * again until answered (a runner that died under it, a session that moved), and a decision that already took
     * effect answers `settledBefore: true`.
     */
    readonly decide: (
      session: string,
      decision: Decision
    ) => Effect.Effect<DecisionReply, DecisionError | SessionUnreachable>
    /**
     * One page of the session's actions, most recent first. A read is not persisted: one cut off because the
     * session moved or its runner died is sent again (for up to a minute).
     */
    readonly list: (
      session: string,
      options?: { readonly limit?: number | undefined; readonly cursor?: string | undefined }
    ) => Effect.Effect<ActionPage, PendingStoreError | SessionUnreachable>
    /** One action of the session by id. */
    readonly get: (
      session: string,
      id: string
    ) => Effect.Effect<Option.Option<SessionAction>, PendingStoreError | SessionUnreachable>
  }
}

/**
 * The client of the sessions of a cluster.
 *
 * @since 0.3.0
 * @category tags
 */
export class SessionClient extends Context.Tag("effect-resolve/cluster/SessionClient")<
  SessionClient,
  SessionClient.Service
>() {
  /**
   * The client on the node's `Sharding` (a runner's, or a client-only node's).
   *
   * @since 0.3.0
   * @category layers
   */
  static readonly layer: Layer.Layer<SessionClient, never, Sharding> = Layer.effect(
    SessionClient,
    Effect.suspend(() => make)
  )
}

const unreachable = (session: string, operation: string) =>
<A, E, R>(
  effect: Effect.Effect<A, E | MailboxFull | AlreadyProcessingMessage | PersistenceError, R>
): Effect.Effect<A, Exclude<E, MailboxFull | AlreadyProcessingMessage | PersistenceError> | SessionUnreachable, R> =>
  Effect.catchIf(
    effect,
    (error): error is MailboxFull | AlreadyProcessingMessage | PersistenceError =>
      typeof error === "object" && error !== null && "_tag" in error &&
      (error._tag === "MailboxFull" || error._tag === "AlreadyProcessingMessage" || error._tag === "PersistenceError"),
    (error) =>
      Effect.fail(
        new SessionUnreachable({
          session,
          operation,
          reason: error._tag === "MailboxFull" ?
            "its mailbox is full" :
            error._tag === "AlreadyProcessingMessage" ?
            "the same message is being processed" :
            "the cluster's message storage failed",
          cause: error
        })
      )
  ) as any

/**
 * A message that is not persisted (`Decide`, `List`, `Get`: each idempotent) is not retried by the cluster once a
 * runner took it: one whose session stopped on its runner while it was being answered (the shard moved) comes back
 * interrupted, one whose runner died under it comes back as a defect (the socket broke). It is sent again, to
 * wherever the session runs now, for up to a minute; a typed failure is passed on at once, and the caller's own
 * interruption still stops it.
 */
const resend = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  effect.pipe(
    Effect.sandbox,
    Effect.retry({
      while: (cause: Cause.Cause<E>) => Option.isNone(Cause.failureOption(cause)),
      schedule: Schedule.spaced(Duration.millis(200)).pipe(Schedule.upTo(Duration.minutes(1)))
    }),
    Effect.unsandbox
  )

/**
 * Builds the client (what `SessionClient.layer` provides).
 *
 * @since 0.3.0
 * @category constructors
 */
export const make: Effect.Effect<SessionClient.Service, never, Sharding> = Effect.map(
  Session.client,
  (clientFor) =>
    SessionClient.of({
      run: (session, prompt, options) =>
        clientFor(session).Run({ runId: options?.runId ?? randomUUID(), prompt }).pipe(unreachable(session, "run")),
      steer: (session, text, options) =>
        clientFor(session).Steer({ steerId: options?.steerId ?? randomUUID(), text }).pipe(
          unreachable(session, "steer")
        ),
      decide: (session, decision) =>
        clientFor(session).Decide({
          id: decision.id,
          decision: decision.decision,
          reason: decision.reason,
          by: decision.by,
          ...(decision.amendment === undefined ? {} : { amendment: decision.amendment })
        }).pipe(resend, unreachable(session, "decide")),
      list: (session, options) =>
        clientFor(session).List({
          ...(options?.limit === undefined ? {} : { limit: options.limit }),
          ...(options?.cursor === undefined ? {} : { cursor: options.cursor })
        }).pipe(resend, unreachable(session, "list")),
      get: (session, id) => clientFor(session).Get({ id }).pipe(resend, unreachable(session, "get"))
    })
)
