/**
 * The approval inbox's HTTP API, defined once with `@effect/platform`'s `HttpApi`: the server (`InboxServer`)
 * implements it, `InboxClient` calls it with the same types, and `/openapi.json` describes it. Every route but the
 * login link and the OpenAPI document needs a reviewer: a bearer token, or the cookie the login link sets.
 *
 * | route | what it does | scope |
 * | --- | --- | --- |
 * | `GET /api/actions` | the pending actions of every session in scope, filtered, a page at a time, with the badge's counts | read |
 * | `GET /api/actions/:id` | one action: preview, structured diff, history, decisions | read |
 * | `POST /api/actions/:id/decision` | apply (perhaps amended), discard, snooze, or respond to one action | decide |
 * | `POST /api/decisions` | up to 100 decisions at once, each answered on its own | decide |
 * | `GET /api/events` | a server-sent event stream of changes and counts | read |
 * | `GET /api/me` | who the token or cookie is | read |
 * | `POST /api/logout` | ends the cookie's session | read |
 * | `GET /login?code=` | redeems a one-time login link: sets the cookie, redirects to the page | — |
 *
 * @example
 * ```ts
 * import { OpenApi } from "@effect/platform"
 * import { InboxApi } from "effect-resolve/inbox"
 *
 * const spec = OpenApi.fromApi(InboxApi.InboxApi) // what GET /openapi.json serves
 * ```
 *
 * @since 0.3.0
 */
import * as HttpApi from "@effect/platform/HttpApi"
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as HttpApiMiddleware from "@effect/platform/HttpApiMiddleware"
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import * as HttpApiSecurity from "@effect/platform/HttpApiSecurity"
import * as OpenApi from "@effect/platform/OpenApi"
import * as Context from "effect/Context"
import type * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { DecisionAction, DecisionState } from "../domain/Decision.js"
import { EpochMillis, PendingStatus } from "../domain/PendingRecord.js"

// -----------------------------------------------------------------------------------------------------------------
// reviewers
// -----------------------------------------------------------------------------------------------------------------

/**
 * Who is asking: the name of their token, what they may do, and which sessions they see (`none`: every session).
 *
 * @since 0.3.0
 * @category models
 */
export interface ReviewerInfo {
  readonly name: string
  readonly permission: Permission
  readonly sessions: Option.Option<ReadonlyArray<string>>
}

/**
 * The reviewer of the current request (provided by the `Authentication` middleware).
 *
 * @since 0.3.0
 * @category tags
 */
export class Reviewer extends Context.Tag("effect-resolve/inbox/Reviewer")<Reviewer, ReviewerInfo>() {}

/**
 * `GET /api/me`: the current reviewer.
 *
 * @since 0.3.0
 * @category schemas
 */
export const Me = Schema.Struct({
  name: Schema.String,
  permission: Permission,
  sessions: Schema.OptionFromNullOr(Schema.Array(Schema.String))
})

// -----------------------------------------------------------------------------------------------------------------
// errors: in InboxErrors.ts, every one re-exported here
// -----------------------------------------------------------------------------------------------------------------

import {
  ActionNotDecidable,
  ActionNotFound,
  AmendmentRejected,
  CrossOriginRefused,
  DecisionAlreadyRequested,
  HostNotAllowed,
  InboxForbidden,
  InboxUnauthorized,
  InternalError,
  InvalidDecision,
  InvalidQuery,
  LoginLinkInvalid,
  MalformedRequest,
  PayloadTooLarge,
  Permission,
  RouteNotFound,
  StoreUnavailable
} from "./InboxErrors.js"

export * from "./InboxErrors.js"

// -----------------------------------------------------------------------------------------------------------------
// authentication
// -----------------------------------------------------------------------------------------------------------------

/**
 * The login cookie's name.
 *
 * @since 0.3.0
 * @category constants
 */
export const cookieName = "effect_resolve_inbox"

/**
 * The ways to authenticate: `Authorization: Bearer <token>`, or the `HttpOnly` cookie a login link sets.
 *
 * @since 0.3.0
 * @category security
 */
export const security = {
  bearer: HttpApiSecurity.bearer.pipe(
    HttpApiSecurity.annotate(
      OpenApi.Description,
      "A token the inbox generated at start, or one it was configured with."
    )
  ),
  cookie: HttpApiSecurity.apiKey({ in: "cookie", key: cookieName }).pipe(
    HttpApiSecurity.annotate(OpenApi.Description, "Set by a one-time login link (GET /login?code=...).")
  )
}

/**
 * The middleware that authenticates every API route and provides the `Reviewer`.
 *
 * @since 0.3.0
 * @category security
 */
export class Authentication extends HttpApiMiddleware.Tag<Authentication>()("effect-resolve/inbox/Authentication", {
  failure: InboxUnauthorized,
  provides: Reviewer,
  security
}) {}

// -----------------------------------------------------------------------------------------------------------------
// actions
// -----------------------------------------------------------------------------------------------------------------

/**
 * A stored status one can filter by (every status but `unreadable`, which only a read produces).
 *
 * @since 0.3.0
 * @category schemas
 */
export const StatusFilter = PendingStatus.pipe(Schema.filter((status) => status !== "unreadable"))

/**
 * A decision as the API shows it.
 *
 * @since 0.3.0
 * @category schemas
 */
export const DecisionView = Schema.Struct({
  id: Schema.String,
  actionId: Schema.String,
  session: Schema.String,
  reviewer: Schema.String,
  action: DecisionAction,
  reason: Schema.String,
  amendment: Schema.Unknown,
  state: DecisionState,
  outcome: Schema.OptionFromNullOr(Schema.String),
  requestedAt: EpochMillis,
  settledAt: Schema.OptionFromNullOr(EpochMillis)
}).annotations({ identifier: "Decision" })

/**
 * @since 0.3.0
 * @category models
 */
export type DecisionView = typeof DecisionView.Type

/**
 * A reviewer's response (a message to the agent that leaves the action pending) as the API shows it:
 * `deliveredAt` is when the session's saved conversation first held it (its model has read it).
 *
 * @since 0.4.0
 * @category schemas
 */
export const ResponseView = Schema.Struct({
  id: Schema.String,
  actionId: Schema.String,
  session: Schema.String,
  reviewer: Schema.String,
  message: Schema.String,
  respondedAt: EpochMillis,
  deliveredAt: Schema.OptionFromNullOr(EpochMillis)
}).annotations({ identifier: "Response" })

/**
 * @since 0.4.0
 * @category models
 */
export type ResponseView = typeof ResponseView.Type

/**
 * One file a preview's diff touches, at a glance: its path (the new one; the old one when the file is deleted) and
 * the lines it adds and removes.
 *
 * @since 0.4.0
 * @category schemas
 */
export const FileStat = Schema.Struct({
  path: Schema.String,
  added: Schema.NonNegativeInt,
  removed: Schema.NonNegativeInt
}).annotations({ identifier: "FileStat" })

/**
 * @since 0.4.0
 * @category models
 */
export type FileStat = typeof FileStat.Type

const summaryFields = {
  id: Schema.String,
  session: Schema.String,
  kind: Schema.String,
  label: Schema.String,
  sourceToolName: Schema.String,
  status: PendingStatus,
  attempts: Schema.NonNegativeInt,
  createdAt: EpochMillis,
  updatedAt: EpochMillis,
  expiresAt: Schema.OptionFromNullOr(EpochMillis),
  /** Until when it is hidden from the default list; `none` when it is not snoozed now. */
  snoozedUntil: Schema.OptionFromNullOr(EpochMillis),
  /** The last result text or error message. */
  outcome: Schema.OptionFromNullOr(Schema.String),
  /** The decision recorded and not yet run, if any. */
  requested: Schema.OptionFromNullOr(DecisionView),
  /** Whether this inbox registers the action's kind: a decision is run at once, here. */
  runsHere: Schema.Boolean,
  /** Whether the action's kind takes an amendment (edit before apply) that this inbox can check. */
  amendable: Schema.Boolean,
  /** The preview's size in UTF-16 code units (the list does not carry previews). */
  previewLength: Schema.NonNegativeInt,
  /**
   * The files its preview's diff touches (the first 20; none when the preview holds no unified diff), each with
   * the lines it adds and removes: what a list row shows, computed once per action by the server.
   */
  files: Schema.Array(FileStat),
  /** How many files the diff touches (`files` names at most 20). */
  fileCount: Schema.NonNegativeInt,
  /** The lines the diff adds, over every file. */
  added: Schema.NonNegativeInt,
  /** The lines the diff removes, over every file. */
  removed: Schema.NonNegativeInt
}

/**
 * An action as the list shows it.
 *
 * @since 0.3.0
 * @category schemas
 */
export const ActionSummary = Schema.Struct(summaryFields).annotations({ identifier: "ActionSummary" })

/**
 * @since 0.3.0
 * @category models
 */
export type ActionSummary = typeof ActionSummary.Type

/**
 * One line of a diff: unchanged (`context`), added, removed, or a note (`\ No newline at end of file`).
 *
 * @since 0.3.0
 * @category schemas
 */
export const DiffLine = Schema.Struct({
  op: Schema.Literal("context", "add", "remove", "note"),
  text: Schema.String
})

/**
 * A diff of an edit, parsed from its unified-diff preview: per file, its hunks, each a header (`@@ -1,3 +1,3 @@`)
 * and lines. `truncated` when the preview held more lines than the inbox parses (the preview has them all).
 *
 * @since 0.3.0
 * @category schemas
 */
export const Diff = Schema.Struct({
  files: Schema.Array(Schema.Struct({
    oldPath: Schema.String,
    newPath: Schema.String,
    hunks: Schema.Array(Schema.Struct({ header: Schema.String, lines: Schema.Array(DiffLine) }))
  })),
  truncated: Schema.Boolean
}).annotations({ identifier: "Diff" })

/**
 * @since 0.3.0
 * @category models
 */
export type Diff = typeof Diff.Type

/**
 * One entry of an action's history: a transition of its status.
 *
 * @since 0.3.0
 * @category schemas
 */
export const HistoryEvent = Schema.Struct({
  at: EpochMillis,
  from: Schema.OptionFromNullOr(PendingStatus),
  to: PendingStatus,
  attempt: Schema.NonNegativeInt
})

/**
 * One action with everything a reviewer reads before deciding.
 *
 * @since 0.3.0
 * @category schemas
 */
export const ActionDetail = Schema.Struct({
  ...summaryFields,
  /** The text the model saw, whole. */
  preview: Schema.String,
  /** The preview as a structured diff, when it holds a unified diff. */
  diff: Schema.OptionFromNullOr(Diff),
  /** The first 200 transitions, oldest first. */
  history: Schema.Array(HistoryEvent),
  /** Every decision recorded for it, oldest first. */
  decisions: Schema.Array(DecisionView),
  /** Every reviewer's response recorded for it, oldest first (since 0.4). */
  responses: Schema.Array(ResponseView),
  /** The JSON Schema of the amendment its kind takes, when `amendable`. */
  amendmentSchema: Schema.OptionFromNullOr(Schema.Unknown),
  /**
   * The amendment a reviewer starts from, when its kind drafts one (the edit kind: every file's new text as the
   * preview would write it).
   */
  amendmentDraft: Schema.OptionFromNullOr(Schema.Unknown)
}).annotations({ identifier: "ActionDetail" })

/**
 * @since 0.3.0
 * @category models
 */
export type ActionDetail = typeof ActionDetail.Type

/**
 * A badge's counts over the actions not yet settled in the reviewer's scope (see `PendingStore.ActionCounts`).
 *
 * @since 0.3.0
 * @category schemas
 */
export const Counts = Schema.Struct({
  pending: Schema.NonNegativeInt,
  requested: Schema.NonNegativeInt,
  snoozed: Schema.NonNegativeInt,
  resolving: Schema.NonNegativeInt,
  orphaned: Schema.NonNegativeInt,
  conflict: Schema.NonNegativeInt
}).annotations({ identifier: "Counts" })

/**
 * @since 0.3.0
 * @category models
 */
export type Counts = typeof Counts.Type

/**
 * `GET /api/actions`' query: every parameter may repeat (`?session=a&session=b`); by default the actions not yet
 * settled, not snoozed, 50 a page.
 *
 * @since 0.3.0
 * @category schemas
 */
export const ListParams = Schema.Struct({
  session: Schema.optional(Schema.Array(Schema.String.pipe(Schema.maxLength(500)))),
  status: Schema.optional(Schema.Array(StatusFilter)),
  kind: Schema.optional(Schema.Array(Schema.String.pipe(Schema.maxLength(200)))),
  snoozed: Schema.optional(Schema.Literal("hide", "include", "only")),
  cursor: Schema.optional(Schema.String.pipe(Schema.maxLength(400))),
  limit: Schema.optional(Schema.NumberFromString.pipe(Schema.int(), Schema.between(1, 200)))
})

/**
 * @since 0.3.0
 * @category models
 */
export type ListParams = typeof ListParams.Type

/**
 * A page of actions, the cursor of the next page, and the badge's counts.
 *
 * @since 0.3.0
 * @category schemas
 */
export const ActionList = Schema.Struct({
  items: Schema.Array(ActionSummary),
  next: Schema.OptionFromNullOr(Schema.String),
  counts: Counts
}).annotations({ identifier: "ActionList" })

/**
 * @since 0.3.0
 * @category models
 */
export type ActionList = typeof ActionList.Type

/**
 * The longest reason, in UTF-16 code units.
 *
 * @since 0.3.0
 * @category constants
 */
export const reasonMaxLength = 4_000

/**
 * Why a reviewer decided: one sentence, shown to the model.
 *
 * @since 0.3.0
 * @category schemas
 */
export const Reason = Schema.String.pipe(
  Schema.filter((s) => s.trim().length > 0 || "must not be empty: say in one sentence why"),
  Schema.maxLength(reasonMaxLength, { message: () => `must be at most ${reasonMaxLength} characters` }),
  Schema.filter((s) =>
    !/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(s) ||
    "must be valid text (it contains a lone surrogate)"
  )
)

/**
 * The deepest a request body may nest objects and arrays (the body itself is level 0): deeper bodies are refused
 * with `MalformedRequest` before anything decodes them.
 *
 * @since 0.4.0
 * @category constants
 */
export const bodyMaxDepth = 64

/**
 * The largest time a JavaScript `Date` holds, in epoch milliseconds (+275760-09-13T00:00:00.000Z).
 *
 * @since 0.4.0
 * @category constants
 */
export const dateMaxMillis = 8_640_000_000_000_000

/**
 * A `snooze` time: epoch milliseconds, a whole number from 0 to `dateMaxMillis` (what a `Date` holds).
 *
 * @since 0.4.0
 * @category schemas
 */
export const SnoozeUntil = EpochMillis.pipe(
  Schema.lessThanOrEqualTo(dateMaxMillis, {
    message: () =>
      `must be a time a Date holds: epoch milliseconds from 0 to ${dateMaxMillis} (+275760-09-13T00:00:00.000Z)`
  })
).annotations({ description: "Epoch milliseconds, from 0 to 8640000000000000 (the largest Date)." })

/**
 * What a reviewer decides about one action:
 * - `apply`, with a reason and, for a kind that takes one, an `amendment` (edit before apply);
 * - `discard`, with a reason;
 * - `snooze` ("not now"): hidden from the default list until `until` (epoch milliseconds, at most `dateMaxMillis`;
 *   `null` ends a snooze); still pending for the model;
 * - `respond` (since 0.4): a `message` to the agent that decides nothing: the action stays pending, and the
 *   session's model reads the message in its next request, once.
 *
 * @since 0.3.0
 * @category schemas
 */
export const DecisionRequest = Schema.Union(
  Schema.Struct({ action: Schema.Literal("apply"), reason: Reason, amendment: Schema.optional(Schema.Unknown) }),
  Schema.Struct({ action: Schema.Literal("discard"), reason: Reason }),
  Schema.Struct({ action: Schema.Literal("snooze"), until: Schema.NullOr(SnoozeUntil) }),
  Schema.Struct({ action: Schema.Literal("respond"), message: Reason })
).annotations({ identifier: "DecisionRequest" })

/**
 * @since 0.3.0
 * @category models
 */
export type DecisionRequest = typeof DecisionRequest.Type

/**
 * What deciding did:
 * - `applied`, `discarded`: this inbox ran it; `failed`: it ran and did not happen (the action is pending again, or
 *   it had already been settled), `message` says why;
 * - `requested`: recorded; the session's own process runs it on its next turn or refresh (this inbox does not
 *   register the kind, or could not run it now);
 * - `snoozed`, `unsnoozed`;
 * - `responded`: the response is recorded (it is in the action's `responses`); the action stays pending.
 *
 * @since 0.3.0
 * @category schemas
 */
export const DecisionResult = Schema.Struct({
  outcome: Schema.Literal("applied", "discarded", "failed", "requested", "snoozed", "unsnoozed", "responded"),
  message: Schema.String,
  action: ActionSummary,
  decision: Schema.OptionFromNullOr(DecisionView)
}).annotations({ identifier: "DecisionResult" })

/**
 * @since 0.3.0
 * @category models
 */
export type DecisionResult = typeof DecisionResult.Type

/**
 * The most decisions one batch holds.
 *
 * @since 0.3.0
 * @category constants
 */
export const batchMax = 100

/**
 * `POST /api/decisions`: up to 100 decisions, each naming its action.
 *
 * @since 0.3.0
 * @category schemas
 */
export const BatchRequest = Schema.Struct({
  decisions: Schema.Array(
    Schema.Union(
      Schema.Struct({
        id: Schema.String,
        action: Schema.Literal("apply"),
        reason: Reason,
        amendment: Schema.optional(Schema.Unknown)
      }),
      Schema.Struct({ id: Schema.String, action: Schema.Literal("discard"), reason: Reason }),
      Schema.Struct({ id: Schema.String, action: Schema.Literal("snooze"), until: Schema.NullOr(SnoozeUntil) }),
      Schema.Struct({ id: Schema.String, action: Schema.Literal("respond"), message: Reason })
    )
  ).pipe(Schema.minItems(1), Schema.maxItems(batchMax))
})

/**
 * @since 0.3.0
 * @category models
 */
export type BatchRequest = typeof BatchRequest.Type

/**
 * Each decision of a batch, in order: its result, or its error (`_tag` and `message`, as the single route gives).
 *
 * @since 0.3.0
 * @category schemas
 */
export const BatchResult = Schema.Struct({
  results: Schema.Array(Schema.Struct({
    id: Schema.String,
    result: Schema.OptionFromNullOr(DecisionResult),
    error: Schema.OptionFromNullOr(Schema.Struct({ _tag: Schema.String, message: Schema.String }))
  }))
}).annotations({ identifier: "BatchResult" })

/**
 * @since 0.3.0
 * @category models
 */
export type BatchResult = typeof BatchResult.Type

const idParam = HttpApiSchema.param("id", Schema.String.pipe(Schema.minLength(1), Schema.maxLength(200)))

/**
 * The actions: list, look, decide.
 *
 * @since 0.3.0
 * @category groups
 */
export class ActionsGroup extends HttpApiGroup.make("actions")
  .add(
    HttpApiEndpoint.get("list", "/api/actions")
      .setUrlParams(ListParams)
      .addSuccess(ActionList)
      .addError(InvalidQuery)
  )
  .add(
    HttpApiEndpoint.get("get")`/api/actions/${idParam}`
      .addSuccess(ActionDetail)
      .addError(ActionNotFound)
  )
  .add(
    HttpApiEndpoint.post("decide")`/api/actions/${idParam}/decision`
      .setPayload(DecisionRequest)
      .addSuccess(DecisionResult)
      .addError(InboxForbidden)
      .addError(ActionNotFound)
      .addError(ActionNotDecidable)
      .addError(DecisionAlreadyRequested)
      .addError(AmendmentRejected)
      .addError(InvalidDecision)
  )
  .add(
    HttpApiEndpoint.post("decideBatch", "/api/decisions")
      .setPayload(BatchRequest)
      .addSuccess(BatchResult)
      .addError(InboxForbidden)
      .addError(InvalidDecision)
  )
  .addError(StoreUnavailable)
  .middleware(Authentication)
{}

/**
 * The text/event-stream of `GET /api/events`.
 *
 * @since 0.3.0
 * @category schemas
 */
export const EventStream = Schema.String.pipe(
  HttpApiSchema.withEncoding({ kind: "Text", contentType: "text/event-stream" })
)

/**
 * Server-sent events: `ready` (data: `{ counts }`) once, then `changed` (data: `{ actions, removed, counts }`:
 * the actions in scope that changed, with their new summaries, and the ids that are gone) whenever something
 * changed, from any process sharing the store; a comment line every 15 seconds keeps the connection open.
 *
 * @since 0.3.0
 * @category groups
 */
export class EventsGroup extends HttpApiGroup.make("events")
  .add(
    HttpApiEndpoint.get("events", "/api/events")
      .setUrlParams(
        Schema.Struct({ session: Schema.optional(Schema.Array(Schema.String.pipe(Schema.maxLength(500)))) })
      )
      .addSuccess(EventStream)
  )
  .addError(StoreUnavailable)
  .middleware(Authentication)
{}

/**
 * The `changed` event's data.
 *
 * @since 0.3.0
 * @category schemas
 */
export const ChangedEvent = Schema.Struct({
  actions: Schema.Array(ActionSummary),
  removed: Schema.Array(Schema.String),
  counts: Counts
})

/**
 * @since 0.3.0
 * @category models
 */
export type ChangedEvent = typeof ChangedEvent.Type

/**
 * The current reviewer, and logging out.
 *
 * @since 0.3.0
 * @category groups
 */
export class SessionGroup extends HttpApiGroup.make("session")
  .add(HttpApiEndpoint.get("me", "/api/me").addSuccess(Me))
  .add(HttpApiEndpoint.post("logout", "/api/logout").addSuccess(HttpApiSchema.NoContent))
  .middleware(Authentication)
{}

/**
 * The one-time login link: redeems the code, sets the `HttpOnly`, `SameSite=Strict` cookie, redirects to `/`.
 *
 * @since 0.3.0
 * @category groups
 */
export class LoginGroup extends HttpApiGroup.make("login")
  .add(
    HttpApiEndpoint.get("login", "/login")
      .setUrlParams(Schema.Struct({ code: Schema.String.pipe(Schema.maxLength(200)) }))
      .addSuccess(HttpApiSchema.Empty(303))
      .addError(LoginLinkInvalid)
  )
{}

/**
 * The approval inbox's API.
 *
 * @since 0.3.0
 * @category api
 */
export class InboxApi extends HttpApi.make("inbox")
  .add(ActionsGroup)
  .add(EventsGroup)
  .add(SessionGroup)
  .add(LoginGroup)
  .addError(HostNotAllowed)
  .addError(CrossOriginRefused)
  .addError(PayloadTooLarge)
  .addError(MalformedRequest)
  .addError(RouteNotFound)
  .addError(InternalError)
  .annotateContext(OpenApi.annotations({
    title: "effect-resolve approval inbox",
    version: "0.3.0",
    description: "People see and decide the pending previews of agent sessions: apply (perhaps amended), discard, " +
      "snooze, with a reason; each decision is recorded durably and applied exactly once."
  }))
{}
