/**
 * The published JSON Schemas against real socket frames, checked with a standard validator
 * (ajv, draft 2020-12): every operation and every outcome of a live host. If the schemas and the
 * wire drift apart, this fails. The fd-3 channels are in channel-conformance.test.ts.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HOST_OPERATIONS } from "../../src/protocol/host-operations.ts";
import { acquireClaim, releaseClaim, runResource } from "../../src/state/claims.ts";
import { randomIds, systemClock } from "../../src/base/clock.ts";
import { closeStateStore, openStateStore } from "../../src/state/store.ts";
import {
  type CliProcess,
  hostRequest,
  RawClient,
  startHostProcess,
  stopProcess,
  type TempHome,
  tempHome,
  waitFor,
} from "../support/host.ts";
import { check, expectValid } from "./fixtures/published-schemas.ts";

describe("socket frames of a live host", () => {
  let home: TempHome;
  let host: CliProcess;
  let client: RawClient;
  const project = () => join(home.root, "project");
  const seen: { request: Record<string, unknown>; response: any }[] = [];

  beforeAll(async () => {
    home = tempHome();
    mkdirSync(project());
    const write = (name: string, source: string) => writeFileSync(join(project(), name), source);
    write(
      "hello.workflow.ts",
      `import { compute, defineWorkflow } from "@osolmaz/pi-workflows";
export default defineWorkflow({
  name: "hello", startAt: "greet",
  nodes: { greet: compute({ run: () => ({ message: "hi" }) }) }, edges: [],
});`,
    );
    write(
      "gate.workflow.ts",
      `import { checkpoint, defineWorkflow } from "@osolmaz/pi-workflows";
export default defineWorkflow({
  name: "gate", startAt: "ask",
  nodes: { ask: checkpoint({ summary: () => "Go?" }) }, edges: [],
});`,
    );
    write(
      "step.workflow.ts",
      `import { agent, defineWorkflow } from "@osolmaz/pi-workflows";
export default defineWorkflow({
  name: "step", startAt: "draft",
  nodes: { draft: agent({ prompt: () => "Say hi as JSON", expectedOutput: '{"hi": true}' }) },
  edges: [],
});`,
    );
    host = await startHostProcess(home.env);
    client = await RawClient.connect(home.socketPath);
  });

  afterAll(async () => {
    client?.close();
    if (host) await stopProcess(host);
    await home?.cleanup();
  });

  /** One request on the shared connection; both frames are kept for the schema checks. */
  async function ask(operation: string, fields: Record<string, unknown> = {}): Promise<any> {
    const request = hostRequest(operation, fields);
    const response = await client.request(request, 30_000);
    seen.push({ request, response });
    // The host closes a connection after a request it could not parse.
    if (response?.error?.code === "invalidRequest") {
      client.close();
      client = await RawClient.connect(home.socketPath);
    }
    return response;
  }

  async function status(runId: string): Promise<any> {
    const answer = await ask("run.status", { runId });
    if (answer.outcome !== "accepted") throw new Error(`status: ${JSON.stringify(answer)}`);
    return answer.receipt;
  }

  async function startRun(workflow: string, extra: Record<string, unknown> = {}) {
    const answer = await ask("run.start", {
      payload: { workflow, cwd: project(), input: {}, ...extra },
    });
    expect(answer.outcome).toBe("accepted");
    return answer.receipt.run.runId as string;
  }

  async function waitingAt(runId: string): Promise<any> {
    let receipt: any;
    await waitFor(
      async () => {
        receipt = await status(runId);
        return receipt.waiting !== undefined;
      },
      `run ${runId} to wait`,
      30_000,
    );
    return receipt.waiting;
  }

  it("every operation and outcome matches the published schemas", async () => {
    // run.start: accepted, the same request again (stored receipt), a new request with the same
    // idempotency key (adopted), an unknown workflow (rejected).
    const first = hostRequest("run.start", {
      idempotencyKey: "conformance-hello",
      payload: { workflow: "./hello.workflow.ts", cwd: project(), input: {} },
    });
    const started = await client.request(first, 30_000);
    seen.push({ request: first, response: started });
    expect(started.outcome).toBe("accepted");
    const helloRun = started.receipt.run.runId as string;
    seen.push({ request: first, response: await client.request(first, 30_000) });
    const adopted = await ask("run.start", {
      idempotencyKey: "conformance-hello",
      payload: { workflow: "./hello.workflow.ts", cwd: project(), input: {} },
    });
    expect(adopted.outcome).toBe("adopted");
    await ask("run.start", { payload: { workflow: "./missing.workflow.ts", cwd: project() } });

    await waitFor(async () => (await status(helloRun)).run.state === "completed", "hello", 30_000);
    await ask("run.status", {
      runId: helloRun,
      payload: { includeUpdates: true, includeNotifications: true, attemptLimit: 5 },
    });
    await ask("run.status", { runId: "no-such-run" }); // notFound
    await ask("run.list", { payload: { all: true, limit: 2 } });
    await ask("run.find", { payload: { prefix: helloRun.slice(4, 10) } });
    const logs = await ask("run.logs", { runId: helloRun, payload: { attemptLimit: 5 } });
    expect(logs.receipt).toMatchObject({ runId: helloRun, state: "completed", more: false });

    // A checkpoint: pause, a stale expectedRevision (conflict), resume, answer, answer again.
    const gateRun = await startRun("./gate.workflow.ts");
    const waiting = await waitingAt(gateRun);
    const paused = await ask("run.pause", { runId: gateRun });
    expect(paused.outcome).toBe("accepted");
    const stale = await ask("run.resume", { runId: gateRun, expectedRevision: 0 });
    expect(stale.outcome).toBe("conflict");
    // Another owner holds a live claim of the run (the way a recovery takes one): the host may
    // not override it, so the resume is `claimLost`; once released, the resume goes through.
    const other = openStateStore({ stateDir: home.stateDir, clock: systemClock, ids: randomIds });
    try {
      const held = acquireClaim(other, {
        resource: runResource(gateRun),
        runId: gateRun,
        ownerType: "control",
        ownerId: "conformance-recovery",
        ttlMs: 10 * 60_000,
      });
      const lost = await ask("run.resume", { runId: gateRun });
      expect([lost.outcome, lost.error?.code]).toEqual(["claimLost", "claimLost"]);
      releaseClaim(other, held);
    } finally {
      closeStateStore(other);
    }
    expect((await ask("run.resume", { runId: gateRun })).outcome).toBe("accepted");
    const answerPayload = { nodeId: waiting.nodeId, attemptId: waiting.attemptId, answer: {} };
    expect((await ask("checkpoint.answer", { runId: gateRun, payload: answerPayload })).outcome)
      .toBe("accepted");
    await ask("checkpoint.answer", { runId: gateRun, payload: answerPayload }); // refused
    await ask("decision.answer", { runId: gateRun, payload: { ...answerPayload, answer: "x" } });

    // An interactive agent step, driven the way the Pi extension drives it.
    const sessionId = "conformance-session";
    const stepRun = await startRun("./step.workflow.ts", {
      executionMode: "interactive",
      originSessionId: sessionId,
    });
    let step: any = null;
    await waitFor(
      async () => {
        step = (await ask("interaction.claim", { payload: { sessionId } })).receipt.interaction;
        if (step === null) await ask("session.wait", { payload: { sessionId, waitMs: 500 } });
        return step !== null;
      },
      "the agent step",
      30_000,
    );
    const target = {
      interactionId: step.interactionId,
      sessionId,
    };
    await ask("interaction.present", {
      runId: stepRun,
      payload: { ...target, sessionEntryId: "entry-1" },
    });
    await ask("interaction.remind", { runId: stepRun, payload: { ...target, reminder: 1 } });
    const contract = { nodeId: step.contract.step, attemptId: step.contract.attempt };
    await ask("interaction.update", {
      runId: stepRun,
      idempotencyKey: "call-update",
      payload: { ...target, ...contract, update: { type: "status", data: { message: "working" } } },
    });
    await ask("interaction.submit", {
      runId: stepRun,
      idempotencyKey: "call-submit",
      payload: { ...target, ...contract, submission: { hi: true }, waitMs: 10_000 },
    });
    await waitFor(async () => (await status(stepRun)).run.state === "completed", "step", 30_000);

    // The outbox and the rest: answered with receipts or refused, each a well-formed frame.
    await ask("notification.claim", { payload: { sessionId } });
    await ask("notification.deliver", {
      payload: { notificationId: "none", sessionId, sessionEntryId: "e" },
    });
    await ask("turn.claim", { payload: { sessionId } });
    await ask("turn.resolve", {
      payload: { turnIntentId: "none", sessionId, sessionEntryId: "e" },
    });
    // A fork of the finished run (accepted), and one with no node named (it ended well: refused).
    const fork = await ask("run.rerun", { runId: helloRun, payload: { from: "greet" } });
    expect(fork.outcome).toBe("accepted");
    expect((await ask("run.rerun", { runId: helloRun, payload: {} })).outcome).toBe("rejected");
    await ask("run.cancel", { runId: helloRun, payload: { reason: "done already" } });
    // A run with no budget has no limit to raise: refused, as a well-formed frame.
    await ask("run.budget", { runId: helloRun, payload: { raiseCostUsd: 1 } });
    await ask("effect.resolve", {
      runId: helloRun,
      payload: { target: "no-effect", verdict: "applied" },
    });
    for (const op of HOST_OPERATIONS.filter((op) => op.startsWith("controller."))) {
      await ask(op, { payload: {} });
    }
    // Schedules: added (an hour away: it does not fire here), read, paused, resumed, removed;
    // a file that declares none is refused.
    const tick = { name: "tick", workflow: "./hello.workflow.ts", cwd: project(), every: "1h" };
    expect((await ask("schedule.add", { payload: tick })).outcome).toBe("accepted");
    await ask("schedule.add", { payload: { ...tick, cron: "0 9 * * *" } }); // invalidRequest
    await ask("schedule.list");
    await ask("schedule.show", { payload: { name: "tick" } });
    await ask("schedule.pause", { payload: { name: "tick" } });
    await ask("schedule.resume", { payload: { name: "tick" } });
    await ask("schedule.apply", { payload: { workflow: "./hello.workflow.ts", cwd: project() } });
    await ask("schedule.remove", { payload: { name: "tick" } });
    await ask("schedule.show", { payload: { name: "tick" } }); // notFound
    await ask("host.prune", { payload: { dryRun: true } }); // a dry run changes nothing
    await ask("host.prune", { payload: { keepDays: -1 } }); // invalidRequest
    await ask("host.status");
    await ask("run.list", { hostEpoch: 999 }); // staleEpoch
    // A request the envelope schema refuses, answered before the connection closes.
    await ask("run.list", { payload: { limit: -1 } });
    // host.stop and a request behind it in the same write: the second is `unavailable`.
    const stop = hostRequest("host.stop");
    const late = hostRequest("run.list");
    client.write(`${JSON.stringify(stop)}\n${JSON.stringify(late)}\n`);
    seen.push({ request: stop, response: await client.next() });
    const lateAnswer = await client.next();
    if (lateAnswer !== null) seen.push({ request: late, response: lateAnswer });
    await host.exited;

    const outcomes = new Set<string>();
    const operations = new Set<string>();
    for (const { request, response } of seen) {
      operations.add(String(request.operation));
      // The schema and the host agree on which requests are malformed.
      if (response.error?.code === "invalidRequest") {
        expect(check("host-request.v1.json", request), JSON.stringify(request)).not.toBeNull();
      } else expectValid("host-request.v1.json", request);
      expectValid("host-response.v1.json", response);
      outcomes.add(response.outcome);
      if (response.outcome === "accepted" || response.outcome === "adopted") {
        expectValid(`host-response.v1.json#/$defs/${request.operation}.receipt`, response.receipt);
      }
    }
    expect([...operations].sort()).toEqual([...HOST_OPERATIONS].sort());
    expect([...outcomes].sort()).toEqual(
      expect.arrayContaining([
        "accepted",
        "adopted",
        "claimLost",
        "conflict",
        "notFound",
        "rejected",
      ]),
    );
    if (lateAnswer !== null) expect(outcomes).toContain("unavailable");
  }, 120_000);
});
