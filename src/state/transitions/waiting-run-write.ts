/**
 * The one write path of a waiting run that no worker holds (session operations, verdicts,
 * reminders): the request's transport checks, proof that no live claim exists, the change, its
 * revision and event, and the command receipt, in one transaction.
 */
import type { HostOperation, OperationReceipt } from "../../protocol/host-operations.ts";
import { receiptJson } from "../../protocol/host-response.ts";
import { releaseLeaseInTx, runResource } from "../claims.ts";
import { type RunRow } from "../protected-write.ts";
import { RefusedError, RevisionConflictError } from "../errors.ts";
import { type CommandReceiptInput, recordHostCommandInTx } from "../host-commands.ts";
import { type InteractionRow, readInteraction } from "../interaction-queries.ts";
import { appendHistory, type JournalEntry, nextRevision } from "../journal.ts";
import { type StateStore } from "../store.ts";
import { writeTransaction } from "../transactions.ts";
import { takeAuthorityInTx } from "./control-claim.ts";
import { expectState, requireRun } from "./common.ts";

/** What a session operation names: run, request, session (and for tool calls step and attempt). */
export interface InteractionTarget {
  runId: string;
  interactionId: string;
  sessionId: string;
  expectedRevision?: number;
  receipt?: CommandReceiptInput;
}

/** A command's receipt, typed by its operation's receipt schema. */
type Receipt = OperationReceipt<HostOperation>;

/** What a `waitingRunWrite` change commits (a null entry: no run change). */
export interface WaitingChange<T, B extends Receipt | null> {
  entry: JournalEntry | null;
  result: T;
  /** Store the command receipt (default true): false for an answer that must not stick. */
  receipt?: boolean;
  /** The receipt stored with the command (unless the caller gave one); null: none to store. */
  body: B;
}

/**
 * One write on a waiting run that no worker holds: the run row, the request's transport checks,
 * proof that no live claim exists (an expired one is replaced by a control claim and released),
 * the change, its revision, event and viewer delta, and the command receipt. Returns the
 * change's result; a change with a null `entry` commits nothing but the receipt.
 */
export function waitingRunWrite<T, B extends Receipt | null>(
  store: StateStore,
  t: InteractionTarget,
  check: (request: InteractionRow, run: RunRow) => void,
  change: (ctx: { now: number; request: InteractionRow; run: RunRow }) => WaitingChange<T, B>,
): { revision: number; result: T; body: B } {
  return writeTransaction(store, () => {
    const now = store.clock.now();
    const request = requireRequest(store, t);
    const run = requireRun(store, t.runId);
    check(request, run);
    if (t.expectedRevision !== undefined && t.expectedRevision !== run.revision) {
      throw new RevisionConflictError(t.runId, t.expectedRevision, run.revision);
    }
    const applied = change({ now, request, run });
    let revision = run.revision;
    if (applied.entry) {
      const authority = takeAuthorityInTx(store, t.runId, null, now);
      revision = nextRevision(store, t.runId);
      if (authority !== "none") releaseLeaseInTx(store, runResource(t.runId), now);
      appendHistory(store, t.runId, revision, now, applied.entry);
    }
    if (t.receipt && applied.receipt !== false) {
      recordHostCommandInTx(
        store,
        {
          ...t.receipt,
          receipt: t.receipt.receipt ?? (applied.body === null ? {} : receiptJson(applied.body)),
        },
        { runId: t.runId, revision, now },
      );
    }
    return { revision, result: applied.result, body: applied.body };
  });
}

/** The request named by `t`, checked against its run and session. */
function requireRequest(store: StateStore, t: InteractionTarget): InteractionRow {
  const request = readInteraction(store, t.interactionId);
  if (!request || request.run_id !== t.runId) {
    throw new RefusedError(
      "notFound",
      "interactionNotFound",
      `Unknown interactive request ${t.interactionId} of run ${t.runId}`,
    );
  }
  if (request.target_session_id !== t.sessionId) {
    throw new RefusedError(
      "rejected",
      "wrongSession",
      `Interactive request ${t.interactionId} belongs to another Pi session than this one`,
    );
  }
  return request;
}

/** Refuses a request that no longer waits (settled, timed out, failed, cancelled). */
export function requirePending(request: InteractionRow): void {
  if (request.status === "pending") return;
  const why = {
    settled: "its output was already accepted",
    timedOut: "it reached its deadline",
    failed: "it failed after the reminders",
    cancelled: "its run was cancelled or ended",
    pending: "",
  }[request.status];
  throw new RefusedError(
    "rejected",
    "notPending",
    `Step ${JSON.stringify(request.node_id)} is no longer waiting for a submission: ${why}`,
  );
}

/** The waiting run of a pending request (its state must agree). */
export function requireWaitingRun(run: RunRow, transition: string): void {
  expectState(run, transition, (r) => r.state === "waiting" && r.queue_state === "parked");
}
