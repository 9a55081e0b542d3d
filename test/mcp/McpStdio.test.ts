/**
 * The MCP server over stdio, as an MCP client meets it: the bin in a child process (`effect-resolve mcp`), the
 * official client (`@modelcontextprotocol/sdk`), a real workspace and SQLite file in a temp directory. Tools and
 * their strict schemas; an edit previewed, seen as a resource with its notifications, resolved, written once; the
 * server restarted between preview and resolve; a person deciding through elicitation (accept, decline, cancel) or
 * required; plan approval; and the corpus of malformed edit inputs, which change nothing.
 */
import { assert, describe, it } from "@effect/vitest"
import { ElicitRequestSchema, type ElicitResult } from "@modelcontextprotocol/sdk/types.js"
import { Effect } from "effect"
import { readFileSync } from "node:fs"
import * as fs from "node:fs"
import * as path from "node:path"
import { isDeepStrictEqual } from "node:util"
import { expand } from "../support/corpus.js"
import { anthropic, openAiStrict } from "../support/providerSchemas.js"
import { strictViolations } from "../support/strictRules.js"
import { call, editArgs, eventually, idOf, pendingOf, resolveArgs, stdioClient, textOf, workspace } from "./support.js"

const timeout = { timeout: 60_000 }

describe("the MCP server over stdio", () => {
  it.live(
    "lists edit, plan, resolve and pending, each with a strict JSON Schema the providers accept",
    () =>
      Effect.scoped(Effect.gen(function*() {
        const ws = yield* workspace()
        const { client } = yield* stdioClient(ws.root, ws.store)
        const { tools } = yield* Effect.promise(() => client.listTools())
        assert.deepStrictEqual(tools.map((t) => t.name), ["edit", "plan", "resolve", "pending"])
        for (const tool of tools) {
          assert.deepStrictEqual(strictViolations(tool.inputSchema), [], tool.name)
          assert.deepStrictEqual(openAiStrict(tool.inputSchema), [], tool.name)
          assert.deepStrictEqual(anthropic(tool.inputSchema), [], tool.name)
          assert.isString(tool.description)
        }
        const resolve = tools.find((t) => t.name === "resolve")!
        assert.deepStrictEqual(resolve.inputSchema.required, ["action", "reason", "extra", "id"])
        const capabilities = client.getServerCapabilities()
        assert.deepStrictEqual(capabilities?.resources?.listChanged, true)
        const { resourceTemplates } = yield* Effect.promise(() => client.listResourceTemplates())
        assert.deepStrictEqual(resourceTemplates.map((t) => t.uriTemplate), ["effect-resolve://actions/{id}"])
      })),
    timeout
  )

  it.live(
    "an edit previewed is a resource, pushed; resolved, it is written once and leaves the list",
    () =>
      Effect.scoped(Effect.gen(function*() {
        const ws = yield* workspace()
        const { client, seen } = yield* stdioClient(ws.root, ws.store)
        const preview = yield* call(client, "edit", editArgs("a.ts", "\"hello\"", "\"hello, world\""))
        assert.notStrictEqual(preview.isError, true, textOf(preview))
        assert.include(textOf(preview), "Nothing is written yet")
        assert.include(textOf(preview), "+export const greet = \"hello, world\"")
        assert.strictEqual(ws.read("a.ts"), "export const greet = \"hello\"\n")
        const id = idOf(preview)
        const uri = `effect-resolve://actions/${id}`

        yield* eventually(() => seen.notes.includes("list_changed") && seen.notes.includes(`updated ${uri}`), "notes")
        const { resources } = yield* Effect.promise(() => client.listResources())
        assert.deepStrictEqual(resources.map((r) => r.uri), [uri])
        const read = yield* Effect.promise(() => client.readResource({ uri }))
        const view = JSON.parse(textOfResource(read))
        assert.strictEqual(view.status, "pending")
        assert.strictEqual(view.sourceToolName, "edit")
        assert.include(view.preview, "-export const greet = \"hello\"")
        assert.strictEqual(view.diff.files[0].newPath, "a.ts")

        seen.notes.length = 0
        const applied = yield* call(client, "resolve", resolveArgs("apply", "The greeting is what was asked.", id))
        assert.notStrictEqual(applied.isError, true, textOf(applied))
        assert.include(textOf(applied), "Applied")
        assert.strictEqual(ws.read("a.ts"), "export const greet = \"hello, world\"\n")
        yield* eventually(() => seen.notes.includes("list_changed") && seen.notes.includes(`updated ${uri}`), "notes")
        assert.deepStrictEqual((yield* Effect.promise(() => client.listResources())).resources, [])
        const after = JSON.parse(textOfResource(yield* Effect.promise(() => client.readResource({ uri }))))
        assert.strictEqual(after.status, "applied")

        // Applied once: a second resolve is a typed tool error, and the file is as the first apply left it.
        fs.writeFileSync(path.join(ws.root, "a.ts"), "changed by hand\n")
        const again = yield* call(client, "resolve", resolveArgs("apply", "Again.", id))
        assert.strictEqual(again.isError, true)
        assert.strictEqual((again.structuredContent as { error: string }).error, "PendingActionNotPending")
        assert.include(textOf(again), "was already applied")
        assert.strictEqual(ws.read("a.ts"), "changed by hand\n")
      })),
    timeout
  )

  it.live(
    "a restart between preview and resolve keeps the preview; the model resolves it by id",
    () =>
      Effect.scoped(Effect.gen(function*() {
        const ws = yield* workspace()
        const id = yield* Effect.scoped(Effect.gen(function*() {
          const { client } = yield* stdioClient(ws.root, ws.store)
          return idOf(yield* call(client, "edit", editArgs("a.ts", "hello", "bonjour")))
        }))
        assert.strictEqual(ws.read("a.ts"), "export const greet = \"hello\"\n")
        const { client } = yield* stdioClient(ws.root, ws.store)
        assert.deepStrictEqual((yield* pendingOf(client)).map((a) => [a.id, a.status]), [[id, "pending"]])
        const applied = yield* call(client, "resolve", resolveArgs("apply", "Still wanted after the restart.", id))
        assert.notStrictEqual(applied.isError, true, textOf(applied))
        assert.strictEqual(ws.read("a.ts"), "export const greet = \"bonjour\"\n")
        assert.deepStrictEqual(yield* pendingOf(client), [])
      })),
    timeout
  )

  it.live(
    "plan approval: the plan is written and waits; resolve apply approves it",
    () =>
      Effect.scoped(Effect.gen(function*() {
        const ws = yield* workspace()
        const { client } = yield* stdioClient(ws.root, ws.store)
        const planned = yield* call(client, "plan", { plan: "# Rename greet\n\n1. Rename it.\n2. Update callers.\n" })
        assert.notStrictEqual(planned.isError, true, textOf(planned))
        assert.include(textOf(planned), "waits for approval")
        assert.strictEqual(ws.read("PLAN.md"), "# Rename greet\n\n1. Rename it.\n2. Update callers.\n")
        const open = yield* pendingOf(client)
        assert.deepStrictEqual(open.map((a) => a.status), ["pending"])
        const approved = yield* call(client, "resolve", resolveArgs("apply", "The plan is ready."))
        assert.notStrictEqual(approved.isError, true, textOf(approved))
        assert.include(textOf(approved), "Plan approved: Rename-greet")
        assert.deepStrictEqual(yield* pendingOf(client), [])
        const bad = yield* call(client, "plan", { plan: "" })
        assert.strictEqual(bad.isError, true)
        assert.include(textOf(bad), "Call plan with")
      })),
    timeout
  )

  describe("a person decides through the client's prompt (elicitation) for the tools of --ask", () => {
    const withAnswer = (answer: ElicitResult) =>
      Effect.gen(function*() {
        const ws = yield* workspace()
        const { client } = yield* stdioClient(ws.root, ws.store, ["--ask", "edit"], {
          capabilities: { capabilities: { elicitation: {} } }
        })
        const asked: Array<string> = []
        client.setRequestHandler(ElicitRequestSchema, (request) => {
          asked.push(request.params.message)
          return answer
        })
        const result = yield* call(client, "edit", editArgs("a.ts", "hello", "hi"))
        return { ws, client, asked, result }
      })

    it.live("accept applies it with the person's words as the reason", () =>
      Effect.scoped(Effect.gen(function*() {
        const { asked, client, result, ws } = yield* withAnswer({ action: "accept", content: { reason: "Ship it." } })
        assert.lengthOf(asked, 1)
        assert.include(asked[0]!, "-export const greet = \"hello\"")
        assert.notStrictEqual(result.isError, true, textOf(result))
        assert.include(textOf(result), "The person approved it in the client's prompt (Ship it.)")
        assert.include(textOf(result), "Reason: Ship it.")
        assert.strictEqual(ws.read("a.ts"), "export const greet = \"hi\"\n")
        assert.deepStrictEqual(yield* pendingOf(client), [])
      })), timeout)

    it.live("decline discards it", () =>
      Effect.scoped(Effect.gen(function*() {
        const { client, result, ws } = yield* withAnswer({ action: "decline" })
        assert.include(textOf(result), "The person declined it")
        assert.include(textOf(result), "Discarded")
        assert.strictEqual(ws.read("a.ts"), "export const greet = \"hello\"\n")
        assert.deepStrictEqual(yield* pendingOf(client), [])
      })), timeout)

    it.live("cancel leaves it pending; the model's own apply asks again", () =>
      Effect.scoped(Effect.gen(function*() {
        const { asked, client, result, ws } = yield* withAnswer({ action: "cancel" })
        assert.include(textOf(result), "stays pending")
        const id = idOf(result)
        assert.deepStrictEqual((yield* pendingOf(client)).map((a) => a.id), [id])
        assert.strictEqual(ws.read("a.ts"), "export const greet = \"hello\"\n")
        const retry = yield* call(client, "resolve", resolveArgs("apply", "I think it is right.", id))
        assert.lengthOf(asked, 2)
        assert.include(textOf(retry), "stays pending")
        assert.strictEqual(ws.read("a.ts"), "export const greet = \"hello\"\n")
      })), timeout)

    it.live(
      "a client without elicitation: the model may not apply it (PersonRequired), only discard it",
      () =>
        Effect.scoped(Effect.gen(function*() {
          const ws = yield* workspace()
          const { client } = yield* stdioClient(ws.root, ws.store, ["--ask", "edit"])
          const preview = yield* call(client, "edit", editArgs("a.ts", "hello", "hi"))
          assert.include(textOf(preview), "A person decides this preview")
          const id = idOf(preview)
          const refused = yield* call(client, "resolve", resolveArgs("apply", "Looks fine to me."))
          assert.strictEqual(refused.isError, true)
          assert.strictEqual((refused.structuredContent as { error: string }).error, "PersonRequired")
          assert.include(textOf(refused), `The pending action ${id}`)
          assert.include(textOf(refused), "start it with --inbox PORT")
          assert.strictEqual(ws.read("a.ts"), "export const greet = \"hello\"\n")
          const discarded = yield* call(client, "resolve", resolveArgs("discard", "Not needed after all.", id))
          assert.notStrictEqual(discarded.isError, true, textOf(discarded))
          assert.deepStrictEqual(yield* pendingOf(client), [])
        })),
      timeout
    )
  })

  it.live(
    "malformed edit inputs (the corpus) are tool errors with the typed error, and change nothing",
    () =>
      Effect.scoped(Effect.gen(function*() {
        const ws = yield* workspace({ "a.txt": "one one two\nthree\n", "src/b.ts": "export const b = 1\n" })
        const outside = path.join(ws.dir, "outside")
        fs.mkdirSync(outside)
        fs.writeFileSync(path.join(outside, "secret.txt"), "secret\n")
        fs.writeFileSync(path.join(ws.root, "bin.dat"), new Uint8Array([0xff, 0xfe, 0x41, 0x42]))
        fs.mkdirSync(path.join(ws.root, "dir"))
        fs.writeFileSync(path.join(ws.root, "dir", "c.txt"), "c\n")
        fs.symlinkSync(path.join(outside, "secret.txt"), path.join(ws.root, "link-out.txt"))
        fs.symlinkSync(outside, path.join(ws.root, "linkdir"))
        fs.symlinkSync("loop.txt", path.join(ws.root, "loop.txt"))
        const before = snapshot(ws.dir)
        const corpus: { cases: ReadonlyArray<{ name: string; input: unknown; tag: string; message: string }> } = JSON
          .parse(readFileSync(new URL("../corpus/edit-inputs.json", import.meta.url), "utf8"))
        // MCP carries a tool's arguments as a JSON object: the cases whose input is one.
        const cases = corpus.cases
          .map((c) => ({ ...c, input: expand(c.input, outside) }))
          .filter((c) => isJsonObject(c.input))
        assert.isAtLeast(cases.length, 20)
        const { client } = yield* stdioClient(ws.root, ws.store)
        const failures: Array<string> = []
        for (const c of cases) {
          const result = yield* call(client, "edit", c.input as Record<string, unknown>)
          const error = (result.structuredContent as { error?: string } | undefined)?.error
          if (result.isError !== true) failures.push(`${c.name}: accepted`)
          else if (error !== c.tag) failures.push(`${c.name}: ${error}, expected ${c.tag}`)
          else if (!textOf(result).includes(c.message)) failures.push(`${c.name}: "${textOf(result).slice(0, 200)}"`)
        }
        for (const input of [{ action: "apply" }, { action: "apply", reason: 7, extra: null, id: null }, {}]) {
          const result = yield* call(client, "resolve", input)
          if ((result.structuredContent as { error?: string }).error !== "InvalidResolveParams") {
            failures.push(`resolve ${JSON.stringify(input)}: ${textOf(result)}`)
          }
        }
        assert.deepStrictEqual(failures, [])
        assert.deepStrictEqual(yield* pendingOf(client), [])
        assert.deepStrictEqual(snapshot(ws.dir, ["pending.db"]), before)
      })),
    { timeout: 120_000 }
  )
})

const textOfResource = (read: { readonly contents: ReadonlyArray<unknown> }): string =>
  (read.contents[0] as { readonly text: string }).text

/** Whether MCP carries `value` as it is: a JSON object that survives a JSON round trip unchanged. */
const isJsonObject = (value: unknown): boolean => {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false
  try {
    return isDeepStrictEqual(JSON.parse(JSON.stringify(value)), value)
  } catch {
    return false
  }
}

/** Every file under `dir` but the store's (its bytes or link target). */
const snapshot = (dir: string, skip: ReadonlyArray<string> = ["pending.db"]) => {
  const out: Record<string, string> = {}
  for (const entry of (fs.readdirSync(dir, { recursive: true }) as Array<string>).sort()) {
    if (skip.some((s) => entry.startsWith(s))) continue
    const full = path.join(dir, entry)
    const stat = fs.lstatSync(full)
    out[entry] = stat.isSymbolicLink() ?
      `link -> ${fs.readlinkSync(full)}` :
      stat.isDirectory() ?
      "dir" :
      fs.readFileSync(full).toString("hex")
  }
  return out
}
