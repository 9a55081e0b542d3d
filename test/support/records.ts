/**
 * Records as a store keeps them, for the stores' tests: a pending `note` whose label, preview and payload name it.
 */
import type { PendingRecord } from "../../src/domain/PendingRecord.js"

/** A pending `note` record `id` of `session` (default `s1`), created and last updated `at`, that never expires. */
export const noteRecord = (id: string, options: { readonly at: number; readonly session?: string }): PendingRecord => ({
  id,
  session: options.session ?? "s1",
  kind: "note",
  label: `Note ${id}`,
  sourceToolName: "note",
  stager: null,
  preview: id,
  payload: { id },
  status: "pending",
  attempts: 0,
  owner: null,
  leaseUntil: null,
  createdAt: options.at,
  updatedAt: options.at,
  expiresAt: null,
  outcome: null
})
