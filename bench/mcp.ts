/**
 * The MCP server's row of `npm run bench`: one preview + resolve round trip (`edit`, then `resolve` apply by id)
 * through the stdio server (`dist/cli.js mcp`, a child process driven by the official MCP client), against the same
 * two calls in process (`FileEditPreview.tool.execute`, `ResolveTool.execute`) on a durable session over a SQLite
 * file: what the protocol, the process boundary and the server's bookkeeping add to the library's own work.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { FileEditPreview } from "../dist/edit.js"
import { ResolveRuntime, ResolveTool, ToolResult } from "../dist/index.js"
import * as SqliteStore from "../dist/stores/SqliteStore.js"
import { median, type Row } from "./harness.js"

const ms = (value: number) => `${value < 10 ? value.toFixed(2) : value.toFixed(1)} ms`
const cli = path.resolve(import.meta.dirname, "../dist/cli.js")

const workspace = () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "effect-resolve-bench-mcp-"))
  const root = path.join(dir, "ws")
  fs.mkdirSync(root)
  fs.writeFileSync(path.join(root, "a.ts"), "export const n = 0\n")
  return { dir, root, store: path.join(dir, "pending.db") }
}

const editArgs = (i: number) => ({
  files: [{ path: "a.ts", edits: [{ oldText: `n = ${i}`, newText: `n = ${i + 1}`, replaceAll: null }] }]
})
const idIn = (text: string) => /Pending action id: (\S+)/.exec(text)![1]!

export const mcpFigures = async (options: { readonly quick: boolean; readonly verdict: (ok: boolean) => string }) => {
  const rounds = options.quick ? 10 : 200
  // Through the stdio server.
  const remote = workspace()
  const client = new Client({ name: "bench", version: "1" })
  await client.connect(
    new StdioClientTransport({
      command: process.execPath,
      args: [cli, "mcp", "--root", remote.root, "--store", remote.store],
      stderr: "ignore"
    })
  )
  const text = (result: unknown) => (result as { content: Array<{ text: string }> }).content[0]!.text
  const served: Array<number> = []
  try {
    for (let i = 0; i < rounds; i++) {
      const start = performance.now()
      const preview = await client.callTool({ name: "edit", arguments: editArgs(i) })
      const id = idIn(text(preview))
      const applied = await client.callTool({
        name: "resolve",
        arguments: { action: "apply", reason: "Bench.", extra: null, id }
      })
      if (applied.isError === true) throw new Error(text(applied))
      served.push(performance.now() - start)
    }
  } finally {
    await client.close()
    fs.rmSync(remote.dir, { recursive: true, force: true })
  }
  // The same calls in process.
  const local = workspace()
  const runtime = ManagedRuntime.make(
    ResolveRuntime.layerDurable({ session: "mcp", kinds: [FileEditPreview.kind] }).pipe(
      Layer.provideMerge(SqliteStore.layer({ filename: local.store })),
      Layer.provideMerge(Layer.merge(FileEditPreview.layer({ root: local.root }), NodeContext.layer))
    )
  )
  const inProcess: Array<number> = []
  try {
    for (let i = 0; i < rounds; i++) {
      const start = performance.now()
      await runtime.runPromise(Effect.gen(function*() {
        const preview = yield* FileEditPreview.tool.execute(editArgs(i))
        const id = idIn(ToolResult.textOf(preview))
        yield* ResolveTool.execute({ action: "apply", reason: "Bench.", extra: null, id })
      }))
      inProcess.push(performance.now() - start)
    }
  } finally {
    await runtime.dispose()
    fs.rmSync(local.dir, { recursive: true, force: true })
  }
  const value = median(served)
  const floor = median(inProcess)
  // The protocol adds JSON-RPC over a pipe, the server's argument decoding and its resource bookkeeping.
  const ok = value <= 3 * floor + 5
  const rows: Array<Row> = [{
    name: "mcp preview + resolve",
    figure:
      `MCP server over stdio: edit (preview) then resolve apply by id, one round trip each, median of ${rounds}, ` +
      "SQLite; floor: the same two calls in process on the same kind of session",
    value: ms(value),
    floor: `${ms(floor)} (in process)`,
    plain: "—",
    vsFloor: `${(value / floor).toFixed(2)}×`,
    vsPlain: "—",
    target: `≤ 3× floor + 5 ms: ${options.verdict(ok)}`
  }]
  return { rows, missed: ok ? [] : ["mcp preview + resolve"] }
}
