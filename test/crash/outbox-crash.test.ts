/**
 * SIGKILL the HOST around the outbox commits of an interactive run with two notify nodes and a
 * `presentationPrompt` (each notification's commit with its node's finish, the ineligible
 * presentation intent, the terminal commit), then start a fresh host on the same state file.
 * While the dead host's run is not durably completed its presentation intent is not eligible
 * (so no session can claim the completion turn); after recovery the run completes with exactly
 * one eligible presentation and one notification per notify node, and a session that showed
 * them gets the completion turn once.
 */
import { existsSync, mkdirSync, mkdtempSync, realpathSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { removeTempRoot } from "../support/temp-root.ts";
import { killCrashHosts, runCrashHost } from "./crash-host.ts";
import { randomIds, systemClock } from "../../src/base/clock.ts";
import { checkInvariants } from "../../src/state/invariants.ts";
import { readRun } from "../../src/state/queries.ts";
import { closeStateStore, openStateStore, type StateStore } from "../../src/state/store.ts";
import { queryAll } from "../../src/state/statements.ts";
import { enqueueRun } from "../../src/state/transitions/run-enqueue.ts";
import { claimTurn } from "../../src/state/transitions/turn-delivery.ts";
import {
  claimNotifications,
  deliverNotification,
} from "../../src/state/transitions/notifications.ts";
import { loadWorkflow } from "../../src/workflows/sources/load-workflow.ts";
import { normalizeWorkflowInput } from "../../src/workflows/sources/workflow-input.ts";
import { shareWorkerCompileCache } from "../support/worker-compile-cache.ts";

const SESSION = "session-crash";

const SOURCE = `
import { compute, defineWorkflow, notify } from "pi-workflows";
export default defineWorkflow({
  name: "announce",
  startAt: "hello",
  presentationPrompt: ({ output }) => "Tell the user the answer is " + output.answer,
  nodes: {
    hello: notify({ message: "Starting" }),
    work: compute({ run: () => ({ answer: 42 }) }),
    done: notify({ kind: "final", message: "Counted" }),
    result: compute({ run: ({ outputs }) => outputs.work }),
  },
  edges: [
    { from: "hello", to: "work" },
    { from: "work", to: "done" },
    { from: "done", to: "result" },
  ],
});
`;

const POINTS = [
  "host.notification.requested.beforeCommit#1",
  "host.notification.requested.afterCommit#2",
  "host.presentation.requested.beforeCommit#1",
  "host.presentation.requested.afterCommit#1",
  "host.run.finished.beforeCommit#1",
  "host.run.finished.afterCommit#1",
];

const roots: string[] = [];
afterAll(async () => {
  await killCrashHosts();
  for (const root of roots) await removeTempRoot(root);
});

function outbox(store: StateStore, runId: string) {
  return {
    notifications: queryAll<{ node_id: string; notification_index: number }>(
      store,
      "SELECT node_id, notification_index FROM notifications WHERE run_id = :runId " +
        "ORDER BY created_at, rowid",
      { runId },
    ),
    intents: queryAll<{ cause: string; eligible: number }>(
      store,
      "SELECT cause, eligible_at IS NOT NULL AS eligible FROM turn_intents WHERE run_id = :runId",
      { runId },
    ),
  };
}

async function crashAndRecover(point: string) {
  const root = realpathSync(mkdtempSync(join(tmpdir(), "piw-outbox-")));
  roots.push(root);
  const stateDir = join(root, "state");
  shareWorkerCompileCache(stateDir);
  const projectDir = join(root, "project");
  mkdirSync(projectDir, { recursive: true });
  const path = join(projectDir, "announce.workflow.ts");
  writeFileSync(path, SOURCE);
  const loaded = await loadWorkflow(path, { cwd: projectDir });
  const { input, inputHash } = normalizeWorkflowInput(loaded.workflow, {});
  const store = openStateStore({ stateDir, clock: systemClock, ids: randomIds });
  try {
    const { runId } = enqueueRun(store, {
      workflowName: loaded.workflow.name,
      workflowRef: path,
      projectPath: projectDir,
      workflowSource: loaded.identity.workflowSource as never,
      definitionDigest: loaded.identity.definitionDigest,
      input,
      inputHash,
      binding: { executionMode: "interactive", originSessionId: SESSION },
    });
    const marker = join(root, "crashed");
    const env = {
      PI_WORKFLOWS_CRASH_AT: point,
      PI_WORKFLOWS_CRASH_ONCE: marker,
      PI_CODING_AGENT_DIR: join(root, "agent"),
    };
    const first = await runCrashHost(stateDir, env, 30_000);
    expect(first.signal, `${point}: the first host was killed\n${first.stderr}`).toBe("SIGKILL");
    expect(existsSync(marker)).toBe(true);

    // Between the hosts: a completion turn is claimable only once the completion is durable.
    const completed = readRun(store, runId)!.state === "completed";
    expect(completed, point).toBe(point === "host.run.finished.afterCommit#1");
    expect(outbox(store, runId).intents.filter((i) => i.eligible), point)
      .toHaveLength(completed ? 1 : 0);
    expect(checkInvariants(store), point).toEqual([]);

    const second = await runCrashHost(stateDir, env, 45_000);
    expect(second.code, `${point}: the second host finished\n${second.stderr}`).toBe(0);
    expect(readRun(store, runId)!.state, point).toBe("completed");
    expect(outbox(store, runId), point).toEqual({
      notifications: [
        { node_id: "hello", notification_index: 1 },
        { node_id: "done", notification_index: 1 },
      ],
      intents: [{ cause: "presentation", eligible: 1 }],
    });
    // A session shows the notifications, then gets the one completion turn.
    const shown = claimNotifications(store, { sessionId: SESSION, holder: "pi", limit: 10 });
    for (const n of shown.notifications) {
      deliverNotification(store, {
        notificationId: n.notificationId,
        sessionId: SESSION,
        sessionEntryId: `entry-${n.notificationId}`,
      });
    }
    expect(claimTurn(store, { sessionId: SESSION, holder: "pi" }).turn?.cause, point)
      .toBe("presentation");
    expect(claimTurn(store, { sessionId: SESSION, holder: "other-pi" }).turn, point).toBeNull();
    expect(checkInvariants(store), point).toEqual([]);
  } finally {
    closeStateStore(store);
  }
}

describe(`host SIGKILL around the outbox commits (${POINTS.length} points)`, () => {
  for (let i = 0; i < POINTS.length; i += 3) {
    const batch = POINTS.slice(i, i + 3);
    it(`recovers after ${batch.join(", ")}`, async () => {
      await Promise.all(batch.map((point) => crashAndRecover(point)));
    }, 120_000);
  }
});
