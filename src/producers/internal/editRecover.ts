/**
 * What became of an edit action a crashed process left `resolving`: decided from the files themselves, under their
 * locks, and finished when the crash came between two renames.
 *
 * @internal
 */
import * as FileSystem from "@effect/platform/FileSystem"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import type * as ActionKind from "../../services/ActionKind.js"
import type { EditFile, EditPayload } from "../EditKind.js"
import type { Workspace } from "../EditWorkspace.js"
import { type Checked, isNotFound, lockAndRead, writeAll } from "./editApply.js"
import { sameBytes, sha256 } from "./stagedFiles.js"

/**
 * What became of an edit action a crashed process left `resolving`, from the files themselves, under their locks:
 *
 * - every file holds the new bytes: `applied`;
 * - none does: `pending`. The write had not begun (its renames come last, all or none), or, in a narrow case, its
 *   files were written and then changed again by another writer before this recovery; either way applying it
 *   again is safe, since an apply first checks every file against the bytes the preview read and refuses it as
 *   stale otherwise. (A file that merely changed since the preview, so that the interrupted apply was about to
 *   refuse it, ends here too.)
 * - some do and the others still hold the preview's bytes: the crash came between two renames, so the rest are
 *   written now (all or none) and the action is `applied`;
 * - anything else (some new, some changed by someone else), or a path that now leads elsewhere: `conflict`, for a
 *   person to look at.
 *
 * It fails (and the action stays `resolving` until the next start) when the files cannot be locked or read now.
 */
export const recoverEdit = (
  payload: EditPayload
): Effect.Effect<ActionKind.Recovery, unknown, FileSystem.FileSystem | Workspace> =>
  Effect.scoped(Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const locked = yield* lockAndRead(payload)
    if (locked._tag === "Moved") return "conflict" as const
    const states: Array<{
      readonly file: EditFile
      readonly token: string
      readonly bytes: Uint8Array
      readonly mode: number
      readonly state: "after" | "before" | "other"
    }> = []
    for (const { file, now, token } of locked.files) {
      if (Either.isRight(now)) {
        const { bytes, mode } = now.right
        const state = sameBytes(bytes, file.after) ? "after" : sha256(bytes) === file.before ? "before" : "other"
        states.push({ file, token, bytes, mode, state })
      } else if (isNotFound(now.left)) {
        // A file that is gone was changed by someone else: that is for a person to look at, not to retry.
        states.push({ file, token, bytes: new Uint8Array(0), mode: 0, state: "other" })
      } else {
        return yield* now.left
      }
    }
    const written = states.filter((s) => s.state === "after").length
    if (written === 0) return "pending" as const
    if (written === states.length) return "applied" as const
    if (states.some((s) => s.state === "other")) return "conflict" as const
    const rest = states.filter((s) => s.state === "before")
    // Roll forward: the crash came between two renames.
    yield* writeAll(
      fs,
      locked.place,
      rest.map((s): Checked => ({ file: s.file, original: s.bytes, bytes: s.file.after, mode: s.mode, token: s.token }))
    )
    return "applied" as const
  }))
