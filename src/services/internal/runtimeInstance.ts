/**
 * Who a runtime instance is, and what this process can tell about another one without asking the store.
 *
 * Every durable `PendingActions` is one runtime instance, named `<host>:<pid>:<thread>:<random>`: it is the `stager`
 * of what it stages and the `owner` of what it claims. It renews a lease in the store while it lives (see
 * `PendingStore.heartbeat`). Another instance is provably gone when:
 * - it ran on this host in a process that no longer exists (`ESRCH`);
 * - it ran in this very thread and is closed (no live instance of this thread has its id);
 * - its lease in the store ended without renewal, or its row is gone (it closed, or never registered).
 * A thread of this process other than this one, or a process on another host, can only be judged by its lease.
 */
import { randomBytes } from "node:crypto"
import { hostname } from "node:os"
import { threadId } from "node:worker_threads"

/** This machine's host name, as instances record it. */
export const thisHost = hostname()

/** The instances open in this thread (module state is per thread: each worker thread has its own). */
const live = new Set<string>()

/** A fresh instance id of this thread: `<host>:<pid>:<thread>:<random>`. */
export const makeInstanceId = (): string =>
  `${thisHost}:${process.pid}:${threadId}:${randomBytes(6).toString("base64url")}`

/** Marks an instance of this thread open (`open`) or closed. */
export const setLive = (id: string, open: boolean): void => {
  if (open) live.add(id)
  else live.delete(id)
}

/** The parts of an instance id; 0.2 owners (`<host>:<pid>:<random>`) read as thread 0. */
export interface InstanceParts {
  readonly host: string
  readonly pid: number
  readonly thread: number
}

const isId = (s: string | undefined) => s !== undefined && /^\d+$/.test(s)

/** The host, pid and thread an instance id names, or `undefined` when it is not one. */
export const parseInstanceId = (id: string): InstanceParts | undefined => {
  const parts = id.split(":")
  if (parts.length >= 4 && isId(parts[parts.length - 3]) && isId(parts[parts.length - 2])) {
    return {
      host: parts.slice(0, -3).join(":"),
      pid: Number(parts[parts.length - 3]),
      thread: Number(parts[parts.length - 2])
    }
  }
  if (parts.length >= 3 && isId(parts[parts.length - 2])) {
    return { host: parts.slice(0, -2).join(":"), pid: Number(parts[parts.length - 2]), thread: 0 }
  }
  return undefined
}

/**
 * What this process knows of an instance on its own: `"gone"` (its process is dead on this host, or it was an
 * instance of this thread that closed), `"alive"` (an open instance of this thread), else `"unknown"`: only its
 * lease in the store can tell.
 */
export const localVerdict = (id: string): "gone" | "alive" | "unknown" => {
  const parts = parseInstanceId(id)
  if (parts === undefined || parts.host !== thisHost || !Number.isSafeInteger(parts.pid) || parts.pid <= 0) {
    return "unknown"
  }
  if (parts.pid === process.pid) {
    if (parts.thread !== threadId) return "unknown"
    return live.has(id) ? "alive" : "gone"
  }
  try {
    process.kill(parts.pid, 0)
    return "unknown"
  } catch (error) {
    return (error as { code?: unknown }).code === "ESRCH" ? "gone" : "unknown"
  }
}

/** This instance's own parts, for its heartbeat. */
export const ownParts: InstanceParts = { host: thisHost, pid: process.pid, thread: threadId }
