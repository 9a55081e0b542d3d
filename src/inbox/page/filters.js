// The list's filters: kept in the address (?show=, ?session=, ?kind=) so that a reload keeps them, and the session
// and kind choices seen so far.
import { $, el, query, state } from "./common.js"
import { visibleName } from "./format.js"

// The list's shows: what each asks the API for.
const filters = {
  waiting: "",
  snoozed: "?snoozed=only",
  settled: "?status=applied&status=discarded&status=cleared&status=expired&snoozed=include",
  all:
    "?status=pending&status=resolving&status=orphaned&status=conflict&status=applied&status=discarded&status=cleared&status=expired&snoozed=include"
}

export const withFilter = (params) => {
  const base = filters[state.filter]
  const extra = [
    state.session === "" ? "" : `session=${encodeURIComponent(state.session)}`,
    state.kind === "" ? "" : `kind=${encodeURIComponent(state.kind)}`,
    params
  ].filter((part) => part !== "").join("&")
  return `/api/actions${base === "" ? "?" : `${base}&`}${extra}`
}

/** Writes the filters into the address (without a new history entry), keeping any other parameter. */
export const saveFilters = () => {
  const params = new URLSearchParams(location.search)
  const set = (name, value, fallback) => value === fallback ? params.delete(name) : params.set(name, value)
  set("show", state.filter, "waiting")
  set("session", state.session, "")
  set("kind", state.kind, "")
  const search = params.toString()
  history.replaceState(null, "", `${location.pathname}${search === "" ? "" : `?${search}`}${location.hash}`)
}

/** Reads the filters from the address. */
export const readFilters = () => {
  const show = query.get("show")
  state.filter = show !== null && Object.hasOwn(filters, show) ? show : "waiting"
  state.session = query.get("session") ?? ""
  state.kind = query.get("kind") ?? ""
  $("filter").value = state.filter
}

/** The session and kind filters' choices: every value seen so far, and the chosen one. */
export const renderFilterChoices = () => {
  for (
    const [id, seen, chosen, all] of [
      ["filter-session", state.sessions, state.session, "All sessions"],
      ["filter-kind", state.kinds, state.kind, "All kinds"]
    ]
  ) {
    const values = [...new Set([...seen, ...(chosen === "" ? [] : [chosen])])].sort()
    const select = $(id)
    const current = [...select.options].map((option) => option.value)
    if (current.length === values.length + 1 && values.every((value, i) => current[i + 1] === value)) {
      select.value = chosen
      continue
    }
    select.replaceChildren(
      el("option", { text: all, attrs: { value: "" } }),
      ...values.map((value) => el("option", { text: visibleName(value), attrs: { value } }))
    )
    select.value = chosen
  }
}
