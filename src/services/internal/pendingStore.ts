/**
 * The input checks every `PendingStore` implementation shares, so that the memory and SQL stores refuse the same
 * inputs with the same words. Each returns `undefined` when the input is fine, else what is wrong (the detail of a
 * `PendingStoreError`). Hand-written rather than Schema-decoded: they run on every staged action's hot path.
 */
import * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import * as Decision from "../../domain/Decision.js"
import type { PendingRecord, PendingStatus } from "../../domain/PendingRecord.js"
import { isPendingStatus, isTerminal } from "../../domain/PendingRecord.js"
import * as ReviewerResponse from "../../domain/ReviewerResponse.js"
import type { ChangeFeed } from "../ChangeFeed.js"
import type { DecisionRequests } from "../DecisionRequests.js"
import type { InboxQueries } from "../InboxQueries.js"

const isText = (u: unknown): u is string => typeof u === "string"
const isMillis = (u: unknown): u is number => typeof u === "number" && Number.isSafeInteger(u) && u >= 0
const isNullableMillis = (u: unknown) => u === null || isMillis(u)

/** The JSON text of a payload, or `undefined` when it has none (a function, `undefined`, a cycle, a bigint). */
export const payloadJson = (payload: unknown): string | undefined => {
  if (payload === null) return "null"
  try {
    return JSON.stringify(payload)
  } catch {
    return undefined
  }
}

/** What is wrong with a record given to `insert`, if anything. */
export const checkRecord = (record: PendingRecord): string | undefined => {
  if (typeof record !== "object" || record === null) return "the record is not an object"
  if (!isText(record.id) || record.id.length === 0) return "id must be a non-empty string"
  for (const field of ["session", "kind", "label", "sourceToolName", "preview"] as const) {
    if (!isText(record[field])) return `${field} must be a string`
  }
  if (!(record.stager === null || (isText(record.stager) && record.stager.length > 0))) {
    return "stager must be null or a non-empty string (the runtime instance that staged it)"
  }
  if (record.status !== "pending") {
    return `a new record must be "pending", got ${JSON.stringify(record.status)}`
  }
  if (!(typeof record.attempts === "number" && Number.isSafeInteger(record.attempts) && record.attempts >= 0)) {
    return "attempts must be a non-negative integer"
  }
  if (record.owner !== null || record.leaseUntil !== null) {
    return "a new record has no owner and no lease (owner and leaseUntil must be null)"
  }
  if (!isMillis(record.createdAt) || !isMillis(record.updatedAt)) {
    return "createdAt and updatedAt must be epoch milliseconds (non-negative integers)"
  }
  if (!isNullableMillis(record.expiresAt)) return "expiresAt must be null or epoch milliseconds"
  if (!(record.outcome === null || isText(record.outcome))) return "outcome must be null or a string"
  return undefined
}

/** What is wrong with a `claim` input, if anything. */
export const checkClaim = (
  input: { readonly id: string; readonly owner: string; readonly leaseUntil: number; readonly now: number }
): string | undefined => {
  if (!isText(input.id)) return "id must be a string"
  if (!isText(input.owner) || input.owner.length === 0) return "owner must be a non-empty string"
  if (!isMillis(input.now)) return "now must be epoch milliseconds (a non-negative integer)"
  if (!isMillis(input.leaseUntil) || input.leaseUntil <= input.now) {
    return "leaseUntil must be epoch milliseconds after now"
  }
  return undefined
}

/** The statuses `settle` may end a claim with. */
export const settleTargets: ReadonlyArray<PendingStatus> = ["applied", "discarded", "pending", "conflict"]

/** What is wrong with a `settle` input, if anything. */
export const checkSettle = (
  input: {
    readonly id: string
    readonly owner: string
    readonly to: PendingStatus
    readonly outcome: Option.Option<string>
    readonly now: number
  }
): string | undefined => {
  if (!isText(input.id)) return "id must be a string"
  if (!isText(input.owner) || input.owner.length === 0) return "owner must be a non-empty string"
  if (!settleTargets.includes(input.to)) {
    return `settle ends a claim with "applied", "discarded", "pending" or "conflict", got ${JSON.stringify(input.to)}`
  }
  if (input.outcome._tag === "Some" && !isText(input.outcome.value)) return "outcome must be a string"
  if (!isMillis(input.now)) return "now must be epoch milliseconds (a non-negative integer)"
  return undefined
}

/** What is wrong with a `transition` input, if anything. */
export const checkTransition = (
  input: {
    readonly id: string
    readonly from: ReadonlyArray<PendingStatus>
    readonly to: PendingStatus
    readonly owner?: Option.Option<string> | undefined
    readonly stager?: string | undefined
    readonly now: number
  }
): string | undefined => {
  if (!isText(input.id)) return "id must be a string"
  if (!isPendingStatus(input.to)) return `to must be a status, got ${JSON.stringify(input.to)}`
  if (input.to === "resolving") return "only claim moves a record to \"resolving\"; call claim instead"
  if (input.to === "unreadable") return "\"unreadable\" is what a read finds, never written; choose another target"
  if (!Array.isArray(input.from) || input.from.length === 0) return "from must list at least one status"
  for (const from of input.from) {
    if (!isPendingStatus(from)) return `from must list statuses, got ${JSON.stringify(from)}`
    if (isTerminal(from)) return `"${from}" is terminal: a record never leaves it`
    if (from === input.to) return `from lists "${from}", the target itself: a transition changes the status`
  }
  if (input.owner !== undefined && input.owner._tag === "Some" && !isText(input.owner.value)) {
    return "owner must be a string"
  }
  if (input.stager !== undefined && !(isText(input.stager) && input.stager.length > 0)) {
    return "stager must be a non-empty string"
  }
  if (!isMillis(input.now)) return "now must be epoch milliseconds (a non-negative integer)"
  return undefined
}

/** What is wrong with a `saveSession` input, if anything. */
export const checkSession = (session: string, state: string): string | undefined => {
  if (!isText(session)) return "session must be a string"
  if (!isText(state)) return "state must be a string"
  return undefined
}

/** What is wrong with a `heartbeat` input, if anything. */
export const checkHeartbeat = (
  input: { readonly instance: string; readonly leaseUntil: number; readonly now: number }
): string | undefined => {
  if (!isText(input.instance) || input.instance.length === 0) return "instance must be a non-empty string"
  if (!isMillis(input.now)) return "now must be epoch milliseconds (a non-negative integer)"
  if (!isMillis(input.leaseUntil) || input.leaseUntil <= input.now) {
    return "leaseUntil must be epoch milliseconds after now"
  }
  return undefined
}

/** The writes a fenced store checks (`PendingStore.Service.fenced`): every write a session makes for itself. */
export const fencedWrites = [
  "insert",
  "claim",
  "settle",
  "transition",
  "prune",
  "heartbeat",
  "release",
  "saveSession",
  "saveConversation",
  "logSession",
  "completeDecision",
  "settleDeciding",
  "recordDone",
  "markDelivered"
] as const

/** The writes that add to the feed (the journal, the inbox's notes): each signals `changed` once it succeeded. */
export const feedWrites: ReadonlySet<string> = new Set([
  "insert",
  "claim",
  "settle",
  "transition",
  "prune",
  "snooze",
  "recordDecision",
  "completeDecision",
  "settleDeciding",
  "recordDone",
  "recordResponse",
  "markDelivered"
])

/** The most items one page holds. */
export const maxPageLimit = 1_000

/** What is wrong with page options, if anything. */
export const checkPage = (
  options: { readonly limit: number; readonly cursor?: string | undefined }
): string | undefined => {
  if (typeof options !== "object" || options === null) return "page options must be an object"
  if (!(Number.isSafeInteger(options.limit) && options.limit >= 1 && options.limit <= maxPageLimit)) {
    return `limit must be a whole number from 1 to ${maxPageLimit}`
  }
  if (options.cursor !== undefined && !isText(options.cursor)) return "cursor must be a string (a page's next)"
  return undefined
}

/** The detail of a cursor that no page gave. */
export const badCursor = "the cursor is not one a page of this listing gave; start again without a cursor"

/** The most records one `prune` call removes. */
export const maxPruneBatch = 10_000

/** What is wrong with a `prune` input, if anything. */
export const checkPrune = (
  input: {
    readonly session: string
    readonly keepLast: Option.Option<number>
    readonly settledBefore: Option.Option<number>
    readonly batch: number
  }
): string | undefined => {
  if (!isText(input.session)) return "session must be a string"
  if (input.keepLast._tag === "Some" && !(Number.isSafeInteger(input.keepLast.value) && input.keepLast.value >= 0)) {
    return "keepLast must be a whole number, 0 or more"
  }
  if (input.settledBefore._tag === "Some" && !isMillis(input.settledBefore.value)) {
    return "settledBefore must be epoch milliseconds"
  }
  if (!(Number.isSafeInteger(input.batch) && input.batch >= 1 && input.batch <= maxPruneBatch)) {
    return `batch must be a whole number from 1 to ${maxPruneBatch}`
  }
  return undefined
}

/**
 * The cursor of a record listing: where the last record of a page sorts (its `createdAt` as stored, a number, or
 * the text a corrupted row holds, and its insertion number), as base64url JSON.
 */
export const recordCursor = {
  encode: (createdAt: number | string, seq: number): string =>
    Buffer.from(JSON.stringify([createdAt, seq])).toString("base64url"),
  decode: (cursor: string): { readonly createdAt: number | string; readonly seq: number } | undefined => {
    if (!/^[A-Za-z0-9_-]{1,400}$/.test(cursor)) return undefined
    try {
      const value: unknown = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"))
      if (!Array.isArray(value) || value.length !== 2) return undefined
      const [createdAt, seq] = value as [unknown, unknown]
      if (!(typeof seq === "number" && Number.isSafeInteger(seq))) return undefined
      if (!(typeof createdAt === "string" || (typeof createdAt === "number" && Number.isFinite(createdAt)))) {
        return undefined
      }
      return { createdAt, seq }
    } catch {
      return undefined
    }
  }
}

/** The cursor of a journal listing: how far the last page went (an event's sequence number, or an index). */
export const eventCursor = {
  encode: (position: number): string => `e${position}`,
  decode: (cursor: string): number | undefined => {
    const match = /^e(\d{1,16})$/.exec(cursor)
    if (match === null) return undefined
    const position = Number(match[1])
    return Number.isSafeInteger(position) ? position : undefined
  }
}

// ---- the approval inbox (0.3) ---------------------------------------------------------------------------------

/** The most entries a filter list (sessions, statuses, kinds) of the inbox's queries holds. */
export const maxFilterEntries = 100

/** The longest reviewer name and decision reason. */
export const decisionLimits = {
  reviewerMaxLength: 200,
  reasonMaxLength: 4_000,
  /** The largest amendment: the UTF-8 bytes of its JSON text (16 MiB). */
  amendmentMaxBytes: 16 * 1024 * 1024
} as const

const checkList = (name: string, list: unknown): string | undefined => {
  if (list === undefined) return undefined
  if (!Array.isArray(list)) return `${name} must be a list`
  if (list.length === 0 || list.length > maxFilterEntries) {
    return `${name} must list 1 to ${maxFilterEntries} entries (leave it out for all)`
  }
  for (const item of list) if (!isText(item)) return `${name} must list strings`
  return undefined
}

/** What is wrong with a `listActions` query, if anything. */
export const checkActionQuery = (
  query: {
    readonly sessions?: ReadonlyArray<string> | undefined
    readonly statuses?: ReadonlyArray<PendingStatus> | undefined
    readonly kinds?: ReadonlyArray<string> | undefined
    readonly snoozed?: string | undefined
    readonly now: number
    readonly limit: number
    readonly cursor?: string | undefined
  }
): string | undefined => {
  if (typeof query !== "object" || query === null) return "the query must be an object"
  const page = checkPage(query)
  if (page !== undefined) return page
  const problem = checkList("sessions", query.sessions) ?? checkList("statuses", query.statuses) ??
    checkList("kinds", query.kinds)
  if (problem !== undefined) return problem
  for (const status of query.statuses ?? []) {
    if (!isPendingStatus(status) || status === "unreadable") {
      return `statuses must list stored statuses, got ${JSON.stringify(status)}`
    }
  }
  if (query.snoozed !== undefined && !["hide", "include", "only"].includes(query.snoozed)) {
    return "snoozed must be \"hide\", \"include\" or \"only\""
  }
  if (!isMillis(query.now)) return "now must be epoch milliseconds (a non-negative integer)"
  return undefined
}

/** What is wrong with a `countActions` query, if anything. */
export const checkCountQuery = (
  query: {
    readonly sessions?: ReadonlyArray<string> | undefined
    readonly kinds?: ReadonlyArray<string> | undefined
    readonly now: number
  }
): string | undefined => {
  if (typeof query !== "object" || query === null) return "the query must be an object"
  const problem = checkList("sessions", query.sessions) ?? checkList("kinds", query.kinds)
  if (problem !== undefined) return problem
  if (!isMillis(query.now)) return "now must be epoch milliseconds (a non-negative integer)"
  return undefined
}

/** What is wrong with a list of ids given to `getActions`, if anything. */
export const checkIds = (ids: ReadonlyArray<string>): string | undefined => {
  if (!Array.isArray(ids)) return "ids must be a list"
  if (ids.length > maxPageLimit) return `at most ${maxPageLimit} ids at once`
  for (const id of ids) if (!isText(id)) return "ids must be strings"
  return undefined
}

/** What is wrong with a `snooze` input, if anything. */
export const checkSnooze = (
  input: { readonly id: string; readonly until: Option.Option<number>; readonly now: number }
): string | undefined => {
  if (!isText(input.id)) return "id must be a string"
  if (input.until._tag === "Some" && !isMillis(input.until.value)) return "until must be epoch milliseconds"
  if (!isMillis(input.now)) return "now must be epoch milliseconds (a non-negative integer)"
  return undefined
}

/** The JSON text of an amendment, or what is wrong with it. */
export const amendmentJson = (amendment: unknown): { readonly json: string } | { readonly problem: string } => {
  if (amendment === undefined) return { problem: "amendment must be a JSON value (null for none)" }
  const json = payloadJson(amendment)
  if (json === undefined) return { problem: "amendment must be a JSON value (null for none)" }
  if (Buffer.byteLength(json, "utf8") > decisionLimits.amendmentMaxBytes) {
    return { problem: `amendment must be at most ${decisionLimits.amendmentMaxBytes} bytes as JSON` }
  }
  return { json }
}

/** What is wrong with a `recordDecision` input, if anything. */
export const checkDecision = (
  input: {
    readonly id: string
    readonly actionId: string
    readonly reviewer: string
    readonly action: string
    readonly reason: string
    readonly now: number
  }
): string | undefined => {
  if (typeof input !== "object" || input === null) return "the decision must be an object"
  if (!Decision.isId(input.id)) {
    return "id must be a decision id (Decision.makeId: dc_<time>_<random>)"
  }
  if (!isText(input.actionId) || input.actionId.length === 0) return "actionId must be a non-empty string"
  if (
    !isText(input.reviewer) || input.reviewer.length === 0 || input.reviewer.length > decisionLimits.reviewerMaxLength
  ) {
    return `reviewer must be a name of 1 to ${decisionLimits.reviewerMaxLength} characters`
  }
  if (input.action !== "apply" && input.action !== "discard") return "action must be \"apply\" or \"discard\""
  if (
    !isText(input.reason) || input.reason.trim().length === 0 || input.reason.length > decisionLimits.reasonMaxLength
  ) {
    return `reason must be text of 1 to ${decisionLimits.reasonMaxLength} characters`
  }
  if (!isMillis(input.now)) return "now must be epoch milliseconds (a non-negative integer)"
  return undefined
}

/** What is wrong with a `recordDone` input, if anything. */
export const checkDone = (input: DecisionRequests.DoneInput): string | undefined => {
  if (typeof input !== "object" || input === null) return "the decision must be an object"
  return checkDecision({ ...input, now: input.requestedAt }) ??
    checkComplete({ id: input.id, state: "done", outcome: input.outcome, by: input.by, now: input.now })
}

/** What is wrong with a `recordResponse` input, if anything. */
export const checkResponse = (
  input: {
    readonly id: string
    readonly actionId: string
    readonly reviewer: string
    readonly message: string
    readonly now: number
  }
): string | undefined => {
  if (typeof input !== "object" || input === null) return "the response must be an object"
  if (!ReviewerResponse.isId(input.id)) {
    return "id must be a response id (ReviewerResponse.makeId: rs_<time>_<random>)"
  }
  if (!isText(input.actionId) || input.actionId.length === 0) return "actionId must be a non-empty string"
  if (
    !isText(input.reviewer) || input.reviewer.length === 0 || input.reviewer.length > decisionLimits.reviewerMaxLength
  ) {
    return `reviewer must be a name of 1 to ${decisionLimits.reviewerMaxLength} characters`
  }
  if (
    !isText(input.message) || input.message.trim().length === 0 ||
    input.message.length > decisionLimits.reasonMaxLength
  ) {
    return `message must be text of 1 to ${decisionLimits.reasonMaxLength} characters`
  }
  if (!isMillis(input.now)) return "now must be epoch milliseconds (a non-negative integer)"
  return undefined
}

/** What is wrong with an `undeliveredResponses` query, if anything. */
export const checkUndelivered = (query: { readonly session: string; readonly limit: number }): string | undefined => {
  if (typeof query !== "object" || query === null) return "the query must be an object"
  if (!isText(query.session)) return "session must be a string"
  if (!(Number.isSafeInteger(query.limit) && query.limit >= 1 && query.limit <= maxPageLimit)) {
    return `limit must be a whole number from 1 to ${maxPageLimit}`
  }
  return undefined
}

/** What is wrong with a `markDelivered` input, if anything. */
export const checkDelivered = (
  input: { readonly ids: ReadonlyArray<string>; readonly now: number }
): string | undefined => {
  if (typeof input !== "object" || input === null) return "the input must be an object"
  if (!Array.isArray(input.ids) || input.ids.length === 0 || input.ids.length > maxFilterEntries) {
    return `ids must list 1 to ${maxFilterEntries} response ids (send more in several calls)`
  }
  if (!input.ids.every(isText)) return "ids must list strings"
  if (!isMillis(input.now)) return "now must be epoch milliseconds (a non-negative integer)"
  return undefined
}

/** What is wrong with a `completeDecision` input, if anything. */
export const checkComplete = (
  input: {
    readonly id: string
    readonly state: string
    readonly outcome: string
    readonly by: string
    readonly now: number
  }
): string | undefined => {
  if (!isText(input.id)) return "id must be a string"
  if (input.state !== "done" && input.state !== "failed") return "state must be \"done\" or \"failed\""
  if (!isText(input.outcome)) return "outcome must be a string"
  if (!isText(input.by) || input.by.length === 0) return "by must be a non-empty string (who ran it)"
  if (!isMillis(input.now)) return "now must be epoch milliseconds (a non-negative integer)"
  return undefined
}

/** What is wrong with a `requestedDecisions` query, if anything. */
export const checkRequested = (
  query: {
    readonly sessions?: ReadonlyArray<string> | undefined
    readonly kinds?: ReadonlyArray<string> | undefined
    readonly limit: number
  }
): string | undefined => {
  if (typeof query !== "object" || query === null) return "the query must be an object"
  const problem = checkList("sessions", query.sessions) ?? checkList("kinds", query.kinds)
  if (problem !== undefined) return problem
  if (!(Number.isSafeInteger(query.limit) && query.limit >= 1 && query.limit <= maxPageLimit)) {
    return `limit must be a whole number from 1 to ${maxPageLimit}`
  }
  return undefined
}

const isSeq = (u: unknown) => typeof u === "number" && Number.isSafeInteger(u) && u >= 0

/** What is wrong with a `feed` input, if anything. */
export const checkFeed = (
  input: {
    readonly after: { readonly journal: number; readonly notes: number }
    readonly limit: number
    readonly missing?: { readonly journal: ReadonlyArray<number>; readonly notes: ReadonlyArray<number> } | undefined
  }
): string | undefined => {
  if (typeof input !== "object" || input === null || typeof input.after !== "object" || input.after === null) {
    return "the input must be an object with after: { journal, notes }"
  }
  if (!isSeq(input.after.journal) || !isSeq(input.after.notes)) {
    return "after.journal and after.notes must be sequence numbers (non-negative integers)"
  }
  if (!(Number.isSafeInteger(input.limit) && input.limit >= 1 && input.limit <= maxPageLimit)) {
    return `limit must be a whole number from 1 to ${maxPageLimit}`
  }
  if (input.missing !== undefined) {
    for (const list of [input.missing.journal, input.missing.notes]) {
      if (!Array.isArray(list) || list.length > maxPageLimit || !list.every(isSeq)) {
        return `missing.journal and missing.notes must list at most ${maxPageLimit} sequence numbers`
      }
    }
  }
  return undefined
}

/** The most notes one `pruneNotes` call removes. */
export const maxNotesPrune = 10_000

/** The methods of a `PendingStore` that serve the approval inbox (each store builds them apart): its parts
 * `InboxQueries` and `DecisionRequests`, and `ChangeFeed` but its signal. */
export type InboxMethods =
  & InboxQueries.Service
  & Omit<DecisionRequests.Service, "settleDeciding" | "recordDone">
  & Omit<ChangeFeed.Service, "changed">

/**
 * `settleDeciding` where no single statement does it: `settle`, then, only when it settled, `complete` (what a
 * transaction, or a store whose writes are each atomic, wraps).
 */
export const settleThenComplete = <E>(
  settle: Effect.Effect<boolean, E>,
  complete: Effect.Effect<boolean, E>
): Effect.Effect<{ readonly settled: boolean; readonly completed: boolean }, E> =>
  Effect.flatMap(
    settle,
    (settled): Effect.Effect<{ readonly settled: boolean; readonly completed: boolean }, E> =>
      settled ?
        Effect.map(complete, (completed) => ({ settled, completed })) :
        Effect.succeed({ settled, completed: false })
  )
