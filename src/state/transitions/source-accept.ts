/**
 * `run.resume --accept-source`: a run parked `workflowSourceChanged` re-pins to the workflow file
 * as it is now and resumes from its last durable boundary, when its own history still fits the
 * new graph (the fork check, state/history-fit.ts). The re-pin and the resume are one change
 * of the run (event `run.sourceAccepted`: the old and new definition and source digests and who accepted;
 * the event's time says when), committed with the command receipt.
 */
import { sha256Hex } from "../../protocol/canonical-json.ts";
import type { DefinitionSnapshot } from "../../protocol/definition-snapshot.ts";
import type { WorkflowSource } from "../../protocol/worker-launch.ts";
import { RefusedError } from "../errors.ts";
import type { JournalEntry } from "../journal.ts";
import { type RunRow } from "../protected-write.ts";
import { type StateStore } from "../store.ts";
import { execute, queryOneArgs } from "../statements.ts";
import { encodeValue } from "../values.ts";
import { parentAttempts, requireFit } from "./run-fork.ts";

export interface AcceptedSource {
  /** The resolved source identity, as the worker launch envelope carries it. */
  workflowSource: WorkflowSource;
  definitionDigest: string;
  /** The definition snapshot of that digest (stored for viewers and checked against). */
  definition: DefinitionSnapshot;
  /** Who accepted it (a login name) and from which client. */
  operator: string;
  clientId: string;
}

export function acceptSourceInTx(
  store: StateStore,
  run: RunRow,
  accepted: AcceptedSource,
): JournalEntry {
  if (run.blocked_reason !== "workflowSourceChanged") {
    throw new RefusedError(
      "rejected",
      "notSourceChanged",
      `Run ${run.run_id} is not parked for a changed workflow source${
        run.blocked_reason ? ` (it is blocked ${run.blocked_reason})` : ""
      }: resume it without --accept-source`,
    );
  }
  // The path the run took (its counted attempts), and the attempt it stopped in if that did not
  // finish: every node on it must still be there, with the same kind, joined by the same edges.
  const attempts = parentAttempts(store, run.run_id);
  const path = attempts.filter((a, i) =>
    (a.state !== "interrupted" && a.state !== "running") || i === attempts.length - 1
  );
  requireFit(
    run.run_id,
    accepted.definition,
    path,
    null,
    (from) =>
      from
        ? `Fork it from an earlier node instead: pi-workflows rerun ${run.run_id} ${from}`
        : "Start the workflow again, or restore the file and resume",
  );
  const old = queryOneArgs<{ definition_digest: string; workflow_source_json: string }>(
    store,
    "SELECT definition_digest, workflow_source_json FROM runs WHERE run_id = ?1",
    run.run_id,
  )!;
  const source = encodeValue("workflowSource", accepted.workflowSource);
  const now = store.clock.now();
  execute(
    store,
    "UPDATE runs SET workflow_source_json = :source, definition_digest = :digest, paused = 0, " +
      "blocked_reason = NULL, blocked_detail = NULL WHERE run_id = :runId",
    {
      source,
      digest: accepted.definitionDigest,
      runId: run.run_id,
    },
  );
  execute(
    store,
    "INSERT INTO workflow_definitions (definition_digest, snapshot_json, created_at) " +
      "VALUES (:digest, :definition, :now) ON CONFLICT (definition_digest) DO NOTHING",
    {
      digest: accepted.definitionDigest,
      definition: encodeValue("definition snapshot", accepted.definition),
      now,
    },
  );
  return {
    type: "run.sourceAccepted",
    payload: {
      wasBlocked: run.blocked_reason,
      // The graph's digest (often unchanged: an edit of a callback keeps the graph) and the
      // source identity's (file hashes: always changed).
      fromDigest: old.definition_digest,
      toDigest: accepted.definitionDigest,
      fromSourceDigest: `sha256:${sha256Hex(old.workflow_source_json)}`,
      toSourceDigest: `sha256:${sha256Hex(source)}`,
      operator: accepted.operator,
      clientId: accepted.clientId,
    },
    summary: { state: run.state, queue: run.queue_state, paused: false },
  };
}
