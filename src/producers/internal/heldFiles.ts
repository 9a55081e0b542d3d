/**
 * Which files the pending edit previews of a session hold: a preview of a file that another pending (or resolving)
 * preview of the same session holds is refused before it is staged, so conflicting edits never both reach apply.
 * Kept per session (keyed by the session's `PendingActions` service, so it goes with the session), for the previews
 * staged in this process; the check and the staging run under one permit, so two concurrent previews of one file
 * cannot both pass.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import type { PendingStoreError } from "../../domain/Errors.js"
import type { PendingActions } from "../../services/PendingActions.js"
import type { Handle } from "../../services/Preview.js"

/** The files a preview holds (real paths), with the path the model gave for each. */
export interface Held {
  readonly label: string
  readonly files: ReadonlyMap<string, string>
}

interface SessionFiles {
  readonly permit: Effect.Semaphore
  /** The previews staged in this process that may still hold their files, by action id. */
  readonly previews: Map<string, Held>
}

const sessions = new WeakMap<PendingActions.Service, SessionFiles>()

const filesOf = (pending: PendingActions.Service): SessionFiles => {
  let files = sessions.get(pending)
  if (files === undefined) {
    files = { permit: Effect.unsafeMakeSemaphore(1), previews: new Map() }
    sessions.set(pending, files)
  }
  return files
}

/** The first file of `files` (real path → given path) that a pending preview holds: its given path and the holder. */
export interface Conflict {
  readonly path: string
  readonly heldBy: string
  readonly heldByLabel: string
}

/**
 * Runs `stage` unless a pending preview of the session holds one of `files` (real path → the path as given): then
 * `onConflict` decides. A preview that `stage` stages holds its files from then on, until it leaves `pending` and
 * `resolving`.
 */
export const stageHolding = <E, R, C>(
  pending: PendingActions.Service,
  files: ReadonlyMap<string, string>,
  label: string,
  stage: Effect.Effect<Handle, E, R>,
  onConflict: (conflict: Conflict) => Effect.Effect<never, C>
): Effect.Effect<Handle, E | C | PendingStoreError, R> => {
  const session = filesOf(pending)
  return session.permit.withPermits(1)(Effect.gen(function*() {
    if (session.previews.size > 0) {
      const open = yield* pending.listOpen
      const holding = new Set(
        open.filter((info) => info.status === "pending" || info.status === "resolving").map((info) => info.id)
      )
      for (const [id, held] of session.previews) {
        if (!holding.has(id)) {
          session.previews.delete(id)
          continue
        }
        for (const [real, given] of files) {
          if (held.files.has(real)) return yield* onConflict({ path: given, heldBy: id, heldByLabel: held.label })
        }
      }
    }
    const handle = yield* stage
    session.previews.set(handle.id, { label, files })
    return handle
  }))
}
