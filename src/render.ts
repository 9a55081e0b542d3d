/**
 * Terminal rendering of `resolve` calls: one block merging the call and its result.
 *
 * @since 0.2.0
 */

/** @since 0.1.0 */
export * as Renderer from "./render/Renderer.js"
/** @since 0.1.0 */
export { renderResolve } from "./render/Renderer.js"
