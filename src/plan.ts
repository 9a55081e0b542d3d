/**
 * Plan approval: a mode whose standing `resolve` handler asks for approval of a plan file. Needs `@effect/platform`.
 *
 * @since 0.2.0
 */

/** @since 0.1.0 */
export * as PlanApproval from "./producers/PlanApproval.js"
