#!/usr/bin/env node
/**
 * The command line: `effect-resolve mcp --root DIR [--store FILE|URL] [--http PORT] [--inbox PORT] [--session NAME]
 * [--ask edit,plan] [--plan-file PATH]`. It serves the MCP server (`effect-resolve/mcp`) over stdio, or over
 * Streamable HTTP on 127.0.0.1 with `--http`; with `--inbox`, the approval inbox beside it on the same store. Its
 * store is a SQLite file (by default one per workspace under `$XDG_STATE_HOME/effect-resolve`, else
 * `~/.local/state/effect-resolve`), or Postgres with `--store postgres://...`. Messages go to stderr: over stdio,
 * stdout carries only the protocol.
 *
 * @since 0.4.0
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { createHash } from "node:crypto"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { parseArgs } from "node:util"
import { Inbox } from "./inbox/Inbox.js"
import { InboxServer } from "./inbox/InboxServer.js"
import * as ResolveMcp from "./mcp/ResolveMcp.js"
import * as FileEditPreview from "./producers/FileEditPreview.js"
import * as PlanApproval from "./producers/PlanApproval.js"
import type { PendingStore } from "./services/PendingStore.js"

const usage = `Usage: effect-resolve mcp --root DIR [options]

Serves staged, commit-exact edits and plan approval to an MCP client (stdio by default).

  --root DIR        the workspace; every edit is confined to it (required)
  --store FILE|URL  a SQLite file, or postgres://... (default: a SQLite file per workspace under
                    $XDG_STATE_HOME/effect-resolve or ~/.local/state/effect-resolve)
  --http PORT       serve Streamable HTTP on 127.0.0.1:PORT/mcp instead of stdio (0: any free port); clients send
                    "Authorization: Bearer <token>": the token of EFFECT_RESOLVE_MCP_TOKEN, else one generated and
                    printed to stderr
  --inbox PORT      serve the approval inbox on 127.0.0.1:PORT too (its login link goes to stderr)
  --session NAME    the durable session (default "mcp")
  --ask TOOLS       tools whose previews a person decides, comma-separated: edit, plan
  --plan-file PATH  where the plan tool writes the plan (default PLAN.md in the root)
  --help            this text
`

const fail = (message: string): never => {
  process.stderr.write(`effect-resolve: ${message}\n\n${usage}`)
  process.exit(2)
}

const portOf = (name: string, value: string | undefined): number | undefined => {
  if (value === undefined) return undefined
  const port = Number(value)
  return Number.isInteger(port) && port >= 0 && port <= 65_535 && /^\d+$/.test(value) ?
    port :
    fail(`--${name} must be a port number from 0 to 65535, got ${JSON.stringify(value)}.`)
}

const parse = (argv: ReadonlyArray<string>) => {
  const [command, ...rest] = argv
  if (command === "--help" || command === "-h") {
    process.stdout.write(usage)
    process.exit(0)
  }
  if (command !== "mcp") {
    fail(command === undefined ? "name a command: mcp." : `unknown command ${JSON.stringify(command)}.`)
  }
  const parsed = (() => {
    try {
      return parseArgs({
        args: [...rest],
        options: {
          root: { type: "string" },
          store: { type: "string" },
          http: { type: "string" },
          inbox: { type: "string" },
          session: { type: "string" },
          ask: { type: "string" },
          "plan-file": { type: "string" },
          help: { type: "boolean" }
        },
        strict: true,
        allowPositionals: false
      }).values
    } catch (error) {
      return fail(error instanceof Error ? `${error.message}.` : String(error))
    }
  })()
  if (parsed.help === true) {
    process.stdout.write(usage)
    process.exit(0)
  }
  const root = parsed.root ?? fail("--root DIR is required: the workspace the edits are confined to.")
  if (!fs.existsSync(root) || !fs.statSync(root).isDirectory()) {
    fail(`--root ${JSON.stringify(root)} is not a directory.`)
  }
  const ask = parsed.ask === undefined ? [] : parsed.ask.split(",").map((tool) => tool.trim()).filter((t) => t !== "")
  for (const tool of ask) {
    if (tool !== "edit" && tool !== "plan") fail(`--ask names ${JSON.stringify(tool)}; the tools are edit and plan.`)
  }
  return {
    root: path.resolve(root),
    store: parsed.store,
    http: portOf("http", parsed.http),
    inbox: portOf("inbox", parsed.inbox),
    session: parsed.session,
    ask: ask as ReadonlyArray<ResolveMcp.AskTool>,
    planFile: parsed["plan-file"]
  }
}

/** The default store: one SQLite file per workspace, outside it (the model's edits never reach it). */
const defaultStore = (root: string): string => {
  const state = process.env.XDG_STATE_HOME !== undefined && process.env.XDG_STATE_HOME !== "" ?
    process.env.XDG_STATE_HOME :
    path.join(os.homedir(), ".local", "state")
  const dir = path.join(state, "effect-resolve")
  fs.mkdirSync(dir, { recursive: true })
  const slug = path.basename(root).replace(/[^A-Za-z0-9_-]/g, "") || "root"
  return path.join(dir, `mcp-${slug}-${createHash("sha256").update(root).digest("hex").slice(0, 12)}.db`)
}

const storeLayer = async (store: string): Promise<Layer.Layer<PendingStore, unknown>> => {
  if (/^postgres(ql)?:\/\//.test(store)) {
    const { layer } = await import("./stores/PostgresStore.js")
    return layer({ url: Redacted.make(store) })
  }
  const { layer } = await import("./stores/SqliteStore.js")
  return layer({ filename: path.resolve(store) })
}

const main = async () => {
  const args = parse(process.argv.slice(2))
  const storeName = args.store ?? defaultStore(args.root)
  const store = await storeLayer(storeName)
  const options: ResolveMcp.Options = {
    root: args.root,
    ask: args.ask,
    ...(args.session === undefined ? {} : { session: args.session }),
    ...(args.planFile === undefined ? {} : { planFile: args.planFile })
  }
  const envToken = process.env.EFFECT_RESOLVE_MCP_TOKEN
  const server: Layer.Layer<ResolveMcp.ResolveMcp, unknown, PendingStore | InboxServer> = args.http === undefined ?
    ResolveMcp.layerStdio(options) :
    ResolveMcp.layerHttp({
      ...options,
      port: args.http,
      ...(envToken === undefined || envToken === "" ? {} : { token: Redacted.make(envToken) })
    })
  const inbox = args.inbox === undefined ?
    Layer.empty :
    InboxServer.layer({ port: args.inbox }).pipe(
      Layer.provideMerge(Inbox.layer({ kinds: [FileEditPreview.kind, PlanApproval.kind] })),
      Layer.provide(Layer.mergeAll(
        FileEditPreview.layer({ root: args.root }),
        Layer.succeed(PlanApproval.Approver, PlanApproval.autoApprove),
        NodeContext.layer
      ))
    )
  const announce = Effect.gen(function*() {
    const mcp = yield* ResolveMcp.ResolveMcp
    const say = (line: string) => Effect.sync(() => process.stderr.write(`${line}\n`))
    yield* say(`effect-resolve mcp: workspace ${args.root}, store ${storeName.replace(/\/\/[^@/]*@/, "//***@")}`)
    if (Option.isSome(mcp.url)) {
      yield* say(`effect-resolve mcp: Streamable HTTP at ${mcp.url.value}`)
      if (mcp.generatedToken && Option.isSome(mcp.token)) {
        yield* say(`effect-resolve mcp: bearer token ${Redacted.value(mcp.token.value)}`)
      }
    }
    const inboxServer = yield* Effect.serviceOption(InboxServer)
    if (Option.isSome(inboxServer)) {
      yield* say(`effect-resolve mcp: approval inbox at ${inboxServer.value.url}`)
      yield* say(`effect-resolve mcp: open ${yield* inboxServer.value.loginLink()} to log in (once)`)
    }
    yield* say("effect-resolve mcp: ready")
    return yield* Effect.never
  })
  const program = announce.pipe(
    Effect.provide(Layer.provideMerge(server, inbox).pipe(Layer.provide(store))),
    Effect.tapErrorCause((cause) => Effect.sync(() => process.stderr.write(`effect-resolve mcp: ${cause}\n`)))
  )
  NodeRuntime.runMain(program as Effect.Effect<never, unknown>, { disableErrorReporting: true })
}

void main()
