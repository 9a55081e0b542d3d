/**
 * The approval inbox: people see and decide the pending previews of agent sessions from a browser, over a typed
 * HTTP API. It reads the same `PendingStore` as the sessions (a SQLite file or Postgres), so it can run in another
 * process or on another machine. Needs `@effect/platform` and `@effect/platform-node`.
 *
 * - `Inbox`: the work (list across sessions, decide, snooze, run a decision exactly once, follow changes);
 * - `InboxServer`: the HTTP server (API, page, OpenAPI at `/openapi.json`), on 127.0.0.1 by default;
 * - `InboxApi`: the API's definition (routes, schemas, typed errors); `InboxClient`: its typed client;
 * - `InboxAuth`: tokens, login links and cookies.
 *
 * @since 0.3.0
 */

/** @since 0.3.0 */
export { Inbox } from "./inbox/Inbox.js"
/** @since 0.3.0 */
export * as InboxApi from "./inbox/InboxApi.js"
/** @since 0.3.0 */
export { InboxAuth } from "./inbox/InboxAuth.js"
/** @since 0.3.0 */
export * as InboxClient from "./inbox/InboxClient.js"
/** @since 0.3.0 */
export { InboxServer } from "./inbox/InboxServer.js"
