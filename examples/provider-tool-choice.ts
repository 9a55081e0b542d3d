// The provider-neutral tool choice in each provider's wire format; what a provider or model cannot express is
// `Option.none()`, so the caller falls back to the soft path.
import { Either, Option } from "effect"
import { ResolveTool, ToolChoice } from "effect-resolve"
import { ProviderToolChoice } from "effect-resolve/ai"

const forced = ToolChoice.forceTool("resolve")
const show = (choice: Option.Option<unknown>) => Option.match(choice, { onNone: () => "none", onSome: JSON.stringify })

console.log("OpenAI Responses:", show(ProviderToolChoice.toOpenAiResponses(forced)))
console.log("OpenAI Chat:", show(ProviderToolChoice.toOpenAiChat(forced)))
console.log("Anthropic:", show(ProviderToolChoice.toAnthropic(forced)))
console.log("Gemini:", show(ProviderToolChoice.toGemini(forced)))
console.log("@effect/ai:", show(ProviderToolChoice.toEffectAi(forced)))
// Anthropic with extended thinking cannot force a tool: the soft path (a reminder) is used instead.
console.log(
  "Anthropic, extended thinking:",
  show(ProviderToolChoice.toAnthropic(forced, ProviderToolChoice.anthropicExtendedThinking))
)

// Gemini takes an OpenAPI subset of JSON Schema: the resolve tool's strict schema, converted.
const gemini = ProviderToolChoice.toGeminiSchema(ResolveTool.parameters)
Either.match(gemini, {
  onLeft: (error) => console.log(error.message),
  onRight: (schema: any) =>
    console.log("resolve's id for Gemini:", JSON.stringify({ ...schema.properties.id, description: "…" }))
})
