/**
 * The MCP server: the same previews, `resolve` and approval inbox as the agent loop, served to any MCP client (Claude
 * Code, Codex, Cursor, VS Code, ...) by `@effect/ai`'s `McpServer`, over stdio or Streamable HTTP.
 *
 * - tools: `edit` (the edit producer's preview, its strict JSON Schema), `plan` (plan approval), `resolve` (apply or
 *   discard by id, with a reason) and `pending` (the open actions); typed errors come back as tool errors
 *   (`isError`) with the message the model reads in the agent loop;
 * - resources: every open action as `effect-resolve://actions/<id>` (preview, structured diff, status), with
 *   `notifications/resources/list_changed` when the set changes and `notifications/resources/updated` when an action
 *   does, pushed from the store's `changed` signal (Postgres `LISTEN`/`NOTIFY`, or this process's writes);
 * - a person in the loop: the model resolves; or a reviewer decides in the approval inbox on the same store (when an
 *   `InboxServer` is in context, results name its address); or, for the tools of `ask`, the client's own prompt
 *   (MCP elicitation): accept applies with the person's words as the reason, decline discards, cancel leaves it
 *   pending. The model may not apply an action of an `ask` tool itself (`PersonRequired`).
 *
 * The session is durable on the `PendingStore` in context (a SQLite file, Postgres): a restarted server finds every
 * pending preview, and the model resolves it by id after reconnecting.
 *
 * @example
 * ```ts
 * import { NodeRuntime } from "@effect/platform-node"
 * import { Layer } from "effect"
 * import { ResolveMcp } from "effect-resolve/mcp"
 * import { SqliteStore } from "effect-resolve/sqlite"
 *
 * ResolveMcp.layerStdio({ root: "/path/to/workspace" }).pipe(
 *   Layer.provide(SqliteStore.layer({ filename: "/path/to/pending.db" })),
 *   Layer.launch,
 *   NodeRuntime.runMain
 * )
 * ```
 *
 * @since 0.4.0
 */
import * as McpSchema from "@effect/ai/McpSchema"
import * as McpServer from "@effect/ai/McpServer"
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as NodeSink from "@effect/platform-node/NodeSink"
import * as NodeStream from "@effect/platform-node/NodeStream"
import * as FileSystem from "@effect/platform/FileSystem"
import * as HttpRouter from "@effect/platform/HttpRouter"
import * as HttpServer from "@effect/platform/HttpServer"
import type { ServeError as HttpServerError } from "@effect/platform/HttpServerError"
import * as Path from "@effect/platform/Path"
import * as RpcSerialization from "@effect/rpc/RpcSerialization"
import * as RpcServer from "@effect/rpc/RpcServer"
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import { randomBytes } from "node:crypto"
import { createServer } from "node:http"
import * as AiResolveTool from "../agent/AiResolveTool.js"
import type { PendingStoreError } from "../domain/Errors.js"
import { checkOptions, type InvalidOptions, type OptionsSpec, text, wholeNumber } from "../domain/InvalidOptions.js"
import * as ToolResult from "../domain/ToolResult.js"
import { InboxServer } from "../inbox/InboxServer.js"
import * as DiffParser from "../inbox/internal/diff.js"
import { toFailure } from "../internal/aiTools.js"
import { packageVersion } from "../internal/version.js"
import * as ResolveRuntime from "../layers/ResolveRuntime.js"
import * as AiEditTool from "../producers/AiEditTool.js"
import * as AiPlanTool from "../producers/AiPlanTool.js"
import * as FileEditPreview from "../producers/FileEditPreview.js"
import * as PlanApproval from "../producers/PlanApproval.js"
import { ChangeFeed } from "../services/ChangeFeed.js"
import { type PendingActionInfo, PendingActions } from "../services/PendingActions.js"
import { PendingStore } from "../services/PendingStore.js"
import { SteeringBus } from "../services/SteeringBus.js"
import { ResolveTool } from "../tools/Resolve.js"
import { ClientCapabilities, guard, layerServer } from "./internal/transport.js"

// -----------------------------------------------------------------------------------------------------------------
// options, service, errors
// -----------------------------------------------------------------------------------------------------------------

/**
 * A preview tool whose actions may need a person (`Options.ask`).
 *
 * @since 0.4.0
 * @category models
 */
export type AskTool = "edit" | "plan"

/**
 * How the server is set up.
 *
 * @since 0.4.0
 * @category models
 */
export interface Options {
  /** The workspace: every edit is confined to it, when previewed and again when applied. */
  readonly root: string
  /** The durable session the server's actions belong to (default `"mcp"`): a restarted server reopens it. */
  readonly session?: string | undefined
  /** Where `plan` writes the plan (default `PLAN.md` in `root`). */
  readonly planFile?: string | undefined
  /**
   * The preview tools whose actions a person decides (default none): after the preview, the client's prompt asks
   * (when it offers elicitation), and the model's own `resolve` with action `"apply"` asks again or is refused with
   * `PersonRequired`; a reviewer may decide them in the inbox.
   */
  readonly ask?: ReadonlyArray<AskTool> | undefined
  /** The server's name in `initialize` (default `"effect-resolve"`). */
  readonly name?: string | undefined
}

/**
 * `layerHttp`'s options: those of the server, and where and with what token it listens.
 *
 * @since 0.4.0
 * @category models
 */
export interface HttpOptions extends Options {
  /** The port on 127.0.0.1 (default 0: any free port; the `ResolveMcp` service says which). */
  readonly port?: number | undefined
  /** The bearer token clients must send (default: a random one, generated at start; the service gives it). */
  readonly token?: Redacted.Redacted<string> | undefined
}

const askSpec = {
  schema: Schema.Array(Schema.Literal("edit", "plan")),
  expected: "an array of tool names: \"edit\", \"plan\""
}

const optionsSpec: OptionsSpec = {
  root: text,
  session: text,
  planFile: text,
  ask: askSpec,
  name: text
}

const httpOptionsSpec: OptionsSpec = {
  ...optionsSpec,
  port: wholeNumber(0, 65_535),
  token: {
    schema: Schema.Redacted(Schema.String.pipe(Schema.minLength(16))),
    expected: "a Redacted string of 16 or more characters"
  }
}

/**
 * The model applied an action that a person decides (its tool is in `Options.ask`), where the client offers no
 * prompt for it. Nothing was applied; the action stays pending.
 *
 * @since 0.4.0
 * @category errors
 */
export class PersonRequired extends Schema.TaggedError<PersonRequired>("effect-resolve/mcp/PersonRequired")(
  "PersonRequired",
  {
    id: Schema.String,
    label: Schema.String,
    /** The approval inbox's address, when the server serves one. */
    inbox: Schema.OptionFromSelf(Schema.String)
  }
) {
  /**
   * @since 0.4.0
   */
  override get message(): string {
    const where = Option.match(this.inbox, {
      onNone: () =>
        "this client offers no prompt (MCP elicitation) to ask them, and the server serves no approval inbox " +
        "(start it with --inbox PORT)",
      onSome: (url) => `a reviewer decides it in the approval inbox at ${url}`
    })
    return `The pending action ${this.id} ("${this.label}") waits for a person's decision: ${where}. Nothing was ` +
      `applied. Do not apply it yourself: tell the user it waits for them, or discard it (resolve with action ` +
      `"discard") if it is no longer wanted.`
  }
}

/**
 * @since 0.4.0
 * @category tags
 */
export declare namespace ResolveMcp {
  /**
   * @since 0.4.0
   * @category models
   */
  export interface Service {
    /** The session the server's actions belong to. */
    readonly session: string
    /** How clients reach it. */
    readonly transport: "stdio" | "http"
    /** Over HTTP, its endpoint: `http://127.0.0.1:<port>/mcp`. */
    readonly url: Option.Option<string>
    /** Over HTTP, the bearer token clients send (print it once; never log it again). */
    readonly token: Option.Option<Redacted.Redacted<string>>
    /** Whether the token was generated at start (then print it, for the user to give their client). */
    readonly generatedToken: boolean
  }
}

/**
 * The running MCP server.
 *
 * @since 0.4.0
 * @category tags
 */
export class ResolveMcp extends Context.Tag("effect-resolve/mcp/ResolveMcp")<ResolveMcp, ResolveMcp.Service>() {}

// -----------------------------------------------------------------------------------------------------------------
// tools
// -----------------------------------------------------------------------------------------------------------------

/**
 * The URI of an action's resource.
 *
 * @since 0.4.0
 * @category resources
 */
export const actionUri = (id: string): string => `effect-resolve://actions/${id}`

const pendingParameters = { type: "object", properties: {}, required: [], additionalProperties: false } as const

const pendingDescription = [
  "List the pending actions (previews waiting to be applied or discarded), most recent first: id, status, label.",
  "Resolve one by id with the resolve tool. Each is also the resource effect-resolve://actions/<id>."
].join("\n")

/**
 * The tools the server offers, as MCP lists them: name, description and the strict JSON Schema of their arguments
 * (the same schemas the agent loop sends providers).
 *
 * @since 0.4.0
 * @category tools
 */
export const tools: ReadonlyArray<McpSchema.Tool> = [
  new McpSchema.Tool({
    name: FileEditPreview.tool.name,
    description: FileEditPreview.tool.description,
    inputSchema: FileEditPreview.tool.parameters
  }),
  new McpSchema.Tool({
    name: "plan",
    description: AiPlanTool.tool.description!,
    inputSchema: AiPlanTool.parametersJsonSchema
  }),
  new McpSchema.Tool({
    name: ResolveTool.name,
    description: ResolveTool.description,
    inputSchema: ResolveTool.parameters
  }),
  new McpSchema.Tool({ name: "pending", description: pendingDescription, inputSchema: pendingParameters })
]

const success = (text: string, structured?: object) =>
  new McpSchema.CallToolResult({
    content: [{ type: "text", text }],
    ...(structured === undefined ? {} : { structuredContent: structured })
  })

const failure = (error: unknown) => {
  const { error: tag, message } = toFailure(error)
  return new McpSchema.CallToolResult({
    isError: true,
    content: [{ type: "text", text: message }],
    structuredContent: { error: tag, message }
  })
}

const fromFailure = (value: { readonly error: string; readonly message: string }) =>
  new McpSchema.CallToolResult({
    isError: true,
    content: [{ type: "text", text: value.message }],
    structuredContent: { error: value.error, message: value.message }
  })

/** An action as the `pending` tool and the resources show it. */
const actionView = (info: PendingActionInfo) => ({
  id: info.id,
  label: info.label,
  sourceToolName: info.sourceToolName,
  kind: info.kind,
  status: info.status,
  attempts: info.attempts,
  createdAt: info.createdAt,
  outcome: Option.getOrNull(info.outcome),
  uri: actionUri(info.id)
})

const resourceOf = (info: PendingActionInfo) =>
  new McpSchema.Resource({
    uri: actionUri(info.id),
    name: info.id,
    title: info.label,
    description: `${info.label} (${info.status}; staged by ${info.sourceToolName})`,
    mimeType: "application/json"
  })

const personSchema = {
  type: "object",
  properties: {
    reason: {
      type: "string",
      title: "Reason",
      description: "Why you apply it: the model reads it, and it is recorded with the action."
    }
  },
  required: ["reason"]
} as const

/**
 * The arguments as the client sent them. `McpServer` decodes them with `Schema.Record`, which assigns each key to a
 * new object: a `"__proto__"` key becomes the object's prototype instead of a property, and its fields would read as
 * the arguments'. The key is put back as an own property, so the tools' decoders refuse it as they refuse it from
 * a model.
 */
const asSent = (params: unknown): unknown => {
  if (typeof params !== "object" || params === null) return params
  const prototype = Object.getPrototypeOf(params)
  if (prototype === Object.prototype || prototype === null) return params
  const sent: Record<string, unknown> = Object.create(null)
  Object.defineProperty(sent, "__proto__", { value: prototype, enumerable: true, writable: true, configurable: true })
  for (const key of Object.keys(params)) {
    Object.defineProperty(sent, key, {
      value: (params as Record<string, unknown>)[key],
      enumerable: true,
      writable: true,
      configurable: true
    })
  }
  return sent
}

// -----------------------------------------------------------------------------------------------------------------
// the server's tools and resources, on an McpServer
// -----------------------------------------------------------------------------------------------------------------

/**
 * The session, the tools and the resources, registered on the `McpServer` in context (any transport). Needs the
 * `PendingStore` (durable session), a `FileSystem` and `Path`; an `InboxServer` in context is named in results.
 *
 * @since 0.4.0
 * @category layers
 */
export const layer = (
  options: Options
): Layer.Layer<
  never,
  PendingStoreError | InvalidOptions,
  McpServer.McpServer | ClientCapabilities | PendingStore | FileSystem.FileSystem | Path.Path
> =>
  Layer.unwrapScoped(Effect.gen(function*() {
    yield* checkOptions("ResolveMcp.layer", optionsSpec, options)
    const path = yield* Path.Path
    const root = path.resolve(options.root)
    const planFilePath = path.resolve(root, options.planFile ?? "PLAN.md")
    const workspace = FileEditPreview.layer({ root })
    const approver = Layer.succeed(PlanApproval.Approver, PlanApproval.autoApprove)
    const session = ResolveRuntime.layerDurable({
      session: options.session ?? "mcp",
      kinds: [FileEditPreview.kind, PlanApproval.kind]
    }).pipe(Layer.provideMerge(Layer.merge(workspace, approver)))
    const handlers = Layer.mergeAll(
      AiEditTool.layer,
      AiPlanTool.layer({ planFilePath, approve: PlanApproval.autoApprove })
    ).pipe(Layer.provideMerge(workspace))
    return Layer.scopedDiscard(register(options)).pipe(
      Layer.provide(Layer.merge(session, handlers)),
      Layer.provide(PendingStore.layerParts)
    )
  }))

const register = (options: Options) =>
  Effect.gen(function*() {
    const server = yield* McpServer.McpServer
    const capabilities = yield* ClientCapabilities
    const pending = yield* PendingActions
    const bus = yield* SteeringBus
    const feed = yield* ChangeFeed
    const inbox = Option.map(yield* Effect.serviceOption(InboxServer), (inbox) => inbox.url)
    const ask = new Set<string>(options.ask ?? [])
    // What the handlers need (the session, the workspace, the plan tool's handler): the layer provides it all.
    const context = (yield* Effect.context<never>()) as Context.Context<any>
    const planKit = yield* AiPlanTool.toolkit

    // The reminders the agent loop would send are of no use here: the results say what to do.
    const quiet = <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.ensuring(effect, Effect.asVoid(bus.drain))

    const inboxLine = Option.match(inbox, {
      onNone: () => "",
      onSome: (url) => `\nA person can also decide it in the approval inbox: ${url}`
    })

    const resolveAs = (id: string, action: "apply" | "discard", reason: string) =>
      Effect.match(ResolveTool.execute({ action, reason, extra: null, id }), {
        onFailure: (error) => ({ ok: false as const, text: toFailure(error).message }),
        onSuccess: (result) => ({ ok: true as const, text: ToolResult.textOf(result) })
      })

    /** Asks the person in the client's prompt; `none` when this client offers none. */
    const askPerson = (info: PendingActionInfo) =>
      Effect.gen(function*() {
        const client = yield* McpSchema.McpServerClient
        if (capabilities.get(client.clientId)?.elicitation !== true) return Option.none<string>()
        const rpc = yield* client.getClient
        const answer = yield* Effect.either(rpc["elicitation/create"]({
          message: `${info.label} (${info.id})\n\n${info.preview}\n\nApply it? Accept to apply (say why), decline ` +
            "to discard it, or close this prompt to leave it pending.",
          requestedSchema: personSchema
        }))
        if (answer._tag === "Left") {
          return Option.some(
            `The client's prompt failed (${toFailure(answer.left).message}); ${info.id} stays pending.${inboxLine}`
          )
        }
        const result = answer.right
        if (result.action === "cancel") {
          return Option.some(
            `The person closed the prompt without deciding: ${info.id} stays pending. Resolve it later by id, or ` +
              `leave it to them.${inboxLine}`
          )
        }
        if (result.action !== "accept") {
          const done = yield* resolveAs(info.id, "discard", "The person declined it in the client's prompt.")
          return Option.some(`The person declined it in the client's prompt. ${done.text}`)
        }
        const content = result.content as { readonly reason?: unknown } | undefined
        const words = typeof content?.reason === "string" && content.reason.trim() !== "" ?
          content.reason.trim() :
          "Approved in the client's prompt."
        const done = yield* resolveAs(info.id, "apply", words)
        return Option.some(`The person approved it in the client's prompt (${words}). ${done.text}`)
      }).pipe(Effect.scoped)

    /** After a preview of an `ask` tool: the person decides now, when the client lets us ask. */
    const afterPreview = (result: ToolResult.ToolResult, id: Option.Option<string>) =>
      Effect.gen(function*() {
        const text = ToolResult.textOf(result)
        const info = Option.isSome(id) ? yield* pending.get(id.value) : Option.none()
        if (Option.isNone(info) || !ask.has(info.value.sourceToolName)) return success(text + inboxLine)
        const decided = yield* askPerson(info.value)
        return success(Option.match(decided, {
          onNone: () =>
            `${text}\n\nA person decides this preview; you may not apply it yourself. Tell the user it waits ` +
            `for them.${inboxLine}`,
          onSome: (outcome) => `${text}\n\n${outcome}`
        }))
      })

    const pendingIdOf = (result: ToolResult.ToolResult): Option.Option<string> => {
      const details = result.details as { readonly pendingActionId?: unknown } | undefined
      return typeof details?.pendingActionId === "string" ? Option.some(details.pendingActionId) : Option.none()
    }

    const openPlan = Effect.map(
      pending.listOpen,
      (open) =>
        Option.map(Option.fromNullable(open.find((i) => i.sourceToolName === "plan" && i.status === "pending")), (i) =>
          i.id)
    )

    const edit = (params: unknown) =>
      Effect.matchEffect(AiEditTool.handle(params), {
        onFailure: (error) =>
          Effect.succeed(fromFailure(error)),
        onSuccess: (result) => afterPreview(result, pendingIdOf(result))
      })

    const plan = (params: unknown) =>
      Effect.flatMap(planKit.handle("plan", params as never), (handled) =>
        handled.isFailure ?
          Effect.succeed(fromFailure(handled.result as { error: string; message: string })) :
          Effect.flatMap(openPlan, (id) => afterPreview(handled.result as ToolResult.ToolResult, id)))

    /** The action a `resolve` call would take: the one its id names, else the most recent pending one. */
    const targetOf = (params: unknown) =>
      Effect.gen(function*() {
        if (typeof params !== "object" || params === null) return Option.none<PendingActionInfo>()
        const { action, id } = params as { readonly action?: unknown; readonly id?: unknown }
        if (action !== "apply") return Option.none<PendingActionInfo>()
        if (typeof id === "string") return yield* pending.get(id)
        if (id !== null && id !== undefined) return Option.none<PendingActionInfo>()
        const open = (yield* pending.listOpen).filter((i) => i.status === "pending" && i.runnable)
        return Option.fromNullable(open.find((i) => i.sourceToolName !== "plan") ?? open[0])
      })

    const resolve = (params: unknown) =>
      Effect.gen(function*() {
        const target = yield* Effect.orElseSucceed(targetOf(params), () => Option.none<PendingActionInfo>())
        if (
          Option.isSome(target) && target.value.status === "pending" && ask.has(target.value.sourceToolName)
        ) {
          const decided = yield* askPerson(target.value)
          if (Option.isNone(decided)) {
            return failure(new PersonRequired({ id: target.value.id, label: target.value.label, inbox }))
          }
          return success(decided.value)
        }
        return yield* Effect.match(AiResolveTool.handle(params), {
          onFailure: fromFailure,
          onSuccess: (r) => success(ToolResult.textOf(r))
        })
      })

    const list = Effect.map(pending.listOpen, (open) => {
      const views = open.map(actionView)
      const text = views.length === 0 ?
        "No pending actions." :
        views.map((v) => `${v.id}  ${v.status}  ${v.label} (${v.sourceToolName})`).join("\n")
      return success(text + (views.length === 0 ? "" : inboxLine), { actions: views })
    })

    const guarded = (
      handle: (params: unknown) => Effect.Effect<McpSchema.CallToolResult, unknown, never>
    ) =>
    (params: unknown) =>
      quiet(handle(asSent(params))).pipe(
        Effect.catchAllCause((cause) => Effect.succeed(failure(Cause.squash(cause))))
      )

    const handlers: Record<string, (params: any) => Effect.Effect<McpSchema.CallToolResult, unknown, any>> = {
      edit,
      plan,
      resolve,
      pending: () => list
    }
    for (const tool of tools) {
      const handle = handlers[tool.name]!
      yield* server.addTool({
        tool,
        handle: (params) =>
          guarded((p) => Effect.provide(handle(p), context) as any)(params) as Effect.Effect<
            McpSchema.CallToolResult,
            never,
            McpSchema.McpServerClient
          >
      })
    }

    // ---- resources: every open action, pushed when the set or an action changes ------------------------------

    const read = (id: string) =>
      Effect.gen(function*() {
        const info = yield* pending.get(id)
        if (Option.isNone(info)) {
          return yield* Effect.fail(new Error(`No action ${JSON.stringify(id)} in this session.`))
        }
        const diff = DiffParser.parse(info.value.preview)
        const view = { ...actionView(info.value), preview: info.value.preview, diff: diff ?? null }
        return {
          contents: [{ uri: actionUri(id), mimeType: "application/json", text: JSON.stringify(view, null, 2) }]
        }
      })

    yield* McpServer.registerResource`effect-resolve://actions/${McpSchema.param("id", Schema.String)}`({
      name: "Pending action",
      description: "A staged action of this session: its preview (the diff), its structured diff and its status.",
      mimeType: "application/json",
      completion: { id: () => Effect.map(pending.listOpen, (open) => open.map((i) => i.id)) },
      content: (_uri, id) => read(id)
    })

    let open: ReadonlyArray<PendingActionInfo> = []
    const listed = new Map<string, string>()
    const base = server.resources
    Object.defineProperty(server, "resources", {
      get: () => [...base, ...open.map(resourceOf)]
    })
    const observe = Effect.gen(function*() {
      open = yield* pending.listOpen
      const now = new Map(open.map((i) => [i.id, `${i.status}/${i.attempts}/${Option.getOrElse(i.outcome, () => "")}`]))
      const setChanged = now.size !== listed.size || [...now.keys()].some((id) => !listed.has(id))
      const updated = [...listed.keys(), ...now.keys()].filter((id, index, all) =>
        all.indexOf(id) === index && listed.get(id) !== now.get(id)
      )
      listed.clear()
      for (const [id, state] of now) listed.set(id, state)
      if (setChanged) yield* server.notifications["notifications/resources/list_changed"]({})
      for (const id of updated) yield* server.notifications["notifications/resources/updated"]({ uri: actionUri(id) })
    })
    yield* observe
    yield* Stream.mergeAll([
      Stream.catchAll(feed.changed, () => Stream.empty),
      Stream.map(pending.changes, () => undefined),
      Stream.tick("2 seconds")
    ], { concurrency: 3 }).pipe(
      Stream.runForEach(() =>
        Effect.catchAllCause(observe, (cause) => Effect.logWarning("effect-resolve mcp: cannot list actions", cause))
      ),
      Effect.forkScoped
    )
  })

// -----------------------------------------------------------------------------------------------------------------
// transports
// -----------------------------------------------------------------------------------------------------------------

const serverInfo = (options: Options) => ({ name: options.name ?? "effect-resolve", version: packageVersion })

/**
 * The server over stdio (the default of MCP clients: they start it as a child process): JSON-RPC lines on stdin and
 * stdout; logs go to stderr. Needs the `PendingStore`.
 *
 * @since 0.4.0
 * @category layers
 */
export const layerStdio = (
  options: Options
): Layer.Layer<ResolveMcp, PendingStoreError | InvalidOptions, PendingStore> =>
  Layer.merge(
    layerServer(serverInfo(options), layer(options)),
    Layer.succeed(ResolveMcp, {
      session: options.session ?? "mcp",
      transport: "stdio",
      url: Option.none(),
      token: Option.none(),
      generatedToken: false
    })
  ).pipe(
    Layer.provide(RpcServer.layerProtocolStdio({ stdin: NodeStream.stdin, stdout: NodeSink.stdout })),
    Layer.provide(RpcSerialization.layerNdJsonRpc()),
    Layer.provide(NodeContext.layer),
    Layer.provide(Logger.replace(Logger.defaultLogger, Logger.prettyLogger({ stderr: true, colors: false })))
  )

/**
 * The server over Streamable HTTP at `http://127.0.0.1:<port>/mcp`, as the MCP specification asks of a local
 * server: bound to 127.0.0.1 only, a non-loopback `Origin` (or `Host`) refused with 403 (DNS rebinding), and a
 * bearer token required (401 without it or with another). `@effect/ai` 0.37 answers each POST with its JSON
 * responses: the server cannot send notifications or ask the person (elicitation) over HTTP; a tool of `ask` waits
 * for the inbox there. Needs the `PendingStore`.
 *
 * @since 0.4.0
 * @category layers
 */
export const layerHttp = (
  options: HttpOptions
): Layer.Layer<ResolveMcp, PendingStoreError | InvalidOptions | HttpServerError, PendingStore> =>
  Layer.unwrapEffect(Effect.gen(function*() {
    yield* checkOptions("ResolveMcp.layerHttp", httpOptionsSpec, options)
    const generated = options.token === undefined
    const token = options.token ?? Redacted.make(randomBytes(32).toString("base64url"))
    const { port: _port, token: _token, ...serverOptions } = options
    const service = Layer.effect(
      ResolveMcp,
      Effect.map(HttpServer.HttpServer, (http) => {
        const port = http.address._tag === "TcpAddress" ? http.address.port : 0
        return ResolveMcp.of({
          session: options.session ?? "mcp",
          transport: "http",
          url: Option.some(`http://127.0.0.1:${port}/mcp`),
          token: Option.some(token),
          generatedToken: generated
        })
      })
    )
    return Layer.mergeAll(
      layerServer(serverInfo(options), layer(serverOptions)),
      service,
      HttpRouter.Default.serve(guard(token))
    ).pipe(
      Layer.provide(RpcServer.layerProtocolHttp({ path: "/mcp" })),
      Layer.provide(RpcSerialization.layerJsonRpc()),
      Layer.provideMerge(NodeHttpServer.layer(createServer, { port: options.port ?? 0, host: "127.0.0.1" })),
      Layer.provide(NodeContext.layer)
    )
  })) as any
