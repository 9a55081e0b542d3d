/**
 * The approval inbox's errors: each is typed JSON (`{ _tag, message, ... }`) with its HTTP status, a `message` that
 * says what to do, and the fields a program needs to act on it without reading the message. `InboxApi` re-exports
 * them all.
 *
 * @since 0.4.0
 */
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import * as Schema from "effect/Schema"
import { PendingStatus } from "../domain/PendingRecord.js"

/**
 * What a reviewer may do: `read` (list, look, follow events) or `decide` (read, and apply, discard, snooze).
 *
 * @since 0.3.0
 * @category schemas
 */
export const Permission = Schema.Literal("read", "decide")

/**
 * @since 0.3.0
 * @category models
 */
export type Permission = typeof Permission.Type

/**
 * No valid bearer token or login cookie (checked before anything else: the same for any route and id).
 *
 * @since 0.3.0
 * @category errors
 */
export class InboxUnauthorized extends Schema.TaggedError<InboxUnauthorized>("effect-resolve/inbox/InboxUnauthorized")(
  "InboxUnauthorized",
  { message: Schema.String },
  HttpApiSchema.annotations({ status: 401 })
) {}

/**
 * The reviewer's token may not do this: a read-only token deciding. `permission` is the one the request needs
 * (since 0.4.0). Nothing changed.
 *
 * @since 0.3.0
 * @category errors
 */
export class InboxForbidden extends Schema.TaggedError<InboxForbidden>("effect-resolve/inbox/InboxForbidden")(
  "InboxForbidden",
  { permission: Permission, message: Schema.String },
  HttpApiSchema.annotations({ status: 403 })
) {}

/**
 * No action has this id in the sessions the reviewer sees.
 *
 * @since 0.3.0
 * @category errors
 */
export class ActionNotFound extends Schema.TaggedError<ActionNotFound>("effect-resolve/inbox/ActionNotFound")(
  "ActionNotFound",
  { id: Schema.String, message: Schema.String },
  HttpApiSchema.annotations({ status: 404 })
) {}

/**
 * The action cannot be decided now (it is no longer pending, it expired, or only a discard can end it). Nothing was
 * recorded.
 *
 * @since 0.3.0
 * @category errors
 */
export class ActionNotDecidable extends Schema.TaggedError<ActionNotDecidable>(
  "effect-resolve/inbox/ActionNotDecidable"
)(
  "ActionNotDecidable",
  { id: Schema.String, status: PendingStatus, message: Schema.String },
  HttpApiSchema.annotations({ status: 409 })
) {}

/**
 * Another decision for this action is recorded and not yet run. Nothing was recorded.
 *
 * @since 0.3.0
 * @category errors
 */
export class DecisionAlreadyRequested extends Schema.TaggedError<DecisionAlreadyRequested>(
  "effect-resolve/inbox/DecisionAlreadyRequested"
)(
  "DecisionAlreadyRequested",
  { id: Schema.String, decision: Schema.String, reviewer: Schema.String, message: Schema.String },
  HttpApiSchema.annotations({ status: 409 })
) {}

/**
 * The amendment was refused: the action's kind takes none, or it does not match the kind's amendment Schema.
 * Nothing was recorded.
 *
 * @since 0.3.0
 * @category errors
 */
export class AmendmentRejected extends Schema.TaggedError<AmendmentRejected>("effect-resolve/inbox/AmendmentRejected")(
  "AmendmentRejected",
  { id: Schema.String, message: Schema.String },
  HttpApiSchema.annotations({ status: 422 })
) {}

/**
 * A query parameter the store refuses (a cursor no page gave, too many filters). Nothing changed.
 *
 * @since 0.3.0
 * @category errors
 */
export class InvalidQuery extends Schema.TaggedError<InvalidQuery>("effect-resolve/inbox/InvalidQuery")(
  "InvalidQuery",
  { message: Schema.String },
  HttpApiSchema.annotations({ status: 400 })
) {}

/**
 * The pending store failed (unreachable, locked); `operation` names the store call that failed (since 0.4.0). A
 * decision that was recorded is kept and run later.
 *
 * @since 0.3.0
 * @category errors
 */
export class StoreUnavailable extends Schema.TaggedError<StoreUnavailable>("effect-resolve/inbox/StoreUnavailable")(
  "StoreUnavailable",
  { operation: Schema.String, message: Schema.String },
  HttpApiSchema.annotations({ status: 503 })
) {}

/**
 * The inbox could not listen: another process holds its address (Node's `EADDRINUSE`), e.g. a second `npm start`.
 * Not an answer of the API: `InboxServer.layer` fails with it at start.
 *
 * @since 0.4.0
 * @category errors
 */
export class InboxAddressInUse extends Schema.TaggedError<InboxAddressInUse>("effect-resolve/inbox/InboxAddressInUse")(
  "InboxAddressInUse",
  { address: Schema.String }
) {
  /**
   * @since 0.4.0
   */
  override get message(): string {
    return `The inbox cannot listen on ${this.address}: the address is in use (EADDRINUSE), by another inbox or ` +
      "another program. Stop that process, or give the inbox a free port with InboxServer.layer's `port` option " +
      "(0 picks any free port)."
  }
}

/**
 * The login link was already used, expired, or never issued.
 *
 * @since 0.3.0
 * @category errors
 */
export class LoginLinkInvalid extends Schema.TaggedError<LoginLinkInvalid>("effect-resolve/inbox/LoginLinkInvalid")(
  "LoginLinkInvalid",
  { message: Schema.String },
  HttpApiSchema.annotations({ status: 401 })
) {}

/**
 * The `Host` header is not one the inbox answers to (a DNS-rebinding attempt, or a missing `allowedHosts` entry);
 * `host` is the header's value, at most 200 characters (since 0.4.0).
 *
 * @since 0.3.0
 * @category errors
 */
export class HostNotAllowed extends Schema.TaggedError<HostNotAllowed>("effect-resolve/inbox/HostNotAllowed")(
  "HostNotAllowed",
  { host: Schema.String, message: Schema.String },
  HttpApiSchema.annotations({ status: 421 })
) {}

/**
 * A state-changing request from another origin (its `Origin` or `Sec-Fetch-Site` says so, or a cookie request
 * without `Origin`). `origin` is the request's `Origin` header when it sent one, at most 200 characters (since
 * 0.4.0). Nothing changed.
 *
 * @since 0.3.0
 * @category errors
 */
export class CrossOriginRefused extends Schema.TaggedError<CrossOriginRefused>(
  "effect-resolve/inbox/CrossOriginRefused"
)(
  "CrossOriginRefused",
  { origin: Schema.OptionFromNullOr(Schema.String), message: Schema.String },
  HttpApiSchema.annotations({ status: 403 })
) {}

/**
 * The request body is larger than the inbox accepts. Nothing changed.
 *
 * @since 0.3.0
 * @category errors
 */
export class PayloadTooLarge extends Schema.TaggedError<PayloadTooLarge>("effect-resolve/inbox/PayloadTooLarge")(
  "PayloadTooLarge",
  { limit: Schema.Number, message: Schema.String },
  HttpApiSchema.annotations({ status: 413 })
) {}

/**
 * What is wrong with a request body (since 0.4.0): sent without a `Content-Length` (`length`), not as
 * `application/json` (`contentType`), cut off while read (`unreadable`), not well-formed JSON (`json`), or nested
 * more than `bodyMaxDepth` levels deep (`depth`).
 *
 * @since 0.4.0
 * @category schemas
 */
export const BodyProblem = Schema.Literal("length", "contentType", "unreadable", "json", "depth")

/**
 * A request body that is not JSON (`Content-Type: application/json`, a well-formed document), or that nests objects
 * or arrays more than `bodyMaxDepth` levels deep; `problem` says which (since 0.4.0). Nothing changed.
 *
 * @since 0.3.0
 * @category errors
 */
export class MalformedRequest extends Schema.TaggedError<MalformedRequest>("effect-resolve/inbox/MalformedRequest")(
  "MalformedRequest",
  { problem: BodyProblem, message: Schema.String },
  HttpApiSchema.annotations({ status: 400 })
) {}

/**
 * A decision request the inbox refuses, given to `Inbox.decide` in code (over HTTP the same checks answer
 * `HttpApiDecodeError`, 400): an unknown action, a missing or empty reason, a `snooze` time outside what a `Date`
 * holds, a body nested too deeply. `field` names the first bad field. Nothing was recorded.
 *
 * @since 0.4.0
 * @category errors
 */
export class InvalidDecision extends Schema.TaggedError<InvalidDecision>("effect-resolve/inbox/InvalidDecision")(
  "InvalidDecision",
  { field: Schema.String, message: Schema.String },
  HttpApiSchema.annotations({ status: 400 })
) {}

/**
 * No such route; `method` and `path` are the request's (the path at most 200 characters, since 0.4.0).
 *
 * @since 0.3.0
 * @category errors
 */
export class RouteNotFound extends Schema.TaggedError<RouteNotFound>("effect-resolve/inbox/RouteNotFound")(
  "RouteNotFound",
  { method: Schema.String, path: Schema.String, message: Schema.String },
  HttpApiSchema.annotations({ status: 404 })
) {}

/**
 * Something failed that should not have; the inbox's log has the details (never the response).
 *
 * @since 0.3.0
 * @category errors
 */
export class InternalError extends Schema.TaggedError<InternalError>("effect-resolve/inbox/InternalError")(
  "InternalError",
  { message: Schema.String },
  HttpApiSchema.annotations({ status: 500 })
) {}
