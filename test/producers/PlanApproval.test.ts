import { NodeContext } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { deepStrictEqual } from "@effect/vitest/utils"
import { Cause, Effect, Exit, Layer, Option, Ref, Scope } from "effect"
import { execFileSync } from "node:child_process"
import * as NFS from "node:fs/promises"
import * as OS from "node:os"
import * as NPath from "node:path"
import {
  NoPendingAction,
  PendingActions,
  PendingStore,
  ResolveRuntime,
  ResolveTool,
  stage,
  StandingResolveHandler,
  ToolChoiceQueue,
  ToolResult
} from "../../src/index.js"
import * as PlanApproval from "../../src/producers/PlanApproval.js"
import { makeMemory } from "../../src/services/PendingStore.js"
import { failureOf, successOf } from "../support/exits.js"

const tempDir = Effect.acquireRelease(
  Effect.promise(() => NFS.mkdtemp(NPath.join(OS.tmpdir(), "effect-resolve-plan-"))),
  (dir) => Effect.promise(() => NFS.rm(dir, { recursive: true, force: true }))
)

const layer = Layer.mergeAll(ResolveRuntime.layer, NodeContext.layer)

/** A fresh session and a temporary directory holding the plan file (not written yet). */
const session = <A, E>(
  body: (plan: { readonly path: string; readonly write: (text: string) => Effect.Effect<void> }) => Effect.Effect<
    A,
    E,
    ResolveRuntime.Services | NodeContext.NodeContext | Scope.Scope
  >
) =>
  Effect.scoped(Effect.gen(function*() {
    const dir = yield* tempDir
    const path = NPath.join(dir, "PLAN.md")
    return yield* body({ path, write: (text) => Effect.promise(() => NFS.writeFile(path, text)) })
  })).pipe(Effect.provide(layer))

const resolveCall = (call: { readonly action: "apply" | "discard"; readonly reason: string; readonly extra?: any }) =>
  Effect.exit(ResolveTool.execute(call))

describe("PlanApproval", () => {
  describe("slug", () => {
    const cases: Array<[string, string | undefined, string]> = [
      ["  my plan  ", "my-plan", "trims and turns whitespace into -"],
      ["a/b", undefined, "rejects /"],
      ["a\\b", undefined, "rejects \\"],
      ["a..b", undefined, "rejects .."],
      ["..", undefined, "rejects .. alone"],
      ["notes.md", "notes", "drops a trailing .md"],
      ["notes.md.md", "notesmd", "drops only one trailing .md"],
      ["tab\tand\nnewline", "tab-and-newline", "every whitespace character becomes -"],
      ["Ünïcode & $ymbols!", "ncode-ymbols", "keeps only [A-Za-z0-9_-]"],
      ["snake_case-Kebab09", "snake_case-Kebab09", "keeps letters, digits, _ and -"],
      ["a -- b", "a-b", "collapses runs of -"],
      ["a - - b", "a-b", "collapses runs created by removed characters"],
      ["--edge--", "edge", "trims - at both ends"],
      ["  -  ", undefined, "rejects an empty result"],
      ["!!!", undefined, "rejects a result with nothing kept"],
      ["", undefined, "rejects the empty string"]
    ]
    for (const [input, expected, rule] of cases) {
      it(`${rule}: ${JSON.stringify(input)}`, () => {
        deepStrictEqual(PlanApproval.slug(input), Option.fromNullable(expected))
      })
    }
  })

  describe("slug cap (issue 10 §3)", () => {
    it("cuts a long slug to 100 characters", () => {
      deepStrictEqual(PlanApproval.slug("a".repeat(10_000)), Option.some("a".repeat(100)))
    })
    it("leaves no trailing - after the cut", () => {
      // "abc-" repeated: the 100th character is a "-".
      deepStrictEqual(PlanApproval.slug("abc ".repeat(40)), Option.some("abc-".repeat(25).slice(0, 99)))
    })
    it("counts characters of the slug, after non-ASCII characters were dropped", () => {
      deepStrictEqual(PlanApproval.slug("é".repeat(5_000) + "b".repeat(150)), Option.some("b".repeat(100)))
    })
  })

  describe("firstHeading", () => {
    it("takes the text of the first level-1 heading without trailing blanks; skips a heading with no text", () => {
      deepStrictEqual(PlanApproval.firstHeading("x\n#\t Title \t\r\n# Next"), Option.some("Title"))
      deepStrictEqual(PlanApproval.firstHeading("#  \t\n#NoSpace\n## Sub\n# Real"), Option.some("Real"))
      deepStrictEqual(PlanApproval.firstHeading("# a\rb\n# c"), Option.some("c"))
      deepStrictEqual(PlanApproval.firstHeading("no heading\n"), Option.none())
      deepStrictEqual(PlanApproval.firstHeading(""), Option.none())
    })
    it("is linear in the line length: a 200 KB heading line of blanks (quadratic before: minutes)", () => {
      const line = `# Plan${" \t".repeat(100_000)}x${" ".repeat(1_000)}`
      deepStrictEqual(PlanApproval.firstHeading(`intro\n${line}\n`), Option.some(`Plan${" \t".repeat(100_000)}x`))
      assert.strictEqual(PlanApproval.planTitle({ extra: {}, content: line, fileName: "PLAN.md" }), "Plan-x")
    }, 10_000)
  })

  describe("planTitle", () => {
    const title = (extra: Record<string, unknown>, content: string, fileName = "PLAN.md") =>
      PlanApproval.planTitle({ extra, content, fileName })

    it("extra.title comes first", () => {
      assert.strictEqual(title({ title: "Ship It" }, "# Heading"), "Ship-It")
    })
    it("then the first # heading (level 1 only, CRLF tolerated)", () => {
      assert.strictEqual(title({}, "intro\r\n## Sub\r\n# Real Title #1\r\n# Second"), "Real-Title-1")
      assert.strictEqual(title({ title: 42 }, "# From Heading"), "From-Heading")
    })
    it("a rejected candidate falls through to the next", () => {
      assert.strictEqual(title({ title: "../etc" }, "# a/b\n"), "PLAN")
      assert.strictEqual(title({ title: "  " }, "no heading"), "PLAN")
    })
    it("then the file name, then plan", () => {
      assert.strictEqual(title({}, "no heading", "release-notes.md"), "release-notes")
      assert.strictEqual(title({}, "no heading", "....md"), "plan")
      assert.strictEqual(title({}, "no heading", "¿¡.md"), "plan")
    })
  })

  it.live("entering installs a standing handler; a missing plan asks the model to write it and the mode stays", () =>
    session((plan) =>
      Effect.gen(function*() {
        const mode = yield* PlanApproval.enter({ planFilePath: plan.path, approve: PlanApproval.autoApprove })
        const standing = yield* StandingResolveHandler
        assert.isTrue(Option.isSome(yield* standing.peek))
        const error = failureOf(yield* resolveCall({ action: "apply", reason: "Ready." }))
        assert.strictEqual(error._tag, "ToolError")
        assert.include(
          error.message,
          `No plan to approve: ${plan.path} does not exist. Write the plan to that file first`
        )
        assert.isTrue(yield* mode.active)
        assert.isTrue(Option.isSome(yield* standing.peek))
      })
    ))

  it.live("an empty plan asks the model to write it", () =>
    session((plan) =>
      Effect.gen(function*() {
        yield* plan.write("  \n\n")
        const mode = yield* PlanApproval.enter({ planFilePath: plan.path, approve: PlanApproval.autoApprove })
        const error = failureOf(yield* resolveCall({ action: "apply", reason: "Ready." }))
        assert.include(error.message, "is empty. Write the plan to that file first")
        assert.isTrue(yield* mode.active)
      })
    ))

  it.live("approved: 'Plan approved' with the details, the mode's scope closes and the handler is gone", () =>
    session((plan) =>
      Effect.gen(function*() {
        yield* plan.write("# Add Caching\n\n1. Do it.\n")
        const seen = yield* Ref.make<Array<PlanApproval.PlanSubmission>>([])
        const mode = yield* PlanApproval.enter({
          planFilePath: plan.path,
          approve: (submission) => Effect.as(Ref.update(seen, (all) => [...all, submission]), PlanApproval.approved)
        })
        const result = successOf(yield* resolveCall({ action: "apply", reason: "The plan is complete." }))
        assert.strictEqual(
          ToolResult.textOf(result),
          `Plan approved: Add-Caching. Plan mode is over; implement the plan in ${plan.path}.`
        )
        deepStrictEqual(result.details, {
          action: "apply",
          reason: "The plan is complete.",
          sourceToolName: "plan",
          label: "Plan: PLAN.md",
          sourceResultDetails: { planFilePath: plan.path, title: "Add-Caching", planExists: true }
        })
        deepStrictEqual(yield* Ref.get(seen), [{
          planFilePath: plan.path,
          title: "Add-Caching",
          content: "# Add Caching\n\n1. Do it.\n",
          reason: "The plan is complete.",
          extra: {}
        }])
        deepStrictEqual(yield* mode.left, { _tag: "Approved", title: "Add-Caching", planFilePath: plan.path })
        assert.isFalse(yield* mode.active)
        const standing = yield* StandingResolveHandler
        assert.isTrue(Option.isNone(yield* standing.peek))
        const after = failureOf(yield* resolveCall({ action: "apply", reason: "Again." }))
        assert.instanceOf(after, NoPendingAction)
      })
    ))

  it.live("a plan over the size cap is refused with a ToolError asking to shorten it; the mode stays", () =>
    session((plan) =>
      Effect.gen(function*() {
        const mode = yield* PlanApproval.enter({
          planFilePath: plan.path,
          approve: PlanApproval.autoApprove,
          maxPlanBytes: 100
        })
        yield* plan.write(`# Big\n${"x".repeat(95)}`) // 101 bytes
        const error = failureOf(yield* resolveCall({ action: "apply", reason: "Ready." }))
        assert.strictEqual(error._tag, "ToolError")
        assert.strictEqual(
          error.message,
          `The plan ${plan.path} is 101 bytes; at most 100 bytes are accepted. Shorten the plan (keep the steps and ` +
            `decisions, leave out detail that belongs in the code), then call resolve with action "apply" again. ` +
            `You are still in plan mode.`
        )
        assert.isTrue(yield* mode.active)
        yield* plan.write(`# Big\n${"x".repeat(94)}`) // exactly 100 bytes
        successOf(yield* resolveCall({ action: "apply", reason: "Shorter now." }))
        assert.isFalse(yield* mode.active)
      })
    ))

  it.live("a maxPlanBytes that is not a positive integer is a defect at enter (a programming error)", () =>
    session((plan) =>
      Effect.gen(function*() {
        for (const maxPlanBytes of [0, -1, 1.5, Number.NaN]) {
          const exit = yield* Effect.exit(
            PlanApproval.enter({ planFilePath: plan.path, approve: PlanApproval.autoApprove, maxPlanBytes })
          )
          assert.isTrue(Exit.isFailure(exit) && Cause.isDie(exit.cause), String(maxPlanBytes))
        }
        const standing = yield* StandingResolveHandler
        assert.isTrue(Option.isNone(yield* standing.peek), "no handler installed")
      })
    ))

  it.live("the default cap is 1 MiB", () =>
    session((plan) =>
      Effect.gen(function*() {
        assert.strictEqual(PlanApproval.defaultMaxPlanBytes, 1_048_576)
        const mode = yield* PlanApproval.enter({ planFilePath: plan.path, approve: PlanApproval.autoApprove })
        yield* plan.write(`# Big\n${"x".repeat(1_048_576 - 6 + 1)}`)
        const error = failureOf(yield* resolveCall({ action: "apply", reason: "Ready." }))
        assert.include(error.message, "is 1048577 bytes; at most 1048576 bytes are accepted")
        assert.isTrue(yield* mode.active)
        yield* plan.write(`# Big\n${"x".repeat(1_048_576 - 6)}`)
        successOf(yield* resolveCall({ action: "apply", reason: "At the cap." }))
      })
    ))

  it.live(
    "a heading line of 1 MiB at the cap gives its title in linear time (quadratic before: half an hour)",
    () =>
      session((plan) =>
        Effect.gen(function*() {
          yield* plan.write(`# Plan${" ".repeat(1_048_000)}x\n`)
          yield* PlanApproval.enter({ planFilePath: plan.path, approve: PlanApproval.autoApprove })
          const result = successOf(yield* resolveCall({ action: "apply", reason: "Ready." }))
          assert.strictEqual((result.details as any).sourceResultDetails.title, "Plan-x")
        })
      ),
    10_000
  )

  it.live("a plan that is not valid UTF-8 is refused with a ToolError; the mode stays", () =>
    session((plan) =>
      Effect.gen(function*() {
        const mode = yield* PlanApproval.enter({ planFilePath: plan.path, approve: PlanApproval.autoApprove })
        yield* Effect.promise(() =>
          NFS.writeFile(plan.path, Buffer.concat([Buffer.from("# Plan\n"), Buffer.from([0xC3, 0x28, 0xFF])]))
        )
        const error = failureOf(yield* resolveCall({ action: "apply", reason: "Ready." }))
        assert.strictEqual(error._tag, "ToolError")
        assert.strictEqual(
          error.message,
          `The plan ${plan.path} is not valid UTF-8 text. Rewrite it as UTF-8 text, then call resolve with action ` +
            `"apply" again. You are still in plan mode.`
        )
        assert.isTrue(yield* mode.active)
        yield* plan.write("# Plan\nCafé ☕\n")
        const result = successOf(yield* resolveCall({ action: "apply", reason: "Fixed." }))
        assert.include(ToolResult.textOf(result), "Plan approved: Plan.")
      })
    ))

  it.live(
    "a plan path that is a directory or a FIFO is refused without reading it; the mode stays",
    () =>
      session((plan) =>
        Effect.gen(function*() {
          yield* Effect.promise(() => NFS.mkdir(plan.path))
          const mode = yield* PlanApproval.enter({ planFilePath: plan.path, approve: PlanApproval.autoApprove })
          const directory = failureOf(yield* resolveCall({ action: "apply", reason: "Ready." }))
          assert.include(directory.message, `No plan to approve: ${plan.path} is not a regular file (Directory)`)
          const fifo = `${plan.path}.fifo`
          execFileSync("mkfifo", [fifo])
          yield* PlanApproval.enter({ planFilePath: fifo, approve: PlanApproval.autoApprove })
          // Reading a FIFO with no writer would block for good.
          const blocked = failureOf(yield* resolveCall({ action: "apply", reason: "Ready." }))
          assert.include(blocked.message, "is not a regular file (FIFO)")
          assert.isTrue(yield* mode.active)
        })
      ),
    10_000
  )

  it.live("a long extra.title or heading gives a slug of at most 100 characters", () =>
    session((plan) =>
      Effect.gen(function*() {
        yield* plan.write(`# ${"Heading ".repeat(2_000)}\n`)
        const titles: Array<string> = []
        yield* PlanApproval.enter({
          planFilePath: plan.path,
          approve: (submission) => Effect.sync(() => (titles.push(submission.title), PlanApproval.refused()))
        })
        failureOf(yield* resolveCall({ action: "apply", reason: "Ready." }))
        failureOf(yield* resolveCall({ action: "apply", reason: "Ready.", extra: { title: "t".repeat(10_000) } }))
        deepStrictEqual(titles, ["Heading-".repeat(13).slice(0, 100), "t".repeat(100)])
      })
    ))

  it.live("extra.title names the plan", () =>
    session((plan) =>
      Effect.gen(function*() {
        yield* plan.write("# Heading\n")
        const mode = yield* PlanApproval.enter({ planFilePath: plan.path, approve: PlanApproval.autoApprove })
        const result = successOf(
          yield* resolveCall({ action: "apply", reason: "ok", extra: { title: "cache layer v2.md" } })
        )
        assert.strictEqual((result.details as any).sourceResultDetails.title, "cache-layer-v2")
        deepStrictEqual((result.details as any).extra, { title: "cache layer v2.md" })
        assert.strictEqual((yield* mode.left)._tag, "Approved")
      })
    ))

  it.live("refused: a ToolError 'Plan refinement requested …' with the feedback, the mode stays, a later approval ends it", () =>
    session((plan) =>
      Effect.gen(function*() {
        yield* plan.write("# Draft\n")
        const answers = yield* Ref.make([PlanApproval.refused("Cover the error cases."), PlanApproval.approved])
        const mode = yield* PlanApproval.enter({
          planFilePath: plan.path,
          approve: () => Ref.modify(answers, ([first, ...rest]) => [first!, rest])
        })
        // Refused: not approved, so the plan action stays pending (a ToolError the model reads as is).
        const refusal = failureOf(yield* resolveCall({ action: "apply", reason: "Ready?" }))
        assert.strictEqual(refusal._tag, "ToolError")
        assert.strictEqual(
          refusal.message,
          `Plan refinement requested: Cover the error cases. Revise ${plan.path} and call resolve with action ` +
            `"apply" again when it is ready. You are still in plan mode.`
        )
        assert.isTrue(yield* mode.active)
        const approval = successOf(yield* resolveCall({ action: "apply", reason: "Now with error cases." }))
        deepStrictEqual((approval.details as any).sourceResultDetails, {
          planFilePath: plan.path,
          title: "Draft",
          planExists: true
        })
        assert.isFalse(yield* mode.active)
      })
    ))

  it.live("refused without feedback", () =>
    session((plan) =>
      Effect.gen(function*() {
        yield* plan.write("# Draft\n")
        yield* PlanApproval.enter({ planFilePath: plan.path, approve: () => Effect.succeed(PlanApproval.refused()) })
        const refusal = failureOf(yield* resolveCall({ action: "apply", reason: "Ready?" }))
        assert.match(refusal.message, /^Plan refinement requested\. Revise /)
      })
    ))

  it.live("a failing approval callback is an apply failure; the mode stays", () =>
    session((plan) =>
      Effect.gen(function*() {
        yield* plan.write("# Draft\n")
        const mode = yield* PlanApproval.enter({
          planFilePath: plan.path,
          approve: () => Effect.fail(new Error("approval UI crashed"))
        })
        const error = failureOf(yield* resolveCall({ action: "apply", reason: "Ready." }))
        assert.strictEqual(error._tag, "ApplyFailed")
        assert.strictEqual(error.message, "Apply failed: approval UI crashed")
        assert.isTrue(yield* mode.active)
      })
    ))

  it.live("discard: the default discard text; the mode stays", () =>
    session((plan) =>
      Effect.gen(function*() {
        yield* plan.write("# Draft\n")
        const mode = yield* PlanApproval.enter({ planFilePath: plan.path, approve: PlanApproval.autoApprove })
        const result = successOf(yield* resolveCall({ action: "discard", reason: "Not yet." }))
        assert.strictEqual(ToolResult.textOf(result), "Discarded: Plan: PLAN.md. Reason: Not yet.")
        assert.isTrue(yield* mode.active)
        const standing = yield* StandingResolveHandler
        assert.isTrue(Option.isSome(yield* standing.peek))
      })
    ))

  it.live("a pending preview takes precedence over the plan handler", () =>
    session((plan) =>
      Effect.gen(function*() {
        yield* plan.write("# Draft\n")
        const approvals = yield* Ref.make(0)
        const mode = yield* PlanApproval.enter({
          planFilePath: plan.path,
          approve: () => Effect.as(Ref.update(approvals, (n) => n + 1), PlanApproval.approved)
        })
        const queue = yield* ToolChoiceQueue
        const preview = yield* stage({
          label: "Edit: 1 replacement in 1 file",
          sourceToolName: "edit",
          apply: () => Effect.succeed(ToolResult.text("edit applied"))
        })
        yield* queue.nextToolChoice
        const first = successOf(yield* resolveCall({ action: "apply", reason: "Apply the edit." }))
        yield* queue.resolve
        assert.strictEqual(ToolResult.textOf(first), "edit applied")
        assert.strictEqual(yield* preview.status, "applied")
        assert.strictEqual(yield* Ref.get(approvals), 0)
        assert.isTrue(yield* mode.active)
        // Nothing in flight now: the plan handler answers.
        const second = successOf(yield* resolveCall({ action: "apply", reason: "Approve the plan." }))
        assert.include(ToolResult.textOf(second), "Plan approved: Draft")
        assert.strictEqual(yield* Ref.get(approvals), 1)
        assert.isFalse(yield* mode.active)
      })
    ))

  it.live("leave closes the mode without approval", () =>
    session((plan) =>
      Effect.gen(function*() {
        const mode = yield* PlanApproval.enter({ planFilePath: plan.path, approve: PlanApproval.autoApprove })
        yield* mode.leave
        deepStrictEqual(yield* mode.left, { _tag: "Left" })
        const standing = yield* StandingResolveHandler
        assert.isTrue(Option.isNone(yield* standing.peek))
      })
    ))

  it.live("closing the enclosing scope leaves the mode", () =>
    session((plan) =>
      Effect.gen(function*() {
        const scope = yield* Scope.make()
        const mode = yield* Scope.extend(
          PlanApproval.enter({ planFilePath: plan.path, approve: PlanApproval.autoApprove }),
          scope
        )
        assert.isTrue(yield* mode.active)
        yield* Scope.close(scope, Exit.void)
        deepStrictEqual(yield* mode.left, { _tag: "Left" })
        const standing = yield* StandingResolveHandler
        assert.isTrue(Option.isNone(yield* standing.peek))
      })
    ))

  it.live("leaving one mode does not clear a handler installed after it", () =>
    session((plan) =>
      Effect.gen(function*() {
        const first = yield* PlanApproval.enter({ planFilePath: plan.path, approve: PlanApproval.autoApprove })
        yield* PlanApproval.enter({ planFilePath: `${plan.path}.second.md`, approve: PlanApproval.autoApprove })
        yield* first.leave
        const standing = yield* StandingResolveHandler
        assert.isTrue(Option.isSome(yield* standing.peek))
        const result = successOf(yield* resolveCall({ action: "discard", reason: "x" }))
        assert.strictEqual(ToolResult.textOf(result), "Discarded: Plan: PLAN.md.second.md. Reason: x")
      })
    ))
})

describe("PlanApproval in a durable session", () => {
  it.live("plan mode survives a restart: the restored plan action is taken up again and approved once", () =>
    Effect.scoped(Effect.gen(function*() {
      const dir = yield* tempDir
      const planFilePath = NPath.join(dir, "PLAN.md")
      yield* Effect.promise(() => NFS.writeFile(planFilePath, "# Cache layer\n"))
      const store = Layer.succeed(PendingStore, makeMemory())
      const approvals = yield* Ref.make(0)
      const approve = () => Effect.as(Ref.update(approvals, (n) => n + 1), PlanApproval.approved)
      // A process: a durable session whose layer knows the plan kind (and how to approve, for a restored plan).
      const open = Effect.gen(function*() {
        const scope = yield* Scope.make()
        const context = yield* Layer.buildWithScope(
          ResolveRuntime.durable({ session: "planning", store, kinds: [PlanApproval.kind] }).pipe(
            Layer.provideMerge(Layer.mergeAll(NodeContext.layer, Layer.succeed(PlanApproval.Approver, approve)))
          ),
          scope
        )
        return { context, scope }
      })

      const first = yield* open
      const mode = yield* PlanApproval.enter({ planFilePath, approve }).pipe(
        Effect.provide(first.context),
        Scope.extend(first.scope)
      )
      assert.isTrue(yield* mode.active)
      const [staged] = yield* Effect.flatMap(PendingActions, (p) => p.list).pipe(Effect.provide(first.context))
      deepStrictEqual([staged!.kind, staged!.status], ["plan", "pending"])
      // The process dies without leaving plan mode: its scope is never closed.

      const second = yield* open
      const resumed = yield* PlanApproval.enter({ planFilePath, approve }).pipe(
        Effect.provide(second.context),
        Scope.extend(second.scope)
      )
      const result = successOf(
        yield* Effect.exit(ResolveTool.execute({ action: "apply", reason: "Ready." })).pipe(
          Effect.provide(second.context)
        )
      )
      assert.strictEqual((result.details as any).sourceResultDetails.title, "Cache-layer")
      deepStrictEqual(yield* resumed.left, { _tag: "Approved", title: "Cache-layer", planFilePath })
      // The same action, approved once; plan mode staged no second one.
      deepStrictEqual(
        (yield* Effect.flatMap(PendingActions, (p) => p.list).pipe(Effect.provide(second.context))).map((info) => [
          info.id,
          info.status
        ]),
        [[staged!.id, "applied"]]
      )
      assert.strictEqual(yield* Ref.get(approvals), 1)
      yield* Scope.close(second.scope, Exit.void)
    })))
})
