/**
 * The ordered queue of tool-choice directives. Each model turn takes one value with `nextToolChoice`; that value
 * is *in flight* until the turn ends with `resolve` or `reject`. A rejected value may be requeued at the head.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { ToolChoice, ToolChoiceQueue } from "effect-resolve"
 *
 * const program = Effect.gen(function*() {
 *   const queue = yield* ToolChoiceQueue
 *   yield* queue.pushOnce(ToolChoice.forceTool("search"), { label: "must-search" })
 *   const choice = yield* queue.nextToolChoice // Option.some({ type: "tool", name: "search" })
 *   // ... run the model turn with `choice` ...
 *   yield* queue.resolve
 * }).pipe(Effect.provide(ToolChoiceQueue.layer))
 * ```
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as List from "effect/List"
import * as Option from "effect/Option"
import * as Ref from "effect/Ref"
import { EmptyDirective } from "../domain/Errors.js"
import type { Invoker } from "../domain/ResolveParams.js"
import type { ToolChoice } from "../domain/ToolChoice.js"

/**
 * Why an in-flight value was not resolved.
 *
 * - `aborted`: the turn was interrupted; `error`: the model request failed (or `nextToolChoice` was called again
 *   while a value was in flight); `cleared` / `removed`: `clear` / `removeByLabel`; `unavailable`: the model
 *   cannot honour the choice; `not_invoked`: the turn ended without the directive's `onInvoked` completing.
 *
 * @since 0.1.0
 * @category models
 */
export type RejectReason = "aborted" | "error" | "cleared" | "removed" | "unavailable" | "not_invoked"

/**
 * What `onRejected` decides: put the lost value back at the head (`requeue`) or let it go (`drop`).
 * A `requeue` answer to `cleared` or `removed` is ignored.
 *
 * @since 0.1.0
 * @category models
 */
export type RejectDecision = "requeue" | "drop"

/**
 * How a directive is pushed and what it does when its values end.
 *
 * @since 0.1.0
 * @category models
 */
export interface PushOptions {
  /** For humans and `removeByLabel`; default `"anonymous"`. */
  readonly label?: string
  /** Prepend instead of append. */
  readonly now?: boolean
  /** Runs after a served value of this directive is resolved. */
  readonly onResolved?: Effect.Effect<void>
  /** Runs after a served value is rejected; decides whether it is requeued. Default: drop. */
  readonly onRejected?: (reason: RejectReason) => Effect.Effect<RejectDecision>
  /**
   * The handler of the forced tool. While the value is in flight, `peekInFlightInvoker` returns it; if the turn
   * is resolved without it having completed successfully, the value is rejected with `not_invoked`.
   */
  readonly onInvoked?: Invoker
}

/**
 * What is known about the in-flight value.
 *
 * @since 0.1.0
 * @category models
 */
export interface InFlightInfo {
  readonly id: string
  readonly label: string
  readonly choice: ToolChoice
  /** How many times this directive has been requeued. */
  readonly requeues: number
  /** Whether its `onInvoked` has completed during this turn. */
  readonly invoked: boolean
}

/**
 * @since 0.1.0
 * @category tags
 */
export declare namespace ToolChoiceQueue {
  /**
   * The queue's operations. All are atomic with respect to other fibers; callbacks run after the state change.
   *
   * @since 0.1.0
   * @category models
   */
  export interface Service {
    /** Queues a directive serving `choices` one per turn; returns its id. Empty `choices` fail. */
    readonly push: (choices: Iterable<ToolChoice>, options?: PushOptions) => Effect.Effect<string, EmptyDirective>
    /** Queues a one-shot directive; returns its id. */
    readonly pushOnce: (choice: ToolChoice, options?: PushOptions) => Effect.Effect<string>
    /** Queues a directive serving `choices` in order, one per turn; returns its id. */
    readonly pushSequence: (
      choices: ReadonlyArray<ToolChoice>,
      options?: PushOptions
    ) => Effect.Effect<string, EmptyDirective>
    /**
     * Serves the head directive's next value and puts it in flight; `none` when the queue is empty. A value still
     * in flight is first rejected with `"error"`.
     */
    readonly nextToolChoice: Effect.Effect<Option.Option<ToolChoice>>
    /** The served turn completed: clears the slot and runs `onResolved` (or rejects with `not_invoked`). */
    readonly resolve: Effect.Effect<void>
    /** The served turn failed: clears the slot and runs `onRejected`, which may requeue the value at the head. */
    readonly reject: (reason: RejectReason) => Effect.Effect<void>
    /** Whether a value is in flight. */
    readonly hasInFlight: Effect.Effect<boolean>
    /** The in-flight value, its id, label and requeue count. */
    readonly inFlight: Effect.Effect<Option.Option<InFlightInfo>>
    /** The in-flight directive's handler, marked invoked when it completes successfully. */
    readonly peekInFlightInvoker: Effect.Effect<Option.Option<Invoker>>
    /** Rejects a matching in-flight value with `"removed"` and drops every queued directive with `label`. */
    readonly removeByLabel: (label: string) => Effect.Effect<number>
    /** Rejects the in-flight value with `"cleared"`, empties the queue and forgets the last served label. */
    readonly clear: Effect.Effect<void>
    /** The label of the last resolved value, once: a second read gives `none`. */
    readonly consumeLastServedLabel: Effect.Effect<Option.Option<string>>
    /** The labels of the queued directives, head first (the in-flight value is not queued). */
    readonly inspect: Effect.Effect<ReadonlyArray<string>>
  }
}

/**
 * The ToolChoiceQueue service.
 *
 * @since 0.1.0
 * @category tags
 */
export class ToolChoiceQueue extends Context.Tag("effect-resolve/ToolChoiceQueue")<
  ToolChoiceQueue,
  ToolChoiceQueue.Service
>() {
  /**
   * A fresh, empty queue per layer build (one per session).
   *
   * @since 0.1.0
   * @category layers
   */
  static readonly layer: Layer.Layer<ToolChoiceQueue> = Layer.effect(this, Effect.suspend(() => make))
}

interface Directive {
  readonly id: string
  readonly label: string
  readonly choices: ReadonlyArray<ToolChoice>
  readonly next: number
  readonly options: PushOptions
  readonly requeues: number
}

interface InFlight {
  readonly serial: number
  readonly directive: Directive
  readonly choice: ToolChoice
  readonly invoked: boolean
}

interface State {
  /** Queue head, first element first. */
  readonly front: List.List<Directive>
  /** Queue tail, last element first. */
  readonly back: List.List<Directive>
  readonly inFlight: InFlight | undefined
  readonly lastServedLabel: Option.Option<string>
  readonly ids: number
  readonly serial: number
  /**
   * Values taken out of flight whose `onRejected` is still deciding, by serial, with their label. `clear` and
   * `removeByLabel` delete entries, so a decision to requeue that arrives after them is ignored.
   */
  readonly rejecting: ReadonlyMap<number, string>
}

const empty: State = {
  front: List.nil(),
  back: List.nil(),
  inFlight: undefined,
  lastServedLabel: Option.none(),
  ids: 0,
  serial: 0,
  rejecting: new Map()
}

const withRejecting = (s: State, f: InFlight): ReadonlyMap<number, string> =>
  new Map(s.rejecting).set(f.serial, f.directive.label)

const withoutRejecting = (
  rejecting: ReadonlyMap<number, string>,
  drop: (serial: number, label: string) => boolean
): ReadonlyMap<number, string> => {
  let changed = false
  const kept = new Map<number, string>()
  for (const [serial, label] of rejecting) {
    if (drop(serial, label)) changed = true
    else kept.set(serial, label)
  }
  return changed ? kept : rejecting
}

const serveHead = (s: State): [Option.Option<ToolChoice>, State] => {
  let front = s.front
  let back = s.back
  if (List.isNil(front)) {
    if (List.isNil(back)) return [Option.none(), s]
    front = List.reverse(back)
    back = List.nil()
  }
  const head = (front as List.Cons<Directive>).head
  const rest = (front as List.Cons<Directive>).tail
  const choice = head.choices[head.next]!
  const remaining = head.next + 1 < head.choices.length
  const serial = s.serial + 1
  return [Option.some(choice), {
    ...s,
    front: remaining ? List.prepend(rest, { ...head, next: head.next + 1 }) : rest,
    back,
    serial,
    inFlight: { serial, directive: head, choice, invoked: false }
  }]
}

const noOptions: PushOptions = {}

const toArray = (s: State): Array<Directive> => [...s.front, ...List.reverse(s.back)]

const report = (callback: string) => (cause: unknown) =>
  Effect.logError(`effect-resolve: ToolChoiceQueue ${callback} callback failed; the queue is unchanged`, cause)

const runResolved = (directive: Directive): Effect.Effect<void> =>
  directive.options.onResolved === undefined ?
    Effect.void :
    Effect.catchAllCause(directive.options.onResolved, report("onResolved"))

const runRejected = (directive: Directive, reason: RejectReason): Effect.Effect<RejectDecision> =>
  directive.options.onRejected === undefined ?
    Effect.succeed("drop") :
    Effect.catchAllCause(
      Effect.suspend(() => directive.options.onRejected!(reason)),
      (cause) => Effect.as(report("onRejected")(cause), "drop" as const)
    )

/**
 * Builds a queue. Prefer `ToolChoiceQueue.layer`; `make` suits a hand-built runtime.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make: Effect.Effect<ToolChoiceQueue.Service> = Effect.map(Ref.make(empty), (state) => {
  const enqueue = (choices: ReadonlyArray<ToolChoice>, options: PushOptions): Effect.Effect<string> =>
    Ref.modify(state, (s) => {
      const id = `directive-${s.ids + 1}`
      const directive: Directive = {
        id,
        label: options.label ?? "anonymous",
        choices,
        next: 0,
        options,
        requeues: 0
      }
      return [
        id,
        options.now === true ?
          { ...s, ids: s.ids + 1, front: List.prepend(s.front, directive) } :
          { ...s, ids: s.ids + 1, back: List.prepend(s.back, directive) }
      ]
    })

  const push = (choices: Iterable<ToolChoice>, options: PushOptions = noOptions) =>
    Effect.suspend(() => {
      const all = Array.from(choices)
      return all.length === 0 ?
        Effect.fail(new EmptyDirective({ label: options.label ?? "anonymous" })) :
        enqueue(all, options)
    })

  const pushOnce = (choice: ToolChoice, options: PushOptions = noOptions) => enqueue([choice], options)

  // Requeues only if no `clear` or `removeByLabel` happened while `onRejected` was deciding.
  const settleRejected = (f: InFlight, requeue: boolean) =>
    Ref.update(state, (s) => {
      if (!s.rejecting.has(f.serial)) return s
      const rejecting = withoutRejecting(s.rejecting, (serial) => serial === f.serial)
      return requeue ?
        {
          ...s,
          rejecting,
          front: List.prepend(s.front, {
            ...f.directive,
            choices: [f.choice],
            next: 0,
            requeues: f.directive.requeues + 1
          })
        } :
        { ...s, rejecting }
    })

  const finishRejected = (f: InFlight, reason: RejectReason): Effect.Effect<void> =>
    Effect.flatMap(
      runRejected(f.directive, reason),
      (decision) => settleRejected(f, decision === "requeue" && reason !== "cleared" && reason !== "removed")
    )

  const takeInFlight = Ref.modify(
    state,
    (s): [InFlight | undefined, State] =>
      s.inFlight === undefined ?
        [undefined, s] :
        [s.inFlight, { ...s, inFlight: undefined, rejecting: withRejecting(s, s.inFlight) }]
  )

  const reject = (reason: RejectReason) =>
    Effect.uninterruptible(
      Effect.flatMap(takeInFlight, (f) => f === undefined ? Effect.void : finishRejected(f, reason))
    )

  // Serving and taking the old in-flight value are one atomic step, so a value another fiber put in flight while
  // this one was rejecting is rejected too, never overwritten.
  const serveStep = Effect.uninterruptible(Effect.flatMap(
    Ref.modify(state, (s): [InFlight | Option.Option<ToolChoice>, State] =>
      s.inFlight === undefined ?
        serveHead(s) :
        [s.inFlight, { ...s, inFlight: undefined, rejecting: withRejecting(s, s.inFlight) }]),
    (step) => Option.isOption(step) ? Effect.succeed(step) : Effect.as(finishRejected(step, "error"), undefined)
  ))

  const nextToolChoice: Effect.Effect<Option.Option<ToolChoice>> = Effect.flatMap(
    serveStep,
    (served) => served === undefined ? Effect.suspend(() => nextToolChoice) : Effect.succeed(served)
  )

  const resolve = Effect.uninterruptible(Effect.flatMap(
    Ref.modify(state, (s): [InFlight | undefined, State] => {
      const f = s.inFlight
      if (f === undefined) return [undefined, s]
      const unanswered = f.directive.options.onInvoked !== undefined && !f.invoked
      return [f, {
        ...s,
        inFlight: undefined,
        lastServedLabel: unanswered ? s.lastServedLabel : Option.some(f.directive.label),
        rejecting: unanswered ? withRejecting(s, f) : s.rejecting
      }]
    }),
    (f) => {
      if (f === undefined) return Effect.void
      return f.directive.options.onInvoked !== undefined && !f.invoked ?
        finishRejected(f, "not_invoked") :
        runResolved(f.directive)
    }
  ))

  const markInvoked = (serial: number) =>
    Ref.update(
      state,
      (s) =>
        s.inFlight !== undefined && s.inFlight.serial === serial
          ? { ...s, inFlight: { ...s.inFlight, invoked: true } }
          : s
    )

  const peekInFlightInvoker = Effect.map(Ref.get(state), (s): Option.Option<Invoker> => {
    const f = s.inFlight
    const onInvoked = f?.directive.options.onInvoked
    if (f === undefined || onInvoked === undefined) return Option.none()
    // Marking must not be lost to an interruption that lands right after the handler completed.
    return Option.some((invocation) =>
      Effect.uninterruptibleMask((restore) =>
        Effect.tap(restore(Effect.suspend(() => onInvoked(invocation))), () => markInvoked(f.serial))
      )
    )
  })

  const dropQueued = (reason: "removed" | "cleared", dropped: ReadonlyArray<Directive>) =>
    Effect.forEach(dropped, (d) => runRejected(d, reason), { discard: true })

  const removeByLabel = (label: string) =>
    Effect.uninterruptible(Effect.flatMap(
      Ref.modify(state, (s): [[InFlight | undefined, Array<Directive>], State] => {
        const all = toArray(s)
        const kept = all.filter((d) => d.label !== label)
        const dropped = all.filter((d) => d.label === label)
        const inFlight = s.inFlight !== undefined && s.inFlight.directive.label === label ? s.inFlight : undefined
        const rejecting = withoutRejecting(s.rejecting, (_, l) => l === label)
        if (dropped.length === 0 && inFlight === undefined) return [[undefined, dropped], { ...s, rejecting }]
        return [[inFlight, dropped], {
          ...s,
          front: List.fromIterable(kept),
          back: List.nil(),
          inFlight: inFlight === undefined ? s.inFlight : undefined,
          rejecting
        }]
      }),
      ([inFlight, dropped]) =>
        Effect.zipRight(
          inFlight === undefined ? Effect.void : finishRejected(inFlight, "removed"),
          Effect.as(dropQueued("removed", dropped), dropped.length + (inFlight === undefined ? 0 : 1))
        )
    ))

  const clear = Effect.uninterruptible(Effect.flatMap(
    Ref.modify(state, (s): [[InFlight | undefined, Array<Directive>], State] => [
      [s.inFlight, toArray(s)],
      {
        ...s,
        front: List.nil(),
        back: List.nil(),
        inFlight: undefined,
        lastServedLabel: Option.none(),
        rejecting: new Map()
      }
    ]),
    ([inFlight, dropped]) =>
      Effect.zipRight(
        inFlight === undefined ? Effect.void : finishRejected(inFlight, "cleared"),
        dropQueued("cleared", dropped)
      )
  ))

  return ToolChoiceQueue.of({
    push,
    pushOnce,
    pushSequence: push,
    nextToolChoice,
    resolve,
    reject,
    hasInFlight: Effect.map(Ref.get(state), (s) => s.inFlight !== undefined),
    inFlight: Effect.map(Ref.get(state), (s) =>
      s.inFlight === undefined ? Option.none() : Option.some({
        id: s.inFlight.directive.id,
        label: s.inFlight.directive.label,
        choice: s.inFlight.choice,
        requeues: s.inFlight.directive.requeues,
        invoked: s.inFlight.invoked
      })),
    peekInFlightInvoker,
    removeByLabel,
    clear,
    consumeLastServedLabel: Ref.modify(state, (s) => [s.lastServedLabel, { ...s, lastServedLabel: Option.none() }]),
    inspect: Effect.map(Ref.get(state), (s) => toArray(s).map((d) => d.label))
  })
})
