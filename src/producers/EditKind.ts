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
import type * as FileSystem from "@effect/platform/FileSystem"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { ToolError } from "../domain/Errors.js"
import * as ActionKind from "../services/ActionKind.js"
import type { EditFileLocked, EditWriteFailed } from "./EditErrors.js"
import type { Workspace } from "./EditWorkspace.js"
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
 * What a reviewer may change before applying an edit (edit before apply, in the approval inbox): the whole new text
 * of some of the edit's files, each named by its path as the preview shows it (`displayPath`) or as the model wrote
 * it (`inputPath`). Apply writes the amended text instead of the previewed bytes, with every guarantee of a normal
 * apply (confinement to the workspace, the file lock, the check that each file still holds the bytes the preview
 * read); a file the amendment does not name is written as previewed.
 *
 * @since 0.3.0
 * @category schemas
 */
export const EditAmendment = Schema.Struct({
  files: Schema.Array(
    Schema.Struct({
      path: Schema.String.annotations({ description: "The file's path, as the preview shows it." }),
      text: Schema.String.annotations({ description: "The file's whole new text (UTF-8), written instead." })
    })
  ).pipe(Schema.minItems(1), Schema.maxItems(100))
}).annotations({ identifier: "EditAmendment", description: "Replacement text per file of the edit." })

/**
 * @since 0.3.0
 * @category models
 */
export type EditAmendment = typeof EditAmendment.Type

/**
 * The amendment a reviewer starts from (the kind's `amendmentDraft`): every file's new text as the preview would
 * write it (`EditAmendment`, encoded). A file whose new bytes are not UTF-8 is left out (it is written as
 * previewed); with none left, no draft.
 */
const amendmentDraft = (payload: EditPayload): Option.Option<typeof EditAmendment.Encoded> => {
  const decoder = new TextDecoder("utf-8", { fatal: true })
  const files: Array<{ readonly path: string; readonly text: string }> = []
  for (const file of payload.files) {
    try {
      files.push({ path: file.displayPath, text: decoder.decode(file.after) })
    } catch {
      // not UTF-8: not offered for editing
    }
  }
  return files.length === 0 ? Option.none() : Option.some({ files })
}

/**
 * The payload with a reviewer's amendment: the named files' bytes to write replaced by the amended text. A path
 * the edit does not touch is a `ToolError` (nothing written).
 *
 * @since 0.3.0
 * @category amendments
 */
export const amendPayload = (payload: EditPayload, amendment: EditAmendment): Effect.Effect<EditPayload, ToolError> => {
  const texts = new Map<string, string>()
  for (const { path, text } of amendment.files) {
    const file = payload.files.find((f) => f.displayPath === path || f.inputPath === path)
    if (file === undefined) {
      return Effect.fail(
        new ToolError({
          message: `The amendment names ${JSON.stringify(path)}, which this edit does not touch (it touches ${
            payload.files.map((f) => JSON.stringify(f.displayPath)).join(", ")
          }). Nothing was written; amend only the edit's files.`
        })
      )
    }
    texts.set(file.realPath, text)
  }
  const encoder = new TextEncoder()
  return Effect.succeed({
    ...payload,
    files: payload.files.map((file) => {
      const text = texts.get(file.realPath)
      return text === undefined ? file : { ...file, after: encoder.encode(text) }
    })
  })
}

/**
 * The contract of the edit kind: its name, `EditPayload` and the `EditAmendment` a reviewer may make, with its
 * draft. No requirements: an approval inbox that only lists and checks edits (another process applies them) takes
 * it instead of `kind`.
 *
 * @since 0.4.0
 * @category kinds
 */
export const contract: ActionKind.Contract<
  EditPayload,
  typeof EditPayload.Encoded,
  EditAmendment,
  typeof EditAmendment.Encoded
> = ActionKind.contract({
  name: "edit",
  payload: EditPayload,
  amendment: EditAmendment,
  amendmentDraft
})

/**
 * The durable kind of an edit (`contract` with its handlers): its payload holds the paths, the SHA-256 of the bytes
 * the preview read and the bytes to write, so a restarted process can apply it, and `recover` can tell from the
 * files whether a crashed apply wrote them. It declares `EditAmendment`: a reviewer may replace the text of the
 * edit's files before applying (`call.amendment`; after a crash during an amended apply, `recover` finds the files
 * neither as previewed nor as read, and leaves the action for a person). A durable session that stages edits
 * registers it: `ResolveRuntime.layerDurable({ kinds: [kind], ... })`, with `FileEditPreview.layer(...)` and a
 * `FileSystem` (`NodeContext.layer`) provided to it.
 *
 * @since 0.2.0
 * @category kinds
 */
export const kind: ActionKind.ActionKind<
  EditPayload,
  typeof EditPayload.Encoded,
  ToolError | EditWriteFailed | EditFileLocked,
  FileSystem.FileSystem | Workspace,
  EditAmendment,
  typeof EditAmendment.Encoded
> = ActionKind.implement(contract, {
  apply: (payload, call) =>
    Option.match(call.amendment, {
      onNone: () => applyEdit(payload, call.reason),
      onSome: (amendment) =>
        Effect.flatMap(amendPayload(payload, amendment), (amended) => applyEdit(amended, call.reason))
    }),
  reject: (payload, call) => Effect.succeed(Option.some(discardedResult(payload, call.reason))),
  recover: (payload) => recoverEdit(payload)
})
