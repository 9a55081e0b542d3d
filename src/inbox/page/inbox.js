// The approval inbox's page: plain ES2022, no library, no build step. Everything a model wrote (labels, previews,
// diffs, file names, reasons, outcomes) is untrusted: it reaches the page only through textContent and attributes
// set with setAttribute on elements made here, never as markup. The server's Content-Security-Policy allows this
// file and no inline script.

const $ = (id) => document.getElementById(id)

/** An element with text and children; `text` is set with textContent. */
const el = (tag, options = {}, ...children) => {
  const node = document.createElement(tag)
  if (options.className !== undefined) node.className = options.className
  if (options.text !== undefined) node.textContent = options.text
  for (const [name, value] of Object.entries(options.attrs ?? {})) node.setAttribute(name, value)
  for (const child of children) if (child !== undefined && child !== null) node.append(child)
  return node
}

const state = {
  me: null,
  filter: "waiting",
  items: [],
  next: null,
  wanted: 50,
  selected: null,
  detail: null,
  editing: false,
  // While editing a draft of the form { files: [{ path, text }] }: each file's drafted text, one text box each.
  draftFiles: null,
  // The reviewer's own amended text, by action id ({ paths, texts: one per box } or { json }): kept when the editor
  // closes, another action is selected, or an apply is refused, until the reviewer discards it or an apply succeeds.
  edits: new Map(),
  busy: false
}

class HttpError extends Error {
  constructor(status, body) {
    super(body?.message ?? `The inbox answered ${status}.`)
    this.status = status
    this.tag = body?._tag
  }
}

const api = async (path, init = {}) => {
  const headers = { accept: "application/json" }
  if (init.body !== undefined) headers["content-type"] = "application/json"
  const response = await fetch(path, { credentials: "same-origin", ...init, headers })
  if (response.status === 204) return null
  const body = await response.json().catch(() => null)
  if (!response.ok) throw new HttpError(response.status, body)
  return body
}

// ---- formatting ---------------------------------------------------------------------------------------------------

const ago = (millis) => {
  const seconds = Math.round((Date.now() - millis) / 1000)
  if (seconds < 60) return "just now"
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min ago`
  if (seconds < 86400) return `${Math.floor(seconds / 3600)} h ago`
  return new Date(millis).toLocaleDateString()
}

const when = (millis) => new Date(millis).toLocaleString()

// Characters that make text display in another order than it is stored (Trojan Source), and terminal escapes.
const bidi = /[\u202A-\u202E\u2066-\u2069\u200E\u200F\u061C]/
const escapes = /[\u0000-\u0008\u000B-\u001F\u007F\u0080-\u009F]/

const filters = {
  waiting: "",
  snoozed: "?snoozed=only",
  settled: "?status=applied&status=discarded&status=cleared&status=expired&snoozed=include",
  all:
    "?status=pending&status=resolving&status=orphaned&status=conflict&status=applied&status=discarded&status=cleared&status=expired&snoozed=include"
}

// ---- the list -----------------------------------------------------------------------------------------------------

const renderCounts = (counts) => {
  $("badge").textContent = String(counts.pending)
  document.title = counts.pending > 0 ? `(${counts.pending}) Approval inbox` : "Approval inbox"
  const parts = [`${counts.pending} waiting`]
  if (counts.requested > 0) parts.push(`${counts.requested} decided, not yet run`)
  if (counts.snoozed > 0) parts.push(`${counts.snoozed} not now`)
  if (counts.conflict > 0) parts.push(`${counts.conflict} in conflict`)
  $("counts").textContent = parts.join(" · ")
}

const itemNode = (item) => {
  const button = el(
    "button",
    {
      className: "item",
      attrs: { type: "button", role: "option", "data-id": item.id, "aria-selected": String(item.id === state.selected) }
    },
    el("span", { className: "label", text: item.label }),
    el(
      "span",
      { className: "sub" },
      el("span", { className: `status ${item.status}`, text: item.requested !== null ? "decided" : item.status }),
      `${item.session} · ${item.kind} · ${ago(item.createdAt)}`
    )
  )
  button.addEventListener("click", () => select(item.id, true))
  return el("li", {}, button)
}

const renderList = () => {
  const list = $("list")
  list.replaceChildren(...state.items.map(itemNode))
  $("list-empty").hidden = state.items.length > 0
  $("more").hidden = state.next === null
}

// A page is 50 actions. A refresh (any change, anywhere) reloads as many as the reviewer has asked to see, up to the
// API's 200, so paging down is not undone by the next change. Loads overlap (a click on More while a change
// arrives): each takes a ticket and only the latest one's answer is shown.
const pageSize = 50
const maxPage = 200
let ticket = 0

const withFilter = (params) => {
  const query = filters[state.filter]
  return `/api/actions${query === "" ? "?" : `${query}&`}${params}`
}

const loadList = async () => {
  const mine = ++ticket
  const page = await api(withFilter(`limit=${Math.min(maxPage, Math.max(pageSize, state.wanted))}`))
  if (mine !== ticket) return
  state.items = page.items
  state.next = page.next
  renderCounts(page.counts)
  renderList()
}

const loadMore = async () => {
  if (state.next === null) return
  const mine = ++ticket
  state.wanted = state.items.length + pageSize
  const page = await api(withFilter(`limit=${pageSize}&cursor=${encodeURIComponent(state.next)}`))
  if (mine !== ticket) return
  state.items = state.items.concat(page.items)
  state.next = page.next
  renderCounts(page.counts)
  renderList()
}

// ---- the detail -----------------------------------------------------------------------------------------------------

const maxDiffLines = 3000

// A file name's characters that a screen does not show as themselves (control characters, line breaks, tabs,
// bidirectional controls and marks, line separators) are shown as their code points, as the edit preview shows them.
const unseen = /[\u0000-\u001F\u007F-\u009F\u061C\u200E\u200F\u2028\u2029\u202A-\u202E\u2066-\u2069]/g
const visibleName = (name) =>
  name.replace(unseen, (c) => `<U+${c.charCodeAt(0).toString(16).toUpperCase().padStart(4, "0")}>`)

const renderDiff = (diff) => {
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

const renderDetail = () => {
  const detail = state.detail
  $("detail").hidden = detail === null
  $("detail-empty").hidden = detail !== null
  if (detail === null) return
  $("d-label").textContent = detail.label
  const meta = [
    ["Status", detail.status],
    ["Session", detail.session],
    ["Kind", detail.kind],
    ["Tool", detail.sourceToolName],
    ["Staged", when(detail.createdAt)],
    ["Expires", detail.expiresAt === null ? "never" : when(detail.expiresAt)],
    ["Attempts", String(detail.attempts)]
  ]
  if (detail.snoozedUntil !== null) meta.push(["Not now until", when(detail.snoozedUntil)])
  if (detail.outcome !== null) meta.push(["Outcome", detail.outcome])
  if (detail.requested !== null) {
    meta.push([
      "Decided",
      `${detail.requested.reviewer}: ${detail.requested.action} — ${detail.requested.reason} (not yet run)`
    ])
  }
  $("d-meta").replaceChildren(...meta.flatMap(([term, value]) => [el("dt", { text: term }), el("dd", { text: value })]))
  const warnings = []
  if (bidi.test(detail.preview) || bidi.test(detail.label)) {
    warnings.push(
      "This preview contains bidirectional control characters: the text may display in a different order than it is written."
    )
  }
  if (escapes.test(detail.preview) || escapes.test(detail.label)) {
    warnings.push("This preview contains control characters (such as terminal escape sequences); they are not shown.")
  }
  $("d-warnings").replaceChildren(...warnings.map((text) => el("p", { text })))
  renderDiff(detail.diff)
  $("d-preview").textContent = detail.preview
  $("d-history").replaceChildren(
    ...detail.history.map((event) =>
      el("li", { text: `${when(event.at)}: ${event.from === null ? "staged" : event.from} → ${event.to}` })
    )
  )
  $("d-decisions").replaceChildren(
    ...(detail.decisions.length === 0 ?
      [el("li", { text: "none" })] :
      detail.decisions.map((d) =>
        el("li", {
          text: `${when(d.requestedAt)}: ${d.reviewer} — ${d.action}: ${d.reason} (${d.state}${
            d.outcome === null ? "" : `: ${d.outcome}`
          })`
        })
      ))
  )
  const decidable = state.me?.permission === "decide" &&
    (detail.status === "pending" || detail.status === "orphaned") &&
    detail.requested === null
  for (const id of ["apply", "discard", "snooze"]) $(id).disabled = !decidable || state.busy
  $("snooze-for").disabled = !decidable || state.busy
  $("edit").disabled = !decidable || !detail.amendable || state.busy
  $("edit").title = detail.amendable ? "Edit before applying" : "This kind takes no amendment"
  $("d-amend").hidden = !state.editing
}

const showResult = (text, error = false) => {
  const node = $("d-result")
  node.textContent = text
  node.classList.toggle("error", error)
}

const loadDetail = async (id) => {
  try {
    state.detail = await api(`/api/actions/${encodeURIComponent(id)}`)
  } catch (error) {
    if (error instanceof HttpError && error.status === 404) state.detail = null
    else throw error
  }
  renderDetail()
}

const select = async (id, open) => {
  if (state.selected !== id) {
    keepEdits()
    state.editing = false
    state.draftFiles = null
    $("amendment").value = ""
    showResult("")
    $("reason").value = ""
  }
  state.selected = id
  for (const node of document.querySelectorAll(".item")) {
    const selected = node.getAttribute("data-id") === id
    node.setAttribute("aria-selected", String(selected))
    if (selected && open) node.scrollIntoView({ block: "nearest" })
  }
  $("app").classList.add("showing-detail")
  await loadDetail(id)
}

const move = (delta) => {
  if (state.items.length === 0) return
  const at = state.items.findIndex((item) => item.id === state.selected)
  const next = Math.min(state.items.length - 1, Math.max(0, at === -1 ? 0 : at + delta))
  select(state.items[next].id, true)
  document.querySelector(`.item[data-id="${CSS.escape(state.items[next].id)}"]`)?.focus()
}

// ---- deciding -------------------------------------------------------------------------------------------------------

const decide = async (body) => {
  const detail = state.detail
  if (detail === null || state.busy) return
  state.busy = true
  renderDetail()
  showResult("Working…")
  try {
    const result = await api(`/api/actions/${encodeURIComponent(detail.id)}/decision`, {
      method: "POST",
      body: JSON.stringify(body)
    })
    showResult(result.message, result.outcome === "failed")
    if (result.outcome === "failed") {
      // Refused (a stale preview, a failing apply): the reviewer's reason and amended text stay as they are.
      keepEdits()
    } else {
      state.editing = false
      state.edits.delete(detail.id)
      $("reason").value = ""
    }
  } catch (error) {
    showResult(error.message, true)
    keepEdits()
  } finally {
    state.busy = false
  }
  await Promise.all([loadList(), loadDetail(detail.id)])
}

// The reviewer's reason, which the agent is told as written. The inbox never writes one for them: with an empty box
// nothing is sent, and the page asks for one.
const reasonOrAsk = () => {
  const reason = $("reason").value.trim()
  if (reason === "") {
    showResult("Write a reason first: one sentence, told to the agent as you write it. Nothing was sent.", true)
    $("reason").focus()
    return null
  }
  return reason
}

const apply = () => {
  if (state.detail === null || state.busy) return
  if (state.editing && state.draftFiles !== null) {
    // Only the files the reviewer changed are amended; the others are written as previewed.
    const boxes = [...$("amend-files").querySelectorAll("textarea")]
    const files = state.draftFiles
      .map((file, i) => ({ path: file.path, text: boxes[i].value }))
      .filter((file, i) => file.text !== state.draftFiles[i].text)
    const reason = reasonOrAsk()
    if (reason === null) return
    if (files.length === 0) return decide({ action: "apply", reason })
    return decide({ action: "apply", reason, amendment: { files } })
  }
  if (state.editing) {
    let amendment
    try {
      amendment = JSON.parse($("amendment").value)
    } catch {
      showResult("The amendment is not valid JSON.", true)
      return
    }
    const reason = reasonOrAsk()
    if (reason === null) return
    return decide({ action: "apply", reason, amendment })
  }
  const reason = reasonOrAsk()
  if (reason === null) return
  return decide({ action: "apply", reason })
}

const discard = () => {
  if (state.detail === null || state.busy) return
  const reason = reasonOrAsk()
  if (reason === null) return
  return decide({ action: "discard", reason })
}

const snooze = () => decide({ action: "snooze", until: Date.now() + Number($("snooze-for").value) })

/** A draft the page edits file by file: `{ files: [{ path, text }] }`. */
const isFilesDraft = (draft) =>
  draft !== null && typeof draft === "object" && Array.isArray(draft.files) && draft.files.length > 0 &&
  draft.files.every((file) => file !== null && typeof file.path === "string" && typeof file.text === "string")

/**
 * Remembers what the reviewer wrote in the open editor (nothing when it equals the draft), so that closing and
 * reopening the editor, selecting another action, or a refused apply never loses it.
 */
const keepEdits = () => {
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
const fillEditor = () => {
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
const resetEdits = () => {
  if (state.detail === null) return
  state.edits.delete(state.detail.id)
  fillEditor()
}

const edit = () => {
  if ($("edit").disabled) return
  keepEdits()
  state.editing = !state.editing
  if (state.editing) fillEditor()
  renderDetail()
  if (state.editing) (state.draftFiles === null ? $("amendment") : $("amend-files").querySelector("textarea")).focus()
}

// ---- live updates ---------------------------------------------------------------------------------------------------

let refreshTimer
const refreshSoon = () => {
  clearTimeout(refreshTimer)
  refreshTimer = setTimeout(() => {
    loadList().catch(() => {})
    if (state.selected !== null) loadDetail(state.selected).catch(() => {})
  }, 150)
}

const listen = () => {
  const live = $("live")
  const events = new EventSource("/api/events")
  events.addEventListener("ready", (event) => {
    live.textContent = "live"
    live.className = "live on"
    renderCounts(JSON.parse(event.data).counts)
    refreshSoon()
  })
  events.addEventListener("changed", (event) => {
    const data = JSON.parse(event.data)
    renderCounts(data.counts)
    refreshSoon()
  })
  events.addEventListener("error", () => {
    live.textContent = "reconnecting"
    live.className = "live off"
  })
}

// ---- keyboard -------------------------------------------------------------------------------------------------------

const typing = (target) => target instanceof HTMLInputElement || target instanceof HTMLTextAreaElement

document.addEventListener("keydown", (event) => {
  if (event.ctrlKey || event.metaKey || event.altKey) return
  if (event.key === "Escape") {
    if (typing(event.target)) event.target.blur()
    else if (!$("help").hidden) $("help").hidden = true
    else $("app").classList.remove("showing-detail")
    return
  }
  if (typing(event.target) || state.me === null) return
  const actions = {
    j: () => move(1),
    ArrowDown: () => move(1),
    k: () => move(-1),
    ArrowUp: () => move(-1),
    a: () => !$("apply").disabled && apply(),
    d: () => !$("discard").disabled && discard(),
    n: () => !$("snooze").disabled && snooze(),
    e: edit,
    r: () => $("reason").focus(),
    "?": () => ($("help").hidden = !$("help").hidden)
  }
  const action = actions[event.key]
  if (action !== undefined) {
    event.preventDefault()
    action()
  }
})

// ---- start ----------------------------------------------------------------------------------------------------------

const start = async () => {
  $("apply").addEventListener("click", apply)
  $("discard").addEventListener("click", discard)
  $("snooze").addEventListener("click", snooze)
  $("edit").addEventListener("click", edit)
  $("amend-reset").addEventListener("click", resetEdits)
  $("more").addEventListener("click", () => loadMore())
  $("back").addEventListener("click", () => $("app").classList.remove("showing-detail"))
  $("help-open").addEventListener("click", () => ($("help").hidden = false))
  $("help-close").addEventListener("click", () => ($("help").hidden = true))
  $("filter").addEventListener("change", () => {
    state.filter = $("filter").value
    state.wanted = pageSize
    loadList()
  })
  $("logout").addEventListener("click", async () => {
    await api("/api/logout", { method: "POST" }).catch(() => {})
    location.reload()
  })
  try {
    state.me = await api("/api/me")
  } catch (error) {
    if (error instanceof HttpError && error.status === 401) {
      $("login").hidden = false
      $("live").hidden = true
      return
    }
    throw error
  }
  $("who").textContent = `${state.me.name} (${state.me.permission === "decide" ? "may decide" : "read only"})`
  $("logout").hidden = false
  $("app").hidden = false
  listen()
  await loadList()
  renderDetail()
}

start()
