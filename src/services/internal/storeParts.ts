/**
 * The parts of a `PendingStore`, one per concern: which methods each part has, and the context of a store's parts
 * (each a view on the store, its own methods only).
 *
 * @internal
 */
import * as Context from "effect/Context"
import { ActionRecords } from "../ActionRecords.js"
import { ChangeFeed } from "../ChangeFeed.js"
import { Conversations } from "../Conversations.js"
import { DecisionRequests } from "../DecisionRequests.js"
import { InboxQueries } from "../InboxQueries.js"
import { InstanceLeases } from "../InstanceLeases.js"
import type { PendingStore } from "../PendingStore.js"
import { SessionOwners } from "../SessionOwners.js"

/** `Keys` lists exactly the keys of `S` (a compile error names what is missing). */
type Exactly<S, Keys extends ReadonlyArray<keyof S>> = [Exclude<keyof S, Keys[number]>] extends [never] ? Keys
  : { readonly missing: Exclude<keyof S, Keys[number]> }

const keys = <S>() => <const Keys extends ReadonlyArray<keyof S>>(list: Exactly<S, Keys>): Keys => list as Keys

/** The methods of each part. */
export const partKeys = {
  ActionRecords: keys<ActionRecords.Service>()([
    "insert",
    "get",
    "list",
    "listPage",
    "listOpen",
    "claim",
    "settle",
    "transition",
    "stale",
    "history",
    "historyPage",
    "prune"
  ]),
  InstanceLeases: keys<InstanceLeases.Service>()(["heartbeat", "release", "leases"]),
  SessionOwners: keys<SessionOwners.Service>()(["acquire", "owner", "logSession", "sessionLog"]),
  Conversations: keys<Conversations.Service>()(["saveSession", "loadSession", "saveConversation", "loadConversation"]),
  InboxQueries: keys<InboxQueries.Service>()(["listActions", "getActions", "countActions", "snooze"]),
  DecisionRequests: keys<DecisionRequests.Service>()([
    "recordDecision",
    "getDecision",
    "decisions",
    "requestedDecisions",
    "completeDecision",
    "settleDeciding",
    "recordDone",
    "recordResponse",
    "responses",
    "undeliveredResponses",
    "markDelivered"
  ]),
  ChangeFeed: keys<ChangeFeed.Service>()(["feedHead", "feed", "pruneNotes", "changed"])
} as const

/** The methods of `store` that `keys` names: a part's view on it. */
const pick = <K extends keyof PendingStore.Service>(
  store: PendingStore.Service,
  names: ReadonlyArray<K>
): Pick<PendingStore.Service, K> => {
  const part: Partial<Pick<PendingStore.Service, K>> = {}
  for (const name of names) part[name] = store[name]
  return part as Pick<PendingStore.Service, K>
}

/** Every part of `store`, as a context. */
export const partsContext = (store: PendingStore.Service): Context.Context<PendingStore.Parts> =>
  Context.empty().pipe(
    Context.add(ActionRecords, pick(store, partKeys.ActionRecords)),
    Context.add(InstanceLeases, pick(store, partKeys.InstanceLeases)),
    Context.add(SessionOwners, pick(store, partKeys.SessionOwners)),
    Context.add(Conversations, pick(store, partKeys.Conversations)),
    Context.add(InboxQueries, pick(store, partKeys.InboxQueries)),
    Context.add(DecisionRequests, pick(store, partKeys.DecisionRequests)),
    Context.add(ChangeFeed, pick(store, partKeys.ChangeFeed))
  )
