// The inbox page's shared ground: the DOM helpers (text only, never markup), the address's settings, the page's
// state and the API client.

export const $ = (id) => document.getElementById(id)

/** An element with text and children; `text` is set with textContent. */
export const el = (tag, options = {}, ...children) => {
  const node = document.createElement(tag)
  if (options.className !== undefined) node.className = options.className
  if (options.text !== undefined) node.textContent = options.text
  for (const [name, value] of Object.entries(options.attrs ?? {})) node.setAttribute(name, value)
  for (const child of children) if (child !== undefined && child !== null) node.append(child)
  return node
}

export const query = new URLSearchParams(location.search)

/**
 * How long an apply waits before it is sent, in milliseconds: the reviewer's window to undo it. `?applyDelay=` sets
 * it (0 to 60 000; 0 sends at once); tests use a short one.
 */
export const applyDelay = (() => {
  const raw = query.get("applyDelay")
  const wanted = raw === null || raw.trim() === "" ? NaN : Number(raw)
  return Number.isInteger(wanted) && wanted >= 0 && wanted <= 60_000 ? wanted : 5_000
})()

export const state = {
  me: null,
  // The list's filters, kept in the address (?show=, ?session=, ?kind=) so that a reload keeps them.
  filter: "waiting",
  session: "",
  kind: "",
  // The sessions and kinds seen in any list answer: the filters' choices.
  sessions: new Set(),
  kinds: new Set(),
  // The actions ticked for a batch decision, by id.
  picked: new Set(),
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
  busy: false,
  // The detail answer whose diff is drawn (a redraw of the pane draws the diff again only for a new answer).
  renderedDiffOf: null
}

export class HttpError extends Error {
  constructor(status, body) {
    super(body?.message ?? `The inbox answered ${status}.`)
    this.status = status
    this.tag = body?._tag
  }
}

export const api = async (path, init = {}) => {
  const headers = { accept: "application/json" }
  if (init.body !== undefined) headers["content-type"] = "application/json"
  const response = await fetch(path, { credentials: "same-origin", ...init, headers })
  if (response.status === 204) return null
  const body = await response.json().catch(() => null)
  if (!response.ok) throw new HttpError(response.status, body)
  return body
}
