/**
 * Turns the origin Pi session owes the model (`turn_intents`). Only interactive runs have them
 * (a headless run has no session to start a turn in).
 *
 * - A completion with a root `presentationPrompt`: `presentation.requested` inserts the intent
 *   ineligible under the run claim, before the terminal commit; `completeRun` makes it eligible
 *   in the terminal transaction, so no completion turn can start before the run is durably
 *   completed.
 * - A wait at a checkpoint with a root `presentationPrompt` (`presentWaitingInTx`): eligible in
 *   the transaction that commits the wait, one per waiting attempt; closing the wait supersedes
 *   it if it was not given yet.
 * - A stranded model turn: an interactive step that timed out records an ineligible intent; if
 *   the run goes on to present its next step, that step prompt is the successor (resolved
 *   `workflowPrompt` in the transaction that records the request); if the run ends or waits for
 *   an answer, the intent becomes eligible and the session gets the factual fallback.
 * - A run that fails or times out records an eligible intent in its terminal transaction unless
 *   one of its intents is already pending, which becomes eligible instead.
 *
 * Ids are derived from the cause, so a retried proposal or a restart never records two; at most
 * one unresolved intent per run is eligible (a unique index), so one ending gives one turn.
 */
import { sha256Hex } from "../../protocol/canonical-json.ts";
import type { TURN_CAUSES } from "../../protocol/outbox-operations.ts";
import type { WaitingPresentation } from "../../protocol/waiting-presentation.ts";
import { type Claim, claimRunId } from "../claims.ts";
import { protectedWrite, workerTarget, type WorkerWriteOptions } from "../protected-write.ts";
import { type StateStore } from "../store.ts";
import { execute, queryAll, queryOne } from "../statements.ts";
import { encodeValue } from "../values.ts";
import { expectState } from "./common.ts";

export type TurnCause = (typeof TURN_CAUSES)[number];
export type TurnResolution = "workflowPrompt" | "presentation" | "fallback" | "superseded";

/** The deterministic id of an intent: its run, its cause and the stranded attempt, if any. */
export function turnIntentId(runId: string, cause: TurnCause, attemptId?: string): string {
  return `turn-${sha256Hex(`${runId}\n${cause}\n${attemptId ?? ""}`).slice(0, 40)}`;
}

/** The origin session of an interactive run, else null. */
function originSession(store: StateStore, runId: string): string | null {
  return queryOne<{ origin_session_id: string }>(
    store,
    "SELECT origin_session_id FROM run_bindings WHERE run_id = :runId AND " +
      "execution_mode = 'interactive' AND origin_session_id IS NOT NULL",
    { runId },
  )?.origin_session_id ?? null;
}

function insertIntent(
  store: StateStore,
  i: {
    runId: string;
    session: string;
    cause: TurnCause;
    attemptId?: string;
    facts: string;
    eligibleAt: number | null;
  },
  now: number,
): void {
  execute(
    store,
    "INSERT INTO turn_intents (intent_id, run_id, target_session_id, cause, source_attempt_id, " +
      "facts_json, eligible_at, state, created_at) VALUES (:id, :runId, :session, :cause, " +
      ":attemptId, :facts, :eligibleAt, 'pending', :now) ON CONFLICT (intent_id) DO UPDATE SET " +
      "facts_json = excluded.facts_json WHERE state != 'resolved'",
    {
      id: turnIntentId(i.runId, i.cause, i.attemptId),
      runId: i.runId,
      session: i.session,
      cause: i.cause,
      attemptId: i.attemptId ?? null,
      facts: i.facts,
      eligibleAt: i.eligibleAt,
      now,
    },
  );
}

/**
 * The completion presentation of a run that is about to complete: ineligible until the terminal
 * commit. A repeat (the run resumed after a crash and completes again) refreshes the prompt.
 * False for a run without an origin session.
 */
export function requestPresentationInTx(
  store: StateStore,
  runId: string,
  prompt: string,
  now: number,
): boolean {
  const session = originSession(store, runId);
  if (session === null) return false;
  const facts = encodeValue("presentation prompt", { prompt });
  insertIntent(store, { runId, session, cause: "presentation", facts, eligibleAt: null }, now);
  return true;
}

/** What presents a waiting checkpoint: the rendered prompt, or why it could not be rendered. */

/**
 * An interactive run now waits at a checkpoint and its root declares a `presentationPrompt` (as
 * in 0.12, the model presents what waits): the session is owed one turn for this wait, eligible
 * in the transaction that commits the wait, so no presentation can start before the run is
 * durably waiting. Its id is derived from the waiting attempt: a retried proposal records it
 * once, and each wait (a new attempt) once. A turn already due for the run (a stranded step's
 * fallback not shown yet) is covered by it. Nothing for a run without an origin session.
 */
export function presentWaitingInTx(
  store: StateStore,
  wait: { runId: string; attemptId: string; nodeId: string },
  presentation: WaitingPresentation,
  now: number,
): void {
  const session = originSession(store, wait.runId);
  if (session === null) return;
  supersedeWhere(store, "run_id = :runId AND eligible_at IS NOT NULL", { runId: wait.runId }, now);
  const facts = encodeValue("presentation prompt", { ...presentation, waitingOn: wait.nodeId });
  insertIntent(store, {
    runId: wait.runId,
    session,
    cause: "presentation",
    attemptId: wait.attemptId,
    facts,
    eligibleAt: now,
  }, now);
}

/**
 * The checkpoint or decision of `attemptId` closed (answered, defaulted, timed out): a
 * presentation of that wait not given yet is stale.
 */
export function supersedeWaitingPresentationInTx(
  store: StateStore,
  attemptId: string,
  now: number,
): void {
  supersedeWhere(
    store,
    "source_attempt_id = :attemptId AND cause = 'presentation'",
    { attemptId },
    now,
  );
}

/** Supersedes the unresolved intents `where` (a condition on `turn_intents`) selects. */
function supersedeWhere(
  store: StateStore,
  where: string,
  params: Record<string, string>,
  now: number,
): void {
  resolveWhere(store, where, params, "superseded", now);
}

/** Resolves the unresolved intents `where` selects, in one statement. */
function resolveWhere(
  store: StateStore,
  where: string,
  params: Record<string, string>,
  resolution: TurnResolution,
  now: number,
): void {
  execute(
    store,
    "UPDATE turn_intents SET state = 'resolved', resolution = :resolution, " +
      "session_entry_id = NULL, resolved_at = :now, claim_token_hash = NULL, " +
      `claim_expires_at = NULL WHERE state != 'resolved' AND ${where}`,
    { ...params, resolution, now },
  );
}

/** An interactive step of the run was closed under the model (its deadline passed). */
export function recordStrandedTurnInTx(
  store: StateStore,
  runId: string,
  cause: "timedOut",
  attemptId: string,
  now: number,
): void {
  const session = originSession(store, runId);
  if (session === null) return;
  insertIntent(store, { runId, session, cause, attemptId, facts: "{}", eligibleAt: null }, now);
}

/**
 * The run ended (`endCause`: null for a completion) or waits for an answer: one of its intents
 * becomes eligible, the presentation first; without any, a run that failed or timed out gets a
 * new eligible fallback intent. An intent that is already eligible and unresolved stays the one
 * (its text is built from the run's state when it is claimed).
 */
export function releaseTurnIntentsInTx(
  store: StateStore,
  runId: string,
  endCause: Exclude<TurnCause, "presentation"> | null,
  now: number,
): void {
  const open = queryAll<{ intent_id: string; cause: TurnCause; eligible_at: number | null }>(
    store,
    "SELECT intent_id, cause, eligible_at FROM turn_intents WHERE run_id = :runId AND " +
      "state != 'resolved' ORDER BY cause = 'presentation' DESC, created_at, rowid",
    { runId },
  );
  const presentation = open.find((i) => i.cause === "presentation" && i.eligible_at === null);
  const eligible = open.find((i) => i.eligible_at !== null);
  if (presentation) {
    // The completion turn covers a stranded turn that was still waiting for delivery.
    if (eligible) resolveIntents(store, [eligible.intent_id], "superseded", null, now);
    makeEligible(store, presentation.intent_id, now);
    return;
  }
  if (eligible) return;
  if (open.length > 0) {
    makeEligible(store, open[0].intent_id, now);
    return;
  }
  if (endCause === null) return;
  const session = originSession(store, runId);
  if (session === null) return;
  insertIntent(store, { runId, session, cause: endCause, facts: "{}", eligibleAt: now }, now);
}

/** The cause of a failed run's turn: a run that failed before any attempt never launched. */
export function failureCause(store: StateStore, runId: string): "failed" | "launchFailed" {
  const attempts = queryOne<{ n: number }>(
    store,
    "SELECT COUNT(*) AS n FROM node_attempts WHERE run_id = :runId",
    { runId },
  )!.n;
  return attempts === 0 ? "launchFailed" : "failed";
}

function makeEligible(store: StateStore, intentId: string, now: number): void {
  execute(
    store,
    "UPDATE turn_intents SET eligible_at = :now WHERE intent_id = :id",
    { id: intentId, now },
  );
}

/** Resolves the given unresolved intents (already resolved ones are left as they are). */
export function resolveIntents(
  store: StateStore,
  intentIds: string[],
  resolution: TurnResolution,
  sessionEntryId: string | null,
  now: number,
): void {
  for (const id of intentIds) {
    execute(
      store,
      "UPDATE turn_intents SET state = 'resolved', resolution = :resolution, " +
        "session_entry_id = :entry, resolved_at = :now, claim_token_hash = NULL, " +
        "claim_expires_at = NULL WHERE intent_id = :id AND state != 'resolved'",
      { id, resolution, entry: sessionEntryId, now },
    );
  }
}

/**
 * The run presents its next interactive step: that step prompt is the successor of every turn
 * the run still owes (a step that timed out under the model), so they resolve `workflowPrompt`.
 */
export function resolvePromptedIntentsInTx(store: StateStore, runId: string, now: number): void {
  resolveWhere(store, "run_id = :runId", { runId }, "workflowPrompt", now);
}

/** A user's cancel ends the run quietly: its unresolved intents are superseded. */
export function supersedeRunIntentsInTx(store: StateStore, runId: string, now: number): void {
  supersedeWhere(store, "run_id = :runId", { runId }, now);
}

/** A newer run of the session supersedes the session's stale intents. */
export function supersedeSessionIntentsInTx(
  store: StateStore,
  sessionId: string,
  now: number,
): void {
  supersedeWhere(store, "target_session_id = :sessionId", { sessionId }, now);
}

/**
 * `presentation.requested`: the worker is about to propose the run's completion and its root
 * declares a `presentationPrompt`. The intent is recorded ineligible (under the run claim, with
 * its own revision); the completion's terminal transaction makes it eligible. A run without an
 * origin session records nothing (`recorded: false`).
 */
export function requestPresentation(
  store: StateStore,
  claim: Claim,
  opts: { prompt: string } & WorkerWriteOptions,
): { revision: number; recorded: boolean } {
  const runId = claimRunId(claim);
  const { revision, result } = protectedWrite(store, claim, workerTarget(runId, opts), (tx) => {
    expectState(
      tx.run,
      "request the presentation of",
      (r) => r.state === "running" && r.queue_state === "running",
    );
    const recorded = requestPresentationInTx(store, runId, opts.prompt, tx.now);
    return { type: "presentation.requested", payload: { recorded }, result: recorded };
  });
  return { revision, recorded: result };
}
