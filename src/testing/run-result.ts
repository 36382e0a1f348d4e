/**
 * What `testWorkflow` returns about one run: its status as `pi-workflows status --json` shows it
 * (every attempt, the latest updates and notifications), every event, the latest output of each
 * node and the run's effects. Read through the host, except outputs and effects, which
 * `status` does not carry: those come from the state file, opened read-only like the viewer.
 */
import { receiptOf } from "../client/command-receipt.ts";
import type { HostConnection } from "../client/host-connection.ts";
import type { Waiting } from "../protocol/decision-request.ts";
import type { OperationReceipt } from "../protocol/host-operations.ts";
import type { AttemptSummary, RunEvent } from "../protocol/run-operations.ts";
import { readStatus } from "../client/status-read.ts";
import { randomIds, systemClock } from "../base/clock.ts";
import { listRunEffects, type RunEffect } from "../state/effect-queries.ts";
import { readRunFacts } from "../state/queries.ts";
import { closeStateStore, openStateStore } from "../state/store.ts";

export type RunStatus = OperationReceipt<"run.status">;
export type { AttemptSummary, RunEffect, RunEvent };

export interface RunRecord {
  runId: string;
  /** `status --json` of the run where the test stopped. */
  status: RunStatus;
  /**
   * The latest `ok` output of each node that produced one. Typed loosely, as node callbacks see
   * `outputs`, so a test can read fields directly; the values are JSON.
   */
  outputs: Record<string, any>;
  attempts: AttemptSummary[];
  events: RunEvent[];
  /** Managed effects and unmanaged external attempts, in node order. */
  effects: RunEffect[];
}

const EVENT_PAGE = 1000;

export async function readRunRecord(
  connection: HostConnection,
  stateDir: string,
  runId: string,
): Promise<RunRecord> {
  const status = await readStatus(connection, runId, "all", {
    includeUpdates: true,
    includeNotifications: true,
  });
  const events: RunEvent[] = [];
  for (let after = 0;;) {
    const page = receiptOf(
      "run.status",
      await connection.request("run.status", {
        runId,
        payload: { eventsAfter: after, eventLimit: EVENT_PAGE, attemptLimit: 1 },
      }),
    );
    const items = page.events ?? [];
    events.push(...items);
    if (items.length === 0) break;
    after = items[items.length - 1].seq;
  }
  const store = openStateStore({ stateDir, clock: systemClock, ids: randomIds, readOnly: true });
  try {
    const outputs: RunRecord["outputs"] = {};
    for (const attempt of readRunFacts(store, runId).attempts) {
      if (attempt.state === "ok" && attempt.output !== undefined) {
        outputs[attempt.nodeId] = attempt.output;
      }
    }
    return {
      runId,
      status,
      outputs,
      attempts: status.attempts ?? [],
      events,
      effects: listRunEffects(store, runId),
    };
  } finally {
    closeStateStore(store);
  }
}

export interface WorkflowTestResult extends RunRecord {
  /** The run's state where the test stopped (`completed`, `failed`, `waiting`, ...). */
  state: string;
  /** The run's output (JSON, typed loosely like `outputs`), when it completed. */
  output: any;
  /** Why it failed, timed out or was cancelled. */
  error: { code: string; message: string } | undefined;
  /** What a waiting run asks (a checkpoint or decision the test did not answer). */
  waiting: Waiting | undefined;
  /** Virtual milliseconds the clock jumped over (deadlines the test let pass). */
  skippedMs: number;
  /** With `crash: "every-boundary"`: one line per boundary. */
  crash: CrashReport | undefined;
}

export interface BoundaryOutcome {
  /** The crash point: `worker.<message>.<beforeSend|afterSend|afterReply>#<n>`. */
  boundary: string;
  /**
   * `same`: recovered and ended like the uninterrupted run; `differs`: it did not (see
   * `differences`); `blocked`: parked for an operator (`effectAmbiguous`); `notReached`: this
   * run never passed the boundary (the workflow is not deterministic there).
   */
  outcome: "same" | "differs" | "blocked" | "notReached";
  differences: string[];
  /** The recovered run's state. */
  state: string;
}

export interface CrashReport {
  boundaries: BoundaryOutcome[];
  /** Real milliseconds the crash runs took (the uninterrupted run not included). */
  ms: number;
}
