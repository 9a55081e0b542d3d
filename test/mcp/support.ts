/**
 * The MCP server as a client meets it: the bin (`src/cli.ts`, run with `node --import tsx` like the other child
 * processes of the tests) in a real child process, driven by the official MCP client (`@modelcontextprotocol/sdk`)
 * over stdio or Streamable HTTP, on a real workspace and store in a temp directory.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import {
  type CallToolResult,
  ResourceListChangedNotificationSchema,
  ResourceUpdatedNotificationSchema
} from "@modelcontextprotocol/sdk/types.js"
import { Effect } from "effect"
import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"

const repo = path.resolve(import.meta.dirname, "../..")
const cli = path.join(repo, "src/cli.ts")

/** A workspace and a store file in a fresh temp directory, removed with the scope. */
export const workspace = (files: Record<string, string> = { "a.ts": "export const greet = \"hello\"\n" }) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "effect-resolve-mcp-"))
      const root = path.join(dir, "ws")
      fs.mkdirSync(root)
      for (const [name, text] of Object.entries(files)) {
        fs.mkdirSync(path.dirname(path.join(root, name)), { recursive: true })
        fs.writeFileSync(path.join(root, name), text)
      }
      return { dir, root, store: path.join(dir, "pending.db"), read: (name: string) => readOr(path.join(root, name)) }
    }),
    ({ dir }) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
  )

const readOr = (file: string) => fs.existsSync(file) ? fs.readFileSync(file, "utf8") : undefined

/** What a client saw pushed: resource notifications, in order. */
export interface Seen {
  readonly notes: Array<string>
}

/** Waits until `check` holds (polling every 20 ms), or fails after `ms`. */
export const eventually = (check: () => boolean, what: string, ms = 10_000) =>
  Effect.promise(async () => {
    const until = Date.now() + ms
    while (!check()) {
      if (Date.now() > until) throw new Error(`timed out waiting for ${what}`)
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
  })

const watch = (client: Client): Seen => {
  const seen: Seen = { notes: [] }
  client.setNotificationHandler(ResourceListChangedNotificationSchema, () => {
    seen.notes.push("list_changed")
  })
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, (note) => {
    seen.notes.push(`updated ${note.params.uri}`)
  })
  return seen
}

/**
 * The server over stdio: `effect-resolve mcp --root ... --store ... ...args`, with an SDK client connected (its
 * capabilities as given), closed with the scope (which ends the child).
 */
export const stdioClient = (
  root: string,
  store: string,
  args: ReadonlyArray<string> = [],
  options: { readonly capabilities?: ConstructorParameters<typeof Client>[1] } = {}
) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const transport = new StdioClientTransport({
        command: process.execPath,
        args: ["--import", "tsx", cli, "mcp", "--root", root, "--store", store, ...args],
        cwd: repo,
        stderr: "pipe"
      })
      let stderr = ""
      transport.stderr?.on("data", (chunk) => {
        stderr += String(chunk)
      })
      const client = new Client({ name: "effect-resolve-test", version: "1.0.0" }, options.capabilities)
      const seen = watch(client)
      await client.connect(transport)
      return { client, seen, stderr: () => stderr }
    }),
    ({ client }) => Effect.promise(() => client.close())
  )

/** A server process over HTTP: its endpoint and token (as printed on stderr), stopped with the scope. */
export const httpServer = (
  root: string,
  store: string,
  args: ReadonlyArray<string> = [],
  env: Record<string, string> = {}
) =>
  Effect.acquireRelease(
    Effect.promise(() =>
      new Promise<{ child: ChildProcess; url: string; token: string; stderr: () => string }>((resolve, reject) => {
        const child = spawn(
          process.execPath,
          ["--import", "tsx", cli, "mcp", "--root", root, "--store", store, "--http", "0", ...args],
          { cwd: repo, stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, ...env } }
        )
        let stderr = ""
        child.stderr!.on("data", (chunk) => {
          stderr += String(chunk)
          const url = /Streamable HTTP at (\S+)/.exec(stderr)?.[1]
          const token = /bearer token (\S+)/.exec(stderr)?.[1] ?? env.EFFECT_RESOLVE_MCP_TOKEN
          if (url !== undefined && token !== undefined && stderr.includes("ready")) {
            resolve({ child, url, token, stderr: () => stderr })
          }
        })
        child.once("exit", (code) => reject(new Error(`the server exited (${code}): ${stderr}`)))
      })
    ),
    ({ child }) =>
      Effect.promise(() =>
        new Promise<void>((resolve) => {
          if (child.exitCode !== null) return resolve()
          child.once("exit", () => resolve())
          child.kill("SIGTERM")
        })
      )
  )

/** An SDK client over Streamable HTTP with the bearer token, closed with the scope. */
export const httpClient = (url: string, token: string) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const transport = new StreamableHTTPClientTransport(new URL(url), {
        requestInit: { headers: { authorization: `Bearer ${token}` } }
      })
      const client = new Client({ name: "effect-resolve-test", version: "1.0.0" })
      await client.connect(transport)
      return client
    }),
    (client) => Effect.promise(() => client.close())
  )

/** Calls a tool; the result as MCP gives it. */
export const call = (client: Client, name: string, args: Record<string, unknown>) =>
  Effect.promise(() => client.callTool({ name, arguments: args }) as Promise<CallToolResult>)

/** A result's text. */
export const textOf = (result: CallToolResult): string =>
  result.content.map((block) => block.type === "text" ? block.text : "").join("\n")

/** The id a preview's text names. */
export const idOf = (result: CallToolResult): string => {
  const id = /Pending action id: (\S+)/.exec(textOf(result))?.[1]
  if (id === undefined) throw new Error(`no pending action id in: ${textOf(result)}`)
  return id
}

/** The `resolve` tool's strict wire form. */
export const resolveArgs = (action: "apply" | "discard", reason: string, id: string | null = null) => ({
  action,
  reason,
  extra: null,
  id
})

/** An edit of one file, in the tool's strict wire form. */
export const editArgs = (file: string, oldText: string, newText: string) => ({
  files: [{ path: file, edits: [{ oldText, newText, replaceAll: null }] }]
})

/** The pending actions, as the `pending` tool lists them. */
export const pendingOf = (client: Client) =>
  Effect.map(
    call(client, "pending", {}),
    (result) =>
      (result.structuredContent as { readonly actions: ReadonlyArray<{ id: string; status: string; label: string }> })
        .actions
  )
