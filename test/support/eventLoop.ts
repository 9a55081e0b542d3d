/**
 * Long property runs and vitest's worker RPC.
 *
 * A vitest worker answers its RPC calls (`onTaskUpdate`, ...) from the event loop. A property whose runs complete
 * through promises alone (an Effect program that never sleeps resolves in microtasks) keeps the event loop from
 * ever turning: the RPC's 60-second timer and its answer then wait together, and once the file ends the timer
 * fires first, so the run fails with `Timeout calling "onTaskUpdate"` although every test passed. Awaiting one
 * macrotask after each run lets the loop turn, whatever the machine's speed.
 */

/** Resolves after one turn of the event loop (a `setImmediate`). */
export const yieldToEventLoop = (): Promise<void> => new Promise((resolve) => setImmediate(resolve))
