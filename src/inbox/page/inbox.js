// The approval inbox's page: plain ES2022, no library, no build step. Everything a model wrote (labels, previews,
// diffs, file names, reasons, outcomes) is untrusted: it reaches the page only through textContent and attributes
// set with setAttribute on elements made here, never as markup. The server's Content-Security-Policy allows these
// modules (this one, common.js, format.js, filters.js, editor.js) and no inline script.

import { $, api, applyDelay, el, HttpError, state } from "./common.js"
import { fillEditor, keepEdits, resetEdits } from "./editor.js"
import { readFilters, renderFilterChoices, saveFilters, withFilter } from "./filters.js"
import { ago, bidi, escapes, filesNode, renderDiff, when } from "./format.js"

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

const rowStatus = (item) => {
  if (counting(item.id)) return "applying"
  if (item.requested !== null) return "decided"
  return item.status
}

const itemNode = (item) => {
  const picked = state.picked.has(item.id)
  const pick = el("input", {
    className: "pick",
    attrs: { type: "checkbox", "data-id": item.id, "aria-label": `Select for a batch decision: ${item.label}` }
  })
  pick.checked = picked
  pick.disabled = state.me?.permission !== "decide" || !isOpen(item)
  pick.addEventListener("change", () => togglePick(item.id, pick.checked))
  const button = el(
    "button",
    {
      className: "item",
      attrs: { type: "button", role: "option", "data-id": item.id, "aria-selected": String(item.id === state.selected) }
    },
    el("span", { className: "label", text: item.label }),
    filesNode(item),
    el(
      "span",
      { className: "sub" },
      el("span", { className: `status ${rowStatus(item)}`, text: rowStatus(item) }),
      el("span", { className: "session", text: item.session }),
      ` · ${item.kind} · `,
      el("span", { className: "age", text: ago(item.createdAt), attrs: { "data-at": String(item.createdAt) } }),
      el("span", { className: "id", text: ` · ${item.id.slice(-6)}`, attrs: { title: item.id } })
    )
  )
  button.addEventListener("click", () => select(item.id, true))
  return el("li", { className: picked ? "row picked" : "row" }, pick, button)
}

/** Open for a decision: pending (or orphaned), with no decision recorded yet. */
const isOpen = (item) => (item.status === "pending" || item.status === "orphaned") && item.requested === null

const renderList = () => {
  const list = $("list")
  // A ticked action that is no longer listed, or no longer open, leaves the batch.
  for (const id of state.picked) {
    const item = state.items.find((candidate) => candidate.id === id)
    if (item === undefined || !isOpen(item)) state.picked.delete(id)
  }
  const focused = document.activeElement?.closest?.(".row")?.querySelector(".item")?.getAttribute("data-id")
  const focusedPick = document.activeElement?.classList?.contains("pick") === true
  list.replaceChildren(...state.items.map(itemNode))
  if (focused !== undefined && focused !== null) {
    const row = [...list.querySelectorAll(".item")].find((node) => node.getAttribute("data-id") === focused)
    ;(focusedPick ? row?.parentElement?.querySelector(".pick") : row)?.focus()
  }
  $("list-empty").hidden = state.items.length > 0
  $("more").hidden = state.next === null
  renderBatch()
}

/** Ages say "3 min ago": brought up to date every 30 seconds without redrawing the list. */
const refreshAges = () => {
  for (const node of document.querySelectorAll(".age[data-at]")) {
    node.textContent = ago(Number(node.getAttribute("data-at")))
  }
}

// A page is 50 actions. A refresh (any change, anywhere) reloads as many as the reviewer has asked to see, up to the
// API's 200, so paging down is not undone by the next change. Loads overlap (a click on More while a change
// arrives): each takes a ticket and only the latest one's answer is shown.
const pageSize = 50
const maxPage = 200
let ticket = 0

const noteSeen = (items) => {
  for (const item of items) {
    state.sessions.add(item.session)
    state.kinds.add(item.kind)
  }
  renderFilterChoices()
}

const loadList = async () => {
  const mine = ++ticket
  const page = await api(withFilter(`limit=${Math.min(maxPage, Math.max(pageSize, state.wanted))}`))
  if (mine !== ticket) return
  state.items = page.items
  state.next = page.next
  noteSeen(page.items)
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
  noteSeen(page.items)
  renderCounts(page.counts)
  renderList()
}

// ---- the detail -----------------------------------------------------------------------------------------------------

const verbs = { apply: "Applied", discard: "Discarded" }

/**
 * What a settled action's pane says, once: who decided what and why ("Applied by ann: reason"), and the result,
 * or `null` while the action is open for a decision.
 */
const settledOf = (detail) => {
  if (detail.requested !== null) {
    const r = detail.requested
    return {
      line: `${r.action === "apply" ? "Apply" : "Discard"} requested by ${r.reviewer}: ${r.reason} (recorded, not ` +
        "yet run: the agent's session runs it on its next turn)",
      note: ""
    }
  }
  if (detail.status === "applied" || detail.status === "discarded") {
    const action = detail.status === "applied" ? "apply" : "discard"
    const decision = detail.decisions.findLast((d) => d.state === "done" && d.action === action)
    const result = detail.outcome ?? ""
    return decision === undefined ?
      { line: `${verbs[action]} by the agent`, note: result } :
      { line: `${verbs[action]} by ${decision.reviewer}: ${decision.reason}`, note: result }
  }
  const others = {
    cleared: "Cleared: its session ended it without a decision.",
    expired: "Expired before anyone decided.",
    resolving: "Being applied or discarded right now.",
    conflict: "In conflict: a person must look at it outside the inbox.",
    unreadable: "Unreadable: the store holds a record this inbox cannot read."
  }
  if (Object.hasOwn(others, detail.status)) {
    return { line: others[detail.status], note: detail.outcome ?? "" }
  }
  return null
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
    ["Staged", `${when(detail.createdAt)} (${ago(detail.createdAt)})`],
    ["Expires", detail.expiresAt === null ? "never" : when(detail.expiresAt)],
    ["Attempts", String(detail.attempts)],
    ["Id", detail.id]
  ]
  if (detail.snoozedUntil !== null) meta.push(["Not now until", when(detail.snoozedUntil)])
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
  if (state.renderedDiffOf !== detail) {
    // The diff is drawn again only for a new answer (a long one takes time), not on every state change.
    state.renderedDiffOf = detail
    renderDiff(detail.diff)
    $("d-preview").textContent = detail.preview
    if (detail.id !== state.renderedIdOf) $("d-settled-more").open = false
    state.renderedIdOf = detail.id
  }
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
  // What reviewers said to the agent about it (responses), and whether its model has read each yet.
  const responses = detail.responses ?? []
  $("d-responses").hidden = responses.length === 0
  $("d-responses").replaceChildren(
    ...responses.map((r) =>
      el("li", {
        text: `${r.reviewer} responded ${ago(r.respondedAt)}: ${r.message} (${
          r.deliveredAt === null ? "not yet read by the agent" : "read by the agent"
        })`
      })
    )
  )
  // Settled (by this reviewer, another one, or the agent): the outcome, once, and nothing left to press.
  const settled = settledOf(detail)
  $("d-settled").hidden = settled === null
  $("d-decide").hidden = settled !== null
  $("d-settled-line").textContent = settled?.line ?? ""
  $("d-settled-note").textContent = settled?.note ?? ""
  $("d-settled-more").hidden = (settled?.note ?? "") === ""
  $("d-settled").className = `settled ${detail.requested !== null ? "requested" : detail.status}`
  if (settled !== null) {
    state.editing = false
    showResult("")
  }
  const decidable = state.me?.permission === "decide" && settled === null && isOpen(detail) &&
    !counting(detail.id)
  for (const id of ["apply", "discard", "respond", "snooze"]) $(id).disabled = !decidable || state.busy
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

// Decisions are sent one at a time, in the order they were made: an apply whose undo window ends while another
// decision is on its way waits for it, and is never dropped.
let sending = Promise.resolve()
let waiting = 0
const oneAtATime = (send) => {
  waiting++
  state.busy = true
  const run = sending.then(send).finally(() => {
    state.busy = --waiting > 0
    refreshShown()
  })
  sending = run.catch(() => {})
  return run
}

/** Sends one decision about the action `id` (the one shown, or one whose undo window just ended). */
const decide = (id, body) => oneAtATime(() => decideNow(id, body))

const decideNow = async (id, body) => {
  const shown = () => state.detail?.id === id
  if (shown()) {
    renderDetail()
    showResult("Working…")
  }
  try {
    const result = await api(`/api/actions/${encodeURIComponent(id)}/decision`, {
      method: "POST",
      body: JSON.stringify(body)
    })
    if (result.outcome === "failed") {
      // Refused (a stale preview, a failing apply): the reviewer's reason and amended text stay as they are.
      if (shown()) {
        showResult(result.message, true)
        keepEdits()
      } else say(`Not applied: ${result.action.label}: ${result.message}`, true)
    } else if (body.action === "respond") {
      // Sent; the action stays pending, and any edit in progress stays as it is.
      if (shown()) {
        showResult(result.message)
        $("reason").value = ""
      }
    } else {
      // Applied, discarded or recorded: the pane's settled state says so, once. A snooze says until when.
      if (shown()) {
        showResult(body.action === "snooze" ? result.message : "")
        state.editing = false
        $("reason").value = ""
      }
      state.edits.delete(id)
    }
  } catch (error) {
    if (shown()) {
      showResult(error.message, true)
      keepEdits()
    } else say(error.message, true)
  }
  await Promise.all([loadList(), shown() ? loadDetail(id) : undefined]).catch(() => {})
}

// ---- the undo window ------------------------------------------------------------------------------------------------

// An apply waits `applyDelay` before it is sent: "Applying in 5 s — Undo". Undo cancels it and nothing is sent;
// closing the page meanwhile sends nothing either (the browser asks first). Each waiting apply has its own line.
const countdowns = new Map()
let countdownKeys = 0

/** Whether the action `id` waits in an undo window. */
const counting = (id) => [...countdowns.values()].some((entry) => entry.ids.includes(id))

/** A short message in the undo area (a decision sent for an action no longer shown, an undo). */
const say = (text, error = false) => {
  const node = el("p", { className: error ? "said error" : "said", text })
  $("undo").append(node)
  $("undo").hidden = false
  setTimeout(() => {
    node.remove()
    $("undo").hidden = $("undo").childElementCount === 0
  }, error ? 15_000 : 5_000)
}

const endCountdown = (key) => {
  const entry = countdowns.get(key)
  if (entry === undefined) return undefined
  countdowns.delete(key)
  clearTimeout(entry.timer)
  clearInterval(entry.ticker)
  entry.node.remove()
  $("undo").hidden = $("undo").childElementCount === 0
  return entry
}

/** Runs `send` after the undo window (at once when the window is 0), unless the reviewer undoes it first. */
const afterUndoWindow = (ids, what, send) => {
  if (applyDelay === 0) return send()
  const key = ++countdownKeys
  const deadline = Date.now() + applyDelay
  const text = el("span", { className: "countdown-text" })
  const undo = el("button", { className: "undo-button", text: "Undo", attrs: { type: "button" } })
  // "Applying in 5 s — Undo", then what is being applied (a label a model wrote: text only).
  const node = el(
    "div",
    { className: "countdown", attrs: { "data-key": String(key) } },
    text,
    " — ",
    undo,
    el("span", { className: "countdown-what", text: what })
  )
  const tick = () => {
    text.textContent = `Applying in ${Math.max(1, Math.ceil((deadline - Date.now()) / 1000))} s`
  }
  tick()
  const entry = {
    ids,
    node,
    ticker: setInterval(tick, 250),
    timer: setTimeout(() => {
      endCountdown(key)
      refreshShown()
      send()
    }, applyDelay)
  }
  undo.addEventListener("click", () => undoApply(key))
  countdowns.set(key, entry)
  $("undo").append(node)
  $("undo").hidden = false
  refreshShown()
  undo.focus()
}

/** Undoes the apply waiting under `key` (the latest one by default): nothing is sent. */
const undoApply = (key = [...countdowns.keys()].at(-1)) => {
  const entry = endCountdown(key)
  if (entry === undefined) return
  say("Undone: nothing was sent.")
  if (entry.ids.includes(state.detail?.id)) showResult("Not applied: undone, nothing was sent.")
  refreshShown()
}

/** Draws the list and the pane again (which actions wait in an undo window changed). */
const refreshShown = () => {
  renderList()
  renderDetail()
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

/** The apply the pane asks for, with the reviewer's reason (and amendment), or `null` when something is missing. */
const applyBody = () => {
  if (state.editing && state.draftFiles !== null) {
    // Only the files the reviewer changed are amended; the others are written as previewed.
    const boxes = [...$("amend-files").querySelectorAll("textarea")]
    const files = state.draftFiles
      .map((file, i) => ({ path: file.path, text: boxes[i].value }))
      .filter((file, i) => file.text !== state.draftFiles[i].text)
    const reason = reasonOrAsk()
    if (reason === null) return null
    return files.length === 0 ? { action: "apply", reason } : { action: "apply", reason, amendment: { files } }
  }
  if (state.editing) {
    let amendment
    try {
      amendment = JSON.parse($("amendment").value)
    } catch {
      showResult("The amendment is not valid JSON.", true)
      return null
    }
    const reason = reasonOrAsk()
    if (reason === null) return null
    return { action: "apply", reason, amendment }
  }
  const reason = reasonOrAsk()
  if (reason === null) return null
  return { action: "apply", reason }
}

const apply = () => {
  const detail = state.detail
  if (detail === null || state.busy || counting(detail.id)) return
  const body = applyBody()
  if (body === null) return
  showResult("")
  afterUndoWindow([detail.id], detail.label, () => decide(detail.id, body))
}

// Discard is sent at once: it writes nothing (the agent is told, and may stage the action again).
const discard = () => {
  const detail = state.detail
  if (detail === null || state.busy || counting(detail.id)) return
  const reason = reasonOrAsk()
  if (reason === null) return
  return decide(detail.id, { action: "discard", reason })
}

// A response is sent at once: it decides nothing (the agent reads it; the action stays pending).
const respond = () => {
  const detail = state.detail
  if (detail === null || state.busy || counting(detail.id)) return
  const message = $("reason").value.trim()
  if (message === "") {
    showResult("Write what to tell the agent first (in the reason box). Nothing was sent.", true)
    $("reason").focus()
    return
  }
  return decide(detail.id, { action: "respond", message })
}

const snooze = () => {
  const detail = state.detail
  if (detail === null || state.busy) return
  return decide(detail.id, { action: "snooze", until: Date.now() + Number($("snooze-for").value) })
}

// ---- batch decisions ------------------------------------------------------------------------------------------------

const togglePick = (id, on) => {
  if (on) state.picked.add(id)
  else state.picked.delete(id)
  for (const node of document.querySelectorAll(".pick")) {
    if (node.getAttribute("data-id") === id) {
      node.checked = on
      node.closest(".row")?.classList.toggle("picked", on)
    }
  }
  renderBatch()
}

const renderBatch = () => {
  const n = state.picked.size
  $("batch").hidden = n === 0
  if (n === 0) return
  const pickedCounting = [...state.picked].some(counting)
  $("batch-count").textContent = `${n} selected`
  $("batch-apply").textContent = `Apply ${n}`
  $("batch-discard").textContent = `Discard ${n}`
  $("batch-apply").disabled = state.busy || pickedCounting
  $("batch-discard").disabled = state.busy || pickedCounting
}

/** The batch's one reason, from the reviewer: with an empty box nothing is sent (never a reason made up here). */
const batchReason = () => {
  const reason = $("batch-reason").value.trim()
  if (reason === "") {
    batchSaid("Write a reason first: one sentence, told to each agent as you write it. Nothing was sent.", true)
    $("batch-reason").focus()
    return null
  }
  return reason
}

const batchSaid = (text, error = false) => {
  $("batch-result").textContent = text
  $("batch-result").classList.toggle("error", error)
}

/** Sends one decision for each of `ids` in one `POST /api/decisions`, and says what each did. */
const decideBatch = (ids, action, reason) => oneAtATime(() => decideBatchNow(ids, action, reason))

const decideBatchNow = async (ids, action, reason) => {
  renderBatch()
  batchSaid("Working…")
  const labels = new Map(state.items.map((item) => [item.id, item.label]))
  try {
    const answer = await api("/api/decisions", {
      method: "POST",
      body: JSON.stringify({ decisions: ids.map((id) => ({ id, action, reason })) })
    })
    const done = answer.results.filter((r) => r.result !== null && r.result.outcome !== "failed")
    const refused = answer.results.filter((r) => r.result === null || r.result.outcome === "failed")
    const verb = action === "apply" ? "applied" : "discarded"
    const requested = done.filter((r) => r.result.outcome === "requested").length
    const parts = [`${done.length - requested} ${verb}`]
    if (requested > 0) parts.push(`${requested} recorded for their sessions to run`)
    if (refused.length > 0) {
      parts.push(
        `${refused.length} not: ${
          refused.map((r) => `${labels.get(r.id) ?? r.id}: ${r.error?.message ?? r.result.message}`).join("; ")
        }`
      )
    }
    batchSaid(parts.join(", "), refused.length > 0)
    for (const r of done) state.picked.delete(r.id)
    if (refused.length === 0) $("batch-reason").value = ""
  } catch (error) {
    batchSaid(error.message, true)
  }
  await Promise.all([loadList(), state.selected === null ? undefined : loadDetail(state.selected)]).catch(() => {})
}

const batchApply = () => {
  if (state.busy || state.picked.size === 0) return
  const reason = batchReason()
  if (reason === null) return
  const ids = [...state.picked]
  batchSaid("")
  afterUndoWindow(
    ids,
    `${ids.length} selected ${ids.length === 1 ? "action" : "actions"}`,
    () => decideBatch(ids, "apply", reason)
  )
}

// A batch discard is sent at once, as a single one is.
const batchDiscard = () => {
  if (state.busy || state.picked.size === 0) return
  const reason = batchReason()
  if (reason === null) return
  return decideBatch([...state.picked], "discard", reason)
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
    m: () => !$("respond").disabled && respond(),
    n: () => !$("snooze").disabled && snooze(),
    e: edit,
    u: () => undoApply(),
    x: () => {
      const item = state.items.find((candidate) => candidate.id === state.selected)
      if (item !== undefined && state.me?.permission === "decide" && isOpen(item)) {
        togglePick(item.id, !state.picked.has(item.id))
      }
    },
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
  $("respond").addEventListener("click", respond)
  $("snooze").addEventListener("click", snooze)
  $("edit").addEventListener("click", edit)
  $("amend-reset").addEventListener("click", resetEdits)
  $("more").addEventListener("click", () => loadMore())
  $("back").addEventListener("click", () => $("app").classList.remove("showing-detail"))
  $("help-open").addEventListener("click", () => ($("help").hidden = false))
  $("help-close").addEventListener("click", () => ($("help").hidden = true))
  const refilter = () => {
    state.filter = $("filter").value
    state.session = $("filter-session").value
    state.kind = $("filter-kind").value
    state.wanted = pageSize
    saveFilters()
    loadList()
  }
  for (const id of ["filter", "filter-session", "filter-kind"]) $(id).addEventListener("change", refilter)
  $("filters").addEventListener("submit", (event) => event.preventDefault())
  $("batch-apply").addEventListener("click", batchApply)
  $("batch-discard").addEventListener("click", batchDiscard)
  $("batch-clear").addEventListener("click", () => {
    state.picked.clear()
    renderList()
  })
  window.addEventListener("beforeunload", (event) => {
    // An apply still in its undo window is not sent if the page closes: the browser asks first.
    if (countdowns.size > 0) event.preventDefault()
  })
  readFilters()
  renderFilterChoices()
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
  // A token scoped to some sessions names them: each is a choice of the session filter from the start.
  for (const session of state.me.sessions ?? []) state.sessions.add(session)
  renderFilterChoices()
  listen()
  setInterval(refreshAges, 30_000)
  await loadList()
  renderDetail()
}

start()
