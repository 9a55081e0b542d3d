/**
 * The plain baseline of the benchmarks: a straightforward synchronous class with the ToolChoiceQueue's rules
 * (SPEC §2) and no Effect. It shows what the rules themselves cost; `bench/index.ts` reports it for information.
 *
 * The queue is a deque made of two arrays: `front` holds the head part with the head LAST (so a `now` push is an
 * array push), `back` holds the tail part in order; when `front` runs out, `back` is moved over reversed. Every
 * operation but `removeByLabel`, `clear` and `inspect` is O(1) amortized.
 */
import type { RejectDecision, RejectReason, ToolChoice } from "../dist/index.js"

type Choice = ToolChoice.ToolChoice

export interface PlainOptions {
  readonly label?: string
  readonly now?: boolean
  readonly onResolved?: () => void
  readonly onRejected?: (reason: RejectReason) => RejectDecision
  readonly onInvoked?: () => unknown
}

interface Directive {
  readonly id: string
  readonly label: string
  readonly choices: ReadonlyArray<Choice>
  next: number
  readonly options: PlainOptions
  readonly requeues: number
}

interface InFlight {
  readonly directive: Directive
  readonly choice: Choice
  invoked: boolean
}

const none: PlainOptions = {}

export class PlainQueue {
  private front: Array<Directive> = []
  private back: Array<Directive> = []
  private current: InFlight | undefined = undefined
  private lastLabel: string | undefined = undefined
  private ids = 0

  push(choices: Iterable<Choice>, options: PlainOptions = none): string {
    const all = Array.from(choices)
    if (all.length === 0) throw new Error(`Directive "${options.label ?? "anonymous"}" has no tool choices`)
    return this.enqueue(all, options)
  }

  pushOnce(choice: Choice, options: PlainOptions = none): string {
    return this.enqueue([choice], options)
  }

  pushSequence(choices: ReadonlyArray<Choice>, options: PlainOptions = none): string {
    return this.push(choices, options)
  }

  private enqueue(choices: ReadonlyArray<Choice>, options: PlainOptions): string {
    const id = `directive-${++this.ids}`
    const directive: Directive = { id, label: options.label ?? "anonymous", choices, next: 0, options, requeues: 0 }
    if (options.now === true) this.front.push(directive)
    else this.back.push(directive)
    return id
  }

  nextToolChoice(): Choice | undefined {
    if (this.current !== undefined) this.reject("error")
    if (this.front.length === 0) {
      if (this.back.length === 0) return undefined
      this.front = this.back.reverse()
      this.back = []
    }
    const head = this.front[this.front.length - 1]!
    const choice = head.choices[head.next]!
    if (head.next + 1 < head.choices.length) head.next++
    else this.front.pop()
    this.current = { directive: head, choice, invoked: false }
    return choice
  }

  /** The in-flight directive's handler, marking the turn invoked when it returns. */
  peekInFlightInvoker(): (() => unknown) | undefined {
    const f = this.current
    const onInvoked = f?.directive.options.onInvoked
    if (f === undefined || onInvoked === undefined) return undefined
    return () => {
      const result = onInvoked()
      if (this.current === f) f.invoked = true
      return result
    }
  }

  resolve(): void {
    const f = this.current
    if (f === undefined) return
    this.current = undefined
    if (f.directive.options.onInvoked !== undefined && !f.invoked) return this.finishRejected(f, "not_invoked")
    this.lastLabel = f.directive.label
    this.safely(() => f.directive.options.onResolved?.())
  }

  reject(reason: RejectReason): void {
    const f = this.current
    if (f === undefined) return
    this.current = undefined
    this.finishRejected(f, reason)
  }

  private finishRejected(f: InFlight, reason: RejectReason) {
    const decision = this.safely(() => f.directive.options.onRejected?.(reason)) ?? "drop"
    if (decision === "requeue" && reason !== "cleared" && reason !== "removed") {
      this.front.push({ ...f.directive, choices: [f.choice], next: 0, requeues: f.directive.requeues + 1 })
    }
  }

  private safely<A>(f: () => A): A | undefined {
    try {
      return f()
    } catch (error) {
      console.error("PlainQueue callback failed; the queue is unchanged", error)
      return undefined
    }
  }

  hasInFlight(): boolean {
    return this.current !== undefined
  }

  removeByLabel(label: string): number {
    const all = this.all()
    const dropped = all.filter((d) => d.label === label)
    const f = this.current !== undefined && this.current.directive.label === label ? this.current : undefined
    this.front = all.filter((d) => d.label !== label).reverse()
    this.back = []
    if (f !== undefined) {
      this.current = undefined
      this.finishRejected(f, "removed")
    }
    for (const d of dropped) this.safely(() => d.options.onRejected?.("removed"))
    return dropped.length + (f === undefined ? 0 : 1)
  }

  clear(): void {
    const f = this.current
    const dropped = this.all()
    this.front = []
    this.back = []
    this.current = undefined
    this.lastLabel = undefined
    if (f !== undefined) this.finishRejected(f, "cleared")
    for (const d of dropped) this.safely(() => d.options.onRejected?.("cleared"))
  }

  consumeLastServedLabel(): string | undefined {
    const label = this.lastLabel
    this.lastLabel = undefined
    return label
  }

  inspect(): Array<string> {
    return this.all().map((d) => d.label)
  }

  private all(): Array<Directive> {
    return [...this.front.slice().reverse(), ...this.back]
  }
}
