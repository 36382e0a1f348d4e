/**
 * Terminal transitions of a live run (protected writes): `completed/done`, `failed/failed`,
 * `timed_out/failed`. Each releases the claim, settles open attempt, effect and interaction
 * state, and makes the run's turn intent eligible (the completion presentation, or the successor
 * turn of a run that failed or timed out), in the same transaction.
 */
import type { JsonValue } from "../../protocol/canonical-json.ts";
import type { FactError } from "../../protocol/run-facts.ts";
import { type Claim, claimRunId, releaseLeaseInTx } from "../claims.ts";
import {
  type ProtectedTx,
  protectedWrite,
  workerTarget as target,
  type WorkerWriteOptions,
} from "../protected-write.ts";
import { TransitionError } from "../errors.ts";
import { type StateStore } from "../store.ts";
import { execute } from "../statements.ts";
import { encodeValue } from "../values.ts";
import { failureCause, releaseTurnIntentsInTx } from "./turn-intents.ts";
import {
  boundedError,
  cancelPendingInteractions,
  closeAttempt,
  describeState,
  expectState,
  openAttempt,
  setQueueState,
  settleEffectsOnStop,
} from "./common.ts";

const isActive = (r: { state: string; queue_state: string }) =>
  r.state === "running" && (r.queue_state === "running" || r.queue_state === "starting");

/** The workflow finished: `completed/done` with its final output; event `run.completed`. */
export function completeRun(
  store: StateStore,
  claim: Claim,
  opts: { output: JsonValue } & WorkerWriteOptions,
): { revision: number } {
  const runId = claimRunId(claim);
  const output = encodeValue("run output", opts.output);
  const { revision } = protectedWrite(store, claim, target(runId, opts), (tx) => {
    expectState(tx.run, "complete", isActive);
    const open = openAttempt(store, runId);
    if (open) {
      throw new TransitionError(
        runId,
        "complete",
        describeState(tx.run),
        `attempt ${open.attempt_id} is still open`,
      );
    }
    // A worker that finishes with an effect still applying cannot prove its outcome.
    settleEffectsOnStop(store, runId, tx.now);
    finish(tx, "completed", "done", output, null);
    releaseTurnIntentsInTx(store, runId, null, tx.now);
    return {
      type: "run.completed",
      payload: {},
      summary: { state: "completed" },
      result: undefined,
    };
  });
  return { revision };
}

/** The run failed with a durable error: `failed/failed`; event `run.failed`. */
export function failRun(
  store: StateStore,
  claim: Claim,
  opts: { error: FactError } & WorkerWriteOptions,
): { revision: number } {
  return endWithError(store, claim, "failed", opts.error, opts);
}

/** The run exceeded its declared timeout: `timed_out/failed`; event `run.timed_out`. */
export function timeOutRun(
  store: StateStore,
  claim: Claim,
  opts: { error?: FactError } & WorkerWriteOptions = {},
): { revision: number } {
  return endWithError(
    store,
    claim,
    "timed_out",
    opts.error ?? { code: "runTimedOut", message: "The run exceeded its declared timeout" },
    opts,
  );
}

function endWithError(
  store: StateStore,
  claim: Claim,
  state: "failed" | "timed_out",
  error: FactError,
  opts: WorkerWriteOptions,
): { revision: number } {
  const runId = claimRunId(claim);
  const bounded = boundedError(error);
  const { revision } = protectedWrite(store, claim, target(runId, opts), (tx) => {
    expectState(tx.run, state === "failed" ? "fail" : "time out", isActive);
    const open = openAttempt(store, runId);
    if (open) closeAttempt(store, open.attempt_id, state, tx.now, bounded);
    settleEffectsOnStop(store, runId, tx.now);
    cancelPendingInteractions(store, runId, tx.now);
    finish(tx, state, "failed", null, bounded);
    releaseTurnIntentsInTx(
      store,
      runId,
      state === "failed" ? failureCause(store, runId) : "timedOut",
      tx.now,
    );
    return {
      type: `run.${state}`,
      payload: { code: bounded.code },
      summary: { state, code: bounded.code },
      result: undefined,
    };
  });
  return { revision };
}

function finish(
  tx: ProtectedTx,
  state: "completed" | "failed" | "timed_out",
  queue: "done" | "failed",
  output: string | null,
  error: { code: string; message: string } | null,
): void {
  releaseLeaseInTx(tx.store, tx.claim.resource, tx.now);
  setQueueState(tx.store, tx.runId, queue, tx.now);
  execute(
    tx.store,
    "UPDATE runs SET state = :state, paused = 0, finished_at = :now, state_changed_at = :now, " +
      "output_json = :output, " +
      "error_code = :code, error_message = :message WHERE run_id = :runId",
    {
      state,
      now: tx.now,
      output,
      code: error?.code ?? null,
      message: error?.message ?? null,
      runId: tx.runId,
    },
  );
}
