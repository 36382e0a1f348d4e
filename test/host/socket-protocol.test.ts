import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HOST_OPERATIONS } from "../../src/protocol/host-operations.ts";
import { parseHostResponse, parseReceipt } from "../../src/protocol/host-response.ts";
import {
  type CliProcess,
  hostRequest,
  RawClient,
  requestOnce,
  ROOT,
  startHostProcess,
  stopProcess,
  type TempHome,
  tempHome,
  waitFor,
} from "../support/host.ts";
import { seedRuns } from "../support/host-seed.ts";
import { queryState } from "../support/state-db.ts";

let home: TempHome;
let host: CliProcess;

beforeAll(async () => {
  home = tempHome();
  seedRuns(home.stateDir, [
    { runId: "run-a" },
    { runId: "run-b" },
    { runId: "run-c" },
    { runId: "run-d" },
    { runId: "run-e" },
    { runId: "run-f" },
    { runId: "run-g" },
    { runId: "run-h" },
    { runId: "run-owned", claimedByOtherHost: true },
  ]);
  const project = join(home.root, "project");
  mkdirSync(project);
  // Loading this module takes a while: the resolver child is slow, the host must not be.
  writeFileSync(
    join(project, "slow.workflow.ts"),
    `import { compute, defineWorkflow } from "@osolmaz/pi-workflows";
await new Promise((resolve) => setTimeout(resolve, 1500));
export default defineWorkflow({
  name: "slow",
  startAt: "only",
  nodes: { only: compute({ run: () => ({ done: true }) }) },
  edges: [],
});
`,
  );
  host = await startHostProcess(home.env);
});

afterAll(async () => {
  if (host) await stopProcess(host);
  await home?.cleanup();
});

/** Sends one request and checks the answer is a well-formed response to it. */
async function ask(operation: string, fields: Record<string, unknown> = {}): Promise<any> {
  const request = hostRequest(operation, fields);
  const response = await requestOnce(home.socketPath, request);
  const parsed = parseHostResponse(response);
  expect(parsed.ok, JSON.stringify(parsed)).toBe(true);
  expect(response.requestId).toBe(request.requestId);
  // The seed launched run-owned under epoch 1; this host holds the next one.
  expect(response.hostEpoch).toBe(2);
  if (response.outcome === "accepted" || response.outcome === "adopted") {
    const receipt = parseReceipt(operation as any, response.receipt);
    expect(receipt.ok, JSON.stringify(receipt)).toBe(true);
  }
  return response;
}

describe("host socket protocol", () => {
  it("answers host.status with exactly the spec's fields, the schedules and the version", async () => {
    const response = await ask("host.status");
    expect(response.outcome).toBe("accepted");
    expect(Object.keys(response.receipt).sort()).toEqual([
      "activeWorkers",
      "ambiguousEffects",
      "epoch",
      "expiredClaims",
      "pendingInteractions",
      "runs",
      "schedules",
      "socket",
      "state",
      "version",
    ]);
    // run-owned's claim belongs to the seed's earlier epoch: recovery took it over at start-up.
    const { queued, running, parked, waiting } = response.receipt.runs;
    expect([queued, running + parked, waiting]).toEqual([8, 1, 0]);
  });

  it("lists runs and shows one run with its events, without paths or input", async () => {
    const list = await ask("run.list");
    expect(list.outcome).toBe("accepted");
    expect(list.receipt.runs.map((r: any) => r.runId).sort()).toEqual([
      "run-a",
      "run-b",
      "run-c",
      "run-d",
      "run-e",
      "run-f",
      "run-g",
      "run-h",
      "run-owned",
    ]);
    const plain = await ask("run.status", { runId: "run-a" });
    expect(plain.receipt.events).toBeUndefined();
    const status = await ask("run.status", { runId: "run-a", payload: { eventsAfter: 0 } });
    expect(status).toMatchObject({
      outcome: "accepted",
      revision: 1,
      receipt: {
        run: { runId: "run-a", state: "queued", queueState: "queued", revision: 1 },
        attempts: [],
        lastEventSeq: 1,
      },
    });
    expect(status.receipt.events.map((e: any) => e.type)).toEqual(["run.queued"]);
    const text = JSON.stringify([list, status]);
    expect(text).not.toContain("/seed/project");
    expect(text).not.toContain("private-input-text");

    const paged = await ask("run.status", { runId: "run-a", payload: { eventsAfter: 1 } });
    expect(paged.receipt.events).toEqual([]);
    expect(paged.receipt.lastEventSeq).toBe(1);
  });

  it("answers notFound for an unknown run", async () => {
    for (const operation of ["run.status", "run.pause", "run.resume", "run.cancel"]) {
      const response = await ask(operation, { runId: "run-missing" });
      expect(response).toMatchObject({ outcome: "notFound", error: { code: "runNotFound" } });
      expect(response.error.message).toBe("Unknown run: run-missing");
    }
  });

  it("pauses and resumes with receipts; a repeated request gets the stored receipt", async () => {
    const pause = hostRequest("run.pause", { runId: "run-b" });
    const first = await requestOnce(home.socketPath, pause);
    expect(first).toMatchObject({
      outcome: "accepted",
      revision: 2,
      receipt: { run: { runId: "run-b", paused: true, revision: 2 } },
    });
    const again = await requestOnce(home.socketPath, pause);
    expect(again).toEqual(first);
    const status = await ask("run.status", { runId: "run-b" });
    expect(status.receipt.run).toMatchObject({ paused: true, revision: 2 });

    // The same request id with another payload is a conflict, and changes nothing.
    const reused = await requestOnce(home.socketPath, { ...pause, runId: "run-c" });
    expect(reused).toMatchObject({ outcome: "conflict", error: { code: "requestIdReused" } });
    expect((await ask("run.status", { runId: "run-c" })).receipt.run.paused).toBe(false);

    // Pausing a paused run is a refused transition, not a conflict.
    const twice = await ask("run.pause", { runId: "run-b" });
    expect(twice).toMatchObject({ outcome: "rejected", error: { code: "invalidTransition" } });

    const resume = await ask("run.resume", { runId: "run-b" });
    expect(resume).toMatchObject({
      outcome: "accepted",
      revision: 3,
      receipt: { run: { paused: false, revision: 3 } },
    });
  });

  it("answers a repeated idempotency key with the stored receipt as adopted", async () => {
    const first = await ask("run.pause", { runId: "run-e", idempotencyKey: "pause-e" });
    expect(first).toMatchObject({ outcome: "accepted", revision: 2 });
    const repeat = await ask("run.pause", { runId: "run-e", idempotencyKey: "pause-e" });
    expect(repeat).toMatchObject({ outcome: "adopted", revision: 2, receipt: first.receipt });
    const other = await ask("run.pause", { runId: "run-f", idempotencyKey: "pause-e" });
    expect(other).toMatchObject({ outcome: "conflict", error: { code: "requestIdReused" } });
    expect((await ask("run.status", { runId: "run-f" })).receipt.run.paused).toBe(false);
  });

  it("runs one command once when its copies race on several connections", async () => {
    const request = hostRequest("run.pause", { runId: "run-g" });
    const answers = await Promise.all(
      Array.from({ length: 6 }, () => requestOnce(home.socketPath, request)),
    );
    for (const answer of answers) expect(answer).toEqual(answers[0]);
    expect(answers[0]).toMatchObject({ outcome: "accepted", revision: 2 });
    const status = await ask("run.status", { runId: "run-g", payload: { eventsAfter: 0 } });
    expect(status.receipt.events.map((e: any) => e.type)).toEqual(["run.queued", "run.paused"]);
  });

  it("refuses a command past its notAfter unless it was already applied", async () => {
    const late = await ask("run.pause", { runId: "run-h", notAfter: Date.now() - 1 });
    expect(late).toMatchObject({ outcome: "rejected", error: { code: "requestExpired" } });
    expect(late.error.message).toMatch(/^Request not applied: .*nothing changed/);
    expect((await ask("run.status", { runId: "run-h" })).receipt.run.paused).toBe(false);

    // Applied in time, then retried past the deadline (a lost answer): the stored receipt.
    const pause = hostRequest("run.pause", { runId: "run-h", notAfter: Date.now() + 60_000 });
    const first = await requestOnce(home.socketPath, pause);
    expect(first).toMatchObject({ outcome: "accepted", receipt: { run: { paused: true } } });
    const retried = await requestOnce(home.socketPath, { ...pause, notAfter: Date.now() - 1 });
    expect(retried).toEqual(first);
  });

  it("answers conflict with the current revision when expectedRevision is stale", async () => {
    const stale = await ask("run.pause", { runId: "run-c", expectedRevision: 7 });
    expect(stale).toMatchObject({
      outcome: "conflict",
      revision: 1,
      error: { code: "revisionMismatch" },
    });
    const fresh = await ask("run.pause", { runId: "run-c", expectedRevision: 1 });
    expect(fresh).toMatchObject({ outcome: "accepted", revision: 2 });
  });

  it("cancels a run once; cancelling a terminal run is rejected", async () => {
    const cancel = await ask("run.cancel", { runId: "run-d" });
    expect(cancel).toMatchObject({
      outcome: "accepted",
      receipt: { run: { state: "cancelled", queueState: "cancelled" } },
    });
    const status = await ask("run.status", { runId: "run-d" });
    expect(status.receipt.run).toMatchObject({ state: "cancelled", revision: cancel.revision });
    const again = await ask("run.cancel", { runId: "run-d" });
    expect(again).toMatchObject({ outcome: "rejected", error: { code: "invalidTransition" } });
    const active = await ask("run.list");
    expect(active.receipt.runs.map((r: any) => r.runId)).not.toContain("run-d");
    const all = await ask("run.list", { payload: { all: true } });
    expect(all.receipt.runs.map((r: any) => r.runId)).toContain("run-d");
  });

  it("treats a live claim of an earlier host epoch as dead: pause is accepted at once", async () => {
    // The seeded claim was taken under an older epoch with an hour left on its lease; this
    // host's epoch fences it, so the command does not wait for it (nor answer claimLost).
    const response = await ask("run.pause", { runId: "run-owned" });
    expect(response).toMatchObject({ outcome: "accepted", receipt: { run: { paused: true } } });
  });

  it("starts a run once per request id and refuses an unknown workflow", async () => {
    const start = hostRequest("run.start", {
      payload: { workflow: "examples/hello.workflow.ts", input: { name: "Lin" }, cwd: ROOT },
    });
    const first = await requestOnce(home.socketPath, start);
    expect(first).toMatchObject({
      outcome: "accepted",
      revision: 1,
      receipt: { run: { workflowName: "hello", state: "queued", revision: 1 } },
    });
    expect(parseReceipt("run.start", first.receipt).ok).toBe(true);
    const again = await requestOnce(home.socketPath, start);
    expect(again).toEqual(first);
    const list = await ask("run.list", { payload: { all: true } });
    expect(list.receipt.runs.filter((r: any) => r.workflowName === "hello")).toHaveLength(1);

    // Once it completed, status shows its output; the list leaves outputs out.
    const runId = first.receipt.run.runId;
    const done = await waitFor(
      async () => {
        const status = await ask("run.status", { runId });
        return status.receipt.run.state === "completed" ? status : null;
      },
      "the hello run to complete",
      30_000,
    );
    expect(done.receipt.run.output).toMatchObject({ message: "Hello, Lin!" });
    expect(done.receipt.attempts.map((a: any) => [a.nodeId, a.state])).toEqual([
      ["greet", "ok"],
      ["echo", "ok"],
      ["finish", "ok"],
    ]);
    const listed = (await ask("run.list", { payload: { all: true } })).receipt.runs
      .find((r: any) => r.runId === runId);
    expect(listed).toMatchObject({ state: "completed" });
    expect(listed.output).toBeUndefined();

    const missing = await ask("run.start", {
      payload: { workflow: "examples/nope.workflow.ts", cwd: ROOT },
    });
    expect(missing.outcome).toBe("rejected");
    expect(missing.error.message).toMatch(/^[A-Z]/);
  });

  it("refuses a headless start of a workflow that needs an origin Pi session", async () => {
    const dir = join(home.root, "project");
    mkdirSync(dir, { recursive: true });
    writeFileSync(
      join(dir, "reply.workflow.ts"),
      `import { assistantMessage, defineWorkflow } from "pi-workflows";
export default defineWorkflow({
  name: "reply",
  startAt: "say",
  nodes: { say: assistantMessage({ prompt: "Tell the user hello." }) },
  edges: [],
});
`,
    );
    const response = await ask("run.start", {
      payload: { workflow: "reply.workflow.ts", cwd: dir, executionMode: "headless" },
    });
    expect(response).toMatchObject({ outcome: "rejected", error: { code: "needsOriginSession" } });
    expect(response.error.message).toMatch(/^Cannot start "reply" headless: .*origin Pi session/);
    const runs = (await ask("run.list", { payload: { all: true } })).receipt.runs;
    expect(runs.some((r: any) => r.workflowName === "reply")).toBe(false);
  });

  it("keeps answering other clients while a run.start waits for its resolver", async () => {
    const slow = requestOnce(
      home.socketPath,
      hostRequest("run.start", {
        payload: { workflow: "slow.workflow.ts", cwd: join(home.root, "project") },
      }),
    );
    let slowDone = false;
    void slow.then(() => (slowDone = true));
    for (let i = 0; i < 5; i++) {
      expect((await ask("host.status")).outcome).toBe("accepted");
    }
    expect(slowDone).toBe(false);
    expect(await slow).toMatchObject({
      outcome: "accepted",
      receipt: { run: { workflowName: "slow" } },
    });
  });

  it("answers a slow command of a client that half-closed after sending it", async () => {
    const client = await RawClient.connect(home.socketPath);
    client.send(
      hostRequest("run.start", {
        payload: { workflow: "slow.workflow.ts", cwd: join(home.root, "project") },
      }),
    );
    client.socket.end();
    expect(await client.next()).toMatchObject({ outcome: "accepted" });
    await client.waitClosed();
  });

  it("serves every recognised operation (an empty payload is refused by its own checks)", async () => {
    // host.stop would end the shared host; session.wait may hold the connection open.
    const skip = new Set(["host.stop", "session.wait"]);
    for (const operation of HOST_OPERATIONS.filter((o) => !skip.has(o))) {
      const response = await ask(operation, { payload: {} });
      expect(response.error?.code, operation).not.toBe("notAvailable");
    }
  });

  it("rejects invalid requests once and closes only that connection", async () => {
    const bystander = await RawClient.connect(home.socketPath);
    const cases: [unknown, string, string | null][] = [
      [{ ...hostRequest("host.status"), schema: "other" }, "invalidRequest", "keep"],
      [{ ...hostRequest("run.status") }, "invalidRequest", "keep"],
      [{ ...hostRequest("run.list"), payload: { all: "yes" } }, "invalidRequest", "keep"],
      [{ ...hostRequest("run.explode") }, "unknownOperation", "keep"],
      [{ operation: "host.status" }, "invalidRequest", null],
      [[1, 2, 3], "invalidRequest", null],
    ];
    for (const [value, code, keepId] of cases) {
      const client = await RawClient.connect(home.socketPath);
      const response = await client.request(value as Record<string, unknown>);
      expect(parseHostResponse(response).ok).toBe(true);
      expect(response).toMatchObject({ outcome: "rejected", error: { code } });
      expect(response.requestId).toBe(keepId ? (value as any).requestId : null);
      expect(response.error.message).toMatch(/^Request rejected: /);
      await client.waitClosed();
    }
    // The bystander's connection was untouched.
    expect((await bystander.request(hostRequest("host.status"))).outcome).toBe("accepted");
    bystander.close();
  });

  it("answers requests pipelined on one connection", async () => {
    const client = await RawClient.connect(home.socketPath);
    const requests = Array.from(
      { length: 20 },
      (_, i) => hostRequest(i % 2 ? "run.list" : "run.status", i % 2 ? {} : { runId: "run-a" }),
    );
    client.write(requests.map((r) => JSON.stringify(r) + "\n").join(""));
    const answers = [];
    for (let i = 0; i < requests.length; i++) answers.push(await client.next());
    expect(answers.map((a) => a.requestId).sort()).toEqual(
      requests.map((r) => r.requestId as string).sort(),
    );
    expect(answers.every((a) => a.outcome === "accepted")).toBe(true);
    client.close();
  });

  it("run.rerun: a headless fork keeps its parent's Pi and model arguments unless given new ones", async () => {
    const dir = join(home.root, "forks");
    mkdirSync(dir, { recursive: true });
    const file = join(dir, "stops.workflow.ts");
    const source = (extra: string) =>
      `import { assistantMessage, compute, defineWorkflow } from "@osolmaz/pi-workflows";
export default defineWorkflow({
  name: "stops",
  startAt: "first",
  nodes: {
    first: compute({ run: () => 1 }),
    check: compute({ run: () => { throw new Error("too strict"); } }),${extra}
  },
  edges: [{ from: "first", to: "check" }${extra ? `, { from: "check", to: "say" }` : ""}],
});
`;
    writeFileSync(file, source(""));
    const pi = (model: string) => ({ command: process.execPath, args: ["--model", model] });
    const started = await ask("run.start", {
      payload: { workflow: file, cwd: dir, executionMode: "headless", pi: pi("parent-model") },
    });
    const parent = started.receipt.run.runId;
    const ended = async (runId: string) => {
      const status = await ask("run.status", { runId });
      return status.receipt.run.state === "failed" ? status.receipt : null;
    };
    await waitFor(() => ended(parent), "the parent to fail", 30_000);
    const binding = (runId: string) =>
      queryState(
        home.stateDir,
        "SELECT execution_mode, origin_session_id, pi_args_json FROM run_bindings WHERE run_id = ?",
        runId,
      )[0];
    // Asked from a Pi session (which sends its session id): still headless, bound to no session.
    const kept = await ask("run.rerun", {
      runId: parent,
      payload: { originSessionId: "pi-session-1" },
    });
    expect(kept.receipt).toMatchObject({
      from: { runId: parent, nodeId: "check", visit: 1 },
      adoptedAttempts: 1,
      source: "recorded",
    });
    expect(binding(kept.receipt.run.runId)).toEqual({
      execution_mode: "headless",
      origin_session_id: null,
      pi_args_json: JSON.stringify(["--model", "parent-model"]),
    });
    const changed = await ask("run.rerun", {
      runId: parent,
      payload: { from: "first", pi: pi("new-model") },
    });
    expect(binding(changed.receipt.run.runId).pi_args_json).toBe(
      JSON.stringify(["--model", "new-model"]),
    );
    // The file now has a step only a Pi session can show: a headless fork is refused up front.
    writeFileSync(file, source(`\n    say: assistantMessage({ prompt: "Tell the user." }),`));
    const refused = await ask("run.rerun", { runId: parent });
    expect(refused).toMatchObject({ outcome: "rejected", error: { code: "needsOriginSession" } });
    expect(refused.error.message).toMatch(
      new RegExp(`^Cannot rerun ${parent} headless: it has an assistant-message step`),
    );
  });
});
