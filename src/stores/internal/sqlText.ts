/**
 * The SQL store's text boundary: every string the store binds as a parameter is stored through `storedText`'s
 * lossless escape, and every text column it reads is decoded back, so that labels, previews, reasons, names and
 * saved conversations keep NUL and lone surrogates on SQLite (libsql cuts TEXT at the first NUL) and Postgres (which
 * refuses NUL in text). Strings without either are bound unchanged, so rows of earlier versions read the same and
 * equality on a key column (`id = ?`, `session IN (...)`) compares escaped values as it compared plain ones.
 *
 * @internal
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import { decode, encode } from "../../internal/storedText.js"

/**
 * A value bound exactly as given, not escaped: a column's raw text read from a row, compared with the same column
 * (`payload = <what the row held>`).
 */
export class Verbatim {
  constructor(readonly value: unknown) {}
}

/** A parameter as the store binds it: strings escaped, a `Verbatim` as it is, anything else unchanged. */
export const parameter = (value: unknown): unknown =>
  typeof value === "string" ? encode(value) : value instanceof Verbatim ? value.value : value

const record = (value: unknown): unknown => {
  if (value === null || typeof value !== "object") return value
  const out: Record<string, unknown> = {}
  for (const [key, field] of Object.entries(value)) out[key] = parameter(field)
  return out
}

const isTemplate = (u: unknown): u is TemplateStringsArray => Array.isArray(u) && "raw" in u

/**
 * The client `sql`, binding every string parameter escaped: in a template (`sql\`... ${value}\``), `sql.in`,
 * `sql.insert`, `sql.update`, `sql.updateValues` and `sql.unsafe`'s parameters. Literals, identifiers and fragments
 * are SQL, not values, and pass unchanged; everything else (transactions, dialects, ...) is the client's own.
 */
export const escapingClient = (sql: SqlClient.SqlClient): SqlClient.SqlClient => {
  const overrides: Record<PropertyKey, unknown> = {
    in: (...args: ReadonlyArray<unknown>) =>
      args.length === 1 ?
        sql.in((args[0] as ReadonlyArray<unknown>).map(parameter)) :
        sql.in(args[0] as string, (args[1] as ReadonlyArray<unknown>).map(parameter)),
    insert: (value: unknown) =>
      sql.insert(
        (Array.isArray(value) ? value.map(record) : record(value)) as Parameters<SqlClient.SqlClient["insert"]>[0]
      ),
    update: (value: Record<string, unknown>, omit?: ReadonlyArray<string>) =>
      sql.update(record(value) as Record<string, unknown>, omit),
    updateValues: (value: ReadonlyArray<Record<string, unknown>>, alias: string) =>
      sql.updateValues(value.map(record) as ReadonlyArray<Record<string, unknown>>, alias),
    unsafe: (statement: string, params?: ReadonlyArray<unknown>) => sql.unsafe(statement, params?.map(parameter))
  }
  return new Proxy(sql, {
    apply: (target, thisArg, args: Array<unknown>) =>
      isTemplate(args[0]) ?
        Reflect.apply(target, thisArg, [args[0], ...args.slice(1).map(parameter)]) :
        Reflect.apply(target, thisArg, args),
    get: (target, property, receiver) =>
      Object.hasOwn(overrides, property) ? overrides[property] : Reflect.get(target, property, receiver)
  })
}

/** A text column as read: decoded when it is a string, anything else as the driver gave it. */
export const readText = (u: unknown): unknown => typeof u === "string" ? decode(u) : u
