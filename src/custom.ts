/**
 * Custom tools for authors who write Promises: `CustomTools.stage` and `registerCustomTools`, with parameters as
 * JSON Schema or an Effect Schema.
 *
 * @since 0.2.0
 */

/** @since 0.1.0 */
export * as CustomTools from "./producers/CustomTools.js"
/** @since 0.1.0 */
export { pushPendingAction, toolError } from "./producers/CustomTools.js"
