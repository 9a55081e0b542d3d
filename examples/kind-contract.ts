// A kind in two parts: its contract (data: an inbox can hold it to list and check notes) and its handlers (the
// process that runs notes). A reviewer's amendment reaches `apply` decoded and typed, as `call.amendment`.
import { Effect, Option, Schema } from "effect"
import { ActionKind, resolve, resolveAmended, ResolveRuntime, stageKind, ToolResult } from "effect-resolve"

// The contract: no requirements. `Inbox.layer({ kinds: [NoteContract] })` lists, decodes and checks notes.
const NoteContract = ActionKind.contract({
  name: "note",
  payload: Schema.Struct({ text: Schema.String }),
  amendment: Schema.Struct({ text: Schema.String }),
  amendmentDraft: ({ text }) => Option.some({ text })
})

// The handlers: `call.amendment` is `Option<{ readonly text: string }>`, none unless a reviewer amended this action.
const Note = ActionKind.implement(NoteContract, {
  apply: (payload, call) => {
    const { text } = Option.getOrElse(call.amendment, () => payload)
    return Effect.succeed(ToolResult.text(`Noted "${text}" (${call.reason})`))
  }
})

const program = Effect.gen(function*() {
  const first = yield* stageKind(Note, { text: "draft" }, { label: "Note", sourceToolName: "note" })
  // The process running a reviewer's decision passes the amendment; a model's `resolve` never can.
  const amended = yield* resolveAmended({ reason: "clearer" }, {
    actionId: first.id,
    reviewer: "ann",
    encoded: { text: "final" }
  })
  console.log(ToolResult.textOf(amended))
  const second = yield* stageKind(Note, { text: "draft" }, { label: "Note", sourceToolName: "note" })
  // A model's `extra.amendment` is only extra: the note is applied as staged.
  const plain = yield* resolve({ action: "apply", reason: "ok", id: second.id, extra: { amendment: { text: "x" } } })
  console.log(ToolResult.textOf(plain))
})

Effect.runPromise(Effect.provide(program, ResolveRuntime.layer))
