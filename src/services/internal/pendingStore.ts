/**
 * The input checks every `PendingStore` implementation shares, so that the memory and SQL stores refuse the same
 * inputs with the same words. Each returns `undefined` when the input is fine, else what is wrong (the detail of a
 * `PendingStoreError`). Hand-written rather than Schema-decoded: they run on every staged action's hot path.
 */
import type * as Option from "effect/Option"
import type { PendingRecord, PendingStatus } from "../../domain/PendingRecord.js"
import { isPendingStatus, isTerminal } from "../../domain/PendingRecord.js"

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
