/**
 * Sessions on `@effect/cluster`: a session is an entity owned by exactly one runner at a time, any node sends it
 * messages (run a prompt, steer, decide an action, list, get), and a runner's death is a pause, not a loss: its
 * sessions continue on another runner from their durable state. Needs `@effect/cluster`, `@effect/rpc`,
 * `@effect/platform-node` (sockets, HTTP), `@effect/sql` and `@effect/ai`.
 *
 * @since 0.3.0
 */

/** @since 0.3.0 */
export * as SessionProtocol from "./cluster/SessionProtocol.js"
/** @since 0.3.0 */
export { SessionAgent } from "./cluster/SessionAgent.js"
/** @since 0.3.0 */
export * as SessionEntity from "./cluster/SessionEntity.js"
/** @since 0.3.0 */
export { type Decision, SessionClient, SessionUnreachable } from "./cluster/SessionClient.js"
/** @since 0.3.0 */
export * as SessionCluster from "./cluster/SessionCluster.js"
/** @since 0.4.0 */
export { SteeringJournal } from "./cluster/SteeringJournal.js"
