/**
 * What an edit action is to the pending set: its payload (`EditPayload`: the workspace root, the label and every
 * file, with the SHA-256 of the bytes the preview read and the bytes to write) and the durable kind `kind` that
 * applies it, discards it, and after a crash recovers it from the files themselves.
 *
 * @example
 * ```ts
 * import { NodeContext } from "@effect/platform-node"
 * import { Layer } from "effect"
 * import { ResolveRuntime } from "effect-resolve"
 * import { FileEditPreview } from "effect-resolve/edit"
 * import { SqliteStore } from "effect-resolve/sqlite"
 *
 * // A durable session that stages edits registers the kind, and is given the workspace and a FileSystem.
 * const session = ResolveRuntime.layerDurable({ session: "main", kinds: [FileEditPreview.kind] }).pipe(
 *   Layer.provideMerge(SqliteStore.layer({ filename: "/path/to/pending.db" })),
 *   Layer.provideMerge(Layer.mergeAll(FileEditPreview.layer({ root: "/path/to/workspace" }), NodeContext.layer))
 * )
 * ```
 *
 * @since 0.3.0
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as ActionKind from "../services/ActionKind.js"
import { applyEdit } from "./internal/editApply.js"
import { recoverEdit } from "./internal/editRecover.js"
import { discardedResult } from "./internal/editSummary.js"

/**
 * One file of an edit action, as data: where it is (as the model wrote it, for humans, the path before and after
 * resolving symlinks), how many replacements, the SHA-256 of the bytes the preview read (`before`) and the bytes to
 * write (`after`, base64 when stored).
 *
 * @since 0.2.0
 * @category schemas
 */
export const EditFile = Schema.Struct({
  inputPath: Schema.String,
  displayPath: Schema.String,
  lexicalPath: Schema.String,
  realPath: Schema.String,
  replacements: Schema.Number,
  before: Schema.String,
  after: Schema.Uint8ArrayFromBase64
})

/**
 * @since 0.2.0
 * @category models
 */
export type EditFile = typeof EditFile.Type

/**
 * The payload of an edit action (the durable kind `kind`): the workspace root as given and as resolved at preview
 * time, the label, and every file.
 *
 * @since 0.2.0
 * @category schemas
 */
export const EditPayload = Schema.Struct({
  givenRoot: Schema.String,
  realRoot: Schema.String,
  label: Schema.String,
  files: Schema.Array(EditFile)
})

/**
 * @since 0.2.0
 * @category models
 */
export type EditPayload = typeof EditPayload.Type

/**
 * The per-file counts a preview's (and an apply's) `details` carry.
 *
 * @since 0.1.0
 * @category models
 */
export interface EditSummary {
  readonly files: ReadonlyArray<{ readonly path: string; readonly replacements: number }>
  readonly fileCount: number
  readonly replacements: number
}

/**
 * The durable kind of an edit: its payload holds the paths, the SHA-256 of the bytes the preview read and the bytes
 * to write, so a restarted process can apply it, and `recover` can tell from the files whether a crashed apply
 * wrote them. A durable session that stages edits registers it: `ResolveRuntime.layerDurable({ kinds: [kind], ... })`,
 * with `FileEditPreview.layer(...)` and a `FileSystem` (`NodeContext.layer`) provided to it.
 *
 * @since 0.2.0
 * @category kinds
 */
export const kind = ActionKind.make({
  name: "edit",
  payload: EditPayload,
  apply: (payload, call) => applyEdit(payload, call.reason),
  reject: (payload, call) => Effect.succeed(Option.some(discardedResult(payload, call.reason))),
  recover: (payload) => recoverEdit(payload)
})
