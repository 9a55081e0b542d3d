/**
 * The approval inbox's page in a real browser (Debian's chromium through playwright-core), against a real inbox
 * server on a SQLite file, with an agent session in another process (test/support/inboxWorker.ts) staging previews:
 * an edit appears on the open page without a reload, a click applies it and the file changes on disk; an edit
 * before apply writes the amended text; hostile previews render inert (no dialog, no script, the page's text equals
 * the preview); 10 000 pending actions; a phone's screen; the keyboard. Screenshots go to test-artifacts/.
 */
import * as Reactivity from "@effect/experimental/Reactivity"
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as LibsqlClient from "@effect/sql-libsql/LibsqlClient"
import { afterAll, afterEach, assert, beforeAll, describe, it } from "@effect/vitest"
import { Effect, Layer, Option } from "effect"
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as readline from "node:readline"
import type { Browser, BrowserContext, Page } from "playwright-core"
import { FileEditPreview } from "../../src/edit.js"
import * as SqliteStore from "../../src/stores/SqliteStore.js"
import { browserSkipReason, launch, screenshotPath } from "../support/browser.js"
import { get, noteKind, post, type Running, startInbox, tokens } from "../support/inbox.js"

const skip = browserSkipReason()
const root = path.resolve(import.meta.dirname, "../..")

interface Worker {
  readonly ask: (command: Record<string, unknown>) => Promise<any>
  readonly stop: () => Promise<void>
}

let tags = 0

/** Agent sessions in another process, on the same SQLite file. */
const startWorker = async (file: string, workspace: string, log: string): Promise<Worker> => {
  const child: ChildProcessWithoutNullStreams = spawn(
    process.execPath,
    ["--import", "tsx", "test/support/inboxWorker.ts", file, workspace, log],
    { cwd: root }
  )
  let stderr = ""
  child.stderr.on("data", (chunk) => (stderr += String(chunk)))
  const waiting = new Map<number | undefined, (message: any) => void>()
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()))
  const failed = exited.then(() => {
    throw new Error(`the worker exited: ${stderr}`)
  })
  failed.catch(() => {})
  readline.createInterface({ input: child.stdout }).on("line", (line) => {
    const message = JSON.parse(line)
    const resolve = waiting.get(message.tag)
    waiting.delete(message.tag)
    resolve?.(message)
  })
  await Promise.race([new Promise((resolve) => waiting.set(undefined, resolve)), failed])
  return {
    ask: (command) => {
      const tag = ++tags
      const answer = new Promise<any>((resolve) => waiting.set(tag, resolve))
      child.stdin.write(JSON.stringify({ ...command, tag }) + "\n")
      return Promise.race([answer, failed])
    },
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill("SIGKILL")
        await exited
      }
    }
  }
}

interface Setup {
  readonly dir: string
  readonly file: string
  readonly workspace: string
  readonly log: string
  readonly inbox: Running
}

/** An inbox on a fresh SQLite file, registering the edit and note kinds. */
const setUp = async (): Promise<Setup> => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "effect-resolve-inbox-browser-"))
  const workspace = path.join(dir, "workspace")
  fs.mkdirSync(workspace)
  const file = path.join(dir, "pending.db")
  const log = path.join(dir, "notes.log")
  fs.writeFileSync(log, "")
  const inbox = await startInbox({
    store: SqliteStore.layer({ filename: file }),
    kinds: [FileEditPreview.kind, noteKind(log)],
    requirements: Layer.mergeAll(FileEditPreview.layer({ root: workspace }), NodeContext.layer)
  })
  return { dir, file, workspace, log, inbox }
}

const tearDown = async (setup: Setup) => {
  await setup.inbox.close()
  fs.rmSync(setup.dir, { recursive: true, force: true })
}

/** The browser contexts a test opened: closed after it, whatever happened. */
const opened: Array<BrowserContext> = []

/**
 * A page logged in with a one-time link, recording dialogs, page errors and console errors; then at `/` with
 * `search` (by default an apply waits 300 ms in its undo window, not 5 s).
 */
const openPage = async (
  browser: Browser,
  setup: Setup,
  options: Parameters<Browser["newContext"]>[0] = { viewport: { width: 1280, height: 800 } },
  reviewer = "ann",
  search = "?applyDelay=300"
) => {
  const context: BrowserContext = await browser.newContext(options)
  opened.push(context)
  // Every wait fails within 30 s instead of running into the test's timeout.
  context.setDefaultTimeout(30_000)
  const page: Page = await context.newPage()
  const dialogs: Array<string> = []
  const errors: Array<string> = []
  page.on("dialog", (dialog) => {
    dialogs.push(dialog.message())
    void dialog.dismiss()
  })
  page.on("pageerror", (error) => errors.push(error.message))
  page.on("console", (message) => {
    if (message.type() === "error") errors.push(message.text())
  })
  const link = await Effect.runPromise(setup.inbox.server.loginLink(reviewer))
  await page.goto(link)
  assert.strictEqual(new URL(page.url()).pathname, "/")
  if (search !== "") await page.goto(new URL(search, page.url()).href)
  await page.locator("#live.on").waitFor({ timeout: 30_000 })
  return { context, page, dialogs, errors }
}

const item = (page: Page, id: string) => page.locator(`.item[data-id="${id}"]`)

/** How many times `text` shows in the detail pane (its rendered text: hidden and collapsed parts do not count). */
const countText = (page: Page, text: string) =>
  page.evaluate((wanted) => document.getElementById("detail")!.innerText.split(wanted).length - 1, text)

/** The checkbox that selects an action for a batch. */
const pick = (page: Page, id: string) => page.locator(`.pick[data-id="${id}"]`)

/** Every state-changing request the page sends to the API, with its JSON body and when it left. */
const recordPosts = (page: Page) => {
  const posts: Array<{ path: string; body: unknown; at: number }> = []
  page.on("request", (request) => {
    const url = new URL(request.url())
    if (request.method() === "POST" && url.pathname.startsWith("/api/") && url.pathname !== "/api/logout") {
      posts.push({ path: url.pathname, body: request.postDataJSON(), at: Date.now() })
    }
  })
  return posts
}

/** Pending note records written straight into the SQLite file (as another process would), with a given age. */
const insert = (
  file: string,
  rows: ReadonlyArray<{ id: string; session: string; label: string; preview: string; createdAt: number }>
) =>
  Effect.runPromise(
    Effect.flatMap(LibsqlClient.LibsqlClient, (sql) =>
      Effect.forEach(rows, (row) =>
        sql`INSERT INTO effect_resolve_pending (id, session, kind, label, source_tool_name, stager, preview, payload,
          status, attempts, created_at, updated_at)
          VALUES (${row.id}, ${row.session}, 'note', ${row.label}, 'note', NULL, ${row.preview}, '{"text":"glance"}',
          'pending', 0, ${row.createdAt}, ${row.createdAt})`)).pipe(
        Effect.scoped,
        Effect.provide(LibsqlClient.layer({ url: `file:${file}` }).pipe(Layer.provide(Reactivity.layer)))
      )
  )

describe.skipIf(skip !== undefined)(
  `the inbox's page in chromium${skip === undefined ? "" : ` (SKIPPED: ${skip})`}`,
  () => {
    // One browser, one inbox and one agent process for the file (starting a process takes seconds on a busy
    // machine); each test stages into its own session and finds its actions by id.
    let browser: Browser
    let setup: Setup
    let worker: Worker
    beforeAll(async () => {
      browser = await launch()
      setup = await setUp()
      worker = await startWorker(setup.file, setup.workspace, setup.log)
    }, 180_000)

    it(
      "respond sends the reviewer's text to the agent and leaves the action pending; the pane says when it was read",
      async () => {
        const { id } = await worker.ask({
          op: "note",
          session: "agent-respond",
          text: "respond",
          label: "Note: rename the module",
          preview: "rename src/a.ts to src/b.ts"
        })
        assert.isString(id)
        const { dialogs, errors, page } = await openPage(browser, setup)
        const posts = recordPosts(page)
        await item(page, id).click()
        await page.locator("#d-label", { hasText: "Note: rename the module" }).waitFor()
        assert.isFalse(await page.locator("#d-responses").isVisible(), "no responses yet")
        // An empty box sends nothing.
        await page.click("#respond")
        await page.locator("#d-result.error", { hasText: "Nothing was sent" }).waitFor()
        assert.deepStrictEqual(posts, [])
        await page.fill("#reason", "Call it b2.ts instead; b.ts is taken.")
        await page.keyboard.press("Escape")
        await page.keyboard.press("m")
        await page.locator("#d-result", { hasText: "Sent to the agent; the action stays pending." }).waitFor()
        assert.deepStrictEqual(posts.map((p) => p.body), [{
          action: "respond",
          message: "Call it b2.ts instead; b.ts is taken."
        }])
        await page.locator("#d-responses", { hasText: "ann responded just now: Call it b2.ts instead; b.ts is taken." })
          .waitFor()
        assert.include(await page.locator("#d-responses").textContent(), "not yet read by the agent")
        assert.strictEqual(await page.inputValue("#reason"), "", "the box is emptied")
        // Still pending, still decidable: nothing was applied or discarded, and no decision recorded.
        assert.isFalse(await page.locator("#apply").isDisabled())
        assert.isFalse(await page.locator("#d-settled").isVisible())
        const record = Option.getOrThrow(await Effect.runPromise(setup.inbox.store.get(id)))
        assert.strictEqual(record.status, "pending")
        assert.deepStrictEqual(await Effect.runPromise(setup.inbox.store.decisions(id)), [])
        const [response] = await Effect.runPromise(setup.inbox.store.responses(id))
        assert.deepStrictEqual([response!.reviewer, response!.message], [
          "ann",
          "Call it b2.ts instead; b.ts is taken."
        ])
        await page.screenshot({ path: screenshotPath("inbox-respond.png") })
        // The session's save marks it delivered (test/inbox/SessionPickup.test.ts); the open pane follows.
        await Effect.runPromise(setup.inbox.store.markDelivered({ ids: [response!.id], now: Date.now() }))
        await page.locator("#d-responses", { hasText: "(read by the agent)" }).waitFor({ timeout: 30_000 })
        assert.deepStrictEqual(dialogs, [])
        assert.deepStrictEqual(errors, [])
      },
      180_000
    )
    afterEach(async () => {
      for (const context of opened.splice(0)) await context.close().catch(() => {})
    })
    afterAll(async () => {
      await worker?.stop()
      if (setup !== undefined) await tearDown(setup)
      await browser?.close()
    })

    it("another process's edit appears without a reload; a click applies it; the file changes on disk", async () => {
      {
        fs.writeFileSync(path.join(setup.workspace, "greeting.txt"), "hello\n")
        const { context, dialogs, errors, page } = await openPage(browser, setup)
        await page.evaluate(() => ((window as any).__sameDocument = true))
        const before = Number(await page.locator("#badge").textContent())

        const { id } = await worker.ask({
          op: "edit",
          session: "agent-edit",
          path: "greeting.txt",
          oldText: "hello",
          newText: "hello, world"
        })
        assert.isString(id)
        await item(page, id).waitFor({ timeout: 30_000 })
        await page.locator("#badge", { hasText: String(before + 1) }).waitFor()
        assert.isTrue(await page.evaluate(() => (window as any).__sameDocument === true), "no reload")
        assert.strictEqual(await page.title(), `(${before + 1}) Approval inbox`)
        await page.screenshot({ path: screenshotPath("inbox-list.png") })

        // The row names the file with its line counts, the session and the age.
        assert.strictEqual(await item(page, id).locator(".files").textContent(), "greeting.txt +1 \u22121")
        assert.strictEqual(await item(page, id).locator(".session").textContent(), "agent-edit")
        assert.strictEqual(await item(page, id).locator(".age").textContent(), "just now")

        await item(page, id).click()
        await page.locator("#d-label", { hasText: "Edit: 1 replacement in 1 file" }).waitFor()
        assert.deepStrictEqual(await page.locator("#d-diff .path").allTextContents(), ["greeting.txt"])
        // Diff first: before the decision box and the metadata, in the page's order and on the screen.
        const order = await page.evaluate(() => {
          const [diff, decide, meta] = ["d-diff", "d-decide", "d-meta"].map((id) => document.getElementById(id)!)
          const follows = (a: Element, b: Element) =>
            (a.compareDocumentPosition(b) & Node.DOCUMENT_POSITION_FOLLOWING) !== 0
          const top = (e: Element) => e.getBoundingClientRect().top
          return {
            inOrder: follows(diff!, decide!) && follows(decide!, meta!),
            onScreen: top(diff!) < top(decide!) && top(decide!) < top(meta!)
          }
        })
        assert.deepStrictEqual(order, { inOrder: true, onScreen: true })
        assert.deepStrictEqual(await page.locator("#d-diff .line.remove .text").allTextContents(), ["hello"])
        assert.deepStrictEqual(await page.locator("#d-diff .line.add .text").allTextContents(), ["hello, world"])
        await page.fill("#reason", "Greets the world, as asked.")
        await page.screenshot({ path: screenshotPath("inbox-detail.png") })
        await page.click("#apply")
        await page.locator("#d-settled", { hasText: "Applied by ann: Greets the world, as asked." }).waitFor({
          timeout: 30_000
        })
        // Settled: nothing left to press, and the outcome said once.
        for (const gone of ["#apply", "#discard", "#reason", "#edit", "#snooze"]) {
          assert.isFalse(await page.locator(gone).isVisible(), `${gone} is gone`)
        }
        assert.strictEqual(await countText(page, "Applied by"), 1)

        assert.strictEqual(fs.readFileSync(path.join(setup.workspace, "greeting.txt"), "utf8"), "hello, world\n")
        const record = Option.getOrThrow(await Effect.runPromise(setup.inbox.store.get(id)))
        assert.strictEqual(record.status, "applied")
        const [decision] = await Effect.runPromise(setup.inbox.store.decisions(id))
        assert.deepStrictEqual(
          [decision!.reviewer, decision!.action, decision!.reason, decision!.state],
          ["ann", "apply", "Greets the world, as asked.", "done"]
        )
        await page.locator("#badge", { hasText: String(before) }).waitFor()
        // The agent's session reads the store before its next turn: the action is no longer open there (its forcing
        // ends). The model hears of it in its next request: test/inbox/SessionPickup.test.ts.
        assert.deepStrictEqual((await worker.ask({ op: "open", session: "agent-edit" })).actions, [])
        assert.deepStrictEqual(dialogs, [])
        assert.deepStrictEqual(errors, [])
        await context.close()
      }
    }, 180_000)

    it(
      "edit before apply: the reviewer's amended text is what is written (JSON for a note, a text box per file for an edit)",
      async () => {
        {
          const { context, errors, page } = await openPage(browser, setup)
          const { id } = await worker.ask({
            op: "note",
            session: "agent-amend",
            text: "as staged",
            label: "Note: remember",
            preview: "+ as staged"
          })
          await item(page, id).click()
          await page.locator("#d-label", { hasText: "Note: remember" }).waitFor()
          await page.keyboard.press("e")
          await page.locator("#amendment").waitFor()
          await page.fill("#amendment", JSON.stringify({ text: "as amended by ann" }))
          await page.fill("#reason", "Better wording.")
          await page.click("#apply")
          await page.locator("#d-settled", { hasText: "Applied by ann: Better wording." }).waitFor({ timeout: 30_000 })
          // What applying returned is one click away, not said a second time.
          assert.strictEqual(await countText(page, "Better wording."), 1)
          await page.locator("#d-settled-more summary").click()
          await page.locator("#d-settled-note", { hasText: "Noted as amended by ann" }).waitFor()
          assert.include(fs.readFileSync(setup.log, "utf8").split("\n"), "as amended by ann")
          const [decision] = await Effect.runPromise(setup.inbox.store.decisions(id))
          assert.deepStrictEqual(decision!.amendment, { text: "as amended by ann" })
          // An edit: one text box per file, holding the text the preview would write; only what changed is sent.
          fs.writeFileSync(path.join(setup.workspace, "draft.txt"), "one\ntwo\n")
          const { id: edited } = await worker.ask({
            op: "edit",
            session: "agent-amend-file",
            path: "draft.txt",
            oldText: "two",
            newText: "2"
          })
          await item(page, edited).click()
          await page.locator("#d-label", { hasText: "Edit: 1 replacement in 1 file" }).waitFor()
          await page.keyboard.press("e")
          const box = page.locator("#amend-files textarea[data-path=\"draft.txt\"]")
          await box.waitFor()
          assert.strictEqual(await box.inputValue(), "one\n2\n")
          assert.isFalse(await page.locator("#amendment").isVisible(), "no JSON for a file-by-file draft")
          await page.screenshot({ path: screenshotPath("inbox-edit-before-apply.png") })
          await box.fill("one\ntwo, as the reviewer wrote it\n")
          await page.fill("#reason", "Clearer.")
          await page.click("#apply")
          await page.locator("#d-settled", { hasText: "Applied by ann: Clearer." }).waitFor({ timeout: 30_000 })
          assert.strictEqual(
            fs.readFileSync(path.join(setup.workspace, "draft.txt"), "utf8"),
            "one\ntwo, as the reviewer wrote it\n"
          )
          const [fileDecision] = await Effect.runPromise(setup.inbox.store.decisions(edited))
          assert.deepStrictEqual(fileDecision!.amendment, {
            files: [{ path: "draft.txt", text: "one\ntwo, as the reviewer wrote it\n" }]
          })
          // An amendment the kind refuses is shown as an error, and nothing is recorded.
          const { id: other } = await worker.ask({
            op: "note",
            session: "agent-amend",
            text: "x",
            label: "Note: other",
            preview: "+ x"
          })
          await item(page, other).click()
          await page.locator("#d-label", { hasText: "Note: other" }).waitFor()
          await page.keyboard.press("e")
          await page.fill("#amendment", JSON.stringify({ text: 42 }))
          await page.fill("#reason", "A number instead.")
          await page.click("#apply")
          await page.locator("#d-result.error", { hasText: "does not match" }).waitFor()
          assert.deepStrictEqual(await Effect.runPromise(setup.inbox.store.decisions(other)), [])
          assert.deepStrictEqual(errors.filter((e) => !e.includes("422")), [])
          await context.close()
        }
      },
      180_000
    )

    it(
      "a refused (stale) edit before apply keeps the reviewer's text: reopened, elsewhere and back, until discarded or applied",
      async () => {
        {
          const { context, errors, page } = await openPage(browser, setup)
          const file = path.join(setup.workspace, "kept.txt")
          fs.writeFileSync(file, "alpha\nbeta\n")
          const { id } = await worker.ask({
            op: "edit",
            session: "agent-kept",
            path: "kept.txt",
            oldText: "beta",
            newText: "BETA"
          })
          const { id: other } = await worker.ask({
            op: "note",
            session: "agent-kept",
            text: "other",
            label: "Note: kept elsewhere",
            preview: "+ other"
          })
          await item(page, id).click()
          await page.locator("#d-label", { hasText: "Edit: 1 replacement in 1 file" }).waitFor()
          const box = page.locator("#amend-files textarea[data-path=\"kept.txt\"]")
          // No reason: nothing is sent, and the page asks for one (it never writes one for the reviewer).
          await page.click("#apply")
          await page.locator("#d-result.error", { hasText: "Write a reason first" }).waitFor()
          assert.deepStrictEqual(await Effect.runPromise(setup.inbox.store.decisions(id)), [])
          await page.keyboard.press("Escape")
          await page.keyboard.press("e")
          await box.waitFor()
          assert.strictEqual(await box.inputValue(), "alpha\nBETA\n")
          const mine = "alpha\nbeta, as the reviewer wrote it\n"
          await box.fill(mine)
          await page.fill("#reason", "My wording.")
          // The file changes under the preview: the apply is refused as stale, nothing is written.
          fs.writeFileSync(file, "alpha\nbeta\ngamma\n")
          await page.click("#apply")
          await page.locator("#d-result.error", { hasText: "stale" }).waitFor({ timeout: 30_000 })
          assert.strictEqual(fs.readFileSync(file, "utf8"), "alpha\nbeta\ngamma\n")
          assert.strictEqual(await box.inputValue(), mine, "the editor stays open with the reviewer's text")
          assert.strictEqual(await page.inputValue("#reason"), "My wording.")
          // Closing and reopening the editor keeps it (it was refilled from the draft).
          await page.locator("#d-decisions li", { hasText: "failed" }).waitFor({ state: "attached" })
          await page.keyboard.press("Escape")
          await page.keyboard.press("e")
          await box.waitFor({ state: "hidden" })
          await page.keyboard.press("e")
          await box.waitFor()
          assert.strictEqual(await box.inputValue(), mine)
          // So does looking at another action and coming back.
          await item(page, other).click()
          await page.locator("#d-label", { hasText: "Note: kept elsewhere" }).waitFor()
          await item(page, id).click()
          await page.locator("#d-label", { hasText: "Edit: 1 replacement in 1 file" }).waitFor()
          await page.keyboard.press("e")
          await box.waitFor()
          assert.strictEqual(await box.inputValue(), mine)
          // Discarding the changes starts from the draft again; typing them again and applying writes them.
          await page.click("#amend-reset")
          assert.strictEqual(await box.inputValue(), "alpha\nBETA\n")
          await box.fill(mine)
          fs.writeFileSync(file, "alpha\nbeta\n")
          await page.fill("#reason", "My wording, again.")
          await page.click("#apply")
          await page.locator("#d-settled", { hasText: "Applied by ann: My wording, again." }).waitFor({
            timeout: 30_000
          })
          assert.strictEqual(fs.readFileSync(file, "utf8"), mine)
          const decisions = await Effect.runPromise(setup.inbox.store.decisions(id))
          assert.deepStrictEqual(decisions.map((d) => [d.reason, d.state]), [["My wording.", "failed"], [
            "My wording, again.",
            "done"
          ]])
          assert.deepStrictEqual(errors, [])
          await context.close()
        }
      },
      180_000
    )

    it(
      "hostile previews render inert: no dialog, no script, no element; the page's text equals the preview",
      async () => {
        {
          const { context, dialogs, errors, page } = await openPage(browser, setup)
          const mib = Array.from(
            { length: 16_384 },
            (_, i) => `line ${String(i).padStart(5, "0")} <b>${"x".repeat(49)}\n`
          )
            .join("")
          const hostile: ReadonlyArray<readonly [string, string]> = [
            ["<script>window.__pwned = 1; alert('script')</script>", "<script>window.__pwned = 2</script>"],
            ["<img src=x onerror=\"window.__pwned = 3; alert('img')\">", "<img src=x onerror=\"alert('img')\">"],
            [
              "<a href=\"javascript:alert('link')\">click me</a>",
              "[click](javascript:alert('link'))\n<a href=\"javascript:alert(1)\">x</a>"
            ],
            ["safe\u202Etxt.exe\u202C and \u2066isolated\u2069", "if (admin\u202E) {\u202C // check\n"],
            [
              "\u001b[31mred\u001b[0m \u001b]8;;http://evil\u0007link\u001b]8;;\u0007",
              "\u001b[2J\u001b[Hcleared \u0007 \u007f \u009b"
            ],
            [
              "Edit: <iframe src=x>",
              "--- a/<img src=x onerror=alert(1)>\n+++ b/<script>alert(2)</script>\n@@ -1,1 +1,1 @@\n-<b>old</b>\n+<img src=x onerror=alert(3)>\n"
            ],
            ["a 1 MiB preview", mib],
            [
              "Edit: quoted names, a NUL",
              "--- \"a/x\\342\\200\\256y\\\"q.txt\"\n+++ \"b/x\\342\\200\\256y\\\"q.txt\"\n@@ -1,2 +1,2 @@\n header\u0000\n-change me\n+changed\n"
            ]
          ]
          const ids: Array<string> = []
          for (const [label, preview] of hostile) {
            ids.push((await worker.ask({ op: "note", session: "agent-hostile", text: "t", label, preview })).id)
          }
          await item(page, ids.at(-1)!).waitFor({ timeout: 30_000 })
          // The list shows every label as text.
          for (const [i, [label]] of hostile.entries()) {
            assert.strictEqual(await item(page, ids[i]!).locator(".label").textContent(), label)
          }
          for (const [i, [label, preview]] of hostile.entries()) {
            await item(page, ids[i]!).click()
            await page.waitForFunction((id) => {
              const detail = document.getElementById("d-meta")
              return detail !== null &&
                document.querySelector(`.item[data-id="${id}"][aria-selected="true"]`) !== null &&
                (document.getElementById("d-label")?.textContent ?? "") !== ""
            }, ids[i]!)
            await page.locator("#d-label").filter({ hasText: label.slice(0, 4) }).first().waitFor()
            assert.strictEqual(await page.locator("#d-label").textContent(), label)
            assert.strictEqual(await page.evaluate(() => document.getElementById("d-preview")!.textContent), preview)
          }
          // The diff of the hostile diff shows its markup as text.
          await item(page, ids[5]!).click()
          await page.locator("#d-label", { hasText: "Edit: <iframe src=x>" }).waitFor()
          assert.deepStrictEqual(await page.locator("#d-diff .path").allTextContents(), [
            "<img src=x onerror=alert(1)> → <script>alert(2)</script>"
          ])
          assert.deepStrictEqual(await page.locator("#d-diff .line .text").allTextContents(), [
            "<b>old</b>",
            "<img src=x onerror=alert(3)>"
          ])
          // A quoted name is the file's name, its bidi control shown as its code point; a NUL cuts nothing.
          await item(page, ids[7]!).click()
          await page.locator("#d-label", { hasText: "Edit: quoted names" }).waitFor()
          assert.deepStrictEqual(await page.locator("#d-diff .path").allTextContents(), ["x<U+202E>y\"q.txt"])
          assert.deepStrictEqual(await page.locator("#d-diff .line .text").allTextContents(), [
            "header\u0000",
            "change me",
            "changed"
          ])
          // Bidi controls and escapes are named, not hidden.
          await item(page, ids[3]!).click()
          await page.locator("#d-warnings", { hasText: "bidirectional" }).waitFor()
          await item(page, ids[4]!).click()
          await page.locator("#d-warnings", { hasText: "control characters" }).waitFor()
          const inert = await page.evaluate(() => ({
            pwned: (window as any).__pwned,
            elements: document.querySelectorAll("#app img, #app script, #app iframe, #app a, #app b").length
          }))
          assert.deepStrictEqual(inert, { pwned: undefined, elements: 0 })
          assert.deepStrictEqual(dialogs, [])
          assert.deepStrictEqual(errors, [])
          await context.close()
        }
      },
      180_000
    )

    it("rows readable at a glance: files with +/− counts, session, age; two edits with one label differ", async () => {
      const at = Date.now()
      const diffOf = (...files: ReadonlyArray<readonly [string, number, number]>) =>
        files.map(([name, removed, added]) =>
          [
            `--- a/${name}`,
            `+++ b/${name}`,
            `@@ -1,${removed} +1,${added} @@`,
            ...Array.from({ length: removed }, (_, i) => `-old ${i}`),
            ...Array.from({ length: added }, (_, i) => `+new ${i}`)
          ].join("\n")
        ).join("\n") + "\n"
      await insert(setup.file, [
        {
          id: "glance-1",
          session: "agent-glance",
          label: "Edit: same label",
          preview: diffOf(["src/a.ts", 1, 2]),
          createdAt: at - 185_000
        },
        {
          id: "glance-2",
          session: "agent-glance",
          label: "Edit: same label",
          preview: diffOf(["src/b.ts", 3, 0]),
          createdAt: at - 125_000
        },
        {
          id: "glance-3",
          session: "agent-glance",
          label: "Edit: 5 files",
          preview: diffOf(["f1.ts", 1, 1], ["f2.ts", 1, 1], ["f3.ts", 0, 2], ["f4.ts", 2, 0], [
            "<img src=x onerror=alert(1)>.ts",
            1,
            1
          ]),
          createdAt: at - 7_200_000
        }
      ])
      // The list answer carries each row's files and counts, computed by the server.
      const listed = await get(setup.inbox, "/api/actions?session=agent-glance", tokens.owner)
      assert.deepStrictEqual(
        listed.json.items.map((i: any) => [i.id, i.files, i.fileCount, i.added, i.removed]),
        [
          ["glance-2", [{ path: "src/b.ts", added: 0, removed: 3 }], 1, 0, 3],
          ["glance-1", [{ path: "src/a.ts", added: 2, removed: 1 }], 1, 2, 1],
          [
            "glance-3",
            [
              { path: "f1.ts", added: 1, removed: 1 },
              { path: "f2.ts", added: 1, removed: 1 },
              { path: "f3.ts", added: 2, removed: 0 },
              { path: "f4.ts", added: 0, removed: 2 },
              { path: "<img src=x onerror=alert(1)>.ts", added: 1, removed: 1 }
            ],
            5,
            5,
            5
          ]
        ]
      )
      const { context, dialogs, errors, page } = await openPage(browser, setup)
      await item(page, "glance-3").waitFor()
      const row = async (id: string) => ({
        label: await item(page, id).locator(".label").textContent(),
        files: await item(page, id).locator(".files").textContent(),
        session: await item(page, id).locator(".session").textContent(),
        age: await item(page, id).locator(".age").textContent()
      })
      assert.deepStrictEqual(await row("glance-1"), {
        label: "Edit: same label",
        files: "src/a.ts +2 \u22121",
        session: "agent-glance",
        age: "3 min ago"
      })
      assert.deepStrictEqual(await row("glance-2"), {
        label: "Edit: same label",
        files: "src/b.ts +0 \u22123",
        session: "agent-glance",
        age: "2 min ago"
      })
      assert.notStrictEqual(await item(page, "glance-1").textContent(), await item(page, "glance-2").textContent())
      assert.deepStrictEqual(await row("glance-3"), {
        label: "Edit: 5 files",
        files: "f1.ts +1 \u22121 · f2.ts +1 \u22121 · f3.ts +2 \u22120 · 2 more files · in all +5 \u22125",
        session: "agent-glance",
        age: "2 h ago"
      })
      // Settled here, so that they leave the other tests' lists.
      for (const id of ["glance-1", "glance-2", "glance-3"]) {
        const answer = await post(setup.inbox, `/api/actions/${id}/decision`, tokens.owner, {
          action: "discard",
          reason: "Test rows."
        })
        assert.strictEqual(answer.status, 200, answer.text)
      }
      await item(page, "glance-1").waitFor({ state: "detached" })
      assert.deepStrictEqual(dialogs, [])
      assert.deepStrictEqual(errors, [])
      await context.close()
    }, 180_000)

    it(
      "settled by another reviewer: the open pane drops its buttons and reason box, and says the outcome once",
      async () => {
        const { context, errors, page } = await openPage(browser, setup)
        const { id } = await worker.ask({
          op: "note",
          session: "s1",
          text: "settled elsewhere",
          label: "Note: settled elsewhere",
          preview: "+ settled elsewhere"
        })
        await item(page, id).click()
        await page.locator("#d-label", { hasText: "Note: settled elsewhere" }).waitFor()
        assert.isTrue(await page.locator("#apply").isVisible())
        await page.fill("#reason", "I was about to decide.")
        // sam decides in another browser (here: the API); ann's open pane follows.
        const answer = await post(setup.inbox, `/api/actions/${id}/decision`, tokens.scoped, {
          action: "discard",
          reason: "Not needed here."
        })
        assert.strictEqual(answer.status, 200, answer.text)
        await page.locator("#d-settled", { hasText: "Discarded by sam: Not needed here." }).waitFor({ timeout: 30_000 })
        for (const gone of ["#apply", "#discard", "#reason", "#edit", "#snooze", "#d-decide"]) {
          assert.isFalse(await page.locator(gone).isVisible(), `${gone} is gone`)
        }
        assert.strictEqual(await countText(page, "Discarded by"), 1)
        assert.strictEqual(await countText(page, "Not needed here."), 1)
        assert.deepStrictEqual(errors, [])
        await context.close()
      },
      180_000
    )

    it("filters by session and kind; a reload keeps them (the address holds them)", async () => {
      const { context, errors, page } = await openPage(browser, setup)
      const a1 =
        (await worker.ask({ op: "note", session: "agent-filter-a", text: "a", label: "Note: a", preview: "+ a" }))
          .id
      fs.writeFileSync(path.join(setup.workspace, "filtered.txt"), "x\n")
      const a2 = (await worker.ask({
        op: "edit",
        session: "agent-filter-a",
        path: "filtered.txt",
        oldText: "x",
        newText: "y"
      })).id
      const b1 =
        (await worker.ask({ op: "note", session: "agent-filter-b", text: "b", label: "Note: b", preview: "+ b" }))
          .id
      await item(page, b1).waitFor({ timeout: 30_000 })
      await item(page, a2).waitFor()
      await page.selectOption("#filter-session", "agent-filter-a")
      await item(page, b1).waitFor({ state: "detached" })
      await item(page, a1).waitFor()
      await item(page, a2).waitFor()
      assert.deepStrictEqual(
        new Set(await page.locator(".item .session").allTextContents()),
        new Set(["agent-filter-a"])
      )
      await page.selectOption("#filter-kind", "note")
      await item(page, a2).waitFor({ state: "detached" })
      assert.deepStrictEqual(
        await page.locator(".item").evaluateAll((nodes) => nodes.map((n) => n.getAttribute("data-id"))),
        [a1]
      )
      const url = new URL(page.url())
      assert.deepStrictEqual(
        [url.searchParams.get("session"), url.searchParams.get("kind"), url.searchParams.get("applyDelay")],
        ["agent-filter-a", "note", "300"]
      )
      await page.reload()
      await page.locator("#live.on").waitFor()
      await item(page, a1).waitFor()
      assert.strictEqual(await page.inputValue("#filter-session"), "agent-filter-a")
      assert.strictEqual(await page.inputValue("#filter-kind"), "note")
      assert.deepStrictEqual(
        await page.locator(".item").evaluateAll((nodes) => nodes.map((n) => n.getAttribute("data-id"))),
        [a1]
      )
      // Back to every session: b's action is listed again.
      await page.selectOption("#filter-session", "")
      await page.selectOption("#filter-kind", "")
      await item(page, b1).waitFor()
      assert.strictEqual(new URL(page.url()).searchParams.get("session"), null)
      for (const id of [a1, a2, b1]) {
        await post(setup.inbox, `/api/actions/${id}/decision`, tokens.owner, {
          action: "discard",
          reason: "Test filters."
        })
      }
      assert.deepStrictEqual(errors, [])
      await context.close()
    }, 180_000)

    it(
      "multi-select: one reason for the batch (none: nothing sent), applied and discarded through POST /api/decisions",
      async () => {
        const { context, errors, page } = await openPage(browser, setup)
        const posts = recordPosts(page)
        const ids: Array<string> = []
        for (const n of [1, 2, 3]) {
          ids.push(
            (await worker.ask({
              op: "note",
              session: "agent-batch",
              text: `batch ${n}`,
              label: `Note: batch ${n}`,
              preview: `+ batch ${n}`
            })).id
          )
        }
        const [one, two, three] = ids as [string, string, string]
        await item(page, three).waitFor({ timeout: 30_000 })
        await pick(page, one).check()
        await pick(page, two).check()
        await page.locator("#batch-count", { hasText: "2 selected" }).waitFor()
        assert.strictEqual(await page.locator("#batch-apply").textContent(), "Apply 2")
        // No reason: nothing is sent, and the page asks for one.
        await page.click("#batch-apply")
        await page.locator("#batch-result.error", { hasText: "Write a reason first" }).waitFor()
        await page.waitForTimeout(600)
        assert.deepStrictEqual(posts, [])
        await page.fill("#batch-reason", "Both notes are right.")
        await page.click("#batch-apply")
        await page.locator("#undo .countdown", { hasText: "Applying in" }).waitFor()
        await page.locator("#batch-result", { hasText: "2 applied" }).waitFor({ timeout: 30_000 })
        assert.deepStrictEqual(posts.map((p) => [p.path, p.body]), [["/api/decisions", {
          decisions: [
            { id: one, action: "apply", reason: "Both notes are right." },
            { id: two, action: "apply", reason: "Both notes are right." }
          ]
        }]])
        for (const id of [one, two]) {
          const [decision] = await Effect.runPromise(setup.inbox.store.decisions(id))
          assert.deepStrictEqual([decision!.reviewer, decision!.action, decision!.reason, decision!.state], [
            "ann",
            "apply",
            "Both notes are right.",
            "done"
          ])
        }
        assert.deepStrictEqual(await Effect.runPromise(setup.inbox.store.decisions(three)), [])
        await item(page, one).waitFor({ state: "detached" })
        assert.isTrue(await page.locator("#batch").isHidden(), "the settled actions left the batch")
        // A batch discard is sent at once.
        await pick(page, three).check()
        await page.fill("#batch-reason", "Not this one.")
        await page.click("#batch-discard")
        await page.locator("#batch-result", { hasText: "1 discarded" }).waitFor({ timeout: 30_000 })
        assert.deepStrictEqual(posts.at(-1)!.body, {
          decisions: [{ id: three, action: "discard", reason: "Not this one." }]
        })
        assert.strictEqual(posts.length, 2)
        const log = fs.readFileSync(setup.log, "utf8").split("\n")
        assert.includeMembers(log, ["batch 1", "batch 2"])
        assert.notInclude(log, "batch 3")
        assert.deepStrictEqual(errors, [])
        await context.close()
      },
      180_000
    )

    it("apply waits in an undo window: Undo sends nothing; after the delay the decision is POSTed", async () => {
      const { context, errors, page } = await openPage(browser, setup, undefined, "ann", "?applyDelay=3000")
      const posts = recordPosts(page)
      const file = path.join(setup.workspace, "undo.txt")
      fs.writeFileSync(file, "before\n")
      const { id } = await worker.ask({
        op: "edit",
        session: "agent-undo",
        path: "undo.txt",
        oldText: "before",
        newText: "after"
      })
      await item(page, id).click()
      await page.locator("#d-label", { hasText: "Edit: 1 replacement in 1 file" }).waitFor()
      await page.fill("#reason", "As asked.")
      await page.click("#apply")
      const countdown = page.locator("#undo .countdown")
      await countdown.filter({ hasText: /^Applying in [1-3] s — Undo/ }).waitFor()
      assert.strictEqual(await countdown.locator(".countdown-what").textContent(), "Edit: 1 replacement in 1 file")
      assert.isTrue(await page.locator("#apply").isDisabled(), "no second apply while one waits")
      await countdown.getByRole("button", { name: "Undo" }).click()
      await countdown.waitFor({ state: "detached" })
      await page.locator("#d-result", { hasText: "undone, nothing was sent" }).waitFor()
      await page.waitForTimeout(3_500)
      assert.deepStrictEqual(posts, [])
      assert.deepStrictEqual(await Effect.runPromise(setup.inbox.store.decisions(id)), [])
      assert.strictEqual(fs.readFileSync(file, "utf8"), "before\n")
      // The keyboard: a starts the window; the decision is sent only when it ends.
      await page.locator("#detail").click({ position: { x: 1, y: 1 } })
      const started = Date.now()
      await page.keyboard.press("a")
      await countdown.waitFor()
      assert.deepStrictEqual(posts, [], "nothing sent while the window is open")
      await page.locator("#d-settled", { hasText: "Applied by ann: As asked." }).waitFor({ timeout: 30_000 })
      assert.strictEqual(posts.length, 1)
      assert.strictEqual(posts[0]!.path, `/api/actions/${id}/decision`)
      assert.deepStrictEqual(posts[0]!.body, { action: "apply", reason: "As asked." })
      assert.isAtLeast(posts[0]!.at - started, 2_900, "sent after the delay")
      assert.strictEqual(fs.readFileSync(file, "utf8"), "after\n")
      assert.deepStrictEqual(errors, [])
      await context.close()
    }, 180_000)

    it(
      "an apply whose window ends while another decision is on its way is sent after it, not dropped; u undoes",
      async () => {
        const { context, errors, page } = await openPage(browser, setup, undefined, "ann", "?applyDelay=2500")
        const posts = recordPosts(page)
        const ids: Array<string> = []
        for (const n of [1, 2, 3]) {
          ids.push(
            (await worker.ask({
              op: "note",
              session: "agent-queue",
              text: `queue ${n}`,
              label: `Note: queue ${n}`,
              preview: `+ queue ${n}`
            }))
              .id
          )
        }
        const [one, two, three] = ids as [string, string, string]
        // The discard of `two` takes 4 s to reach the inbox: `one`'s window (2.5 s) ends meanwhile.
        await page.route(`**/api/actions/${two}/decision`, async (route) => {
          await new Promise((resolve) => setTimeout(resolve, 4_000))
          await route.continue()
        })
        await item(page, one).click()
        await page.locator("#d-label", { hasText: "Note: queue 1" }).waitFor()
        await page.fill("#reason", "First.")
        await page.click("#apply")
        await page.locator("#undo .countdown").waitFor()
        await item(page, two).click()
        await page.locator("#d-label", { hasText: "Note: queue 2" }).waitFor()
        await page.fill("#reason", "Second.")
        await page.click("#discard")
        await page.locator("#d-settled", { hasText: "Discarded by ann: Second." }).waitFor({ timeout: 30_000 })
        const deadline = Date.now() + 30_000
        while ((await Effect.runPromise(setup.inbox.store.decisions(one))).length === 0 && Date.now() < deadline) {
          await page.waitForTimeout(100)
        }
        const [decision] = await Effect.runPromise(setup.inbox.store.decisions(one))
        assert.deepStrictEqual([decision?.action, decision?.reason], ["apply", "First."])
        assert.deepStrictEqual(posts.map((p) => p.path), [
          `/api/actions/${two}/decision`,
          `/api/actions/${one}/decision`
        ])
        // u undoes the apply still in its window.
        await item(page, three).click()
        await page.locator("#d-label", { hasText: "Note: queue 3" }).waitFor()
        await page.fill("#reason", "Third.")
        await page.keyboard.press("Escape")
        await page.keyboard.press("a")
        await page.locator("#undo .countdown").waitFor()
        await page.keyboard.press("u")
        await page.locator("#undo .countdown").waitFor({ state: "detached" })
        await page.waitForTimeout(3_000)
        assert.strictEqual(posts.length, 2)
        assert.deepStrictEqual(await Effect.runPromise(setup.inbox.store.decisions(three)), [])
        await post(setup.inbox, `/api/actions/${three}/decision`, tokens.owner, {
          action: "discard",
          reason: "Test queue."
        })
        assert.deepStrictEqual(errors, [])
        await context.close()
      },
      180_000
    )

    it("10 000 pending actions: the count says so, the first page shows, more load on demand", async () => {
      const setup = await setUp()
      try {
        await Effect.runPromise(
          Effect.flatMap(
            LibsqlClient.LibsqlClient,
            (sql) =>
              sql.unsafe(`WITH RECURSIVE g(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM g WHERE i < 9999)
            INSERT INTO effect_resolve_pending (id, session, kind, label, source_tool_name, stager, preview, payload,
              status, attempts, created_at, updated_at)
            SELECT 'bulk-' || i, 'bulk-' || (i % 7), 'note', 'Bulk note ' || i, 'note', NULL, 'preview ' || i,
              '{"text":"bulk"}', 'pending', 0, 1700000000000 + i, 1700000000000 + i FROM g`).raw
          ).pipe(
            Effect.scoped,
            Effect.provide(LibsqlClient.layer({ url: `file:${setup.file}` }).pipe(Layer.provide(Reactivity.layer)))
          )
        )
        const { errors, page } = await openPage(browser, setup)
        // The page never asks for more than a page: every list answer it gets holds at most 50 actions.
        const listed: Array<number> = []
        page.on("response", (response) => {
          if (new URL(response.url()).pathname === "/api/actions") {
            // A body the reload cut off cannot be read: it reached no list, and is not counted.
            void response.json().then((body) => listed.push(body.items.length), () => {})
          }
        })
        await page.reload()
        await page.locator("#live.on").waitFor()
        await page.locator("#badge", { hasText: "10000" }).waitFor({ timeout: 30_000 })
        await item(page, "bulk-9999").waitFor()
        assert.strictEqual(await page.locator(".item").count(), 50)
        await page.click("#more")
        // Newest first, 50 a page: the second page ends at bulk-9900; bulk-9899 waits for a third.
        await item(page, "bulk-9900").waitFor()
        assert.strictEqual(await page.locator(".item").count(), 100)
        assert.strictEqual(await item(page, "bulk-9899").count(), 0)
        // A change elsewhere refreshes the list without undoing the second page.
        const discarded = await post(setup.inbox, "/api/actions/bulk-9999/decision", tokens.owner, {
          action: "discard",
          reason: "Not needed."
        })
        assert.strictEqual(discarded.status, 200, discarded.text)
        await item(page, "bulk-9999").waitFor({ state: "detached" })
        assert.strictEqual(await page.locator(".item").count(), 100)
        assert.strictEqual(await item(page, "bulk-9899").count(), 1)
        await item(page, "bulk-9950").click()
        await page.locator("#d-preview", { hasText: "preview 9950" }).waitFor({ state: "attached" })
        assert.isAtLeast(listed.length, 3)
        assert.isTrue(listed.every((n) => n > 0 && n <= 100), `every list answer is a page or two: ${listed}`)
        assert.deepStrictEqual(errors, [])
      } finally {
        // The page first: its event stream is open (the inbox's close ends it anyway).
        for (const context of opened.splice(0)) await context.close().catch(() => {})
        await tearDown(setup)
      }
    }, 180_000)

    it("screenshots of the list and a detail pane (docs/images/ with EFFECT_RESOLVE_SCREENSHOTS=1)", async () => {
      // An inbox of its own, so that the other tests' actions are not in the picture.
      const setup = await setUp()
      const worker = await startWorker(setup.file, setup.workspace, setup.log)
      try {
        const files: Record<string, string> = {
          "src/greeting.ts": "export const greeting = \"hello\"\n",
          "src/server.ts":
            "import { greeting } from \"./greeting.js\"\n\nexport const port = 3000\nconsole.log(greeting)\n",
          "README.md": "# Demo\n\nA workspace for the approval inbox's demo.\n",
          "docs/guide.md": "# Guide\n\nStart the server with npm start.\n"
        }
        for (const [name, text] of Object.entries(files)) {
          fs.mkdirSync(path.dirname(path.join(setup.workspace, name)), { recursive: true })
          fs.writeFileSync(path.join(setup.workspace, name), text)
        }
        const edit = (session: string, ...changes: ReadonlyArray<readonly [string, string, string]>) =>
          worker.ask({
            op: "edit",
            session,
            files: changes.map(([file, oldText, newText]) => ({ path: file, edits: [{ oldText, newText }] }))
          }).then((answer) => answer.id as string)
        await edit("docs-agent", [
          "docs/guide.md",
          "Start the server with npm start.",
          "Start the server with `npm start`; it listens on port 3000."
        ])
        await edit("refactor-agent", ["README.md", "A workspace", "A small workspace"])
        await edit("docs-agent", ["README.md", "# Demo", "# Demo workspace"])
        const multi = await edit(
          "refactor-agent",
          ["src/greeting.ts", "\"hello\"", "\"hello, world\""],
          [
            "src/server.ts",
            "export const port = 3000\nconsole.log(greeting)",
            "export const port = Number(process.env.PORT ?? 3000)\nconsole.log(`${greeting} on ${port}`)"
          ]
        )
        const { context, errors, page } = await openPage(browser, setup)
        await item(page, multi).waitFor({ timeout: 30_000 })
        const shot = async (name: string) => {
          await page.screenshot({ path: screenshotPath(name) })
          if (process.env.EFFECT_RESOLVE_SCREENSHOTS === "1") {
            await page.screenshot({ path: path.join(root, "docs/images", name) })
          }
        }
        await pick(page, multi).check()
        await page.locator("#batch").waitFor()
        await shot("inbox-list.png")
        await pick(page, multi).uncheck()
        await item(page, multi).click()
        await page.locator("#d-diff .path", { hasText: "src/server.ts" }).waitFor()
        await page.fill("#reason", "Reads the port from PORT, as asked.")
        await shot("inbox-detail.png")
        for (const name of ["inbox-list.png", "inbox-detail.png"]) {
          assert.isBelow(fs.statSync(screenshotPath(name)).size, 200_000, `${name} is small`)
        }
        assert.deepStrictEqual(errors, [])
        await context.close()
      } finally {
        for (const context of opened.splice(0)) await context.close().catch(() => {})
        await worker.stop()
        await tearDown(setup)
      }
    }, 180_000)

    it("on a 390×844 phone: the list, then the detail with its buttons on screen, then back", async () => {
      {
        const { context, errors, page } = await openPage(browser, setup, {
          viewport: { width: 390, height: 844 },
          deviceScaleFactor: 2,
          isMobile: true,
          hasTouch: true
        })
        const { id } = await worker.ask({
          op: "note",
          session: "agent-phone",
          text: "phone",
          label: "Note: from the phone test",
          preview: "+ phone"
        })
        await item(page, id).waitFor({ timeout: 30_000 })
        assert.isTrue(await page.locator("#list-pane").isVisible())
        assert.isFalse(await page.locator("#detail-pane").isVisible())
        await page.screenshot({ path: screenshotPath("inbox-phone-list.png") })
        await item(page, id).tap()
        await page.locator("#d-label", { hasText: "Note: from the phone test" }).waitFor()
        assert.isFalse(await page.locator("#list-pane").isVisible())
        for (const button of ["#apply", "#discard", "#snooze"]) {
          const box = (await page.locator(button).boundingBox())!
          assert.isTrue(box.x >= 0 && box.x + box.width <= 390, `${button} on screen`)
        }
        const width = await page.evaluate(() => document.documentElement.scrollWidth)
        assert.isAtMost(width, 390, "no sideways scrolling")
        await page.screenshot({ path: screenshotPath("inbox-phone-detail.png") })
        await page.locator("#back").tap()
        assert.isTrue(await page.locator("#list-pane").isVisible())
        assert.deepStrictEqual(errors, [])
        await context.close()
      }
    }, 180_000)

    it("the keyboard: j selects, r writes the reason, Escape leaves it, d discards, n snoozes", async () => {
      {
        // sam's token sees session s1 only: this test's list is its own.
        const { context, errors, page } = await openPage(browser, setup, undefined, "sam")
        const { id: first } = await worker.ask({
          op: "note",
          session: "s1",
          text: "one",
          label: "Note: one",
          preview: "+ one"
        })
        const { id: second } = await worker.ask({
          op: "note",
          session: "s1",
          text: "two",
          label: "Note: two",
          preview: "+ two"
        })
        await item(page, first).waitFor({ timeout: 30_000 })
        await item(page, second).waitFor()
        // sam's token names its sessions: the session filter offers them before any list arrives.
        assert.includeMembers(await page.locator("#filter-session option").allTextContents(), ["All sessions", "s1"])
        await page.keyboard.press("j")
        await page.locator(`.item[data-id="${second}"][aria-selected="true"]`).waitFor()
        await page.locator("#d-label", { hasText: "Note: two" }).waitFor()
        await page.keyboard.press("r")
        await page.keyboard.type("Not this one.")
        await page.keyboard.press("Escape")
        await page.keyboard.press("d")
        await page.locator("#d-settled", { hasText: "Discarded by sam: Not this one." }).waitFor({ timeout: 30_000 })
        const [decision] = await Effect.runPromise(setup.inbox.store.decisions(second))
        assert.deepStrictEqual([decision!.action, decision!.reason], ["discard", "Not this one."])
        await page.keyboard.press("j")
        await page.locator("#d-label", { hasText: "Note: one" }).waitFor()
        await page.keyboard.press("n")
        await page.locator("#d-result", { hasText: "Hidden from the list" }).waitFor()
        await page.locator(`.item[data-id="${first}"]`).waitFor({ state: "detached" })
        assert.strictEqual(await page.locator("#badge").textContent(), "0")
        assert.notInclude(fs.readFileSync(setup.log, "utf8"), "one")
        assert.notInclude(fs.readFileSync(setup.log, "utf8"), "two")
        assert.deepStrictEqual(errors, [])
        await context.close()
      }
    }, 180_000)
  }
)
