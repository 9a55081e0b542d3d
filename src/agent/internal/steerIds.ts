/**
 * Steering messages with an identity (`details.steerId`: a cluster's `steer`, a person's decision note): the request
 * that carries one holds its id in its user message's options (`{ "effect-resolve": { steerId } }`, which no provider
 * reads), so the saved conversation says which were delivered; a turn never carries one id twice.
 *
 * @internal
 */
import * as Prompt from "@effect/ai/Prompt"
import type { SteeringMessage } from "../../domain/SteeringMessage.js"

/** The provider-option key a steered message's id is carried under (the same as a cluster run's id). */
export const steerOptionKey = "effect-resolve"

/** The id of a steering message, if it has one. */
export const steerIdOf = (message: SteeringMessage): string | undefined => {
  const details = message.details as { readonly steerId?: unknown } | null | undefined
  const id = typeof details === "object" && details !== null ? details.steerId : undefined
  return typeof id === "string" ? id : undefined
}

/** The user message a steering message is sent as; one with an id carries it. */
export const steeringUserMessage = (message: SteeringMessage): Prompt.Message => {
  const steerId = steerIdOf(message)
  return Prompt.makeMessage("user", {
    content: [Prompt.makePart("text", { text: message.content })],
    ...(steerId === undefined ? {} : { options: { [steerOptionKey]: { steerId } } })
  })
}

/** The steer ids the conversation's messages carry. */
export const steerIdsIn = (messages: ReadonlyArray<Prompt.Message>): Set<string> => {
  const ids = new Set<string>()
  for (const message of messages) {
    if (message.role !== "user") continue
    const id = message.options[steerOptionKey]?.steerId
    if (typeof id === "string") ids.add(id)
  }
  return ids
}

/** The messages without a second one of the same id (the first is kept). */
export const uniqueSteers = (steering: ReadonlyArray<SteeringMessage>): ReadonlyArray<SteeringMessage> => {
  let seen: Set<string> | undefined
  let dropped = false
  const kept = steering.filter((message) => {
    const id = steerIdOf(message)
    if (id === undefined) return true
    seen ??= new Set()
    if (seen.has(id)) return (dropped = true, false)
    seen.add(id)
    return true
  })
  return dropped ? kept : steering
}
