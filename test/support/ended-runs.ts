/**
 * Builds ended runs of a realistic shape through the real transitions, for the retention tests
 * and benchmark: a started run (client receipt), a worker with messages (receipts in events), an
 * update, a managed effect, a registered child group, a notify node's notification, a decision
 * answered by a person (client receipt), a relaunch, and the end (completion presentation).
 */
import { fingerprint, type JsonValue } from "../../src/protocol/canonical-json.ts";
import type { StateStore } from "../../src/state/store.ts";
import type { Claim } from "../../src/state/claims.ts";
import { enqueueRun } from "../../src/state/transitions/run-enqueue.ts";
import { claimRunForLaunch, markWorkerLive } from "../../src/state/transitions/run-launch.ts";
import {
  recordNodeFinished,
  recordNodeStarted,
  recordNodeUpdate,
} from "../../src/state/transitions/node-attempts.ts";
import { reserveEffect, settleEffect } from "../../src/state/transitions/effects.ts";
import { registerChildGroup } from "../../src/state/transitions/child-groups.ts";
import { waitRun } from "../../src/state/transitions/run-park.ts";
import { answerDecision } from "../../src/state/transitions/decisions.ts";
import { completeRun } from "../../src/state/transitions/run-end.ts";
import { requestPresentation } from "../../src/state/transitions/turn-intents.ts";
import { finishWorkerEpoch } from "../../src/state/transitions/workers.ts";

let counter = 0;

export interface EndedRunOptions {
  hostEpoch: number;
  /** Attempts before the decision (default 2). */
  attempts?: number;
  /** Progress updates of the first attempt (an event each; default 1). */
  updates?: number;
  parentRunId?: string;
  /** The run's definition digest (default `sha256:def`) and its stored snapshot, if any. */
  definitionDigest?: string;
  definition?: JsonValue;
}

function launch(
  store: StateStore,
  runId: string,
  hostEpoch: number,
): { claim: Claim; epoch: string } {
  const epoch = `wepoch-${++counter}`;
  const { claim } = claimRunForLaunch(store, {
    runId,
    ownerId: "host-fixture",
    hostEpoch,
    token: store.ids.token(),
    ttlMs: 30_000,
    workerEpoch: epoch,
    launchEnvelopeHash: "sha256:env",
  });
  markWorkerLive(store, claim, { workerEpoch: epoch, pid: 4242, startIdentity: "start-1" });
  return { claim, epoch };
}

/** A message receipt for worker message `n` of `epoch`. */
function message(epoch: string, n: number) {
  return {
    receipt: {
      requestId: `${epoch}.${String(n).padStart(8, "0")}`,
      requestFingerprint: fingerprint({ epoch, n }),
    },
  };
}

/** Starts a run and leaves it running/running with its worker; returns its id and claim. */
export function startRun(
  store: StateStore,
  opts: EndedRunOptions,
): { runId: string; claim: Claim; epoch: string } {
  const id = ++counter;
  const { runId } = enqueueRun(store, {
    workflowName: "retention-demo",
    workflowRef: "builtin:demo",
    title: `Run ${id}`,
    projectPath: "/project",
    workflowSource: { root: { kind: "builtin", id: "demo" }, mounted: [] },
    definitionDigest: opts.definitionDigest ?? "sha256:def",
    definition: opts.definition,
    input: { task: `task ${id}`, notes: "x".repeat(400) },
    inputHash: "sha256:in",
    binding: { executionMode: "interactive", originSessionId: `session-${id}` },
    parentRunId: opts.parentRunId,
    receipt: {
      requestId: `start-${id}`,
      clientId: "client-fixture",
      operation: "run.start",
      requestFingerprint: fingerprint({ start: id }),
      receipt: { started: id },
    },
  } as never);
  return { runId, ...launch(store, runId, opts.hostEpoch) };
}

/** A running run with one open agent step: the host's writes in the benchmarks update it. */
export function activeRun(
  store: StateStore,
  opts: EndedRunOptions,
): { runId: string; claim: Claim; attemptId: string } {
  const { runId, claim } = startRun(store, opts);
  const attemptId = store.ids.next("attempt");
  recordNodeStarted(store, claim, {
    attemptId,
    nodeId: "work",
    nodeKind: "agent",
    effect: "pure",
    deadlineAt: null,
  });
  return { runId, claim, attemptId };
}

/** One complete ended run (completed); returns its id. */
export function endedRun(store: StateStore, opts: EndedRunOptions): string {
  const { runId, claim, epoch } = startRun(store, opts);
  let n = 0;
  for (let i = 0; i < (opts.attempts ?? 2); i++) {
    const attemptId = store.ids.next("attempt");
    recordNodeStarted(store, claim, {
      attemptId,
      nodeId: `node-${i}`,
      nodeKind: i === 0 ? "action" : "notify",
      effect: i === 0 ? "external" : "pure",
      deadlineAt: null,
      ...message(epoch, ++n),
    });
    for (let u = 0; u < (i === 0 ? opts.updates ?? 1 : 1); u++) {
      recordNodeUpdate(store, claim, {
        attemptId,
        type: "progress",
        key: "p",
        data: { completed: i, total: 3 + u },
        ...message(epoch, ++n),
      });
    }
    if (i === 0) {
      const { result } = reserveEffect(store, claim, {
        attemptId,
        effectType: "http",
        idempotencyKey: `k-${runId}`,
        requestFingerprint: "sha256:fx",
        ...message(epoch, ++n),
      });
      settleEffect(store, claim, {
        effectId: (result as { effectId: string }).effectId,
        outcome: "applied",
        effectReceipt: { ok: true },
        ...message(epoch, ++n),
      });
      registerChildGroup(store, claim, { workerEpoch: epoch, pid: 5000 + counter, startTime: "9" });
    }
    recordNodeFinished(store, claim, {
      attemptId,
      output: { result: "y".repeat(300), i },
      ...(i === 1 ? { notification: { kind: "progress", message: "halfway" } } : {}),
      ...message(epoch, ++n),
    });
  }
  const decisionAttempt = store.ids.next("attempt");
  recordNodeStarted(store, claim, {
    attemptId: decisionAttempt,
    nodeId: "approve",
    nodeKind: "humanDecision",
    effect: "pure",
    deadlineAt: null,
    ...message(epoch, ++n),
  });
  waitRun(store, claim, {
    attemptId: decisionAttempt,
    nodeId: "approve",
    kind: "humanDecision",
    request: {
      title: "Approve?",
      subject: "s",
      presentation: { schema: "pi-workflows.decision-presentation.v1", summary: "x", blocks: [] },
    },
    ...message(epoch, ++n),
  } as never);
  finishWorkerEpoch(store, {
    workerEpoch: epoch,
    status: "exited",
    exitCode: 0,
    signal: null,
    diagnosticHash: null,
  });
  answerDecision(store, {
    runId,
    nodeId: "approve",
    attemptId: decisionAttempt,
    kind: "humanDecision",
    answer: { approved: true },
    ownerId: "host-fixture",
    receipt: {
      requestId: `answer-${runId}`,
      clientId: "client-fixture",
      operation: "decision.answer",
      requestFingerprint: fingerprint({ answer: runId }),
      receipt: { answered: true },
    },
  });
  const second = launch(store, runId, opts.hostEpoch);
  requestPresentation(store, second.claim, {
    prompt: "Say it is done",
    ...message(second.epoch, 1),
  });
  completeRun(store, second.claim, { output: { done: true }, ...message(second.epoch, 2) });
  finishWorkerEpoch(store, {
    workerEpoch: second.epoch,
    status: "exited",
    exitCode: 0,
    signal: null,
    diagnosticHash: null,
  });
  return runId;
}
