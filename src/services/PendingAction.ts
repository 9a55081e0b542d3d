/**
 * The 0.2 name of the `Preview` module.
 *
 * @deprecated Renamed `Preview` in 0.3.0 (`PendingAction` and `PendingActions` differed by one letter); this module
 * goes in 0.4.0.
 * @since 0.1.0
 */
import type { Handle, Spec } from "./Preview.js"

export {
  commit,
  directiveLabel,
  discardedText,
  type PendingStatus,
  runResolveInvocation,
  UnprintableFailure,
  withResolveDetails
} from "./Preview.js"

/**
 * @deprecated Renamed `Preview.Spec` in 0.3.0; this alias goes in 0.4.0.
 * @since 0.1.0
 * @category models
 */
export type PendingActionSpec<E = never, R = never> = Spec<E, R>

/**
 * @deprecated Renamed `Preview.Handle` in 0.3.0; this alias goes in 0.4.0.
 * @since 0.1.0
 * @category models
 */
export type PendingActionHandle = Handle
