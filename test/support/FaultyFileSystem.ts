/**
 * A `FileSystem` for tests: the real `NodeFileSystem`, with faults injected on demand. A `Ref` holds the plan, a
 * list of faults; each fault names an operation and which call of it (counted from when the fault was armed)
 * fails or blocks. A fault fires once and leaves the plan.
 *
 * @example
 * ```ts
 * import { Effect, Ref } from "effect"
 * import * as FaultyFileSystem from "../support/FaultyFileSystem.js"
 *
 * const program = Effect.gen(function*() {
 *   const plan = yield* FaultyFileSystem.makePlan
 *   yield* FaultyFileSystem.arm(plan, FaultyFileSystem.fail("rename", 2)) // the 2nd rename from now fails
 *   // ... run code that uses FileSystem ...
 * })
 * // provide FaultyFileSystem.layer(plan) in place of NodeFileSystem.layer
 * ```
 */
import { NodeFileSystem } from "@effect/platform-node"
import { SystemError } from "@effect/platform/Error"
import * as FileSystem from "@effect/platform/FileSystem"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Ref from "effect/Ref"

/** The operations a fault can target. */
export type Operation = "readFile" | "writeFile" | "rename" | "remove" | "chmod" | "stat" | "realPath"

/** What a fault does when it fires. */
export type Behaviour =
  | { readonly _tag: "Fail"; readonly message: string }
  /** Signals `reached`, waits for `release`, then runs the real operation (or fails if `thenFail`). */
  | {
    readonly _tag: "Block"
    readonly reached: Deferred.Deferred<void>
    readonly release: Deferred.Deferred<void>
    readonly thenFail: boolean
  }

/** One armed fault: the `nth` matching call of `operation` (1-based, counted from arming) fires it. */
export interface Fault {
  readonly operation: Operation
  readonly nth: number
  /** Only calls whose (first) path satisfies this count; default: every call. */
  readonly path?: (path: string) => boolean
  readonly behaviour: Behaviour
}

/** The plan: the faults still armed, in order. */
export type Plan = Ref.Ref<ReadonlyArray<Fault>>

/** One operation the wrapper saw (after any fault fired). */
export interface Call {
  readonly operation: Operation
  readonly path: string
  readonly failed: boolean
}

/** A fault that makes the `nth` call of `operation` fail with a `SystemError`. */
export const fail = (
  operation: Operation,
  nth: number,
  options: { readonly path?: (path: string) => boolean; readonly message?: string } = {}
): Fault => ({
  operation,
  nth,
  ...(options.path === undefined ? {} : { path: options.path }),
  behaviour: { _tag: "Fail", message: options.message ?? `injected fault: ${operation} #${nth}` }
})

/**
 * A fault that makes the `nth` call of `operation` wait: it completes `reached`, waits for `release`, then runs
 * the real operation (or fails when `thenFail` is true).
 */
export const block = (
  operation: Operation,
  nth: number,
  gates: {
    readonly reached: Deferred.Deferred<void>
    readonly release: Deferred.Deferred<void>
    readonly thenFail?: boolean
    readonly path?: (path: string) => boolean
  }
): Fault => ({
  operation,
  nth,
  ...(gates.path === undefined ? {} : { path: gates.path }),
  behaviour: { _tag: "Block", reached: gates.reached, release: gates.release, thenFail: gates.thenFail ?? false }
})

/** An empty plan. */
export const makePlan: Effect.Effect<Plan> = Ref.make<ReadonlyArray<Fault>>([])

/** Arms `fault` (appended to the plan). */
export const arm = (plan: Plan, fault: Fault): Effect.Effect<void> => Ref.update(plan, (faults) => [...faults, fault])

/** Disarms every fault. */
export const disarm = (plan: Plan): Effect.Effect<void> => Ref.set(plan, [])

/** Counts a call against the plan; returns the fault that fires now, if any. */
const take = (plan: Plan, operation: Operation, path: string) =>
  Ref.modify(plan, (faults): [Fault | undefined, ReadonlyArray<Fault>] => {
    const index = faults.findIndex((f) => f.operation === operation && (f.path === undefined || f.path(path)))
    if (index < 0) return [undefined, faults]
    const fault = faults[index]!
    if (fault.nth > 1) {
      return [undefined, faults.map((f, i) => i === index ? { ...f, nth: f.nth - 1 } : f)]
    }
    return [fault, faults.filter((_, i) => i !== index)]
  })

const injected = (operation: Operation, path: string, message: string) =>
  new SystemError({
    reason: "Unknown",
    module: "FileSystem",
    method: operation,
    pathOrDescriptor: path,
    description: message
  })

/**
 * The real `NodeFileSystem`, wrapped: every targeted operation consults `plan`; `journal`, when given, records
 * each call of a targeted operation.
 */
export const layer = (
  plan: Plan,
  options: { readonly journal?: Ref.Ref<ReadonlyArray<Call>> } = {}
): Layer.Layer<FileSystem.FileSystem> =>
  Layer.effect(
    FileSystem.FileSystem,
    Effect.map(FileSystem.FileSystem, (real) => {
      const record = (call: Call) =>
        options.journal === undefined ? Effect.void : Ref.update(options.journal, (calls) => [...calls, call])
      const guard = <A>(operation: Operation, path: string, run: Effect.Effect<A, any>): Effect.Effect<A, any> =>
        Effect.flatMap(take(plan, operation, path), (fault) => {
          if (fault === undefined) return Effect.tap(run, () => record({ operation, path, failed: false }))
          const failNow = (message: string) =>
            Effect.zipRight(
              record({ operation, path, failed: true }),
              Effect.fail(injected(operation, path, message))
            )
          if (fault.behaviour._tag === "Fail") return failNow(fault.behaviour.message)
          const { reached, release, thenFail } = fault.behaviour
          return Deferred.succeed(reached, undefined).pipe(
            Effect.zipRight(Deferred.await(release)),
            Effect.zipRight(
              thenFail ?
                failNow(`injected fault after block: ${operation}`) :
                Effect.tap(run, () => record({ operation, path, failed: false }))
            )
          )
        })
      // `make` derives readFileString, writeFileString, exists, stream and sink from the wrapped operations.
      return FileSystem.make({
        ...real,
        readFile: (path) => guard("readFile", path, real.readFile(path)),
        writeFile: (path, data, opts) => guard("writeFile", path, real.writeFile(path, data, opts)),
        rename: (from, to) => guard("rename", from, real.rename(from, to)),
        remove: (path, opts) => guard("remove", path, real.remove(path, opts)),
        chmod: (path, mode) => guard("chmod", path, real.chmod(path, mode)),
        stat: (path) => guard("stat", path, real.stat(path)),
        realPath: (path) => guard("realPath", path, real.realPath(path))
      })
    })
  ).pipe(Layer.provide(NodeFileSystem.layer))
