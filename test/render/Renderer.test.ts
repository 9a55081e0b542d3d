import { assert, describe, it } from "@effect/vitest"
import { deepStrictEqual } from "@effect/vitest/utils"
import { Cause, Effect, Exit } from "effect"
import {
  ApplyFailed,
  NoPendingAction,
  ResolveRuntime,
  ResolveTool,
  stage,
  ToolChoiceQueue,
  ToolError,
  ToolResult
} from "../../src/index.js"
import * as Renderer from "../../src/render/Renderer.js"

const plain = { width: 80, color: false } as const
const colour = { width: 80, color: true } as const

const applied = Exit.succeed(ToolResult.text("Applied the edit.\nWrote a.txt.", {
  action: "apply",
  reason: "The diff matches.",
  sourceToolName: "edit",
  label: "Edit: 2 replacements in 1 file"
}))

const discarded = Exit.succeed(ToolResult.text("Discarded: Edit: 2 replacements in 1 file. Reason: Too broad.", {
  action: "discard",
  reason: "Too broad.",
  sourceToolName: "edit",
  label: "Edit: 2 replacements in 1 file"
}))

const applyFailed = Exit.fail(
  new ApplyFailed({ label: "Migration: 1 table", sourceToolName: "migrate", detail: "database is locked", cause: null })
)

describe("Renderer", () => {
  describe("renderResolve without colour", () => {
    it("Accept: summary, [source] badge, reason, result line", () => {
      deepStrictEqual(
        Renderer.renderResolve({ action: "apply", reason: "The diff matches." }, applied, plain),
        ["Accept 2 replacements in 1 file [Edit]", "  The diff matches.", "  Applied the edit."]
      )
    })

    it("Discard", () => {
      deepStrictEqual(Renderer.renderResolve({ action: "discard", reason: "Too broad." }, discarded, plain), [
        "Discard 2 replacements in 1 file [Edit]",
        "  Too broad.",
        "  Discarded: Edit: 2 replacements in 1 file. Reason: Too broad."
      ])
    })

    it("details whose getters throw (a tool's own details) are read without throwing", () => {
      const hostile = { sourceToolName: "edit" }
      Object.defineProperty(hostile, "label", {
        enumerable: true,
        get: () => {
          throw new Error("boom")
        }
      })
      deepStrictEqual(
        Renderer.renderResolve(
          { action: "apply", reason: "Fine." },
          Exit.succeed(ToolResult.text("Applied.", hostile)),
          plain
        ),
        ["Accept pending action [edit]", "  Fine.", "  Applied."]
      )
    })

    it("Failed keeps the label and the reason of an ApplyFailed", () => {
      deepStrictEqual(Renderer.renderResolve({ action: "apply", reason: "Run it." }, applyFailed, plain), [
        "Failed 1 table [Migration]",
        "  Run it.",
        "  Apply failed: database is locked"
      ])
    })

    it("Failed with a ToolError takes the label from options, the reason from the call", () => {
      const stale = Exit.fail(new ToolError({ message: "Preview is stale: a.txt changed after the preview." }))
      deepStrictEqual(
        Renderer.renderResolve({ action: "apply", reason: "ok" }, stale, {
          ...plain,
          label: "Edit: 1 replacement in 1 file"
        }),
        ["Failed 1 replacement in 1 file [Edit]", "  ok", "  Preview is stale: a.txt changed after the preview."]
      )
      deepStrictEqual(
        Renderer.renderResolve({ action: "apply", reason: "ok" }, stale, plain)[0],
        "Failed pending action"
      )
    })

    it("an isError result is Failed", () => {
      const result = { ...ToolResult.text("Could not deploy.", { label: "Deploy: api" }), isError: true }
      deepStrictEqual(Renderer.renderResolve({ action: "apply", reason: "go" }, result, plain), [
        "Failed api [Deploy]",
        "  go",
        "  Could not deploy."
      ])
    })

    it("a label without ': ' is all summary; the badge falls back to sourceToolName", () => {
      const result = ToolResult.text("ok", { label: "Rename things", sourceToolName: "rename", action: "apply" })
      deepStrictEqual(Renderer.renderResolve({ reason: "r" }, result, plain), [
        "Accept Rename things [rename]",
        "  r",
        "  ok"
      ])
    })

    it("no pending action, no reason", () => {
      deepStrictEqual(Renderer.renderResolve({ action: "apply" }, Exit.fail(new NoPendingAction()), plain), [
        "Failed pending action",
        "  (no reason given)",
        "  No pending action to resolve. Nothing to apply or discard."
      ])
    })

    it("an interruption", () => {
      deepStrictEqual(
        Renderer.renderResolve({ action: "apply", reason: "r" }, Exit.failCause(Cause.interrupt(0 as any)), plain)[2],
        "  Interrupted; the pending action is unchanged."
      )
    })

    it("multi-line reasons stay indented; control characters and escapes are stripped", () => {
      deepStrictEqual(
        Renderer.renderResolve(
          { action: "apply", reason: "line one\r\nline\ttwo \x1b[31mred\x1b[0m\x07" },
          applied,
          plain
        ),
        ["Accept 2 replacements in 1 file [Edit]", "  line one", "  line two [31mred[0m", "  Applied the edit."]
      )
    })
  })

  describe("renderResolve with colour", () => {
    const green = (text: string) => `\x1b[1m\x1b[32m${text}\x1b[39m\x1b[22m`
    const cyan = (text: string) => `\x1b[36m${text}\x1b[39m`
    it("Accept", () => {
      deepStrictEqual(
        Renderer.renderResolve({ action: "apply", reason: "The diff matches." }, applied, colour),
        [
          `${green("Accept")} 2 replacements in 1 file${cyan(" [Edit]")}`,
          "  The diff matches.",
          "\x1b[2m  Applied the edit.\x1b[22m"
        ]
      )
    })

    it("Discard", () => {
      assert.strictEqual(
        Renderer.renderResolve({ action: "discard", reason: "Too broad." }, discarded, colour)[0],
        `\x1b[1m\x1b[33mDiscard\x1b[39m\x1b[22m 2 replacements in 1 file${cyan(" [Edit]")}`
      )
    })

    it("Failed", () => {
      deepStrictEqual(Renderer.renderResolve({ action: "apply", reason: "Run it." }, applyFailed, colour), [
        `\x1b[1m\x1b[31mFailed\x1b[39m\x1b[22m 1 table${cyan(" [Migration]")}`,
        "  Run it.",
        "\x1b[31m  Apply failed: database is locked\x1b[39m"
      ])
    })

    it("shortening the header closes the colour", () => {
      const header = (width: number) =>
        Renderer.renderResolve({ action: "apply", reason: "r" }, applied, { width, color: true })[0]!
      assert.strictEqual(Renderer.stringWidth(header(20)), 20)
      assert.isTrue(header(20).endsWith("…"))
      assert.strictEqual(header(20).replace(/\x1b\[[0-9;]*m/g, ""), "Accept 2 replacemen…")
      assert.strictEqual(header(35).replace(/\x1b\[[0-9;]*m/g, ""), "Accept 2 replacements in 1 file [E…")
      // Every colour opened is closed.
      for (const width of [10, 20, 40]) {
        const opened = (header(width).match(/\x1b\[(1|3[0-7])m/g) ?? []).length
        const closed = (header(width).match(/\x1b\[(22|39)m/g) ?? []).length
        assert.strictEqual(opened, closed, `width ${width}: ${JSON.stringify(header(width))}`)
      }
    })

    it("colour defaults to on, and to off when NO_COLOR is set", () => {
      const saved = process.env.NO_COLOR
      try {
        delete process.env.NO_COLOR
        const on = Renderer.renderResolve({ action: "apply", reason: "r" }, applied, { width: 80 })[0]!
        assert.isTrue(on.includes("\x1b["))
        process.env.NO_COLOR = "1"
        deepStrictEqual(
          Renderer.renderResolve({ action: "apply", reason: "r" }, applied, { width: 80 }),
          Renderer.renderResolve({ action: "apply", reason: "r" }, applied, plain)
        )
        // An explicit choice wins over the environment.
        assert.isTrue(
          Renderer.renderResolve({ action: "apply", reason: "r" }, applied, { width: 80, color: true })[0]!.includes(
            "\x1b["
          )
        )
      } finally {
        if (saved === undefined) delete process.env.NO_COLOR
        else process.env.NO_COLOR = saved
      }
    })
  })

  describe("width", () => {
    it("stringWidth counts wide CJK and emoji as 2, marks as 0", () => {
      assert.strictEqual(Renderer.stringWidth("abc"), 3)
      assert.strictEqual(Renderer.stringWidth("日本語"), 6)
      assert.strictEqual(Renderer.stringWidth("한국"), 4)
      assert.strictEqual(Renderer.stringWidth("ｆｕｌｌ"), 8)
      assert.strictEqual(Renderer.stringWidth("🚀"), 2)
      assert.strictEqual(Renderer.stringWidth("👨‍👩‍👧"), 2)
      assert.strictEqual(Renderer.stringWidth("❤️"), 2)
      assert.strictEqual(Renderer.stringWidth("🫠"), 2) // Unicode 14, past the old hand-written table
      assert.strictEqual(Renderer.stringWidth("e\u0301"), 1)
      assert.strictEqual(Renderer.stringWidth("\u200B"), 0)
    })

    it("truncate never splits a wide character and never exceeds the width", () => {
      assert.strictEqual(Renderer.truncate("日本語のテキスト", 7), "日本語…")
      assert.strictEqual(Renderer.truncate("日本語のテキスト", 8), "日本語…")
      assert.strictEqual(Renderer.truncate("a🚀b🚀c", 5), "a🚀b…")
      assert.strictEqual(Renderer.truncate("a🚀b🚀c", 4), "a🚀…")
      assert.strictEqual(Renderer.truncate("a🚀b🚀c", 3), "a…")
      assert.strictEqual(Renderer.truncate("short", 5), "short")
      assert.strictEqual(Renderer.truncate("short", 1), "…")
    })

    it("a long reason wraps over several lines, word by word, and nothing of it is lost", () => {
      const reason = "The diff renames greet to hello in every file that imports it, as the request asked."
      const lines = Renderer.renderResolve({ action: "apply", reason }, applied, { width: 30, color: false })
      deepStrictEqual(lines.slice(1, 5), [
        "  The diff renames greet to",
        "  hello in every file that",
        "  imports it, as the request",
        "  asked."
      ])
      assert.strictEqual(lines.slice(1, 5).map((l) => l.trim()).join(" "), reason)
    })

    it("a long detail wraps to at most four lines", () => {
      const message = Array.from({ length: 40 }, (_, i) => `word${i}`).join(" ")
      const lines = Renderer.renderResolve(
        { action: "apply", reason: "r" },
        Exit.fail(new ToolError({ message })),
        { width: 30, color: false }
      )
      deepStrictEqual(lines.length, 1 + 1 + 4)
      assert.isTrue(lines[5]!.endsWith("…"))
    })

    it("no rendered line exceeds the width, and no reason text is lost, wide characters included", () => {
      const call = { action: "apply", reason: "変更は要求と一致しています 🚀🚀🚀 and then some more words" }
      const result = ToolResult.text("適用しました", { label: "編集: 2 件の置換 in 1 ファイル", action: "apply" })
      for (let width = 1; width <= 60; width++) {
        for (const color of [false, true]) {
          const lines = Renderer.renderResolve(call, result, { width, color })
          for (const line of lines) {
            const visible = line.replace(/\x1b\[[0-9;]*m/g, "")
            assert.isAtMost(Renderer.stringWidth(visible), width, `width ${width}: ${JSON.stringify(line)}`)
          }
          if (width >= 4) { // from 2 columns after the indent, every wide character fits
            const reasonOnly = Renderer.renderResolve(call, ToolResult.text("", result.details), { width, color })
            const shown = reasonOnly.slice(1).join("").replace(/\s/g, "")
            assert.strictEqual(shown, call.reason.replace(/\s/g, ""), `width ${width}`)
          }
        }
      }
      deepStrictEqual(Renderer.renderResolve(call, result, { width: 16, color: false }), [
        "Accept 2 件の置…",
        "  変更は要求と一",
        "  致しています",
        "  🚀🚀🚀 and",
        "  then some more",
        "  words",
        "  適用しました"
      ])
    })
  })

  describe("intent", () => {
    it("accepting / discarding / resolving, on one line", () => {
      assert.strictEqual(
        Renderer.intent({ action: "apply", reason: "The diff\nmatches." }),
        "accepting: The diff matches."
      )
      assert.strictEqual(Renderer.intent({ action: "discard", reason: "Too broad." }), "discarding: Too broad.")
      assert.strictEqual(Renderer.intent({ reason: "streaming" }), "resolving: streaming")
      assert.strictEqual(Renderer.intent({ action: "apply" }), "accepting")
      assert.strictEqual(Renderer.intent({ action: "apply", reason: "一二三四五" }, { width: 16 }), "accepting: 一二…")
    })
  })

  it.effect("renders a real resolve round trip", () =>
    Effect.gen(function*() {
      const queue = yield* ToolChoiceQueue
      yield* stage({
        label: "Edit: 1 replacement in 1 file",
        sourceToolName: "edit",
        apply: () => Effect.fail(new Error("disk full"))
      })
      yield* queue.nextToolChoice
      const call = { action: "apply", reason: "Looks right." } as const
      const exit = yield* Effect.exit(ResolveTool.execute(call))
      yield* queue.resolve
      deepStrictEqual(Renderer.renderResolve(call, exit, plain), [
        "Failed 1 replacement in 1 file [Edit]",
        "  Looks right.",
        "  Apply failed: disk full"
      ])
    }).pipe(Effect.provide(ResolveRuntime.layer)))
})
