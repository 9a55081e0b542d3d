/**
 * Finds Node's `EADDRINUSE` in a failed listen, however it is wrapped.
 *
 * @internal
 */
import * as Cause from "effect/Cause"

/**
 * The address (`host:port`, or the port alone) of a listen that failed because another process holds it (Node's
 * `EADDRINUSE`), found in a start failure's causes (`@effect/platform`'s `SocketServerError` or `ServeError` wraps
 * Node's error, and a `Cause` may hold either); `undefined` when the failure is something else.
 */
export const addressInUse = (cause: unknown): string | undefined => {
  const seen = new Set<unknown>()
  let current = cause
  while (typeof current === "object" && current !== null && !seen.has(current)) {
    seen.add(current)
    if (Cause.isCause(current)) {
      current = Cause.squash(current)
      continue
    }
    const error = current as { readonly code?: unknown; readonly address?: unknown; readonly port?: unknown }
    if (error.code === "EADDRINUSE") {
      return typeof error.address === "string" ? `${error.address}:${String(error.port)}` : String(error.port)
    }
    current = (current as { readonly cause?: unknown }).cause
  }
  return undefined
}
