// Edit before apply: the editor filled from the action's draft (one box per file for a files draft, else JSON),
// and the reviewer's own amended text kept until they drop it or an apply succeeds.
import { $, el, state } from "./common.js"

/** A draft the page edits file by file: `{ files: [{ path, text }] }`. */
const isFilesDraft = (draft) =>
  draft !== null && typeof draft === "object" && Array.isArray(draft.files) && draft.files.length > 0 &&
  draft.files.every((file) => file !== null && typeof file.path === "string" && typeof file.text === "string")

/**
 * Remembers what the reviewer wrote in the open editor (nothing when it equals the draft), so that closing and
 * reopening the editor, selecting another action, or a refused apply never loses it.
 */
export const keepEdits = () => {
  const detail = state.detail
  if (!state.editing || detail === null) return
  if (state.draftFiles !== null) {
    const texts = [...$("amend-files").querySelectorAll("textarea")].map((box) => box.value)
    const changed = texts.some((text, i) => text !== state.draftFiles[i]?.text)
    if (changed) state.edits.set(detail.id, { paths: state.draftFiles.map((file) => file.path), texts })
    else state.edits.delete(detail.id)
  } else {
    const draft = detail.amendmentDraft
    const json = $("amendment").value
    if (json !== (draft === null ? "{}" : JSON.stringify(draft, null, 2))) state.edits.set(detail.id, { json })
    else state.edits.delete(detail.id)
  }
}

/** Fills the editor from the action's draft, then with the reviewer's kept text, if any. */
export const fillEditor = () => {
  const draft = state.detail?.amendmentDraft ?? null
  const kept = state.edits.get(state.detail?.id)
  state.draftFiles = isFilesDraft(draft) ? draft.files.map((file) => ({ path: file.path, text: file.text })) : null
  const keptTexts = kept?.texts !== undefined && state.draftFiles !== null &&
      kept.paths.length === state.draftFiles.length &&
      kept.paths.every((path, i) => path === state.draftFiles[i].path) ?
    kept.texts :
    null
  $("amend-files").replaceChildren(
    ...(state.draftFiles ?? []).flatMap((file, i) => {
      const box = el("textarea", {
        attrs: {
          id: `amend-file-${i}`,
          "data-path": file.path,
          rows: String(Math.min(20, Math.max(4, file.text.split("\n").length + 1))),
          spellcheck: "false"
        }
      })
      box.value = keptTexts === null ? file.text : keptTexts[i]
      return [el("label", { text: file.path, attrs: { for: `amend-file-${i}` } }), box]
    })
  )
  $("amend-json").hidden = state.draftFiles !== null
  if (state.draftFiles === null) {
    $("amendment").value = kept?.json !== undefined ? kept.json : draft === null ? "{}" : JSON.stringify(draft, null, 2)
  }
}

/** Drops the reviewer's amended text: the editor starts again from the draft. */
export const resetEdits = () => {
  if (state.detail === null) return
  state.edits.delete(state.detail.id)
  fillEditor()
}
