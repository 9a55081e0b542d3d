/**
 * The ids the library makes (actions, decisions, responses): `<prefix>_<time base36>_<random>`, the time from
 * `Clock`, then 64 random bits from the platform's cryptographic generator, so that ids are unique across the
 * processes sharing a store and sort roughly by time.
 *
 * @internal
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"

/** A fresh id with `prefix` (`pa`, `dc`, `rs`). */
export const timedId = (prefix: string): Effect.Effect<string> =>
  Effect.map(Clock.currentTimeMillis, (now) => {
    const words = globalThis.crypto.getRandomValues(new Uint32Array(2))
    const random = `${words[0]!.toString(36).padStart(7, "0")}${words[1]!.toString(36).padStart(7, "0")}`
    return `${prefix}_${now.toString(36)}_${random}`
  })
