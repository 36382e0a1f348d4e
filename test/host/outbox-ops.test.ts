/**
 * The four outbox operations against one real host with real workers: `notification.claim`,
 * `notification.deliver`, `turn.claim`, `turn.resolve` are served with receipts, leases keep a
 * second claimant off claimed items, deliveries and resolutions are idempotent and refuse what
 * does not fit, the turn texts are built from the committed run, and a headless run's
 * notifications are readable in `status`.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HostResponseSchema, parseReceipt } from "../../src/protocol/host-response.ts";
import { parseWith } from "../../src/protocol/schema-issues.ts";
import {
  type CliProcess,
  hostRequest,
  requestOnce,
  runCliProcess,
  startHostProcess,
  stopProcess,
  type TempHome,
  tempHome,
  waitFor,
} from "../support/host.ts";

let home: TempHome;
let host: CliProcess;
let project: string;

const SESSION = "session-ops";

beforeAll(async () => {
  home = tempHome();
  project = join(home.root, "project");
  mkdirSync(project);
  writeFileSync(
    join(project, "announce.workflow.ts"),
    `import { compute, defineWorkflow, notify } from "@osolmaz/pi-workflows";
export default defineWorkflow({
  name: "announce",
  startAt: "hello",
  presentationPrompt: ({ output }) => "Tell the user the answer is " + output.answer + ".",
  nodes: {
    hello: notify({ message: "Starting" }),
    work: compute({ run: () => ({ answer: 42 }) }),
    done: notify({ kind: "final", message: "Counted 42" }),
    result: compute({ run: ({ outputs }) => outputs.work }),
  },
  edges: [{ from: "hello", to: "work" }, { from: "work", to: "done" }, { from: "done", to: "result" }],
});
`,
  );
  writeFileSync(
    join(project, "breaks.workflow.ts"),
    `import { compute, defineWorkflow } from "@osolmaz/pi-workflows";
export default defineWorkflow({
  name: "breaks",
  startAt: "boom",
  nodes: { boom: compute({ run: () => { throw new Error("line one\\nline two " + "x".repeat(400)); } }) },
});
`,
  );
  host = await startHostProcess(home.env);
});

afterAll(async () => {
  if (host) await stopProcess(host);
  await home?.cleanup();
});

async function ask(operation: string, fields: Record<string, unknown> = {}): Promise<any> {
  const request = hostRequest(operation, fields);
  const response = await requestOnce(home.socketPath, request);
  expect(parseWith(HostResponseSchema, response).ok, JSON.stringify(response)).toBe(true);
  if (response.outcome === "accepted" || response.outcome === "adopted") {
    const receipt = parseReceipt(operation as never, response.receipt);
    expect(receipt.ok, JSON.stringify(receipt)).toBe(true);
  }
  return response;
}

async function startAndFinish(workflow: string, session: string | null): Promise<string> {
  const started = await ask("run.start", {
    payload: {
      workflow,
      cwd: project,
      ...(session ? { executionMode: "interactive", originSessionId: session } : {}),
    },
  });
  expect(started.outcome, JSON.stringify(started)).toBe("accepted");
  const runId = started.receipt.run.runId as string;
  await waitFor(
    async () => {
      const status = await ask("run.status", { runId });
      return ["completed", "failed"].includes(status.receipt.run.state);
    },
    `run ${runId} to end`,
    30_000,
  );
  return runId;
}

describe("outbox operations", () => {
  it("notifications: claimed under a lease, delivered once, refusals", async () => {
    const runId = await startAndFinish("announce.workflow.ts", SESSION);
    const claim = await ask("notification.claim", { payload: { sessionId: SESSION } });
    expect(claim.outcome).toBe("accepted");
    expect(
      claim.receipt.notifications.map((
        n: any,
      ) => [n.runId, n.workflowName, n.nodeId, n.kind, n.message]),
    )
      .toEqual([
        [runId, "announce", "hello", "progress", "Starting"],
        [runId, "announce", "done", "final", "Counted 42"],
      ]);
    const [first, second] = claim.receipt.notifications.map((n: any) => n.notificationId);
    // Another claimant (another Pi process on the session) sees them leased.
    const other = await ask("notification.claim", { payload: { sessionId: SESSION } });
    expect(other.receipt).toEqual({
      notifications: [],
      leased: [{ notificationId: first, runId }, { notificationId: second, runId }],
    });
    // Not the session's turn yet: its notifications come first.
    expect((await ask("turn.claim", { payload: { sessionId: SESSION } })).receipt.turn).toBeNull();

    const deliver = hostRequest("notification.deliver", {
      payload: { notificationId: first, sessionId: SESSION, sessionEntryId: "entry-1" },
    });
    const delivered = await requestOnce(home.socketPath, deliver);
    expect(delivered).toMatchObject({
      outcome: "accepted",
      receipt: {
        notificationId: first,
        sessionEntryId: "entry-1",
        deliveredAt: expect.any(Number),
      },
    });
    // The same request again: the stored receipt.
    expect(await requestOnce(home.socketPath, deliver)).toEqual(delivered);
    // A restarted Pi recording the entry it found on its branch: adopted.
    const adopted = await ask("notification.deliver", {
      payload: { notificationId: first, sessionId: SESSION, sessionEntryId: "entry-1" },
    });
    expect(adopted).toMatchObject({ outcome: "adopted", receipt: delivered.receipt });
    const refusals: [Record<string, string>, string, string][] = [
      [
        { notificationId: first, sessionId: SESSION, sessionEntryId: "entry-9" },
        "conflict",
        "alreadyDelivered",
      ],
      [
        { notificationId: second, sessionId: "other-session", sessionEntryId: "e" },
        "rejected",
        "wrongSession",
      ],
      [
        { notificationId: "nope", sessionId: SESSION, sessionEntryId: "e" },
        "notFound",
        "notificationNotFound",
      ],
    ];
    for (const [payload, outcome, code] of refusals) {
      const response = await ask("notification.deliver", { payload });
      expect(response, code).toMatchObject({ outcome, error: { code } });
      expect(response.error.message).not.toContain("\n");
    }
    await ask("notification.deliver", {
      payload: { notificationId: second, sessionId: SESSION, sessionEntryId: "entry-2" },
    });
    const status = await ask("run.status", { runId, payload: { includeNotifications: true } });
    expect(status.receipt.notifications.map((n: any) => [n.nodeId, n.state])).toEqual([
      ["hello", "delivered"],
      ["done", "delivered"],
    ]);
  });

  it("turns: the completion presentation with the run's result, leased, resolved once", async () => {
    const claimed = await ask("turn.claim", { payload: { sessionId: SESSION } });
    expect(claimed.outcome).toBe("accepted");
    const turn = claimed.receipt.turn;
    expect(turn).toMatchObject({
      workflowName: "announce",
      cause: "presentation",
      kind: "presentation",
      display: false,
    });
    expect(turn.message).toContain("Presentation instructions:\nTell the user the answer is 42.");
    expect(turn.message).toContain('"answer": 42');
    expect(turn.message).toContain("Do not call the workflow tool for this run");
    expect((await ask("turn.claim", { payload: { sessionId: SESSION } })).receipt).toEqual({
      turn: null,
      leased: [{ turnIntentId: turn.turnIntentId, runId: turn.runId }],
    });
    const resolve = {
      turnIntentId: turn.turnIntentId,
      sessionId: SESSION,
      sessionEntryId: "entry-t",
    };
    expect(await ask("turn.resolve", { payload: resolve })).toMatchObject({
      outcome: "accepted",
      receipt: {
        turnIntentId: turn.turnIntentId,
        resolution: "presentation",
        sessionEntryId: "entry-t",
      },
    });
    expect((await ask("turn.resolve", { payload: resolve })).outcome).toBe("adopted");
    expect(await ask("turn.resolve", { payload: { ...resolve, sessionEntryId: "entry-x" } }))
      .toMatchObject({ outcome: "conflict", error: { code: "alreadyResolved" } });
    expect(await ask("turn.resolve", { payload: { ...resolve, turnIntentId: "turn-none" } }))
      .toMatchObject({ outcome: "notFound", error: { code: "turnNotFound" } });
    expect((await ask("turn.claim", { payload: { sessionId: SESSION } })).receipt).toEqual({
      turn: null,
      leased: [],
    });
  });

  it("a failed run's fallback is one short line with a bounded safe error", async () => {
    const session = "session-fail";
    const runId = await startAndFinish("breaks.workflow.ts", session);
    const { turn } = (await ask("turn.claim", { payload: { sessionId: session } })).receipt;
    expect(turn).toMatchObject({ runId, cause: "failed", kind: "fallback", display: true });
    expect(turn.message).toMatch(
      new RegExp(
        `^Workflow "breaks" \\(run ${runId}\\) ended with state failed: line one line two x+ … \\[cut: \\d+ more characters\\]\\. What to do next: `,
      ),
    );
    expect(turn.message).not.toContain("\n");
    // The error is cut at 300 characters; the rest says what to do and names the retry command.
    expect(turn.message).toContain(`/workflow retry ${runId} goes on from the failed step`);
    expect(turn.message.length).toBeLessThan(700);
  });

  it("a headless run's notifications are readable in status", async () => {
    const runId = await startAndFinish("announce.workflow.ts", null);
    expect(
      (await ask("notification.claim", { payload: { sessionId: SESSION } })).receipt.notifications,
    )
      .toEqual([]);
    const status = await runCliProcess(["status", runId], home.env);
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).toMatch(
      /notifications:\n {2}• hello \S+ \(progress, not shown in Pi\)\n {4}Starting\n {2}■ done \S+ \(final, not shown in Pi\)\n {4}Counted 42/,
    );
    const json = JSON.parse((await runCliProcess(["status", runId, "--json"], home.env)).stdout);
    expect(json.notifications).toHaveLength(2);
  });

  it("refuses bad payloads with the field path", async () => {
    const response = await ask("notification.claim", { payload: { sessionId: SESSION, limit: 0 } });
    expect(response).toMatchObject({ outcome: "rejected", error: { code: "invalidRequest" } });
    expect(response.error.message).toMatch(/payload\.limit: /);
  });
});
