/**
 * The approval inbox's work (see `Inbox.ts` for what it does and in which order): the sessions it opens to run
 * decisions, its change feed, listing and reading across sessions, deciding (through `Decisions`), responding,
 * snoozing, and the sweep of decisions left `requested`.
 *
 * @internal
 */
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as FiberId from "effect/FiberId"
import * as JSONSchema from "effect/JSONSchema"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as RcMap from "effect/RcMap"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import { randomBytes } from "node:crypto"
import type { PendingStoreError } from "../../domain/Errors.js"
import { isTerminal, type PendingRecord } from "../../domain/PendingRecord.js"
import { capText } from "../../internal/render.js"
import * as ResolveRuntime from "../../layers/ResolveRuntime.js"
import * as ActionKind from "../../services/ActionKind.js"
import { PendingStore } from "../../services/PendingStore.js"
import { make as decisionsOn } from "../../tools/Decisions.js"
import type { DecideError, Inbox, Options } from "../Inbox.js"
import {
  type ActionDetail,
  type ActionList,
  ActionNotDecidable,
  ActionNotFound,
  type ActionSummary,
  AmendmentRejected,
  batchMax,
  type BatchRequest,
  type BatchResult,
  type ChangedEvent,
  type Counts,
  DecisionAlreadyRequested,
  DecisionRequest,
  type DecisionResult,
  type Diff,
  InboxForbidden,
  InvalidDecision,
  type ListParams,
  type ReviewerInfo
} from "../InboxApi.js"
import * as DiffParser from "./diff.js"
import * as Feed from "./feed.js"
import {
  checkRequest,
  millisOption,
  notDecidableText,
  queryOrStore,
  responseViewOf,
  storeFailed,
  viewOf
} from "./requests.js"
import * as Runner from "./runner.js"

// -----------------------------------------------------------------------------------------------------------------
// implementation
// -----------------------------------------------------------------------------------------------------------------

/** `effect`, run at most once: later callers wait for the first one's result. */
const once = <A, E>(effect: Effect.Effect<A, E>): Effect.Effect<A, E> => {
  let result: Deferred.Deferred<A, E> | undefined
  return Effect.suspend(() => {
    if (result !== undefined) return Deferred.await(result)
    const deferred = result = Deferred.unsafeMake<A, E>(FiberId.none)
    return Effect.uninterruptible(
      Effect.flatMap(Effect.exit(effect), (exit) => Effect.zipRight(Deferred.done(deferred, exit), exit))
    )
  })
}

/** Builds an inbox on `store` (what `Inbox.layer` provides); its background fibers live in the current scope. */
export const make = (
  store: PendingStore.Service,
  kinds: ReadonlyArray<ActionKind.AnyContract>,
  kindContext: Context.Context<never>,
  options: Options<ReadonlyArray<ActionKind.AnyContract>> = {}
): Effect.Effect<Inbox.Service, never, Scope.Scope> =>
  Effect.gen(function*() {
    // Every kind it knows (what lists, decodes and checks amendments), and those it runs (what has handlers).
    const registered = new Map(kinds.map((kind) => [kind.name, kind] as const))
    const runnable = new Map(kinds.filter(ActionKind.isRunnable).map((kind) => [kind.name, kind] as const))
    const clock = yield* Effect.clock
    const now = () => clock.unsafeCurrentTimeMillis()
    const scope = yield* Effect.scope
    const instance = `inbox:${randomBytes(6).toString("base64url")}`
    const storeLayer = Layer.succeedContext(PendingStore.contextWithParts(store))

    // The sessions the inbox opened to run decisions: opened on first use, closed once idle.
    const runtimes = yield* RcMap.make({
      lookup: (session: string) =>
        Layer.build(
          ResolveRuntime.layerDurable({
            session,
            kinds: [...runnable.values()],
            retention: "keep-all",
            ...(options.lease === undefined ? {} : { lease: options.lease })
          }).pipe(Layer.provideMerge(storeLayer))
        ).pipe(Effect.provide(kindContext)),
      idleTimeToLive: options.idleSessionTimeout ?? Duration.seconds(30)
    })

    const feed = yield* Feed.make(store, {
      interval: Duration.toMillis(options.pollInterval ?? Duration.millis(250)),
      gapTimeout: 10_000,
      batch: 500
    })

    // ---- reading ---------------------------------------------------------------------------------------------

    /** The sessions a reviewer reads, of `wanted` when given: `none` for every session, `[]` for nothing. */
    const scopeOf = (
      reviewer: ReviewerInfo,
      wanted: ReadonlyArray<string> | undefined
    ): Option.Option<ReadonlyArray<string>> =>
      Option.match(reviewer.sessions, {
        onNone: () => wanted === undefined || wanted.length === 0 ? Option.none() : Option.some(wanted),
        onSome: (allowed) =>
          Option.some(wanted === undefined || wanted.length === 0 ? allowed : wanted.filter((s) => allowed.includes(s)))
      })

    const sees = (reviewer: ReviewerInfo, session: string) =>
      Option.match(reviewer.sessions, { onNone: () => true, onSome: (allowed) => allowed.includes(session) })

    // A list row's files and line counts: each action's preview is parsed once, not on every list or refresh.
    const diffStats = DiffParser.statsCache()

    const summaryOf = (listed: PendingStore.ListedAction, at: number): ActionSummary => {
      const { record } = listed
      const kind = registered.get(record.kind)
      return {
        id: record.id,
        session: record.session,
        kind: record.kind,
        label: record.label,
        sourceToolName: record.sourceToolName,
        status: record.status,
        attempts: record.attempts,
        createdAt: record.createdAt,
        updatedAt: record.updatedAt,
        expiresAt: millisOption(record.expiresAt),
        snoozedUntil: Option.filter(listed.snoozedUntil, (until) => until > at),
        outcome: Option.fromNullable(record.outcome),
        requested: Option.map(listed.requested, viewOf),
        runsHere: runnable.has(record.kind),
        amendable: kind?.amendment !== undefined,
        previewLength: record.preview.length,
        ...diffStats(record.id, record.preview)
      }
    }

    const emptyCounts: Counts = { pending: 0, requested: 0, snoozed: 0, resolving: 0, orphaned: 0, conflict: 0 }

    const countsOf = (sessions: Option.Option<ReadonlyArray<string>>, at: number) =>
      Option.match(sessions, {
        onNone: () => store.countActions({ now: at }),
        onSome: (list) =>
          list.length === 0 ? Effect.succeed(emptyCounts) : store.countActions({ now: at, sessions: list })
      })

    const list = (reviewer: ReviewerInfo, params: ListParams) =>
      Effect.suspend(() => {
        const at = now()
        const sessions = scopeOf(reviewer, params.session)
        const counts = Effect.mapError(countsOf(sessions, at), storeFailed)
        if (Option.isSome(sessions) && sessions.value.length === 0) {
          return Effect.map(counts, (c): ActionList => ({ items: [], next: Option.none(), counts: c }))
        }
        const page = Effect.mapError(
          store.listActions({
            now: at,
            limit: params.limit ?? 50,
            cursor: params.cursor,
            sessions: Option.getOrUndefined(sessions),
            statuses: params.status,
            kinds: params.kind,
            snoozed: params.snoozed
          }),
          queryOrStore
        )
        return Effect.map(
          Effect.all([page, counts], { concurrency: 2 }),
          ([p, c]): ActionList => ({ items: p.items.map((item) => summaryOf(item, at)), next: p.next, counts: c })
        )
      }).pipe(Effect.withSpan("Inbox.list"))

    const notFound = (id: string) =>
      new ActionNotFound({
        id,
        message: `No action has the id ${JSON.stringify(capText(id, 200))} in the sessions this token sees. ` +
          "List the actions (GET /api/actions) for their ids."
      })

    const listedOne = (reviewer: ReviewerInfo, id: string) =>
      Effect.flatMap(
        Effect.mapError(store.getActions([id]), storeFailed),
        ([found]) =>
          found === undefined || !sees(reviewer, found.record.session) ?
            Effect.fail(notFound(id)) :
            Effect.succeed(found)
      )

    const amendmentSchemaOf = (kind: ActionKind.AnyContract | undefined): Option.Option<unknown> => {
      if (kind?.amendment === undefined) return Option.none()
      try {
        return Option.some(JSONSchema.make(kind.amendment))
      } catch {
        return Option.none()
      }
    }

    /** The kind's draft of an amendment for this record, when it has one and the payload decodes. */
    const amendmentDraftOf = (kind: ActionKind.AnyContract | undefined, payload: unknown): Option.Option<unknown> => {
      if (kind?.amendment === undefined || kind.amendmentDraft === undefined) return Option.none()
      const draft = kind.amendmentDraft
      return Option.flatMap(Schema.decodeUnknownOption(kind.payload)(payload), (decoded) => {
        try {
          return draft(decoded)
        } catch {
          return Option.none()
        }
      })
    }

    const get = (reviewer: ReviewerInfo, id: string) =>
      Effect.gen(function*() {
        const listed = yield* listedOne(reviewer, id)
        const [history, decisions, responses] = yield* Effect.mapError(
          Effect.all([store.historyPage(id, { limit: 200 }), store.decisions(id), store.responses(id)], {
            concurrency: 3
          }),
          storeFailed
        )
        const parsed = DiffParser.parse(listed.record.preview)
        const detail: ActionDetail = {
          ...summaryOf(listed, now()),
          preview: listed.record.preview,
          diff: Option.fromNullable(parsed as Diff | undefined),
          history: history.items.map((event) => ({
            at: event.at,
            from: Option.fromNullable(event.from),
            to: event.to,
            attempt: event.attempt
          })),
          decisions: decisions.map(viewOf),
          responses: responses.map(responseViewOf),
          amendmentSchema: amendmentSchemaOf(registered.get(listed.record.kind)),
          amendmentDraft: amendmentDraftOf(registered.get(listed.record.kind), listed.record.payload)
        }
        return detail
      }).pipe(Effect.withSpan("Inbox.get"))

    const decisions = decisionsOn(store)
    const { leftRequested, run, settleAgainst } = Runner.make({
      decisions,
      runtimes,
      instance,
      scope,
      poke: feed.poke
    })

    // ---- deciding ----------------------------------------------------------------------------------------------

    const forbidden = () =>
      new InboxForbidden({
        permission: "decide",
        message: "This token may only read. Ask for a token with the \"decide\" permission; nothing was changed."
      })

    const notDecidable = (record: PendingRecord) =>
      new ActionNotDecidable({
        id: record.id,
        status: record.status,
        message: `The action ${record.id} ("${capText(record.label, 200)}") ${notDecidableText(record.status)}. ` +
          "Nothing was recorded."
      })

    const checkAmendment = (
      record: PendingRecord,
      amendment: unknown
    ): Effect.Effect<unknown, AmendmentRejected> => {
      const kind = registered.get(record.kind)
      const rejected = (message: string) => Effect.fail(new AmendmentRejected({ id: record.id, message }))
      if (kind === undefined) {
        return rejected(
          `This inbox does not register the kind "${capText(record.kind, 100)}", so it cannot check an amendment of ` +
            "it. Apply it as staged, or discard it; nothing was recorded."
        )
      }
      if (kind.amendment === undefined) {
        return rejected(
          `Actions of kind "${capText(record.kind, 100)}" take no amendment. Apply it as staged, or discard it; ` +
            "nothing was recorded."
        )
      }
      const schema = kind.amendment as Schema.Schema<unknown, unknown>
      return Effect.mapError(
        Effect.flatMap(Schema.decodeUnknown(schema)(amendment), (decoded) => Schema.encode(schema)(decoded)),
        (error) =>
          new AmendmentRejected({
            id: record.id,
            message: `The amendment does not match what the kind "${capText(record.kind, 100)}" takes: ${
              capText(ParseResult.TreeFormatter.formatErrorSync(error), 1_000)
            }. Nothing was recorded.`
          })
      )
    }

    const refreshed = (reviewer: ReviewerInfo, id: string, fallback: PendingStore.ListedAction) =>
      Effect.map(
        Effect.orElseSucceed(listedOne(reviewer, id), () => fallback),
        (listed) => summaryOf(listed, now())
      )

    const snooze = (reviewer: ReviewerInfo, listed: PendingStore.ListedAction, until: number | null) =>
      Effect.gen(function*() {
        const done = yield* Effect.mapError(
          store.snooze({ id: listed.record.id, until: Option.fromNullable(until), now: now() }),
          storeFailed
        )
        if (!done) return yield* notDecidable(listed.record)
        yield* feed.poke
        const result: DecisionResult = {
          outcome: until === null ? "unsnoozed" : "snoozed",
          message: until === null ?
            "Back in the list." :
            `Hidden from the list until ${new Date(until).toISOString()}; still pending for the model.`,
          action: yield* refreshed(reviewer, listed.record.id, listed),
          decision: Option.none()
        }
        return result
      })

    // A message to the agent that decides nothing: recorded while the action waits; its session passes it on.
    const respond = (reviewer: ReviewerInfo, listed: PendingStore.ListedAction, message: string) =>
      Effect.gen(function*() {
        const recorded = yield* Effect.mapError(
          decisions.respond({ actionId: listed.record.id, reviewer: reviewer.name, message }),
          storeFailed
        )
        if (recorded._tag === "UnknownAction") return yield* notFound(listed.record.id)
        if (recorded._tag === "NotDecidable") return yield* notDecidable(recorded.record)
        yield* feed.poke
        const result: DecisionResult = {
          outcome: "responded",
          message: "Sent to the agent; the action stays pending. Its model reads the message in its next request.",
          action: yield* refreshed(reviewer, listed.record.id, listed),
          decision: Option.none()
        }
        return result
      })

    const decide = (
      reviewer: ReviewerInfo,
      id: string,
      unchecked: DecisionRequest
    ): Effect.Effect<DecisionResult, DecideError> =>
      Effect.gen(function*() {
        if (reviewer.permission !== "decide") return yield* forbidden()
        const request = yield* checkRequest(unchecked)
        const listed = yield* listedOne(reviewer, id)
        const record = listed.record
        if (request.action === "snooze") return yield* snooze(reviewer, listed, request.until)
        if (request.action === "respond") return yield* respond(reviewer, listed, request.message)
        if (request.action === "apply" && record.status === "orphaned" && !runnable.has(record.kind)) {
          return yield* notDecidable(record)
        }
        const amendment = request.action === "apply" && request.amendment !== undefined ?
          yield* checkAmendment(record, request.amendment) :
          null
        const recorded = yield* Effect.mapError(
          decisions.record({
            actionId: record.id,
            reviewer: reviewer.name,
            action: request.action,
            reason: request.reason,
            amendment
          }),
          storeFailed
        )
        switch (recorded._tag) {
          case "UnknownAction":
            return yield* notFound(id)
          case "NotDecidable":
            return yield* notDecidable(recorded.record)
          case "AlreadyRequested":
            return yield* new DecisionAlreadyRequested({
              id: record.id,
              decision: recorded.decision.id,
              reviewer: recorded.decision.reviewer,
              message: `${capText(recorded.decision.reviewer, 200)} already decided to ${recorded.decision.action} ` +
                `this action (${recorded.decision.id}); it has not run yet. Nothing was recorded.`
            })
        }
        yield* feed.poke
        const ran = yield* Effect.catchAll(
          run(recorded.decision),
          (error) =>
            Effect.succeed(
              leftRequested(`Recorded; the store failed while running it (${error.detail}). The inbox tries again.`)
            )
        )
        const decision = ran.completed !== undefined ?
          Option.some(ran.completed) :
          yield* Effect.orElseSucceed(store.getDecision(recorded.decision.id), () => Option.some(recorded.decision))
        const result: DecisionResult = {
          outcome: ran.outcome,
          message: ran.message,
          action: yield* refreshed(reviewer, record.id, listed),
          decision: Option.map(decision, viewOf)
        }
        return result
      }).pipe(Effect.withSpan("Inbox.decide", { attributes: { id } }))

    const errorOf = (error: DecideError) => ({ _tag: error._tag, message: error.message })

    const decideBatch = (reviewer: ReviewerInfo, request: BatchRequest) =>
      Effect.gen(function*() {
        if (reviewer.permission !== "decide") return yield* forbidden()
        // Checked at run time (from code the types do not hold); each decision is then checked by `decide`.
        const decisions: unknown = request !== null && typeof request === "object" ? request.decisions : undefined
        if (
          !Array.isArray(decisions) || decisions.length < 1 || decisions.length > batchMax ||
          !decisions.every((item) => item !== null && typeof item === "object" && typeof item.id === "string")
        ) {
          return yield* new InvalidDecision({
            field: "decisions",
            message: `Send { decisions: [...] }: 1 to ${batchMax} decisions, each an object with the id of its ` +
              "action; nothing was recorded."
          })
        }
        const results = yield* Effect.forEach(request.decisions, (item) => {
          const { id, ...single } = item
          return Effect.match(decide(reviewer, id, single as DecisionRequest), {
            onSuccess: (result) => ({ id, result: Option.some(result), error: Option.none() }),
            onFailure: (error) => ({ id, result: Option.none(), error: Option.some(errorOf(error)) })
          })
        })
        const batch: BatchResult = { results }
        return batch
      }).pipe(Effect.withSpan("Inbox.decideBatch"))

    // ---- the sweep ---------------------------------------------------------------------------------------------

    const sweep = Effect.gen(function*() {
      const waiting = yield* store.requestedDecisions({ limit: 100 })
      let ran = 0
      for (const { decision, record } of waiting) {
        if (isTerminal(record.status)) {
          yield* settleAgainst(decision, record)
          ran++
        } else if (
          record.status !== "resolving" &&
          (runnable.has(record.kind) || record.status === "orphaned" || record.status === "unreadable")
        ) {
          const outcome = yield* run(decision)
          if (outcome.outcome !== "requested") ran++
        }
      }
      return ran
    }).pipe(Effect.mapError(storeFailed), Effect.withSpan("Inbox.sweep"))

    yield* Effect.forkScoped(
      Effect.repeat(
        Effect.catchAllCause(
          sweep,
          (cause) => Effect.logWarning("effect-resolve inbox: could not run the requested decisions", cause)
        ),
        Schedule.spaced(options.sweepInterval ?? Duration.seconds(5))
      )
    )
    // The inbox's notes are only read by its feed: keep the last 100 000.
    yield* Effect.forkScoped(
      Effect.repeat(Effect.ignore(store.pruneNotes(100_000)), Schedule.spaced(Duration.minutes(1)))
    )

    // ---- subscriptions -----------------------------------------------------------------------------------------

    // The counts of a batch, once per scope however many subscribers share it (100 pages open: one query).
    const countsMemo = new WeakMap<Feed.Batch, Map<string, Effect.Effect<Counts, PendingStoreError>>>()
    const countsFor = (batch: Feed.Batch, scoped: Option.Option<ReadonlyArray<string>>, at: number) =>
      Effect.suspend(() => {
        let byScope = countsMemo.get(batch)
        if (byScope === undefined) countsMemo.set(batch, byScope = new Map())
        const key = Option.match(scoped, { onNone: () => "*", onSome: (list) => JSON.stringify([...list].sort()) })
        let counts = byScope.get(key)
        if (counts === undefined) byScope.set(key, counts = once(countsOf(scoped, at)))
        return counts
      })

    const subscribe = (reviewer: ReviewerInfo, sessions?: ReadonlyArray<string> | undefined) =>
      Effect.map(feed.subscribe, (batches) => {
        const scoped = scopeOf(reviewer, sessions)
        const wanted = (session: string) =>
          Option.match(scoped, { onNone: () => true, onSome: (list) => list.includes(session) })
        return Stream.fromQueue(batches).pipe(
          Stream.mapEffect((batch) => {
            const at = now()
            const actions = batch.listed.filter((item) => wanted(item.record.session))
            // A removed id's session is unknown: only a reviewer who sees every session is told.
            const removed = Option.isNone(scoped) ? batch.removed : []
            if (actions.length === 0 && removed.length === 0) return Effect.succeed(Option.none<ChangedEvent>())
            return Effect.map(
              Effect.mapError(countsFor(batch, scoped, at), storeFailed),
              (counts) =>
                Option.some<ChangedEvent>({ actions: actions.map((item) => summaryOf(item, at)), removed, counts })
            )
          }),
          Stream.filterMap((event) => event)
        )
      })

    const service: Inbox.Service = {
      kinds: [...runnable.keys()],
      list,
      get,
      counts: (reviewer) => Effect.mapError(countsOf(scopeOf(reviewer, undefined), now()), storeFailed),
      decide,
      decideBatch,
      subscribe,
      sweep
    }
    return service
  })
