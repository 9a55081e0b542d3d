/**
 * A hidden message injected into the conversation before the next model turn.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"

/**
 * `{ customType, content, details?, display, attribution: "agent", timestamp }`; `timestamp` is epoch
 * milliseconds from Effect's `Clock`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const SteeringMessage = Schema.Struct({
  customType: Schema.String,
  content: Schema.String,
  details: Schema.optional(Schema.Unknown),
  display: Schema.Boolean,
  attribution: Schema.Literal("agent"),
  timestamp: Schema.Number
})

/**
 * @since 0.1.0
 * @category models
 */
export type SteeringMessage = typeof SteeringMessage.Type

/**
 * What a caller gives `SteeringBus.steer`; `display` defaults to `false` (hidden from the user).
 *
 * @since 0.1.0
 * @category models
 */
export interface SteerInput {
  readonly customType: string
  readonly content: string
  readonly details?: unknown
  readonly display?: boolean
}

/**
 * The `customType` of the reminder a staged preview steers.
 *
 * @since 0.1.0
 * @category constants
 */
export const resolveReminderType = "resolve-reminder"

/**
 * The text of the reminder a staged preview steers.
 *
 * @since 0.1.0
 * @category constants
 */
export const resolveReminderText = "<system-reminder>\n" +
  "This is a preview. Call the `resolve` tool to apply or discard these changes.\n" +
  "</system-reminder>"

/**
 * The reminder for a preview staged by `sourceToolName`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const resolveReminder = (sourceToolName: string): SteerInput => ({
  customType: resolveReminderType,
  content: resolveReminderText,
  details: { toolName: sourceToolName }
})

/**
 * The one reminder a request carries when several previews are pending at once (the calls of one model response each
 * staged one): it names every pending action's id and label, oldest first, and asks for one `resolve` call per id.
 *
 * @since 0.3.0
 * @category constructors
 */
export const resolveBatchReminderText = (
  pending: ReadonlyArray<{ readonly id: string; readonly label: string }>
): string =>
  "<system-reminder>\n" +
  `These are previews: ${pending.length} pending actions, nothing of them is applied yet:\n` +
  pending.map((p) => `- id ${p.id}: ${p.label}\n`).join("") +
  "Call the `resolve` tool once per id, passing the id (several calls in one response are fine), to apply or " +
  "discard each.\n" +
  "</system-reminder>"
