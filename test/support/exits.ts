/**
 * Reading an `Exit` in a test: its value or its typed failure, with the cause printed when it is the other one.
 */
import { Cause, Exit, Option } from "effect"

/** The success value; throws (failing the test) with the pretty cause otherwise. */
export const successOf = <A, E>(exit: Exit.Exit<A, E>): A => {
  if (Exit.isFailure(exit)) throw new Error(`expected a success, got ${Cause.pretty(exit.cause)}`)
  return exit.value
}

/** The typed failure; throws (failing the test) on a success, a defect or an interruption. */
export const failureOf = <A, E>(exit: Exit.Exit<A, E>): E => {
  if (Exit.isSuccess(exit)) throw new Error("expected a failure")
  const failure = Cause.failureOption(exit.cause)
  if (Option.isNone(failure)) throw new Error(`expected a typed failure, got ${Cause.pretty(exit.cause)}`)
  return failure.value
}
