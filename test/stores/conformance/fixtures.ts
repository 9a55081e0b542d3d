/** What the conformance tests share: a new pending record to insert, and a store error to expect. */
import { Effect } from "effect"
import { strictEqual } from "node:assert/strict"
import type { PendingRecord } from "../../../src/domain/PendingRecord.js"
import { PendingStoreError } from "../../../src/services/PendingStore.js"

/** A new pending record of session `s1`, created and updated at `at`, with `overrides`. */
export const pendingRecord = (id: string, at: number, overrides: Partial<PendingRecord> = {}): PendingRecord => ({
  id,
  session: "s1",
  kind: "edit",
  label: `Edit ${id}`,
  sourceToolName: "edit",
  stager: null,
  preview: `preview of ${id}`,
  payload: { id },
  status: "pending",
  attempts: 0,
  owner: null,
  leaseUntil: null,
  createdAt: at,
  updatedAt: at,
  expiresAt: null,
  outcome: null,
  ...overrides
})

/** The store's error for `effect`, or a thrown assertion when it succeeded or failed otherwise. */
export const storeError = <A>(effect: Effect.Effect<A, PendingStoreError>) =>
  Effect.flip(effect).pipe(Effect.tap((e) => strictEqual(e instanceof PendingStoreError, true)))
