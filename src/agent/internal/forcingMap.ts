/**
 * What the turn driver remembers about each directive it served, and when it forgets it: an entry per directive id
 * counting the failed requests and the ignored pushes toward their limits, and whether to force it next time. The
 * map stays as small as the set of live directives: an entry that keeps nothing is dropped, and so is the entry of
 * a directive that left the queue.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Ref from "effect/Ref"
import type { InFlightInfo, ToolChoiceQueue } from "../../services/ToolChoiceQueue.js"

/**
 * What the driver keeps about one directive it served, by the directive's id (a preview's is its pending action's id,
 * stable across a restart). An entry with nothing left to keep is not kept, and neither is the entry of a directive
 * that is gone (see `pruneForcing`).
 */
export interface Forcing {
  /** The directive's label, to tell whether the queue still holds it. */
  readonly label: string
  /** Failed requests in a row while it was served (toward `maxErrorRequeues`). */
  readonly errors: number
  /** Turns in a row that pushed the model to resolve it and were ignored (toward `maxForcedTurns`). */
  readonly ignored: number
  /** Of `ignored`, the turns that could only repeat the reminder (the session could not force). */
  readonly reminded: number
  /** Force it the next time it is served: the model ignored it on a turn that did not force it. */
  readonly forceNext: boolean
}

export const noForcing = (label: string): Forcing => ({ label, errors: 0, ignored: 0, reminded: 0, forceNext: false })

const keepsSomething = (entry: Forcing): boolean => entry.errors > 0 || entry.ignored > 0 || entry.forceNext

/**
 * The entries worth keeping: the in-flight directive's (`inFlight`), and of the others, for each label, at most as
 * many as the queue still holds with that label (`queued`, from `inspect`, which lists only the directives still
 * wanted), the most recently changed first. A directive that was resolved, dropped, cleared, removed or satisfied
 * leaves no entry behind, so there are never more entries than live directives.
 */
export const pruneForcing = (
  all: ReadonlyMap<string, Forcing>,
  inFlight: string | undefined,
  queued: ReadonlyArray<string>
): ReadonlyMap<string, Forcing> => {
  const room = new Map<string, number>()
  for (const label of queued) room.set(label, (room.get(label) ?? 0) + 1)
  const kept: Array<readonly [string, Forcing]> = []
  // Newest first: a Map keeps insertion order, and an entry is moved to the end whenever it changes.
  for (const [id, entry] of [...all].reverse()) {
    const left = room.get(entry.label) ?? 0
    if (id !== inFlight) {
      if (left === 0) continue
      room.set(entry.label, left - 1)
    }
    kept.push([id, entry])
  }
  return kept.length === all.size ? all : new Map(kept.reverse())
}

/** The entries of a session, by directive id, the most recently changed last. */
export type ForcingMap = ReadonlyMap<string, Forcing>

/** What is kept about the directive `info` names (nothing: an empty entry). */
export const forcingOf = (forcing: Ref.Ref<ForcingMap>, info: InFlightInfo): Effect.Effect<Forcing> =>
  Effect.map(Ref.get(forcing), (all) => all.get(info.id) ?? noForcing(info.label))

/** Changes the entry of the directive `info` names; it becomes the most recent, and goes when it keeps nothing. */
export const updateForcing = (
  forcing: Ref.Ref<ForcingMap>,
  info: InFlightInfo,
  f: (entry: Forcing) => Forcing
): Effect.Effect<void> =>
  Ref.update(forcing, (all) => {
    const entry = f(all.get(info.id) ?? noForcing(info.label))
    const next = new Map(all)
    next.delete(info.id)
    if (keepsSomething(entry)) next.set(info.id, { ...entry, label: info.label })
    return next
  })

/** Forgets the entries of directives that are gone, against what is in flight and queued now. */
export const prune = (
  forcing: Ref.Ref<ForcingMap>,
  queue: ToolChoiceQueue.Service,
  inFlight: Option.Option<InFlightInfo>
): Effect.Effect<void> =>
  Effect.gen(function*() {
    if ((yield* Ref.get(forcing)).size === 0) return
    const queued = yield* queue.inspect
    const keep = Option.isSome(inFlight) ? inFlight.value.id : undefined
    yield* Ref.update(forcing, (all) => pruneForcing(all, keep, queued))
  })
