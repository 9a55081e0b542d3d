// How the page shows what a model wrote: ages, file names with the characters a screen hides made visible, line
// counts, and the diff (text nodes only).
import { $, el } from "./common.js"

export const ago = (millis) => {
  const seconds = Math.round((Date.now() - millis) / 1000)
  if (seconds < 60) return "just now"
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min ago`
  if (seconds < 86400) return `${Math.floor(seconds / 3600)} h ago`
  return new Date(millis).toLocaleDateString()
}

export const when = (millis) => new Date(millis).toLocaleString()

// Characters that make text display in another order than it is stored (Trojan Source), and terminal escapes.
export const bidi = /[\u202A-\u202E\u2066-\u2069\u200E\u200F\u061C]/
export const escapes = /[\u0000-\u0008\u000B-\u001F\u007F\u0080-\u009F]/

/** `+3 −1`: the lines a diff adds and removes, each in its colour. */
const lineCounts = (added, removed) =>
  el(
    "span",
    { className: "counts-lines", attrs: { "aria-label": `${added} lines added, ${removed} removed` } },
    el("span", { className: "plus", text: `+${added}` }),
    " ",
    el("span", { className: "minus", text: `\u2212${removed}` })
  )

const filesShown = 3

/** The files a row names: the first three with their line counts, then how many more, and the totals. */
export const filesNode = (item) => {
  if (item.fileCount === 0) return null
  const node = el("span", { className: "files" })
  item.files.slice(0, filesShown).forEach((file, i) => {
    if (i > 0) node.append(" · ")
    node.append(
      el("span", { className: "file-name", text: visibleName(file.path) }),
      " ",
      lineCounts(file.added, file.removed)
    )
  })
  if (item.fileCount > filesShown) {
    const more = item.fileCount - filesShown
    node.append(` · ${more} more ${more === 1 ? "file" : "files"} · in all `, lineCounts(item.added, item.removed))
  }
  return node
}

const maxDiffLines = 3000

// A file name's characters that a screen does not show as themselves (control characters, line breaks, tabs,
// bidirectional controls and marks, line separators) are shown as their code points, as the edit preview shows them.
const unseen = /[\u0000-\u001F\u007F-\u009F\u061C\u200E\u200F\u2028\u2029\u202A-\u202E\u2066-\u2069]/g
export const visibleName = (name) =>
  name.replace(unseen, (c) => `<U+${c.charCodeAt(0).toString(16).toUpperCase().padStart(4, "0")}>`)

export const renderDiff = (diff) => {
  const container = $("d-diff")
  if (diff === null) {
    container.replaceChildren()
    $("d-raw").open = true
    return
  }
  $("d-raw").open = false
  let shown = 0
  const files = diff.files.map((file) => {
    const path = file.oldPath === file.newPath ?
      visibleName(file.newPath) :
      `${visibleName(file.oldPath)} → ${visibleName(file.newPath)}`
    const node = el("div", { className: "file" }, el("div", { className: "path", text: path }))
    for (const hunk of file.hunks) {
      if (shown >= maxDiffLines) break
      node.append(el("div", { className: "hunk", text: hunk.header }))
      for (const line of hunk.lines) {
        if (shown++ >= maxDiffLines) break
        const sign = line.op === "add" ? "+" : line.op === "remove" ? "-" : line.op === "note" ? "" : " "
        node.append(
          el(
            "div",
            { className: `line ${line.op}` },
            el("span", { className: "sign", text: sign }),
            el("span", { className: "text", text: line.text })
          )
        )
      }
    }
    return node
  })
  if (shown >= maxDiffLines || diff.truncated) {
    files.push(el("p", { className: "cut", text: "The diff is longer than shown here; the whole preview is below." }))
  }
  container.replaceChildren(...files)
}
