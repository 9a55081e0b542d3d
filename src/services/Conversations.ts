/**
 * A session's saved state and conversation, one concern of the `PendingStore`: its resumable state (JSON text
 * written by the turn driver) and its messages, saved in increments so a turn writes only what it added.
 *
 * Every store layer provides it, as a view on the same store as `PendingStore` and the other parts.
 *
 * @example
 * ```ts
 * import { Effect, Option } from "effect"
 * import { Conversations } from "effect-resolve"
 *
 * // Append one message to a session's conversation, then read it back.
 * const appendOne = Effect.gen(function*() {
 *   const conversations = yield* Conversations
 *   const saved = yield* conversations.loadConversation("s1")
 *   const from = Option.match(saved, { onNone: () => 0, onSome: (c) => c.messages.length })
 *   yield* conversations.saveConversation("s1", {
 *     state: "{}",
 *     from,
 *     messages: [JSON.stringify({ role: "user", content: "hello" })],
 *     previous: Option.map(saved, (c) => c.state)
 *   })
 *   return yield* conversations.loadConversation("s1")
 * })
 * ```
 *
 * @since 0.4.0
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import type { PendingStoreError } from "../domain/Errors.js"

/**
 * A session's saved state and conversation. A part of `PendingStore` (0.4): hold it to depend on this concern only.
 *
 * @since 0.4.0
 * @category tags
 */
export class Conversations
  extends Context.Tag("effect-resolve/Conversations")<Conversations, Conversations.Service>()
{}

/**
 * @since 0.4.0
 * @category tags
 */
export declare namespace Conversations {
  /**
   * A save of a session's conversation in increments (`saveConversation`): its resumable state (JSON text), and its
   * messages (each a JSON text) from index `from` on. The messages the store holds at `from` and after are replaced
   * by `messages`; those before `from` stay as they are, so a turn writes only what it added.
   *
   * @since 0.3.0
   * @category models
   */
  export interface ConversationSave {
    readonly state: string
    /** The index of the first message written (0 or more, at most the number of messages stored). */
    readonly from: number
    readonly messages: ReadonlyArray<string>
    /**
     * The state this writer saved or loaded last: when the stored state is another (a second process saved the
     * session since), the messages before `from` may not be this writer's, and the save fails, writing nothing (save
     * again from 0). `Option.none()`: no such check.
     */
    readonly previous: Option.Option<string>
  }
  /**
   * A session's saved conversation (`loadConversation`): its state, and every message stored, in order.
   *
   * @since 0.3.0
   * @category models
   */
  export interface Conversation {
    readonly state: string
    readonly messages: ReadonlyArray<string>
  }

  /**
   * The session state and conversations of a `PendingStore`. Writes are atomic (a conversation save is one
   * transaction) and uninterruptible once started; bad input fails with a `PendingStoreError` and changes nothing.
   *
   * @since 0.4.0
   * @category models
   */
  export interface Service {
    /** A session's resumable state (JSON text written by the turn driver); the last write wins. */
    readonly saveSession: (session: string, state: string) => Effect.Effect<void, PendingStoreError>
    /** The last state saved for the session, if any. */
    readonly loadSession: (session: string) => Effect.Effect<Option.Option<string>, PendingStoreError>
    /**
     * Saves the session's state and its messages from `from` on (`ConversationSave`), in one transaction: the
     * bytes written per turn are the turn's own, not the whole conversation's. Bad input (a `from` past the messages
     * stored) fails with a `PendingStoreError` and writes nothing.
     *
     * @since 0.3.0
     */
    readonly saveConversation: (
      session: string,
      save: Conversations.ConversationSave
    ) => Effect.Effect<void, PendingStoreError>
    /**
     * The session's last saved state with every message stored, if any state was saved (by `saveConversation` or
     * `saveSession`; after a `saveSession` only, `messages` is empty).
     *
     * @since 0.3.0
     */
    readonly loadConversation: (
      session: string
    ) => Effect.Effect<Option.Option<Conversations.Conversation>, PendingStoreError>
  }
}
