/**
 * How much of a model's or a provider's text the turn driver quotes back, in a tool result the model reads or in
 * an error and a log line a person reads: a bounded slice, never a character cut in two.
 *
 * @internal
 */
import { capText, messageOf } from "../../internal/render.js"

/** At most this many characters of a tool name or a decode error are quoted back to the model. */
const quoteMax = 300

// Never cuts a character in two (half an emoji in a tool result can make a provider refuse the whole history).
export const quote = (text: string): string => capText(text, quoteMax)

/** A failure as an error message or a log line quotes it: the first line of its message, at most 300 characters. */
export const errorText = (cause: unknown): string => capText(messageOf(cause, 4096).split("\n", 1)[0]!, 300)
