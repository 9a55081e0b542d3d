/**
 * A local HTTP server (node:http on 127.0.0.1, a free port) standing in for a provider's API: it records every
 * request body and answers each with what the test's `answer` function returns. Started and stopped with the
 * test's `Scope`. Helpers build the minimal valid answers of the OpenAI Responses API and the Anthropic Messages API
 * that the real `@effect/ai-openai` and `@effect/ai-anthropic` clients decode.
 */
import { Effect, type Scope } from "effect"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"

/** One request the server received. */
export interface Received {
  readonly method: string
  readonly path: string
  readonly body: any
}

/** What the server answers: an HTTP status and a JSON body. */
export interface Answer {
  readonly status: number
  readonly json: unknown
}

export interface ProviderServer {
  /** `http://127.0.0.1:<port>` */
  readonly url: string
  /** Every request so far, oldest first. */
  readonly received: ReadonlyArray<Received>
}

/** Starts the server for the life of the scope; `answer` sees each request and how many came before it. */
export const start = (
  answer: (request: Received, index: number) => Answer
): Effect.Effect<ProviderServer, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.async<{ readonly server: ReturnType<typeof createServer>; readonly state: ProviderServer }>((resume) => {
      const received: Array<Received> = []
      const server = createServer((req, res) => {
        const chunks: Array<Buffer> = []
        req.on("data", (chunk: Buffer) => chunks.push(chunk))
        req.on("end", () => {
          const text = Buffer.concat(chunks).toString("utf8")
          const request: Received = {
            method: req.method ?? "",
            path: req.url ?? "",
            body: text === "" ? undefined : JSON.parse(text)
          }
          const index = received.length
          received.push(request)
          let reply: Answer
          try {
            reply = answer(request, index)
          } catch (error) {
            reply = { status: 500, json: { error: { message: `test server: ${String(error)}` } } }
          }
          res.writeHead(reply.status, { "content-type": "application/json" })
          res.end(JSON.stringify(reply.json))
        })
      })
      server.listen(0, "127.0.0.1", () => {
        const { port } = server.address() as AddressInfo
        resume(Effect.succeed({ server, state: { url: `http://127.0.0.1:${port}`, received } }))
      })
    }),
    ({ server }) =>
      Effect.async<void>((resume) => {
        server.closeAllConnections()
        server.close(() => resume(Effect.void))
      })
  ).pipe(Effect.map(({ state }) => state))

// ---------------------------------------------------------------------------------------------------------------
// OpenAI Responses API
// ---------------------------------------------------------------------------------------------------------------

let ids = 0

/** What the emulated model answers: text, or function calls (`arguments` as given, or JSON of `args`). */
export type Reply =
  | { readonly text: string }
  | { readonly calls: ReadonlyArray<{ readonly name: string; readonly args?: unknown; readonly arguments?: string }> }

/** A `POST /responses` answer of the OpenAI Responses API. */
export const openAiResponse = (model: string, reply: Reply): Answer => ({
  status: 200,
  json: {
    id: `resp_${++ids}`,
    object: "response",
    created_at: 1_700_000_000,
    status: "completed",
    error: null,
    incomplete_details: null,
    instructions: null,
    model,
    output: "text" in reply ?
      [{
        type: "message",
        id: `msg_${++ids}`,
        role: "assistant",
        status: "completed",
        content: [{ type: "output_text", text: reply.text, annotations: [] }]
      }] :
      reply.calls.map((call) => ({
        type: "function_call",
        id: `fc_${++ids}`,
        call_id: `call_${++ids}`,
        name: call.name,
        arguments: call.arguments ?? JSON.stringify(call.args),
        status: "completed"
      })),
    parallel_tool_calls: true,
    tools: [],
    tool_choice: "auto",
    metadata: null,
    temperature: null,
    top_p: null,
    usage: {
      input_tokens: 1,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens: 1,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: 2
    }
  }
})

/** An error answer in the OpenAI format. */
export const openAiError = (status: number, message: string, param: string | null = null): Answer => ({
  status,
  json: { error: { message, type: "invalid_request_error", param, code: null } }
})

// ---------------------------------------------------------------------------------------------------------------
// Anthropic Messages API
// ---------------------------------------------------------------------------------------------------------------

/** A `POST /v1/messages` answer of the Anthropic Messages API. */
export const anthropicMessage = (model: string, reply: Reply): Answer => ({
  status: 200,
  json: {
    id: `msg_${++ids}`,
    type: "message",
    role: "assistant",
    model,
    content: "text" in reply ?
      [{ type: "text", text: reply.text }] :
      reply.calls.map((call) => ({ type: "tool_use", id: `toolu_${++ids}`, name: call.name, input: call.args })),
    stop_reason: "text" in reply ? "end_turn" : "tool_use",
    stop_sequence: null,
    usage: { input_tokens: 1, output_tokens: 1 }
  }
})

/** An error answer in the Anthropic format. */
export const anthropicError = (status: number, message: string): Answer => ({
  status,
  json: { type: "error", error: { type: "invalid_request_error", message } }
})
