/**
 * Interruption at an exact yield point: a supervisor that counts the operations of the fibers it supervises and
 * interrupts the fiber right before its `k`-th operation. Tests loop k = 1, 2, ... until a run completes before k,
 * so every yield point is covered instead of a random sample.
 */
import { Effect, type Fiber, FiberId, RuntimeFlags, RuntimeFlagsPatch, Supervisor } from "effect"

/** Interrupts the fiber it supervises right before its `k`-th operation. */
export class InterruptAt extends Supervisor.AbstractSupervisor<void> {
  ops = 0
  constructor(readonly k: number) {
    super()
  }
  get value() {
    return Effect.void
  }
  override onEffect<A, E>(fiber: Fiber.RuntimeFiber<A, E>) {
    this.ops++
    if (this.ops === this.k) fiber.unsafeInterruptAsFork(FiberId.none)
  }
}

/** Runs `self` with operation supervision on, so an `InterruptAt` supervisor sees every operation. */
export const withOpSupervision = <A, E, R>(self: Effect.Effect<A, E, R>) =>
  Effect.withRuntimeFlagsPatch(self, RuntimeFlagsPatch.enable(RuntimeFlags.OpSupervision))
