/**
 * The `edit` preview producer: exact-text replacements in a workspace, previewed as unified diffs and written all-
 * or-none on `resolve apply`. Needs `@effect/platform` (a `FileSystem` and `Path`, e.g. `NodeContext.layer` from
 * `@effect/platform-node`).
 *
 * @since 0.2.0
 */

/** @since 0.1.0 */
export * as FileEditPreview from "./producers/FileEditPreview.js"
