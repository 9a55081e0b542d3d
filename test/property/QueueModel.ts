/**
 * A small, obviously-correct reference model of the ToolChoiceQueue state machine (SPEC §2), used by the
 * model-based tests. It is a plain array and a few fields: no Effect, no persistence tricks, O(n) everywhere.
 * Callbacks are plain functions of the model, run in the same order the real queue runs its Effects.
 */
import type { RejectDecision, RejectReason, ToolChoice as TC } from "../../src/index.js"

type ToolChoice = TC.ToolChoice

/** What a directive does when its value ends; `onRejected` returning `undefined` means "the callback failed" (drop). */
export interface ModelHooks {
  readonly onResolved?: (model: QueueModel) => void
  readonly onRejected?: (reason: RejectReason, model: QueueModel) => RejectDecision | undefined
  /** Whether the directive has an `onInvoked` handler. */
  readonly invoker: boolean
  /** The directive's `active` option: wanted while it answers true. */
  readonly active?: () => boolean
}

export interface ModelDirective {
  readonly id: string
  readonly label: string
  readonly choices: ReadonlyArray<ToolChoice>
  readonly next: number
  readonly requeues: number
  readonly hooks: ModelHooks
}

export interface ModelInFlight {
  readonly serial: number
  readonly directive: ModelDirective
  readonly choice: ToolChoice
  invoked: boolean
}

export class QueueModel {
  queue: Array<ModelDirective> = []
  inFlight: ModelInFlight | undefined = undefined
  lastServedLabel: string | undefined = undefined
  ids = 0
  serial = 0

  /** Returns the new id, or `undefined` for an empty directive (nothing queued). */
  push(choices: ReadonlyArray<ToolChoice>, options: { label?: string; now?: boolean; id?: string }, hooks: ModelHooks) {
    if (choices.length === 0) return undefined
    this.ids += 1
    const directive: ModelDirective = {
      id: options.id ?? `directive-${this.ids}`,
      label: options.label ?? "anonymous",
      choices: [...choices],
      next: 0,
      requeues: 0,
      hooks
    }
    if (options.now === true) this.queue.unshift(directive)
    else this.queue.push(directive)
    return directive.id
  }

  private finishRejected(f: ModelInFlight, reason: RejectReason) {
    const decision = f.directive.hooks.onRejected?.(reason, this) ?? "drop"
    if (decision === "requeue" && reason !== "cleared" && reason !== "removed") {
      this.queue.unshift({ ...f.directive, choices: [f.choice], next: 0, requeues: f.directive.requeues + 1 })
    }
  }

  reject(reason: RejectReason) {
    const f = this.inFlight
    if (f === undefined) return
    this.inFlight = undefined
    this.finishRejected(f, reason)
  }

  private wanted(d: ModelDirective): boolean {
    return d.hooks.active === undefined || d.hooks.active()
  }

  next(): ToolChoice | undefined {
    if (this.inFlight !== undefined) this.reject("error")
    // A directive no longer wanted is dropped when it reaches the head, without callbacks.
    while (this.queue[0] !== undefined && !this.wanted(this.queue[0])) this.queue.shift()
    const head = this.queue[0]
    if (head === undefined) return undefined
    const choice = head.choices[head.next]!
    if (head.next + 1 < head.choices.length) this.queue[0] = { ...head, next: head.next + 1 }
    else this.queue.shift()
    this.serial += 1
    this.inFlight = { serial: this.serial, directive: head, choice, invoked: false }
    return choice
  }

  resolve() {
    const f = this.inFlight
    if (f === undefined) return
    this.inFlight = undefined
    if (
      (f.directive.hooks.invoker && !f.invoked) || (f.directive.hooks.active !== undefined && this.wanted(f.directive))
    ) {
      this.finishRejected(f, "not_invoked")
    } else {
      this.lastServedLabel = f.directive.label
      f.directive.hooks.onResolved?.(this)
    }
  }

  /** The serial of the in-flight value when it has an invoker (what `peekInFlightInvoker` captures). */
  peekInvoker(): number | undefined {
    return this.inFlight !== undefined && this.inFlight.directive.hooks.invoker ? this.inFlight.serial : undefined
  }

  /** A handler captured at `serial` completed successfully. */
  markInvoked(serial: number) {
    if (this.inFlight !== undefined && this.inFlight.serial === serial) this.inFlight.invoked = true
  }

  removeByLabel(label: string): number {
    const dropped = this.queue.filter((d) => d.label === label)
    const f = this.inFlight !== undefined && this.inFlight.directive.label === label ? this.inFlight : undefined
    this.queue = this.queue.filter((d) => d.label !== label)
    if (f !== undefined) {
      this.inFlight = undefined
      this.finishRejected(f, "removed")
    }
    for (const d of dropped) d.hooks.onRejected?.("removed", this)
    return dropped.length + (f === undefined ? 0 : 1)
  }

  clear() {
    const f = this.inFlight
    const dropped = this.queue
    this.queue = []
    this.inFlight = undefined
    this.lastServedLabel = undefined
    if (f !== undefined) this.finishRejected(f, "cleared")
    for (const d of dropped) d.hooks.onRejected?.("cleared", this)
  }

  consumeLastServedLabel(): string | undefined {
    const label = this.lastServedLabel
    this.lastServedLabel = undefined
    return label
  }

  inspect(): Array<string> {
    return this.queue.filter((d) => this.wanted(d)).map((d) => d.label)
  }
}
