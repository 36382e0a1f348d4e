/**
 * `worker.progress`: what a worker reports while it runs that is not a transition of its run:
 * heartbeats, the next piece of its run's facts, the child process groups it hands to host
 * supervision, and a long model step's usage so far.
 */
import { WorkflowFailureError } from "../../protocol/failures.ts";
import type { WorkerMessageOf } from "../../protocol/worker-messages.ts";
import { formatStartIdentity, type ProcessTable, processTable } from "../../os/process-identity.ts";
import { renewClaim } from "../../state/claims.ts";
import type { WorkerWriteOptions } from "../../state/protected-write.ts";
import { recordNodeUsage } from "../../state/transitions/node-attempts.ts";
import { recordNodeSubmissions } from "../../state/transitions/node-submissions.ts";
import { recordRecoveredUsage } from "../../state/transitions/recovered-usage.ts";
import { readBudgetStop } from "../../state/budget-stop.ts";
import type { StepUsage } from "../../protocol/step-usage.ts";
import { registerChildGroup, unregisterChildGroup } from "../../state/transitions/child-groups.ts";
import type { ActiveWorker } from "../supervision/active-worker.ts";
import type { HostContext } from "../host-context.ts";
import { nextFactsChunk } from "./facts-stream.ts";
import type { Applied } from "./applied.ts";
import { isSettled } from "../supervision/worker-life.ts";

/**
 * Heartbeats renew the claim. `process.register` attaches a direct child of this worker that
 * leads its own process group (a headless Pi, a long command) to host supervision: it needs the
 * live claim, and the PID, start time, parent and group are checked against a process table read
 * after the message arrived (`readRegistrationTable`), so a worker cannot make the host signal
 * anything else. `process.unregister` stays valid after the claim
 * was released by a terminal commit, so cleanup can finish.
 */
export function applyProgress(
  ctx: HostContext,
  worker: ActiveWorker,
  message: WorkerMessageOf<"worker.progress">,
  write: WorkerWriteOptions,
): Applied {
  const p = message.payload;
  if (p.op === "process.unregister") {
    const identity = { pid: p.pid, startTime: p.startTime };
    if (worker.children.delete(formatStartIdentity(identity))) {
      unregisterChildGroup(ctx.store, { workerEpoch: worker.workerEpoch, ...identity });
    }
    return { closedAttempt: false };
  }
  if (isSettled(worker)) {
    throw protocolRejected(`worker.progress ${p.op} after the run's durable end`);
  }
  if (p.op === "heartbeat") {
    renewClaim(ctx.store, worker.claim);
    return { closedAttempt: false };
  }
  if (p.op === "usage") {
    const { revision } = recordNodeUsage(ctx.store, worker.claim, {
      ...write,
      attemptId: p.attemptId,
      usage: p.usage,
    });
    return { revision, closedAttempt: false };
  }
  if (p.op === "usage.recovered") return recordRecovered(ctx, worker, p, write);
  if (p.op === "budget.check") {
    const stop = readBudgetStop(ctx.store, worker.runId);
    return { result: stop === null ? {} : { stop }, closedAttempt: false };
  }
  if (p.op === "submissions") {
    const { revision } = recordNodeSubmissions(ctx.store, worker.claim, {
      ...write,
      attemptId: p.attemptId,
      tally: p.tally,
    });
    return { revision, closedAttempt: false };
  }
  if (p.op === "facts.next") {
    if (worker.factsStream === null) {
      throw protocolRejected("facts.next with no run facts left to send");
    }
    return { factsChunk: nextFactsChunk(worker), closedAttempt: false };
  }
  const stat = takeRegistrationTable(worker, message.messageId)?.stat(p.pid) ?? null;
  const leader = worker.spawned.identity;
  if (
    leader === null || stat === null || stat.startTime !== p.startTime ||
    stat.ppid !== leader.pid || stat.pgrp !== p.pid || p.processGroup !== p.pid
  ) {
    throw protocolRejected(
      "process.register accepts only a live direct child of this worker that leads its own " +
        "process group, named by its exact start identity",
    );
  }
  const identity = { pid: p.pid, startTime: p.startTime };
  // Durable (with the claim checked and renewed) before the worker hears "accepted" and lets
  // the child run on.
  registerChildGroup(ctx.store, worker.claim, { workerEpoch: worker.workerEpoch, ...identity });
  worker.children.set(formatStartIdentity(identity), identity);
  return { closedAttempt: false };
}

/** An interrupted attempt's usage, read back from its Pi session (transitions/recovered-usage.ts). */
function recordRecovered(
  ctx: HostContext,
  worker: ActiveWorker,
  p: { attemptId: string; usage?: StepUsage; submitted?: number },
  write: WorkerWriteOptions,
): Applied {
  const { revision } = recordRecoveredUsage(ctx.store, worker.claim, {
    ...write,
    attemptId: p.attemptId,
    ...(p.usage === undefined ? {} : { usage: p.usage }),
    ...(p.submitted === undefined ? {} : { submitted: p.submitted }),
  });
  return { revision, closedAttempt: false };
}

function protocolRejected(detail: string): WorkflowFailureError {
  return new WorkflowFailureError("protocolRejected", detail);
}

const registrationTables = new WeakMap<ActiveWorker, Map<string, ProcessTable>>();

/**
 * Reads the process table for a `process.register` frame before it joins the (synchronous)
 * group commit that applies it; other frames pass at once. An unreadable table leaves none:
 * the registration is then refused.
 */
export async function readRegistrationTable(worker: ActiveWorker, value: unknown): Promise<void> {
  const frame = value as { kind?: unknown; messageId?: unknown; payload?: { op?: unknown } };
  if (
    frame?.kind !== "worker.progress" || frame.payload?.op !== "process.register" ||
    typeof frame.messageId !== "string"
  ) return;
  let table: ProcessTable;
  try {
    table = await processTable({ fresh: true });
  } catch {
    return;
  }
  let tables = registrationTables.get(worker);
  if (!tables) registrationTables.set(worker, tables = new Map());
  tables.set(frame.messageId, table);
}

function takeRegistrationTable(worker: ActiveWorker, messageId: string): ProcessTable | null {
  const tables = registrationTables.get(worker);
  const table = tables?.get(messageId) ?? null;
  tables?.delete(messageId);
  return table;
}
